package runner

import (
	"fmt"

	"github.com/sipack/sipack/backend"
)

// State is the per-sequence state: the KV cache and the activation
// buffers, on the model's device. Buffers sized by T hold one row per token
// of the current batch.
type State struct {
	m    *Model
	ex   backend.Exec
	pool backend.Pool // the threads the Exec runs on (host-side work may use them between ops)
	Ctx  int          // context length the cache holds

	T         int         // tokens the buffers below are sized for
	x         backend.Buf // (T, hidden) residual stream
	xb        backend.Buf // (T, hidden) normed input of attention / FFN
	q         backend.Buf // (T, heads*hd)
	k, v      backend.Buf // (T, kv*hd)
	attOut    backend.Buf // (T, heads*hd)
	ffnOut    backend.Buf // (T, hidden)
	logits    backend.Buf // (rows, vocab): the rows of logits the last batch asked for
	logitRows int         // rows logits is sized for
	act       []float32   // (T, ranks) FFN activations h on the host, only when a pass wants them
	route     routeScratch

	cache  backend.KVCache // (layer, ctx, kv*hd) keys and values
	Logits []float32       // (T, vocab) when all positions are wanted, else (vocab)
}

// Pass says what one ForwardBatch computes besides the logits.
type Pass struct {
	// All asks for the logits of every token, not only the last, or of the
	// tokens from LogitsFrom on (< T) when that is set.
	All        bool
	LogitsFrom int
	// Plan restricts each sparse layer's FFN to its decode set (nil: every
	// loaded rank).
	Plan Plan
	// OnAct, if set, is called per layer with the FFN activations h (the
	// input of down_proj) of every token of the batch, as (T, ranks) in the
	// order of the records computed (rank order without a plan). Profiling
	// and tests use it.
	OnAct func(layer int, act []float32, ranks int)
	// Votes, if set, counts the prompt's votes of every sparse layer: on
	// the device when its Exec is a backend.Voter, else from h on the host.
	Votes *Votes
	// OnInput, if set, is called with the residual stream entering each
	// layer it runs, (T, hidden) on the host, valid during the call only.
	OnInput func(layer int, x []float32)
	// From > 0 resumes a pass at that layer: Input, (T, hidden), is the
	// residual stream entering it (as OnInput saw it), the embedding and the
	// layers before are not run and their cache entries at these positions
	// are left as they were. Calibration re-runs only the layers a cut
	// changes this way.
	From  int
	Input []float32
	// OnFFNInput, if set, is called per layer with the FFN's input, the
	// normed residual stream (T, hidden) on the host, valid during the
	// call only. Fitting routers uses it.
	OnFFNInput func(layer int, x []float32)
}

// routeScratch is a state's storage for the router's per-token choice.
type routeScratch struct {
	z, scores  backend.Buf // (rank), (groups) on the device
	host       []float32
	keys, kbuf []uint32
	sel        []int32
	recs       []backend.Records // each layer's decode set of the last token, reused
}

// NewState allocates a KV cache of ctx positions of element type
// m.KVType; its work runs on pool's threads (on the CPU device, on a
// *kernels.Pool itself).
func (m *Model) NewState(pool backend.Pool, ctx int) (*State, error) {
	c := &m.Config
	if ctx <= 0 || ctx > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context length %d out of range [1, %d]", ctx, c.MaxPositionEmbeddings)
	}
	if !backend.TakesKV(m.Dev, m.KVType) {
		return nil, fmt.Errorf("the %s device has no %s KV cache (use f32)", m.Dev.Name(), m.KVType)
	}
	ex, err := m.Dev.NewExec(pool)
	if err != nil {
		return nil, err
	}
	cache := backend.KVCache{
		Layers: c.NumLayers, Ctx: ctx, KVDim: c.NumKVHeads * c.HeadDim, Heads: c.NumHeads, HeadDim: c.HeadDim, Type: m.KVType,
	}
	cache.Keys, cache.Values = ex.Alloc(cache.Floats()), ex.Alloc(cache.Floats())
	return &State{m: m, ex: ex, Ctx: ctx, pool: pool, cache: cache}, nil
}

// WrapExec replaces the state's Exec by f of it (a diagnostic wrapper such
// as backend.Timed); the buffers and the cache stay as they are.
func (s *State) WrapExec(f func(backend.Exec) backend.Exec) { s.ex = f(s.ex) }

