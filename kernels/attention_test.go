package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttention: causal attention through the GEMM (every table
// with one; one token through attentionDecode) against a float64
// computation, for grouped heads, a cache
// holding earlier positions, token counts below and above the GEMM's
// threshold and not multiples of its blocks, and 1, 2 and 3 workers.
func TestAttention(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(91, 92))
		for _, c := range []struct{ heads, kvHeads, hd, pos, T int }{
			{8, 2, 64, 0, 37}, {8, 2, 32, 5, 70}, {4, 4, 64, 3, 30}, {8, 2, 64, 0, 3}, {2, 1, 64, 40, 1}, {8, 8, 64, 0, 25},
			// One token (attentionDecode where the table has AttnValues):
			// a 1B model's heads, eight heads a group over a 128-wide head,
			// a group of three (padded to four), and below attnDecodeMin.
			{32, 8, 64, 300, 1}, {8, 1, 128, 21, 1}, {6, 2, 64, 17, 1}, {8, 2, 64, 5, 1},
		} {
			qDim, kvDim, group := c.heads*c.hd, c.kvHeads*c.hd, c.heads/c.kvHeads
			n := c.pos + c.T
			q := randVec(rng, c.T*qDim)
			keys, values := randVec(rng, n*kvDim), randVec(rng, n*kvDim)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			// The same cache head-major (each key/value head's rows
			// together, room for three more positions), as the CPU
			// backend keeps it.
			ctx := n + 3
			hk, hv := make([]float32, c.kvHeads*ctx*c.hd), make([]float32, c.kvHeads*ctx*c.hd)
			for i := 0; i < n; i++ {
				for g := 0; g < c.kvHeads; g++ {
					copy(hk[g*ctx*c.hd+i*c.hd:], keys[i*kvDim+g*c.hd:i*kvDim+(g+1)*c.hd])
					copy(hv[g*ctx*c.hd+i*c.hd:], values[i*kvDim+g*c.hd:i*kvDim+(g+1)*c.hd])
				}
			}
			for _, run := range []struct {
				threads   int
				headMajor bool
			}{{1, false}, {2, false}, {3, false}, {1, true}, {2, true}} {
				threads := run.threads
				p := NewPool(threads)
				out := randVec(rng, c.T*qDim) // stale values must be overwritten
				if run.headMajor {
					Attention(p, out, q, hk, hv, c.heads, c.kvHeads, c.hd, ctx*c.hd, c.hd, c.pos, c.T, scale)
				} else {
					Attention(p, out, q, keys, values, c.heads, c.kvHeads, c.hd, c.hd, kvDim, c.pos, c.T, scale)
				}
				p.Close()
				for tok := 0; tok < c.T; tok++ {
					for h := 0; h < c.heads; h++ {
						seen := c.pos + tok + 1
						kv := h / group
						w := make([]float64, seen)
						mx := math.Inf(-1)
						for i := range w {
							for d := 0; d < c.hd; d++ {
								w[i] += float64(q[tok*qDim+h*c.hd+d]) * float64(keys[i*kvDim+kv*c.hd+d])
							}
							w[i] *= float64(scale)
							mx = math.Max(mx, w[i])
						}
						var sum float64
						for i := range w {
							w[i] = math.Exp(w[i] - mx)
							sum += w[i]
						}
						for d := 0; d < c.hd; d++ {
							var want float64
							for i := range w {
								want += w[i] / sum * float64(values[i*kvDim+kv*c.hd+d])
							}
							got := out[tok*qDim+h*c.hd+d]
							if math.Abs(float64(got)-want) > 2e-5 {
								t.Fatalf("%+v %+v [t %d, h %d, d %d]: %g, want %g", c, run, tok, h, d, got, want)
							}
						}
					}
				}
			}
		}
	})
}

// TestAttnValues: every table's AttnValues against attnValues4Ref, over
// strided value rows and position counts of 0, 1 and more.
func TestAttnValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 94))
	tested := 0
	for _, tb := range Tables() {
		if tb.AttnValues == nil {
			continue
		}
		tested++
		for _, n := range []int{0, 1, 7, 300} {
			const vstride = 512
			v := randVec(rng, max(n, 1)*vstride)
			var p [4][]float32
			for h := range p {
				p[h] = randVec(rng, max(n, 1))
			}
			got, want := randVec(rng, 256), make([]float32, 256)
			tb.AttnValues(got, &p, v[64:], vstride, n)
			attnValues4Ref(want, &p, v[64:], vstride, n)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("%s n=%d [%d]: %g, reference %g", tb.Name, n, i, got[i], want[i])
				}
			}
		}
	}
	t.Logf("%d table(s) with AttnValues", tested)
}

// TestAttnScores: every table's AttnScores against attnScores4Ref, for
// head widths of 64 and 128 over strided key rows.
func TestAttnScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	tested := 0
	for _, tb := range Tables() {
		if tb.AttnScores == nil {
			continue
		}
		tested++
		for _, hd := range []int{64, 128} {
			for _, n := range []int{0, 1, 5, 300} {
				kstride := 4*hd + 64
				k := randVec(rng, max(n, 1)*kstride)
				q := randVec(rng, 4*hd)
				var got, want [4][]float32
				for h := range got {
					got[h], want[h] = randVec(rng, max(n, 1)), make([]float32, max(n, 1))
					copy(want[h], got[h]) // n = 0 leaves both alone
				}
				tb.AttnScores(&got, q, k[hd:], kstride, hd, n, 0.125)
				attnScores4Ref(&want, q, k[hd:], kstride, hd, n, 0.125)
				for h := range got {
					for i := range want[h] {
						if d := math.Abs(float64(got[h][i] - want[h][i])); d > 1e-4*(1+math.Abs(float64(want[h][i]))) {
							t.Fatalf("%s hd=%d n=%d [h %d, i %d]: %g, reference %g", tb.Name, hd, n, h, i, got[h][i], want[h][i])
						}
					}
				}
			}
		}
	}
	t.Logf("%d table(s) with AttnScores", tested)
}

// TestAttentionDecodeGEMMScores: a table with AttnValues but no AttnScores
// (arm64's) scores a decode token through the GEMM micro-kernel; the
// result matches the plain loop's.
func TestAttentionDecodeGEMMScores(t *testing.T) {
	tested := 0
	for _, tb := range Tables() {
		if tb.AttnValues == nil || tb.Gemm == nil {
			continue
		}
		tested++
		c := *tb
		c.AttnScores = nil
		restore := Use(&c)
		rng := rand.New(rand.NewPCG(97, 98))
		const heads, kvHeads, hd, n = 12, 2, 64, 45 // a group of six: one four and one padded
		q := randVec(rng, heads*hd)
		keys, values := randVec(rng, kvHeads*n*hd), randVec(rng, kvHeads*n*hd)
		p := NewPool(2)
		got, want := make([]float32, heads*hd), make([]float32, heads*hd)
		Attention(p, got, q, keys, values, heads, kvHeads, hd, n*hd, hd, n-1, 1, 0.125)
		attentionLoop(p, want, q, keys, values, heads, kvHeads, hd, n*hd, hd, n-1, 1, 0.125)
		p.Close()
		restore()
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
				t.Fatalf("%s without AttnScores [%d]: %g, loop %g", tb.Name, i, got[i], want[i])
			}
		}
	}
	t.Logf("%d table(s) with AttnValues and a GEMM", tested)
}
