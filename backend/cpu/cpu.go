// Package cpu is the CPU implementation of the backend seam: weights are
// used in place in the mapped pack, activations are Go slices, and every
// operation runs the active kernel table of package kernels over a pool of
// persistent worker threads.
package cpu

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

// vec is a Buf or Vector: a float32 slice.
type vec struct{ d []float32 }

func (v *vec) Len() int { return len(v.d) }

// F32 is the float32 slice behind a Buf or Vector of this backend.
func F32(b any) []float32 {
	if b == nil {
		return nil
	}
	return b.(*vec).d
}

// Matrix is a weight used in place.
type Matrix struct{ W kernels.Weight }

func (m *Matrix) Rows() int           { return m.W.Rows }
func (m *Matrix) Cols() int           { return m.W.Cols }
func (m *Matrix) DType() format.DType { return m.W.DType }
func (m *Matrix) Bytes() int          { return len(m.W.Data) }

// records is a set of FFN neuron records: blocks of consecutive records
// (format.RecordBlock: interleaved, or a version 2 or 3 band's split block),
// record i of the set being record i − starts[b] of the block b that holds it.
type records struct {
	blocks []format.RecordBlock
	starts []int // first record of each block; len(blocks)+1 entries
	dt     format.DType
	hidden int
	rec    int // bytes per record
}

func (r *records) Len() int   { return r.starts[len(r.starts)-1] }
func (r *records) Bytes() int { return r.Len() * r.rec }

// at returns the block holding record i and i's index in it.
func (r *records) at(i int) (*format.RecordBlock, int) {
	b := sort.SearchInts(r.starts, i+1) - 1
	return &r.blocks[b], i - r.starts[b]
}

func newRecords(blocks []format.RecordBlock, dt format.DType, hidden int) (*records, error) {
	rb, ok := dt.RowBytes(hidden)
	if !ok {
		return nil, fmt.Errorf("cpu backend: hidden size %d is not a whole number of %v blocks", hidden, dt)
	}
	for _, b := range blocks {
		if b.RowBytes != rb {
			return nil, fmt.Errorf("cpu backend: a block of %d-byte rows, want %d", b.RowBytes, rb)
		}
	}
	r := &records{blocks: blocks, dt: dt, hidden: hidden, rec: 3 * rb}
	r.reindex()
	return r, nil
}

// reindex sets starts from blocks, in starts' storage.
func (r *records) reindex() {
	r.starts = append(r.starts[:0], 0)
	for _, b := range r.blocks {
		r.starts = append(r.starts, r.starts[len(r.starts)-1]+b.N)
	}
}

// appendRange appends records [lo, hi) of r to blocks: one sub-block of
// each block of r the range crosses (one search a block, not a record).
func (r *records) appendRange(blocks []format.RecordBlock, lo, hi int) []format.RecordBlock {
	for lo < hi {
		b := sort.SearchInts(r.starts, lo+1) - 1
		end := min(hi, r.starts[b+1])
		k := lo - r.starts[b]
		blocks = append(blocks, r.blocks[b].Sub(k, k+end-lo))
		lo = end
	}
	return blocks
}

// Device is the CPU: nothing is copied, so nothing is resident beyond the
// mapped pack.
type Device struct{}

// New returns the CPU device.
func New() *Device { return &Device{} }

var _ backend.Device = (*Device)(nil)

func (*Device) Name() string { return "cpu (" + kernels.Active().Name + ")" }

// TakesKV: the CPU's Attention takes float32 and f16 caches.
func (*Device) TakesKV(t backend.KVType) bool { return t == backend.KVF32 || t == backend.KVF16 }

var _ backend.KVTyper = (*Device)(nil)

func (*Device) Matrix(data []byte, dt format.DType, rows, cols int) (backend.Matrix, error) {
	rb, ok := dt.RowBytes(cols)
	if !ok || len(data) != rows*rb {
		return nil, fmt.Errorf("cpu backend: %d bytes for a %d×%d %v matrix", len(data), rows, cols, dt)
	}
	return &Matrix{kernels.Weight{Data: data, DType: dt, Rows: rows, Cols: cols}}, nil
}

