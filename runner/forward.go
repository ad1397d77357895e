package runner

import (
	"fmt"
	"math"

	"github.com/sipack/sipack/kernels"
)

// State is the per-sequence state: KV cache and scratch buffers. Buffers
// sized by T hold one row per token of the current batch.
type State struct {
	m    *Model
	pool *kernels.Pool
	Ctx  int // context length the cache holds

	x      []float32 // (T, hidden) residual stream
	xb     []float32 // (T, hidden) normed input of attention / FFN
	q      []float32 // (T, heads*hd)
	k, v   []float32 // (T, kv*hd)
	att    []float32 // (workers, ctx) attention scores, one row per worker
	attOut []float32 // (T, heads*hd)
	ffnOut []float32 // (T, hidden)
	cos    []float32 // (hd/2)
	sin    []float32 // (hd/2)
	// ropePos is the position cos/sin hold (−1: none): a decode step needs
	// them once, not once per layer.
	ropePos int
	act     []float32 // (T, ranks) FFN activations h, only when a hook wants them

	keyCache []float32 // (layer, ctx, kv*hd)
	valCache []float32 // (layer, ctx, kv*hd)
	Logits   []float32 // (T, vocab) when all positions are wanted, else (vocab)

	// ActHook, if set, is called per layer with the FFN activations h (the
	// input of down_proj) of every token of the batch, as (T, ranks) in the
	// order of the records computed (rank order when no plan is set).
	// Profiling, voting and tests use it; it forces activations to be kept.
	ActHook func(layer int, act []float32, ranks int)

	// Plan, if set, restricts each sparse layer's FFN to its decode set.
	Plan Plan
}

// NewState allocates a KV cache of ctx positions.
func (m *Model) NewState(pool *kernels.Pool, ctx int) (*State, error) {
	c := &m.Config
	if ctx <= 0 || ctx > c.MaxPositionEmbeddings {
		return nil, fmt.Errorf("context length %d out of range [1, %d]", ctx, c.MaxPositionEmbeddings)
	}
	kv := c.NumKVHeads * c.HeadDim
	return &State{
		m: m, pool: pool, Ctx: ctx,
		cos: make([]float32, c.HeadDim/2), sin: make([]float32, c.HeadDim/2), ropePos: -1,
		keyCache: make([]float32, c.NumLayers*ctx*kv),
		valCache: make([]float32, c.NumLayers*ctx*kv),
	}, nil
}

// CacheBytes is the size of the KV cache.
func (s *State) CacheBytes() int { return 4 * (len(s.keyCache) + len(s.valCache)) }

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// Forward runs one token at position pos and returns the next-token logits.
func (s *State) Forward(token, pos int) ([]float32, error) {
	return s.ForwardBatch([]int{token}, pos, false)
}

