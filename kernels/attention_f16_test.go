package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// f16Vec is n random halves: normal values of unit scale, their float32
// widening beside them.
func f16Vec(rng *rand.Rand, n int) ([]uint16, []float32) {
	h, f := make([]uint16, n), make([]float32, n)
	for i := range h {
		h[i] = F32ToF16(float32(rng.NormFloat64()))
		f[i] = F16ToF32(h[i])
	}
	return h, f
}

// TestF32ToF16s: every table's rounding of keys and values is the
// reference's to the bit, over ordinary values, ties, the half's
// subnormals and underflow, overflow to infinity, infinities and zeros,
// for lengths around the kernels' eight a step.
func TestF32ToF16s(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	src := make([]float32, 0, 4096)
	for range 1000 {
		src = append(src, float32(rng.NormFloat64()), float32(rng.NormFloat64()*1e-5), float32(rng.NormFloat64()*7e4))
		// Exact ties between two halves (and their neighbours): a 10-bit
		// mantissa, then a one in the bit below it.
		b := uint32(rng.IntN(30)+113)<<23 | uint32(rng.IntN(1024))<<13 | 1<<12
		src = append(src, math.Float32frombits(b), math.Float32frombits(b+1), math.Float32frombits(b-1))
	}
	src = append(src, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 65504, 65520, 65519.99, 5.96e-8, 2.98e-8, 2.99e-8, 1e-30)
	want := make([]uint16, len(src))
	f32ToF16sRef(want, src)
	forTables(t, func(t *testing.T, tb *Table) {
		for _, n := range []int{0, 1, 7, 8, 9, 31, len(src)} {
			got := make([]uint16, n+1)
			got[n] = 0xabcd // past the end: untouched
			F32ToF16s(got[:n], src[:n])
			for i := 0; i < n; i++ {
				if got[i] != want[i] {
					t.Fatalf("n=%d [%d] %g (%#08x): %#04x, reference %#04x", n, i, src[i], math.Float32bits(src[i]), got[i], want[i])
				}
			}
			if got[n] != 0xabcd {
				t.Fatalf("n=%d: wrote past the end", n)
			}
		}
	})
}

// TestAttnF16Kernels: every table's f16 decode scores and values kernels
// against attnScores4F16Ref and attnValues4F16Ref, over strided rows,
// head widths of 64 and 128 and position counts of 0, 1 and more.
func TestAttnF16Kernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(103, 104))
	scores, values := 0, 0
	for _, tb := range Tables() {
		f := attnF16Of(tb)
		if f.scores != nil {
			scores++
			for _, hd := range []int{64, 128} {
				for _, n := range []int{0, 1, 5, 300} {
					kstride := 4*hd + 64
					k, _ := f16Vec(rng, max(n, 1)*kstride)
					q := randVec(rng, 4*hd)
					var got, want [4][]float32
					for h := range got {
						got[h], want[h] = randVec(rng, max(n, 1)), make([]float32, max(n, 1))
						copy(want[h], got[h]) // n = 0 leaves both alone
					}
					f.scores(&got, q, k[hd:], kstride, hd, n, 0.125)
					attnScores4F16Ref(&want, q, k[hd:], kstride, hd, n, 0.125)
					for h := range got {
						for i := range want[h] {
							if d := math.Abs(float64(got[h][i] - want[h][i])); d > 1e-4*(1+math.Abs(float64(want[h][i]))) {
								t.Fatalf("%s scores hd=%d n=%d [h %d, i %d]: %g, reference %g", tb.Name, hd, n, h, i, got[h][i], want[h][i])
							}
						}
					}
				}
			}
		}
		if f.values != nil {
			values++
			for _, n := range []int{0, 1, 7, 300} {
				const vstride = 512
				v, _ := f16Vec(rng, max(n, 1)*vstride)
				var p [4][]float32
				for h := range p {
					p[h] = randVec(rng, max(n, 1))
				}
				got, want := randVec(rng, 256), make([]float32, 256)
				f.values(got, &p, v[64:], vstride, n)
				attnValues4F16Ref(want, &p, v[64:], vstride, n)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
						t.Fatalf("%s values n=%d [%d]: %g, reference %g", tb.Name, n, i, got[i], want[i])
					}
				}
			}
		}
	}
	t.Logf("%d table(s) with f16 scores, %d with f16 values", scores, values)
}