func (*Device) Vector(v []float32) (backend.Vector, error) { return &vec{v}, nil }

func (*Device) Records(blocks []format.RecordBlock, dt format.DType, hidden int) (backend.Records, error) {
	return newRecords(blocks, dt, hidden)
}

func (*Device) ResidentBytes() uint64 { return 0 }
func (*Device) Close() error          { return nil }

// NewExec starts an Exec on pool itself where it is a *kernels.Pool, else
// on a pool of its own of pool.Workers() workers: the kernels keep their
// scratch in their pool.
func (d *Device) NewExec(pool backend.Pool) (backend.Exec, error) {
	switch p := pool.(type) {
	case nil:
		return nil, errors.New("cpu backend: no pool")
	case *kernels.Pool:
		return d.NewExecOn(p), nil
	}
	n := pool.Workers()
	if n < 1 {
		return nil, fmt.Errorf("cpu backend: %d threads", n)
	}
	return &Exec{pool: kernels.NewPool(n), ownPool: true, ropePos: -1}, nil
}

// HostScratchBytes is the kernels' scratch of a pool of threads workers
// (kernels.PrefillScratchBytes).
func (*Device) HostScratchBytes(tokens, hidden, intermediate, heads, kvHeads, headDim, ctx, threads int) uint64 {
	return kernels.PrefillScratchBytes(tokens, hidden, intermediate, heads, kvHeads, headDim, ctx, threads)
}

// NewExecOn starts an Exec on an existing pool (several Execs may share
// one only if they never run at the same time).
func (d *Device) NewExecOn(pool *kernels.Pool) *Exec {
	return &Exec{pool: pool, ropePos: -1}
}

// Exec runs one sequence's operations on the pool.
type Exec struct {
	pool     *kernels.Pool
	ownPool  bool
	ropePos  int       // the position cos/sin hold (−1: none)
	cos, sin []float32 // (headDim/2)
}

var _ backend.Exec = (*Exec)(nil)

// Pool is the Exec's worker pool.
func (e *Exec) Pool() *kernels.Pool { return e.pool }

func (e *Exec) Alloc(n int) backend.Buf { return &vec{make([]float32, n)} }

func (e *Exec) Slice(b backend.Buf, off, n int) backend.Buf { return &vec{F32(b)[off : off+n]} }

func (e *Exec) Read(dst []float32, b backend.Buf) { copy(dst, F32(b)) }

func (e *Exec) Write(b backend.Buf, src []float32) { copy(F32(b), src) }

func (e *Exec) Embed(out backend.Buf, table backend.Matrix, tokens []int) error {
	w := &table.(*Matrix).W
	o := F32(out)
	for t, tok := range tokens {
		if tok < 0 || tok >= w.Rows {
			return fmt.Errorf("token id %d outside the vocabulary of %d", tok, w.Rows)
		}
		kernels.ToF32(o[t*w.Cols:(t+1)*w.Cols], w.Row(tok), w.DType)
	}
	return nil
}

func (e *Exec) RMSNorm(out, x backend.Buf, w backend.Vector, eps float32) {
	o, xs, ws := F32(out), F32(x), F32(w)
	H := len(ws)
	for t := 0; t < len(xs)/H; t++ {
		kernels.RMSNorm(o[t*H:(t+1)*H], xs[t*H:(t+1)*H], ws, eps)
	}
}

func (e *Exec) MatMul(outs []backend.Buf, ws []backend.Matrix, x backend.Buf) {
	if len(ws) == 1 {
		kernels.MatMul(e.pool, F32(outs[0]), &ws[0].(*Matrix).W, F32(x))
		return
	}
	o := make([][]float32, len(ws))
	w := make([]*kernels.Weight, len(ws))
	for i := range ws {
		o[i], w[i] = F32(outs[i]), &ws[i].(*Matrix).W
	}
	kernels.MatMulShared(e.pool, o, w, F32(x))
}

func (e *Exec) AddBias(x backend.Buf, b backend.Vector) {
	xs, bs := F32(x), F32(b)
	for i := range xs {
		xs[i] += bs[i%len(bs)]
	}
}