// CacheBytes is the size of the KV cache.
func (s *State) CacheBytes() int { return s.cache.Bytes() }

// Close releases the state's device work (not the model).
func (s *State) Close() { s.ex.Close() }

// size (re)allocates the activation buffers for a batch of T tokens.
func (s *State) size(T int) {
	if s.T == T {
		return
	}
	c := &s.m.Config
	H, qDim, kvDim := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	s.T = T
	s.x, s.xb, s.ffnOut = s.ex.Alloc(T*H), s.ex.Alloc(T*H), s.ex.Alloc(T*H)
	s.q, s.k, s.v, s.attOut = s.ex.Alloc(T*qDim), s.ex.Alloc(T*kvDim), s.ex.Alloc(T*kvDim), s.ex.Alloc(T*qDim)
}

// sizeLogits returns the logits buffer for rows tokens, grown if needed: a prompt
// that wants only its last token's logits holds one row, not T (a
// 256-token prompt's T rows were 131 MB for Llama 3's vocabulary, zeroed
// on every new size).
func (s *State) sizeLogits(rows int) backend.Buf {
	V := s.m.Config.VocabSize
	if rows > s.logitRows {
		s.logitRows = rows
		s.logits = s.ex.Alloc(rows * V)
	}
	return s.ex.Slice(s.logits, 0, rows*V)
}

// Forward runs one token at position pos over every loaded rank and
// returns the next-token logits.
func (s *State) Forward(token, pos int) ([]float32, error) {
	return s.ForwardBatch([]int{token}, pos, Pass{})
}

// ForwardBatch runs tokens at positions pos, pos+1, ... through the model,
// every layer over the whole batch (prefill reads each weight once per
// batch). It returns the logits of the last token, or of every token from
// pass.LogitsFrom on when pass.All is set ((T − LogitsFrom, vocab)).
func (s *State) ForwardBatch(tokens []int, pos int, pass Pass) ([]float32, error) {
	c, e := &s.m.Config, s.ex
	T := len(tokens)
	logits, first, err := s.forward(tokens, pos, pass)
	if err != nil {
		return nil, err
	}
	rows := T - first
	s.Logits = grow(s.Logits, rows*c.VocabSize)
	e.Read(s.Logits, logits)
	if err := e.Err(); err != nil {
		return nil, err
	}
	if !finite(s.Logits) {
		at := pos + first
		for i := first; i < T; i++ {
			if finite(s.Logits[(i-first)*c.VocabSize : (i-first+1)*c.VocabSize]) {
				at++
				continue
			}
			break
		}
		return nil, &NonFiniteError{Pack: s.m.packPath(), Pos: at}
	}
	return s.Logits, nil
}

// ForwardArgmax is Forward followed by Argmax of the logits. Where the
// backend finds the argmax itself (backend.Argmaxer) only the token comes
// back to the host, not the vocabulary's logits.
func (s *State) ForwardArgmax(token, pos int, pass Pass) (int, error) {
	am, ok := s.ex.(backend.Argmaxer)
	if !ok || pass.All {
		logits, err := s.ForwardBatch([]int{token}, pos, pass)
		if err != nil {
			return 0, err
		}
		return Argmax(logits), nil
	}
	logits, _, err := s.forward([]int{token}, pos, pass)
	if err != nil {
		return 0, err
	}
	tok, fin := am.Argmax(logits)
	if err := s.ex.Err(); err != nil {
		return 0, err
	}
	if !fin {
		return 0, &NonFiniteError{Pack: s.m.packPath(), Pos: pos}
	}
	return tok, nil
}

// ForwardTopK is Forward followed by the top len(ids) of the logits, found
// by the backend (backend.TopKer, which the caller checked for), so only
// the candidates come back to the host: ids and vals, in index order.
func (s *State) ForwardTopK(token, pos int, pass Pass, ids []int32, vals []float32) error {
	logits, _, err := s.forward([]int{token}, pos, pass)
	if err != nil {
		return err
	}
	fin := s.ex.(backend.TopKer).TopK(logits, ids, vals)
	if err := s.ex.Err(); err != nil {
		return err
	}
	if !fin {
		return &NonFiniteError{Pack: s.m.packPath(), Pos: pos}
	}
	return nil
}

