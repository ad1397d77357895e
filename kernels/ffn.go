package kernels

import (
	"github.com/sipack/sipack/format"
)

// FFNRecords is the SwiGLU FFN over a set of neuron records for T tokens:
// for every record j (gate row g_j | up row u_j | down column d_j, each H
// values) and token t,
//
//	h[t, j] = silu(g_j · x_t) · (u_j · x_t)
//	y_t    += h[t, j] · d_j
//
// blocks are runs of contiguous records (a band's slice, or a dense layer's
// whole tensor); records are numbered across blocks in order. x is [T, H],
// y is [T, H] and is accumulated into. If act is not nil it receives h as
// [T, total records]. Records are split over the pool; each worker
// accumulates its own partial y, and the partials are summed once at the end.
func FFNRecords(p *Pool, y []float32, blocks [][]byte, dt format.DType, H int, x []float32, act []float32) {
	T := len(x) / H
	rowBytes, _ := dt.RowBytes(H)
	recBytes := 3 * rowBytes
	type span struct{ block, first int } // first: global record index of the block's first record
	var spans []span
	total := 0
	for i, b := range blocks {
		spans = append(spans, span{i, total})
		total += len(b) / recBytes
	}
	partial := p.scratch(p.Workers() * T * H)
	clear(partial)
	var acts []Q8Act
	if dt.Quantized() && QuantActivations {
		acts = quantizeTokens(x, H, T)
	}
	p.Run(total, func(lo, hi, worker int) {
		acc := partial[worker*T*H : (worker+1)*T*H]
		// Tiles of 16 records × 16 tokens keep the records, the token inputs
		// and their accumulators in cache during prefill; decode (T = 1)
		// streams the records once.
		const recBlock, tokTile = 16, 16
		var g, u [4]float32
		bi := 0
		for j0 := lo; j0 < hi; j0 += recBlock {
			j1 := min(j0+recBlock, hi)
			for t0 := 0; t0 < T; t0 += tokTile {
				t1 := min(t0+tokTile, T)
				for j := j0; j < j1; j++ {
					for bi > 0 && spans[bi].first > j {
						bi--
					}
					for bi+1 < len(spans) && spans[bi+1].first <= j {
						bi++
					}
					b := blocks[spans[bi].block]
					k := j - spans[bi].first
					rec := b[k*recBytes : (k+1)*recBytes]
					gate, up, down := rec[:rowBytes], rec[rowBytes:2*rowBytes], rec[2*rowBytes:]
					t := t0
					if dt == format.BF16 {
						for ; t+4 <= t1; t += 4 {
							x0, x1, x2, x3 := x[t*H:(t+1)*H], x[(t+1)*H:(t+2)*H], x[(t+2)*H:(t+3)*H], x[(t+3)*H:(t+4)*H]
							dot4BF16(gate, x0, x1, x2, x3, &g)
							dot4BF16(up, x0, x1, x2, x3, &u)
							for q := 0; q < 4; q++ {
								h := SiLU(g[q]) * u[q]
								if act != nil {
									act[(t+q)*total+j] = h
								}
								Axpy(acc[(t+q)*H:(t+q+1)*H], h, down, dt)
							}
						}
					}
					for ; t < t1; t++ {
						var h float32
						if acts != nil {
							h = SiLU(DotQ8Act(gate, dt, &acts[t])) * DotQ8Act(up, dt, &acts[t])
						} else {
							xt := x[t*H : (t+1)*H]
							h = SiLU(Dot(gate, dt, xt)) * Dot(up, dt, xt)
						}
						if act != nil {
							act[t*total+j] = h
						}
						Axpy(acc[t*H:(t+1)*H], h, down, dt)
					}
				}
			}
		}
	})
	for w := 0; w < p.Workers(); w++ {
		acc := partial[w*T*H : (w+1)*T*H]
		for i, v := range acc {
			y[i] += v
		}
	}
}