func (e *Exec) Add(x, y backend.Buf) {
	xs, ys := F32(x), F32(y)
	for i := range xs {
		xs[i] += ys[i]
	}
}

func (e *Exec) RoPE(x backend.Buf, T, headDim, pos int, invFreq []float64) {
	xs := F32(x)
	n := len(xs) / T
	for t := 0; t < T; t++ {
		e.ropeAngles(pos+t, invFreq)
		for h := 0; h < n/headDim; h++ {
			kernels.RoPE(xs[t*n+h*headDim:t*n+(h+1)*headDim], e.cos, e.sin)
		}
	}
}

// ropeAngles fills cos/sin for position pos (a decode step needs them once,
// not once per layer). The angle is computed in float32 from float32
// frequencies, as the HF reference does.
func (e *Exec) ropeAngles(pos int, invFreq []float64) {
	if pos == e.ropePos && len(e.cos) == len(invFreq) {
		return
	}
	e.ropePos = pos
	if len(e.cos) != len(invFreq) {
		e.cos, e.sin = make([]float32, len(invFreq)), make([]float32, len(invFreq))
	}
	for i, f := range invFreq {
		a := float32(pos) * float32(f)
		e.cos[i] = float32(math.Cos(float64(a)))
		e.sin[i] = float32(math.Sin(float64(a)))
	}
}

func (e *Exec) Attention(out, q, k, v backend.Buf, c *backend.KVCache, layer, pos, T int) {
	// The cache is head-major within a layer: key/value head g's rows at
	// positions 0..Ctx−1 lie together, so a decode token's attention
	// reads each head's keys and values as one run (positions-major, a
	// head's rows were kvDim apart and the eight heads' passes each
	// touched an eighth of every row of the cache).
	hd, kvDim := c.HeadDim, c.KVDim
	kvHeads := kvDim / hd
	lo, hi := layer*c.Ctx*kvDim, (layer+1)*c.Ctx*kvDim
	kf, vf := F32(k), F32(v)
	scale := float32(1 / math.Sqrt(float64(hd)))
	if c.Type == backend.KVF16 {
		kc, vc := halves(F32(c.Keys))[lo:hi], halves(F32(c.Values))[lo:hi]
		for t := 0; t < T; t++ {
			for g := 0; g < kvHeads; g++ {
				at := g*c.Ctx*hd + (pos+t)*hd
				kernels.F32ToF16s(kc[at:at+hd], kf[t*kvDim+g*hd:t*kvDim+(g+1)*hd])
				kernels.F32ToF16s(vc[at:at+hd], vf[t*kvDim+g*hd:t*kvDim+(g+1)*hd])
			}
		}
		kernels.AttentionF16(e.pool, F32(out), F32(q), kc, vc, c.Heads, kvHeads, hd, c.Ctx*hd, hd, pos, T, scale)
		return
	}
	kc, vc := F32(c.Keys)[lo:hi], F32(c.Values)[lo:hi]
	for t := 0; t < T; t++ {
		for g := 0; g < kvHeads; g++ {
			at := g*c.Ctx*hd + (pos+t)*hd
			copy(kc[at:at+hd], kf[t*kvDim+g*hd:t*kvDim+(g+1)*hd])
			copy(vc[at:at+hd], vf[t*kvDim+g*hd:t*kvDim+(g+1)*hd])
		}
	}
	kernels.Attention(e.pool, F32(out), F32(q), kc, vc, c.Heads, kvHeads, hd, c.Ctx*hd, hd, pos, T, scale)
}

// halves views a buffer's floats as the IEEE halves an f16 cache packs
// two to a float (backend.KVCache).
func halves(f []float32) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), 2*len(f))
}

func (e *Exec) FFN(out, x backend.Buf, recs backend.Records, act []float32) {
	r := recs.(*records)
	o := F32(out)
	clear(o)
	kernels.FFNRecords(e.pool, o, r.blocks, r.dt, r.hidden, F32(x), act)
}