// forward runs the batch through the model and queues the logits' matmul:
// it returns the logits buffer (rows T − first) and first, the batch's
// first token with logits.
func (s *State) forward(tokens []int, pos int, pass Pass) (backend.Buf, int, error) {
	m, c, e := s.m, &s.m.Config, s.ex
	T := len(tokens)
	if T == 0 {
		return nil, 0, fmt.Errorf("no tokens")
	}
	if pos < 0 || pos+T > s.Ctx {
		return nil, 0, fmt.Errorf("positions %d..%d exceed the context of %d tokens", pos, pos+T-1, s.Ctx)
	}
	s.size(T)
	H, hd := c.HiddenSize, c.HeadDim

	if pass.From == 0 {
		// x = embed_tokens(tokens)
		if err := e.Embed(s.x, m.Embed, tokens); err != nil {
			return nil, 0, err
		}
	} else {
		if pass.From < 0 || pass.From >= len(m.Layers) || len(pass.Input) != T*H {
			return nil, 0, fmt.Errorf("resuming at layer %d of %d with %d floats for %d tokens of %d", pass.From, len(m.Layers), len(pass.Input), T, H)
		}
		e.Write(s.x, pass.Input)
	}
	var host []float32
	for l := pass.From; l < len(m.Layers); l++ {
		L := &m.Layers[l]
		if pass.OnInput != nil {
			host = grow(host, T*H)
			e.Read(host, s.x)
			pass.OnInput(l, host)
		}
		// xb = input_layernorm(x); q, k, v = xb·Wqᵀ (+ b), ...
		e.RMSNorm(s.xb, s.x, L.AttnNorm, c.RMSNormEps)
		e.MatMul([]backend.Buf{s.q, s.k, s.v}, []backend.Matrix{L.Wq, L.Wk, L.Wv}, s.xb)
		if L.Bq != nil {
			e.AddBias(s.q, L.Bq)
			e.AddBias(s.k, L.Bk)
			e.AddBias(s.v, L.Bv)
		}
		// RoPE on q and k, then causal attention over the cache with k, v
		// appended at their positions.
		e.RoPE(s.q, T, hd, pos, m.invFreq)
		e.RoPE(s.k, T, hd, pos, m.invFreq)
		e.Attention(s.attOut, s.q, s.k, s.v, &s.cache, l, pos, T)
		// x += o_proj(attention)
		e.MatMul([]backend.Buf{s.xb}, []backend.Matrix{L.Wo}, s.attOut)
		e.Add(s.x, s.xb)
		// x += down(silu(gate(xb)) * up(xb)), xb = post_attention_layernorm(x),
		// over the records this layer computes.
		e.RMSNorm(s.xb, s.x, L.FFNNorm, c.RMSNormEps)
		if pass.OnFFNInput != nil {
			host = grow(host, T*H)
			e.Read(host, s.xb)
			pass.OnFFNInput(l, host)
		}
		recs := L.FFN
		if lp := pass.Plan; lp != nil && lp[l] != nil {
			recs = lp[l].Records // the ranks computed this step
			if T == 1 && lp[l].Route > 0 {
				var err error
				if recs, err = s.routed(l, L, lp[l]); err != nil {
					return nil, 0, err
				}
			}
		}
		vote := pass.Votes != nil && pass.Votes.counts[l] != nil
		voter, devVote := e.(backend.Voter)
		devVote = devVote && vote
		var act []float32
		if pass.OnAct != nil || (vote && !devVote) {
			s.act = grow(s.act, T*recs.Len())
			act = s.act
		}
		e.FFN(s.ffnOut, s.xb, recs, act)
		if pass.OnAct != nil {
			pass.OnAct(l, act, recs.Len())
		}
		switch {
		case vote && devVote:
			pass.Votes.addDevice(l, voter)
		case vote:
			pass.Votes.Add(l, act, recs.Len())
		}
		e.Add(s.x, s.ffnOut)
	}
	// logits = lm_head(norm(x)), for the last token or all of them.
	first := T - 1
	if pass.All {
		if pass.LogitsFrom < 0 || pass.LogitsFrom >= T {
			return nil, 0, fmt.Errorf("logits from token %d of a batch of %d", pass.LogitsFrom, T)
		}
		first = pass.LogitsFrom
	}
	rows := T - first
	xs := e.Slice(s.x, first*H, rows*H)
	xb := e.Slice(s.xb, 0, rows*H)
	e.RMSNorm(xb, xs, m.Norm, c.RMSNormEps)
	logits := s.sizeLogits(rows)
	e.MatMul([]backend.Buf{logits}, []backend.Matrix{m.Output}, xb)
	return logits, first, nil
}

