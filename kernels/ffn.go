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
	recBytes := 3 * H * dt.Size()
	type span struct{ block, first int } // first: global record index of the block's first record
	var spans []span
	total := 0
	for i, b := range blocks {
		spans = append(spans, span{i, total})
		total += len(b) / recBytes
	}
	partial := p.scratch(p.Workers() * T * H)
	clear(partial)
	p.Run(total, func(lo, hi, worker int) {
		acc := partial[worker*T*H : (worker+1)*T*H]
		bi := 0
		for j := lo; j < hi; j++ {
			for bi+1 < len(spans) && spans[bi+1].first <= j {
				bi++
			}
			b := blocks[spans[bi].block]
			k := j - spans[bi].first
			rec := b[k*recBytes : (k+1)*recBytes]
			es := dt.Size()
			gate, up, down := rec[:H*es], rec[H*es:2*H*es], rec[2*H*es:]
			for t := 0; t < T; t++ {
				xt := x[t*H : (t+1)*H]
				h := SiLU(Dot(gate, dt, xt)) * Dot(up, dt, xt)
				if act != nil {
					act[t*total+j] = h
				}
				Axpy(acc[t*H:(t+1)*H], h, down, dt)
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