// Gather turns a decode set into record blocks: runs of consecutive ranks in
// one block of all (a band) become one block; with compact, every record
// outside the static prefix is copied into one buffer (decode then reads two
// contiguous runs per layer instead of gathering single records).
func (e *Exec) Gather(all backend.Records, ranks []int, static int, compact bool) (backend.Records, error) {
	a := all.(*records)
	var blocks []format.RecordBlock
	addRuns := func(rs []int) {
		for i := 0; i < len(rs); {
			j := i + 1
			for j < len(rs) && rs[j] == rs[j-1]+1 {
				j++
			}
			blocks = a.appendRange(blocks, rs[i], rs[j-1]+1)
			i = j
		}
	}
	for i, r := range ranks {
		if r < 0 || r >= a.Len() || (i > 0 && r <= ranks[i-1]) {
			return nil, fmt.Errorf("cpu backend: decode set not ascending within [0, %d): rank %d", a.Len(), r)
		}
	}
	if !compact {
		addRuns(ranks)
		return newRecords(blocks, a.dt, a.hidden)
	}
	i := sort.SearchInts(ranks, static)
	addRuns(ranks[:i])
	rest := ranks[i:]
	if len(rest) > 0 {
		n, R := len(rest), a.rec/3
		buf := make([]byte, n*a.rec)
		// Over the pool: one thread copying a 1B bf16 pack's dynamic
		// records (10 MB a layer at φ 0.4) was 10 % of a 16-token prompt's
		// time to first token. The copy is laid out as the dtype's bands
		// are written (format.LayoutFor: the gate rows together, then the
		// up rows and the down rows, or the up | down pairs), whatever the
		// source, so the decode reads it as it reads a band's block: one
		// stream a pass. A dtype whose bands are tiled (format.Tiled) gets
		// three runs here: the decode splits the copy into chunks of a few
		// hundred records a worker, and a tiled chunk that short reads its
		// down pieces as dozens of short runs (q8_0, γ0.7 φ0.4, 2 threads,
		// the copy tiled 0.93× the pairs pack, in runs 0.91-0.95×: no better,
		// and rows stay whole for the gathers).
		l := format.LayoutFor(a.dt)
		if l == format.Tiled {
			l = format.Runs
		}
		c := format.ViewBlock(buf, n, n, R, l, format.TileBytes(a.dt), format.TileGroups{})
		e.pool.Run(n, func(lo, hi, _ int) {
			for k := lo; k < hi; k++ {
				b, j := a.at(rest[k])
				copy(c.GateRow(k), b.GateRow(j))
				copy(c.UpRow(k), b.UpRow(j))
				c.CopyDownFrom(k, b, j)
			}
		})
		blocks = append(blocks, c)
	}
	return newRecords(blocks, a.dt, a.hidden)
}

// GatherGroups implements backend.GroupGatherer: the blocks of the static
// prefix and of each group, a group's run cut where a band's block ends,
// into reuse's storage when given (no allocation a token).
func (e *Exec) GatherGroups(all backend.Records, static, G int, groups []int32, reuse backend.Records) (backend.Records, error) {
	a := all.(*records)
	r, _ := reuse.(*records)
	if r == nil {
		r = &records{dt: a.dt, hidden: a.hidden, rec: a.rec}
	}
	r.blocks = r.blocks[:0]
	n := a.Len()
	if static < 0 || static > n || G < 1 {
		return nil, fmt.Errorf("cpu backend: %d static of %d records in groups of %d", static, n, G)
	}
	lo, hi := 0, static // the current run, merged with adjacent groups
	for i, g := range groups {
		glo, ghi := max(static, int(g)*G), min(n, (int(g)+1)*G)
		if glo >= ghi || (i > 0 && g <= groups[i-1]) {
			return nil, fmt.Errorf("cpu backend: group %d not ascending above %d static of %d records", g, static, n)
		}
		if glo != hi {
			r.blocks = a.appendRange(r.blocks, lo, hi)
			lo = glo
		}
		hi = ghi
	}
	r.blocks = a.appendRange(r.blocks, lo, hi)
	r.reindex()
	return r, nil
}

// Err is always nil: every CPU operation either succeeds or returns its error.
func (e *Exec) Err() error { return nil }

func (e *Exec) Close() {
	if e.ownPool {
		e.pool.Close()
	}
}