// attnCase is an attention shape: query and key/value heads, head size,
// cached positions and new tokens.
type attnCase struct{ heads, kvHeads, hd, pos, T int }

// attnCases are TestAttention's shapes: the GEMM's paths and the plain
// loop's, and one token through attentionDecode.
var attnCases = []attnCase{
	{8, 2, 64, 0, 37}, {8, 2, 32, 5, 70}, {4, 4, 64, 3, 30}, {8, 2, 64, 0, 3}, {2, 1, 64, 40, 1}, {8, 8, 64, 0, 25},
	{32, 8, 64, 300, 1}, {8, 1, 128, 21, 1}, {6, 2, 64, 17, 1}, {8, 2, 64, 5, 1},
}

// attention64 is causal attention in float64 over a head-major cache
// (head g's row i at g·ctx·hd + i·hd) whose elements at is, for token tok
// and head h: each position's weight and the output.
func attention64(c attnCase, q []float32, key, val func(i int) float64, ctx, tok, h int, scale float32) (w []float64, out []float64) {
	qDim, seen, kv := c.heads*c.hd, c.pos+tok+1, h/(c.heads/c.kvHeads)
	w, out = make([]float64, seen), make([]float64, c.hd)
	mx := math.Inf(-1)
	for i := range w {
		for d := 0; d < c.hd; d++ {
			w[i] += float64(q[tok*qDim+h*c.hd+d]) * key(kv*ctx*c.hd+i*c.hd+d)
		}
		w[i] *= float64(scale)
		mx = math.Max(mx, w[i])
	}
	var sum float64
	for i := range w {
		w[i] = math.Exp(w[i] - mx)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
		for d := range out {
			out[d] += w[i] * val(kv*ctx*c.hd+i*c.hd+d)
		}
	}
	return w, out
}

// TestAttentionF16: AttentionF16 on every table (the GEMM, the decode
// kernels, the plain loop) against float64 attention over the cache's
// halves widened, to TestAttention's 2e-5; and against Attention over the
// float32 keys and values the halves were rounded from, within the bound
// the rounding allows: each key and value is within u = 2⁻¹¹ of its
// own magnitude, so each score moves by at most δ = scale·Σ_d |q_d k_d|·u,
// each softmax weight by a factor within e^{±2δ}, and each output by at
// most u·max|v| + (e^{2δ}−1)·Σ_i w_i |v_i|.
func TestAttentionF16(t *testing.T) {
	const u = 1.0 / 2048
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(105, 106))
		for _, c := range attnCases {
			qDim, n := c.heads*c.hd, c.pos+c.T
			ctx := n + 3 // head-major, room for three more positions
			q := randVec(rng, c.T*qDim)
			kf, vf := randVec(rng, c.kvHeads*ctx*c.hd), randVec(rng, c.kvHeads*ctx*c.hd)
			kh, vh := make([]uint16, len(kf)), make([]uint16, len(vf))
			F32ToF16s(kh, kf)
			F32ToF16s(vh, vf)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			want32 := make([]float32, c.T*qDim)
			p := NewPool(2)
			Attention(p, want32, q, kf, vf, c.heads, c.kvHeads, c.hd, ctx*c.hd, c.hd, c.pos, c.T, scale)
			p.Close()
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				out := randVec(rng, c.T*qDim) // stale values must be overwritten
				AttentionF16(p, out, q, kh, vh, c.heads, c.kvHeads, c.hd, ctx*c.hd, c.hd, c.pos, c.T, scale)
				p.Close()
				for tok := 0; tok < c.T; tok++ {
					for h := 0; h < c.heads; h++ {
						_, want := attention64(c, q, func(i int) float64 { return float64(F16ToF32(kh[i])) }, func(i int) float64 { return float64(F16ToF32(vh[i])) }, ctx, tok, h, scale)
						w, _ := attention64(c, q, func(i int) float64 { return float64(kf[i]) }, func(i int) float64 { return float64(vf[i]) }, ctx, tok, h, scale)
						kv := h / (c.heads / c.kvHeads)
						var delta, vmax, wv float64
						for i := range w {
							var s float64
							for d := 0; d < c.hd; d++ {
								s += math.Abs(float64(q[tok*qDim+h*c.hd+d]) * float64(kf[kv*ctx*c.hd+i*c.hd+d]))
							}
							delta = math.Max(delta, float64(scale)*s*u)
						}
						for d := 0; d < c.hd; d++ {
							got := out[tok*qDim+h*c.hd+d]
							if math.Abs(float64(got)-want[d]) > 2e-5 {
								t.Fatalf("%+v threads %d [t %d, h %d, d %d]: %g, want %g", c, threads, tok, h, d, got, want[d])
							}
							vmax, wv = 0, 0
							for i := range w {
								x := math.Abs(float64(vf[kv*ctx*c.hd+i*c.hd+d]))
								vmax, wv = math.Max(vmax, x), wv+w[i]*x
							}
							bound := u*vmax + math.Expm1(2*delta)*wv + 2e-5
							if d32 := math.Abs(float64(got - want32[tok*qDim+h*c.hd+d])); d32 > bound {
								t.Fatalf("%+v [t %d, h %d, d %d]: f16 %g, f32 %g: off by %g, bound %g", c, tok, h, d, got, want32[tok*qDim+h*c.hd+d], d32, bound)
							}
						}
					}
				}
			}
		}
	})
}