// ForwardBatch runs tokens at positions pos, pos+1, ... through the model,
// every layer over the whole batch (prefill reads each weight once per batch).
// It returns the logits of the last token, or of every token when all is set
// ((T, vocab)).
func (s *State) ForwardBatch(tokens []int, pos int, all bool) ([]float32, error) {
	m, c, p := s.m, &s.m.Config, s.pool
	T := len(tokens)
	if T == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	if pos < 0 || pos+T > s.Ctx {
		return nil, fmt.Errorf("positions %d..%d exceed the context of %d tokens", pos, pos+T-1, s.Ctx)
	}
	H, hd := c.HiddenSize, c.HeadDim
	qDim, kvDim := c.NumHeads*hd, c.NumKVHeads*hd
	group := c.NumHeads / c.NumKVHeads
	s.x, s.xb = grow(s.x, T*H), grow(s.xb, T*H)
	s.q, s.k, s.v = grow(s.q, T*qDim), grow(s.k, T*kvDim), grow(s.v, T*kvDim)
	s.attOut, s.ffnOut = grow(s.attOut, T*qDim), grow(s.ffnOut, T*H)

	// x = embed_tokens(tokens)
	for t, tok := range tokens {
		if tok < 0 || tok >= c.VocabSize {
			return nil, fmt.Errorf("token id %d outside the vocabulary of %d", tok, c.VocabSize)
		}
		kernels.ToF32(s.x[t*H:(t+1)*H], m.Embed.Row(tok), m.Embed.DType)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	for l := range m.Layers {
		L := &m.Layers[l]
		// xb = input_layernorm(x); q, k, v = xb·Wqᵀ (+ b), ...
		for t := 0; t < T; t++ {
			kernels.RMSNorm(s.xb[t*H:(t+1)*H], s.x[t*H:(t+1)*H], L.AttnNorm, c.RMSNormEps)
		}
		kernels.MatMulShared(p, [][]float32{s.q, s.k, s.v}, []*kernels.Weight{&L.Wq, &L.Wk, &L.Wv}, s.xb)
		if L.Bq != nil {
			addBias(s.q, L.Bq)
			addBias(s.k, L.Bk)
			addBias(s.v, L.Bv)
		}
		// RoPE on q and k, then append k, v to the cache at their positions.
		kc := s.keyCache[l*s.Ctx*kvDim : (l+1)*s.Ctx*kvDim]
		vc := s.valCache[l*s.Ctx*kvDim : (l+1)*s.Ctx*kvDim]
		for t := 0; t < T; t++ {
			s.ropeAngles(pos + t)
			for h := 0; h < c.NumHeads; h++ {
				kernels.RoPE(s.q[t*qDim+h*hd:t*qDim+(h+1)*hd], s.cos, s.sin)
			}
			for h := 0; h < c.NumKVHeads; h++ {
				kernels.RoPE(s.k[t*kvDim+h*hd:t*kvDim+(h+1)*hd], s.cos, s.sin)
			}
			copy(kc[(pos+t)*kvDim:], s.k[t*kvDim:(t+1)*kvDim])
			copy(vc[(pos+t)*kvDim:], s.v[t*kvDim:(t+1)*kvDim])
		}
		// Causal attention: query head h reads kv head h/group over positions
		// ≤ its own; (token, head) pairs are split over the workers, each
		// with its own score buffer.
		s.att = grow(s.att, p.Workers()*s.Ctx)
		p.Run(T*c.NumHeads, func(lo, hi, worker int) {
			scores := s.att[worker*s.Ctx : (worker+1)*s.Ctx]
			for th := lo; th < hi; th++ {
				t, h := th/c.NumHeads, th%c.NumHeads
				n := pos + t + 1
				q := s.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
				kvh := (h / group) * hd
				att := scores[:n]
				for i := 0; i < n; i++ {
					att[i] = kernels.DotF32(q, kc[i*kvDim+kvh:i*kvDim+kvh+hd]) * scale
				}
				kernels.Softmax(att)
				out := s.attOut[t*qDim+h*hd : t*qDim+(h+1)*hd]
				clear(out)
				for i := 0; i < n; i++ {
					kernels.AxpyF32(out, att[i], vc[i*kvDim+kvh:i*kvDim+kvh+hd])
				}
			}
		})
		// x += o_proj(attention)
		kernels.MatMul(p, s.xb, &L.Wo, s.attOut)
		for i := range s.x {
			s.x[i] += s.xb[i]
		}
		// x += down(silu(gate(xb)) * up(xb)), xb = post_attention_layernorm(x),
		// over the records this layer computes.
		for t := 0; t < T; t++ {
			kernels.RMSNorm(s.xb[t*H:(t+1)*H], s.x[t*H:(t+1)*H], L.FFNNorm, c.RMSNormEps)
		}
		blocks, n := L.FFNBlocks, L.Ranks
		if s.Plan != nil && s.Plan[l] != nil {
			blocks, n = s.Plan[l].Blocks, len(s.Plan[l].Ranks) // the ranks computed this step
		}
		var act []float32
		if s.ActHook != nil {
			s.act = grow(s.act, T*n)
			act = s.act
		}
		clear(s.ffnOut)
		kernels.FFNRecords(p, s.ffnOut, blocks, m.RecDType, H, s.xb, act)
		if s.ActHook != nil {
			s.ActHook(l, act, n)
		}
		for i := range s.x {
			s.x[i] += s.ffnOut[i]
		}
	}
	// logits = lm_head(norm(x)), for the last token or all of them.
	first := T - 1
	if all {
		first = 0
	}
	rows := T - first
	for t := first; t < T; t++ {
		kernels.RMSNorm(s.xb[(t-first)*H:(t-first+1)*H], s.x[t*H:(t+1)*H], m.Norm, c.RMSNormEps)
	}
	s.Logits = grow(s.Logits, rows*c.VocabSize)
	kernels.MatMul(p, s.Logits, &m.Output, s.xb[:rows*H])
	return s.Logits, nil
}

func addBias(x, b []float32) {
	for i := range x {
		x[i] += b[i%len(b)]
	}
}

// ropeAngles fills cos/sin for position pos. The angle is computed in float32
// from float32 frequencies, as the HF reference does.
func (s *State) ropeAngles(pos int) {
	if pos == s.ropePos {
		return
	}
	s.ropePos = pos
	for i, f := range s.m.invFreq {
		a := float32(pos) * float32(f)
		s.cos[i] = float32(math.Cos(float64(a)))
		s.sin[i] = float32(math.Sin(float64(a)))
	}
}
