package kernels

import "github.com/sipack/sipack/format"

// kquantAVX2 gives t the AVX2 K-quant kernels (kquant_amd64.s): the
// integer dots against Q8 activations — a row, a pair of rows (the decode
// FFN's gate and up, the matvecs' rows in pairs), a row against four
// tokens (the prefill) — with the integer path on, as for Q4_0; and the
// Q4_K row axpy of the down projection. Q8 blocks of 32 are Q4_K's
// sub-blocks and two of Q6_K's, so the activations are the ones Q4_0 uses
// (no Q8_K: llama.cpp's per-256 scale with sums per 16 would save one
// float multiply a block of 32 and round the activations more coarsely).
func kquantAVX2(t *Table) {
	q4k, q6k := &t.ops[format.Q4_K], &t.ops[format.Q6_K]
	q4k.ActDot, q6k.ActDot = true, true
	q4k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_ = w[nsb*q4KBytes-1]
		return dotQ4KQ8AVX2(&w[0], &a.Q[0], &a.D[0], &a.S[0], nsb)
	}
	q4k.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		nsb := len(act.D) / 8
		if nsb == 0 {
			*out = [2]float32{}
			return
		}
		_, _ = a[nsb*q4KBytes-1], b[nsb*q4KBytes-1]
		dot2Q4KQ8AVX2(&a[0], &b[0], &act.Q[0], &act.D[0], &act.S[0], nsb, out, prefetchFrom(next))
	}
	q4k.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		nsb := len(a0.D) / 8
		if nsb == 0 {
			return out
		}
		_ = w[nsb*q4KBytes-1]
		x := [4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}
		d := [4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}
		s := [4]*int32{&a0.S[0], &a1.S[0], &a2.S[0], &a3.S[0]}
		dot4Q4KQ8AVX2(&w[0], &x, &d, &s, nsb, &out)
		return out
	}
	q6k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_ = w[nsb*q6KBytes-1]
		return dotQ6KQ8AVX2(&w[0], &a.Q[0], &a.D[0], nsb)
	}
	q6k.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		nsb := len(a0.D) / 8
		if nsb == 0 {
			return out
		}
		_ = w[nsb*q6KBytes-1]
		x := [4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}
		d := [4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}
		dot4Q6KQ8AVX2(&w[0], &x, &d, nsb, &out)
		return out
	}
	q4k.Axpy = func(y []float32, a float32, w []byte) {
		nsb := len(y) / format.QKK
		if nsb == 0 {
			return
		}
		_ = w[nsb*q4KBytes-1]
		axpyQ4KAVX2(&y[0], a, &w[0], nsb)
	}
	// The four-row axpy composes four of these, in row order.
	q4k.Axpy4 = fourRows(q4k.Axpy)
}