// TestAttentionF16DecodeGEMMScores: a table with decode kernels but no
// scores kernel (arm64's) scores an f16 decode token through the GEMM
// over rows of halves; the result matches the plain loop's.
func TestAttentionF16DecodeGEMMScores(t *testing.T) {
	tested := 0
	for _, tb := range Tables() {
		if attnF16Of(tb).values == nil || tb.Gemm == nil {
			continue
		}
		tested++
		c := *tb
		c.AttnScores = nil
		restore := Use(&c)
		rng := rand.New(rand.NewPCG(107, 108))
		const heads, kvHeads, hd, n = 12, 2, 64, 45 // a group of six: one four and one padded
		q := randVec(rng, heads*hd)
		keys, _ := f16Vec(rng, kvHeads*n*hd)
		values, _ := f16Vec(rng, kvHeads*n*hd)
		p := NewPool(2)
		got, want := make([]float32, heads*hd), make([]float32, heads*hd)
		AttentionF16(p, got, q, keys, values, heads, kvHeads, hd, n*hd, hd, n-1, 1, 0.125)
		attentionLoop(p, want, q, keys, values, heads, kvHeads, hd, n*hd, hd, n-1, 1, 0.125)
		p.Close()
		restore()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
				t.Fatalf("%s without AttnScores [%d]: %g, loop %g", tb.Name, i, got[i], want[i])
			}
		}
	}
	t.Logf("%d table(s) with f16 decode kernels and a GEMM", tested)
}

// BenchmarkAttentionDecodeF16: one decode token's attention over a 1B
// layer's cache in f32 and in f16, on the active table and on AVX2's.
func BenchmarkAttentionDecodeF16(b *testing.B) {
	const heads, kv, hd = 32, 8, 64
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewPool(2)
	defer p.Close()
	for _, n := range []int{1024, 4096} {
		kf, vf := randVec(rng, n*kv*hd), randVec(rng, n*kv*hd)
		kh, vh := make([]uint16, len(kf)), make([]uint16, len(vf))
		F32ToF16s(kh, kf)
		F32ToF16s(vh, vf)
		q, out := randVec(rng, heads*hd), make([]float32, heads*hd)
		for _, tb := range Tables()[1:] {
			b.Run(fmt.Sprintf("n%d/%s/f32", n, tb.Name), func(b *testing.B) {
				defer Use(tb)()
				for i := 0; i < b.N; i++ {
					Attention(p, out, q, kf, vf, heads, kv, hd, n*hd, hd, n-1, 1, 0.125)
				}
			})
			b.Run(fmt.Sprintf("n%d/%s/f16", n, tb.Name), func(b *testing.B) {
				defer Use(tb)()
				for i := 0; i < b.N; i++ {
					AttentionF16(p, out, q, kh, vh, heads, kv, hd, n*hd, hd, n-1, 1, 0.125)
				}
			})
		}
	}
}
