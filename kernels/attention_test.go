package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttention: causal attention through the GEMM (every table
// with one) against a float64 computation, for grouped heads, a cache
// holding earlier positions, token counts below and above the GEMM's
// threshold and not multiples of its blocks, and 1, 2 and 3 workers.
func TestAttention(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(91, 92))
		for _, c := range []struct{ heads, kvHeads, hd, pos, T int }{
			{8, 2, 64, 0, 37}, {8, 2, 32, 5, 70}, {4, 4, 64, 3, 30}, {8, 2, 64, 0, 3}, {2, 1, 64, 40, 1}, {8, 8, 64, 0, 25},
		} {
			qDim, kvDim, group := c.heads*c.hd, c.kvHeads*c.hd, c.heads/c.kvHeads
			n := c.pos + c.T
			q := randVec(rng, c.T*qDim)
			keys, values := randVec(rng, n*kvDim), randVec(rng, n*kvDim)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			for _, threads := range []int{1, 2, 3} {
				p := NewPool(threads)
				out := randVec(rng, c.T*qDim) // stale values must be overwritten
				Attention(p, out, q, keys, values, c.heads, c.kvHeads, c.hd, c.pos, c.T, scale)
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
								t.Fatalf("%+v threads %d [t %d, h %d, d %d]: %g, want %g", c, threads, tok, h, d, got, want)
							}
						}
					}
				}
			}
		}
	})
}