// NonFiniteError is logits that came out NaN or infinite: weights that
// overflow, almost always a damaged pack, which would otherwise decode as
// a stream of token 0.
type NonFiniteError struct {
	Pack string // the pack's path ("" when unknown)
	Pos  int    // the first position whose logits are not finite
}

func (e *NonFiniteError) Error() string {
	name := e.Pack
	if name == "" {
		name = "the pack"
	}
	return fmt.Sprintf("%s: the model computed non-finite logits (NaN or infinity) at position %d: the pack's weights are likely damaged; check them with `sipack verify %s`", name, e.Pos, name)
}

// finite reports whether every value of x is finite. v·0 is 0 for a finite
// v and NaN otherwise, so the sums stay 0 unless one is not; four sums
// keep the adds independent (a 128k vocabulary costs tens of µs).
func finite(x []float32) bool {
	var a, b, c, d float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a += x[i] * 0
		b += x[i+1] * 0
		c += x[i+2] * 0
		d += x[i+3] * 0
	}
	for ; i < len(x); i++ {
		a += x[i] * 0
	}
	return a+b+c+d == 0
}

// packPath is the model's pack file, "" for a model built without one.
func (m *Model) packPath() string {
	if m.Pack == nil {
		return ""
	}
	return m.Pack.Path
}

// routed returns the records a decode token computes in a layer with a
// router plan: the static ranks, then the lp.Route groups of the other
// loaded ranks its router scores highest from the FFN input in s.xb
// (ties: the lower group first), ascending.
func (s *State) routed(layer int, L *Layer, lp *LayerPlan) (backend.Records, error) {
	e, rs, G := s.ex, &s.route, s.m.RouterGroup
	rank, groups := L.Router.U.Rows(), L.Router.V.Rows()
	if rs.z == nil {
		rs.z = e.Alloc(s.m.Config.HiddenSize) // a rank is at most H
	}
	if rs.scores == nil || rs.scores.Len() < groups {
		rs.scores = e.Alloc(groups)
	}
	z, sc := e.Slice(rs.z, 0, rank), e.Slice(rs.scores, 0, groups)
	e.MatMul([]backend.Buf{z}, []backend.Matrix{L.Router.U}, s.xb)
	e.AddBias(z, L.Router.B)
	e.MatMul([]backend.Buf{sc}, []backend.Matrix{L.Router.V}, z)
	// Candidates: the groups from the first after the static ranks to the
	// last holding a loaded rank.
	first, last := lp.Static/G, (L.Ranks+G-1)/G
	n := last - first
	if n <= 0 {
		return nil, fmt.Errorf("router: no groups after %d static of %d loaded ranks", lp.Static, L.Ranks)
	}
	if rs.recs == nil {
		rs.recs = make([]backend.Records, len(s.m.Layers))
	}
	if gr, ok := e.(backend.GroupRouter); ok {
		// Chosen where the scores are: no wait, no table upload.
		recs, err := gr.RouteGroups(L.FFN, sc, first, n, min(lp.Route, n), lp.Static, G, rs.recs[layer])
		rs.recs[layer] = recs
		return recs, err
	}
	rs.host = grow(rs.host, groups)
	e.Read(rs.host, sc)
	if cap(rs.keys) < n {
		rs.keys, rs.kbuf, rs.sel = make([]uint32, n), make([]uint32, n), make([]int32, 0, n)
	}
	keys := rs.keys[:n]
	for g := range keys {
		keys[g] = scoreKey(rs.host[first+g])
	}
	rs.sel = topKeys(keys, rs.kbuf[:n], min(lp.Route, n), rs.sel[:0])
	for i := range rs.sel {
		rs.sel[i] += int32(first)
	}
	recs, err := backend.GatherGroups(e, L.FFN, lp.Static, G, rs.sel, rs.recs[layer])
	rs.recs[layer] = recs
	return recs, err
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}
