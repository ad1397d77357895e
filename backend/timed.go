package backend

import "time"

// Timed wraps an Exec and adds the wall time of each operation to Times,
// under the operation's name (matrix products by what they are: the
// attention's input projections, a single weight, the output matrix by its
// row count). A diagnostic for benchmarks (`sirun bench --ops`): on a
// device that runs operations asynchronously the times are those of the
// launches, not of the work, unless the backend synchronises.
type Timed struct {
	Exec
	Times map[string]time.Duration
	Calls map[string]int
	// Big is the row count from which a MatMul is named "matmul lm_head".
	Big int
}

// NewTimed wraps e; matrices of at least big rows count as the output matrix.
func NewTimed(e Exec, big int) *Timed {
	return &Timed{Exec: e, Times: map[string]time.Duration{}, Calls: map[string]int{}, Big: big}
}

func (t *Timed) add(op string, start time.Time) {
	t.Times[op] += time.Since(start)
	t.Calls[op]++
}

func (t *Timed) Embed(out Buf, table Matrix, tokens []int) error {
	defer t.add("embed", time.Now())
	return t.Exec.Embed(out, table, tokens)
}

func (t *Timed) RMSNorm(out, x Buf, w Vector, eps float32) {
	defer t.add("rmsnorm", time.Now())
	t.Exec.RMSNorm(out, x, w, eps)
}

func (t *Timed) MatMul(outs []Buf, ws []Matrix, x Buf) {
	op := "matmul o"
	switch {
	case len(ws) > 1:
		op = "matmul qkv"
	case ws[0].Rows() >= t.Big:
		op = "matmul lm_head"
	}
	defer t.add(op, time.Now())
	t.Exec.MatMul(outs, ws, x)
}

func (t *Timed) AddBias(x Buf, b Vector) {
	defer t.add("add", time.Now())
	t.Exec.AddBias(x, b)
}

func (t *Timed) Add(x, y Buf) {
	defer t.add("add", time.Now())
	t.Exec.Add(x, y)
}

func (t *Timed) RoPE(x Buf, T, headDim, pos int, invFreq []float64) {
	defer t.add("rope", time.Now())
	t.Exec.RoPE(x, T, headDim, pos, invFreq)
}

func (t *Timed) Attention(out, q, k, v Buf, cache *KVCache, layer, pos, T int) {
	defer t.add("attention", time.Now())
	t.Exec.Attention(out, q, k, v, cache, layer, pos, T)
}

func (t *Timed) FFN(out, x Buf, recs Records, act []float32) {
	defer t.add("ffn", time.Now())
	t.Exec.FFN(out, x, recs, act)
}

func (t *Timed) Read(dst []float32, b Buf) {
	defer t.add("read", time.Now())
	t.Exec.Read(dst, b)
}

func (t *Timed) Gather(all Records, ranks []int, static int, compact bool) (Records, error) {
	defer t.add("gather", time.Now())
	return t.Exec.Gather(all, ranks, static, compact)
}

// GatherGroups times backend.GatherGroups on the wrapped Exec (under "gather").
func (t *Timed) GatherGroups(all Records, static, G int, groups []int32, reuse Records) (Records, error) {
	defer t.add("gather", time.Now())
	return GatherGroups(t.Exec, all, static, G, groups, reuse)
}
