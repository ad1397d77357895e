//go:build cuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

// TestFusedDecode: decode steps issued as the runner issues them (norm,
// q/k/v, RoPE on q and k, attention, o_proj and the residual add, norm,
// FFN and the residual add; then the final norm and the output matrix)
// run fused in 2 + 6 launches a layer, and give what the same operations
// give launched one by one (a zero-length Read after each launches what is
// held back), with graphs, after a prompt that leaves the decode steps'
// keys across a chunk edge, for every dtype and a grouped-query shape, with
// float32 and f16 caches.
func TestFusedDecode(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(11, 11))
	const layers, vocab, n, prompt, steps = 2, 40, 50, 30, 4
	type shape struct{ H, heads, kvHeads, hd int }
	for di, dt := range dtypes {
		for si, sh := range []shape{{64, 4, 2, 16}, {96, 6, 2, 32}} {
			kv := backend.KVType((di + si) % 2)
			H, hd := sh.H, sh.hd
			qDim, kvDim := sh.heads*hd, sh.kvHeads*hd
			mat := func(rows, cols int) backend.Matrix {
				b, _ := randRow(rng, dt, rows*cols)
				m, err := p.gd.Matrix(b, dt, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			// Norm weights of about scale: attention scores of a few units
			// (q·k/√hd ≈ H·scale²), so no key takes all the softmax.
			vec := func(scale float32) backend.Vector {
				v := randVec(rng, H)
				for i := range v {
					v[i] = scale * (1 + 0.2*v[i]*v[i])
				}
				g, _ := p.gd.Vector(v)
				return g
			}
			emb, _ := randRow(rng, format.BF16, vocab*H)
			table, _ := p.gd.Matrix(emb, format.BF16, vocab, H)
			type layer struct {
				wq, wk, wv, wo backend.Matrix
				an, fn         backend.Vector
				recs           backend.Records
			}
			ls := make([]layer, layers)
			for l := range ls {
				c := newFFN(rng, dt, H, n, 20)
				recs, err := p.gd.Records(c.recordBlocks(dt, H, format.Interleaved), dt, H)
				if err != nil {
					t.Fatal(err)
				}
				ls[l] = layer{mat(qDim, H), mat(kvDim, H), mat(kvDim, H), mat(H, qDim), vec(float32(math.Sqrt(2 / float64(H)))), vec(1), recs}
			}
			out, norm := mat(vocab, H), vec(1)
			inv := make([]float64, hd/2)
			for i := range inv {
				inv[i] = 1 / math.Pow(10000, float64(2*i)/float64(hd))
			}
			run := func(fused bool) ([][]float32, int64) {
				ex, _ := p.gd.NewExec(kernels.NewPool(1))
				e := ex.(*Exec)
				defer e.Close()
				const ctx = prompt + steps
				cache := &backend.KVCache{Layers: layers, Ctx: ctx, KVDim: kvDim, Heads: sh.heads, HeadDim: hd, Type: kv}
				cache.Keys, cache.Values = e.Alloc(cache.Floats()), e.Alloc(cache.Floats())
				X, XB, Y := e.Alloc(prompt*H), e.Alloc(prompt*H), e.Alloc(prompt*H)
				Q, K, V, ATT := e.Alloc(prompt*qDim), e.Alloc(prompt*kvDim), e.Alloc(prompt*kvDim), e.Alloc(prompt*qDim)
				logits := e.Alloc(vocab)
				sets := make([]backend.Records, layers)
				for l := range sets {
					var err error
					if sets[l], err = e.Gather(ls[l].recs, []int{0, 1, 2, 7, 30, 49}, 3, true); err != nil {
						t.Fatal(err)
					}
				}
				one := func() {
					if !fused {
						e.Read(nil, X) // launches what is held back
					}
				}
				var outs [][]float32
				var launches int64
				toks := make([]int, prompt)
				for i := range toks {
					toks[i] = (i * 7) % vocab
				}
				for pos := 0; pos < prompt+steps; pos++ {
					T := 1
					if pos == 0 {
						T = prompt
					} else if pos < prompt {
						continue
					}
					x, xb, y := e.Slice(X, 0, T*H), e.Slice(XB, 0, T*H), e.Slice(Y, 0, T*H)
					q, k, v, att := e.Slice(Q, 0, T*qDim), e.Slice(K, 0, T*kvDim), e.Slice(V, 0, T*kvDim), e.Slice(ATT, 0, T*qDim)
					before := p.gd.Counters()
					if err := e.Embed(x, table, toks[:T]); err != nil {
						t.Fatal(err)
					}
					for l := range ls {
						L := &ls[l]
						e.RMSNorm(xb, x, L.an, 1e-5)
						one()
						e.MatMul([]backend.Buf{q, k, v}, []backend.Matrix{L.wq, L.wk, L.wv}, xb)
						one()
						e.RoPE(q, T, hd, pos, inv)
						one()
						e.RoPE(k, T, hd, pos, inv)
						one()
						e.Attention(att, q, k, v, cache, l, pos, T)
						one()
						e.MatMul([]backend.Buf{xb}, []backend.Matrix{L.wo}, att)
						one()
						e.Add(x, xb)
						one()
						e.RMSNorm(xb, x, L.fn, 1e-5)
						one()
						e.FFN(y, xb, sets[l], nil)
						one()
						e.Add(x, y)
						one()
					}
					if T > 1 {
						e.Read(nil, x)
						continue
					}
					e.RMSNorm(xb, x, norm, 1e-5)
					one()
					e.MatMul([]backend.Buf{logits}, []backend.Matrix{out}, xb)
					o1, o2 := make([]float32, vocab), make([]float32, H)
					e.Read(o1, logits)
					e.Read(o2, xb)
					if err := e.Err(); err != nil {
						t.Fatal(err)
					}
					launches = p.gd.Counters().Sub(before).Launches
					outs = append(outs, append(o1, o2...))
				}
				return outs, launches
			}
			want, one := run(false)
			got, fused := run(true)
			if w := int64(2 + 6*layers); fused != w {
				t.Errorf("%v %v %v cache: %d launches a decode step fused, want %d (%d one by one)", dt, sh, kv, fused, w, one)
			}
			for s := range want {
				var big float64
				for _, v := range want[s] {
					big = max(big, math.Abs(float64(v)))
				}
				for i := range want[s] {
					if d := math.Abs(float64(got[s][i] - want[s][i])); !(d <= 1e-5*big) {
						t.Fatalf("%v %v %v cache, decode step %d [%d]: fused %g, one by one %g", dt, sh, kv, s, i, got[s][i], want[s][i])
					}
				}
			}
		}
	}
}

// A decode token's attention over a long context spreads each head's keys
// over blocks (cudaplan.AttSplits) and merges their parts: the fused
// launch must equal sip_rope, sip_kv_append and the unsplit sip_attention
// at 2, 4 and 16 splits (the last with splits left empty), for both cache
// types, and leave the head counters at zero for the next launch.
func TestSplitAttention(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(12, 12))
	const heads, kvHeads, hd = 4, 2, 32
	qDim, kvDim := heads*hd, kvHeads*hd
	inv := make([]float64, hd/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(10000, float64(2*i)/float64(hd))
	}
	for _, pos := range []int{300, 1000, 4100} {
		splits := cudaplan.AttSplits(pos + 1)
		for _, kv := range []backend.KVType{backend.KVF32, backend.KVF16} {
			c := backend.KVCache{Layers: 1, Ctx: pos + 1, KVDim: kvDim, Heads: heads, HeadDim: hd, Type: kv}
			fill := func() []float32 {
				x := randVec(rng, pos*kvDim)
				for i := range x {
					x[i] *= 0.3
				}
				out := make([]float32, c.Floats())
				if kv == backend.KVF32 {
					copy(out, x)
					return out
				}
				h := make([]uint16, 2*len(out))
				kernels.F32ToF16s(h[:len(x)], x)
				return unsafe.Slice((*float32)(unsafe.Pointer(&h[0])), len(out))
			}
			keys, vals := fill(), fill()
			q, k, v := randVec(rng, qDim), randVec(rng, kvDim), randVec(rng, kvDim)
			run := func(fused bool) []float32 {
				e := p.ge
				cc := c
				cc.Keys, _ = p.bufs(t, keys)
				cc.Values, _ = p.bufs(t, vals)
				gq, _ := p.bufs(t, q)
				gk, _ := p.bufs(t, k)
				gv, _ := p.bufs(t, v)
				out, _ := p.bufs(t, make([]float32, qDim))
				before := p.gd.Counters()
				e.RoPE(gq, 1, hd, pos, inv)
				if !fused {
					e.Read(nil, gq) // launches what is held back
				}
				e.RoPE(gk, 1, hd, pos, inv)
				if !fused {
					e.Read(nil, gq)
				}
				e.Attention(out, gq, gk, gv, &cc, 0, pos, 1)
				got := p.read(t, out)
				if n := p.gd.Counters().Sub(before).Launches; fused && n != 1 {
					t.Fatalf("pos %d: %d launches fused, want 1", pos, n)
				}
				return got
			}
			want, got := run(false), run(true)
			var big float64
			for _, w := range want {
				big = max(big, math.Abs(float64(w)))
			}
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*big) {
					t.Fatalf("pos %d (%d splits), %v cache [%d]: split %g, unsplit %g", pos, splits, kv, i, got[i], want[i])
				}
			}
			if p.ge.attCount == nil {
				t.Fatalf("pos %d: no split counters: %d splits", pos, splits)
			}
			counts := make([]int32, heads)
			done := p.gd.enter()
			err := p.gd.drv.dtoh(unsafe.Pointer(&counts[0]), p.ge.attCount.p, 4*heads)
			done()
			if err != nil || slices.ContainsFunc(counts, func(c int32) bool { return c != 0 }) {
				t.Fatalf("pos %d: head counters %v after the launch (%v)", pos, counts, err)
			}
		}
	}
}
