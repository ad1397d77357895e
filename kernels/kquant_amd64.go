package kernels

import (
	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

// kquantAVX2 gives t the AVX2 K-quant kernels (kquant_amd64.s): the
// integer dots against Q8 activations — a row, a pair of rows (the decode
// FFN's gate and up, the matvecs' rows in pairs), a row against four
// tokens (the prefill) — with the integer path on, as for Q4_0; and the
// Q4_K row and four-row axpys of the down projection. Q8 blocks of 32 are Q4_K's
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
		q := nsb*format.QKK - 1
		_, _, _, _ = a0.Q[q], a1.Q[q], a2.Q[q], a3.Q[q]
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
	// The K-quant panels' packing: Q4_K's values a row at a time.
	q4k.PackRow = packRowQ4KAVX2
	// The four-row axpy: y loaded and stored once for four rows.
	q4k.Axpy4 = q4KAxpy4Of(axpy4Q4KAVX2)
	// The int8 down projection, eight rows a super-block at a time (where
	// Table.Int8Down is on).
	q4k.Axpy8Act = blockAxpy8Act(axpy8Q4KActAVX2, format.Q4_K, 1)
	// The prefill's integer GEMM tiles over K-quant panels (gemmactk.go),
	// unsigned for VPMADDUBSW as Q4_0's.
	q4k.PanelAct, q6k.PanelAct = panelQ4KOf(panelQ4KAVX2), panelQ6KOf(panelQ6KAVX2)
}

// kquantAVX512 gives t the AVX-512 K-quant kernels: the Q4_K row and
// four-row axpys of the decode FFN's down projection (the four rows load
// and store y once; every element's arithmetic is axpyQ4KAVX2's, so the
// same bits whatever the grouping) and the row widening; with VNNI, the integer dots by
// VPDPBUSD: Q4_K's one-row, pair and four-token forms, and Q6_K's one-row
// and four-token forms (the output matrix of a q4_k_m pack). Against the
// AVX2 kernels on the AMD EPYC (Zen 5), one thread, rows of 2048 in cache
// (the best of 3000 timings of 16 calls; BenchmarkKQuantOps makes the same
// calls): Q4_K Axpy4 2.5×, Axpy 2.0×, DotAct 1.27×, Dot2Act 1.2×, Dot4Act
// 1.75×; Q6_K DotAct 2.1×, Dot4Act 3×.
func kquantAVX512(t *Table, vnni bool) {
	q4k, q6k := &t.ops[format.Q4_K], &t.ops[format.Q6_K]
	q4k.Axpy = func(y []float32, a float32, w []byte) {
		nsb := len(y) / format.QKK
		if nsb == 0 {
			return
		}
		_ = w[nsb*q4KBytes-1]
		axpyQ4KAVX512(&y[0], a, &w[0], nsb)
	}
	// The prefill's widening of a row (the down projection's GEMM), x̂
	// to the bit of dequantQ4KBlock.
	q4k.Widen = func(dst []float32, w []byte) {
		nsb := len(dst) / format.QKK
		if nsb == 0 {
			return
		}
		_ = w[nsb*q4KBytes-1]
		widenQ4KAVX512(&dst[0], &w[0], nsb)
	}
	q4k.Axpy4 = q4KAxpy4Of(axpy4Q4KAVX512)
	if cpu.X86.HasAVX512BW {
		// A whole Q4_K panel by gathers, 64-byte stores (BenchmarkPackPanel).
		q4k.PackPanel = packPanelQ4K
	}
	if !vnni {
		return
	}
	// Q4_K's dots by VPDPBUSD: one row, two (the FFN's gate and up), four
	// tokens (the prefill), each row and token with the one-row kernel's bits.
	q4k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_, _ = w[nsb*q4KBytes-1], a.Q[nsb*format.QKK-1]
		return dotQ4KQ8VNNI(&w[0], &a.Q[0], &a.D[0], &a.S[0], nsb)
	}
	q4k.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		nsb := len(act.D) / 8
		if nsb == 0 {
			*out = [2]float32{}
			return
		}
		_, _, _ = a[nsb*q4KBytes-1], b[nsb*q4KBytes-1], act.Q[nsb*format.QKK-1]
		dot2Q4KQ8VNNI(&a[0], &b[0], &act.Q[0], &act.D[0], &act.S[0], nsb, out, prefetchFrom(next))
	}
	q4k.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		nsb := len(a0.D) / 8
		if nsb == 0 {
			return out
		}
		_ = w[nsb*q4KBytes-1]
		q := nsb*format.QKK - 1
		_, _, _, _ = a0.Q[q], a1.Q[q], a2.Q[q], a3.Q[q]
		x := [4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}
		d := [4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}
		s := [4]*int32{&a0.S[0], &a1.S[0], &a2.S[0], &a3.S[0]}
		dot4Q4KQ8VNNI(&w[0], &x, &d, &s, nsb, &out)
		return out
	}
	q6k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_, _ = w[nsb*q6KBytes-1], a.Q[nsb*format.QKK-1]
		return dotQ6KQ8VNNI(&w[0], &a.Q[0], &a.D[0], nsb)
	}
	q6k.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		nsb := len(a0.D) / 8
		if nsb == 0 {
			return out
		}
		_ = w[nsb*q6KBytes-1]
		q := nsb*format.QKK - 1
		_, _, _, _ = a0.Q[q], a1.Q[q], a2.Q[q], a3.Q[q]
		x := [4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}
		d := [4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}
		dot4Q6KQ8VNNI(&w[0], &x, &d, nsb, &out)
		return out
	}
	// The prefill's integer GEMM tiles over K-quant panels (gemmactk.go),
	// unsigned for VPDPBUSD.
	q4k.PanelAct, q6k.PanelAct = panelQ4KOf(panelQ4KVNNI), panelQ6KOf(panelQ6KVNNI)
}

// q4KAxpy4Of adapts a four-row Q4_K axpy kernel over whole super-blocks.
func q4KAxpy4Of(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int)) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		nsb := len(y) / format.QKK
		if nsb == 0 {
			return
		}
		end := nsb*q4KBytes - 1
		_, _, _, _ = w[0][end], w[1][end], w[2][end], w[3][end]
		k(&y[0], a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], nsb)
	}
}

// axpy8Q4KActAVX2 is axpy8Q4KActRef over nsb super-blocks.
//
//go:noescape
func axpy8Q4KActAVX2(y *float32, a *[8]float32, w *[8]*byte, nsb int)

//go:noescape
func axpy4Q4KAVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int)

//go:noescape
func axpy4Q4KAVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int)

//go:noescape
func dotQ6KQ8VNNI(w *byte, xq *int8, xd *float32, nsb int) float32

//go:noescape
func dot4Q6KQ8VNNI(w *byte, x *[4]*int8, d *[4]*float32, nsb int, out *[4]float32)

//go:noescape
func dotQ4KQ8VNNI(w *byte, xq *int8, xd *float32, xs *int32, nsb int) float32

//go:noescape
func dot2Q4KQ8VNNI(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, out *[2]float32, next *byte)

//go:noescape
func dot4Q4KQ8VNNI(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nsb int, out *[4]float32)

//go:noescape
func axpyQ4KAVX512(y *float32, a float32, w *byte, nsb int)

//go:noescape
func widenQ4KAVX512(dst *float32, w *byte, nsb int)

//go:noescape
func panelQ4KVNNI(panel *byte, xq *int8, xd *float32, xc *int32, xm *float32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ4KAVX2(panel *byte, xq *int8, xd *float32, xc *int32, xm *float32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ6KAVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ6KVNNI(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)

// panelQ4KOf and panelQ6KOf adapt the K-quant tiles to Ops.PanelAct:
// Q4_K's take the tiles' M beside C, Q6_K's their two corrections a block.
func panelQ4KOf(k func(panel *byte, xq *int8, xd *float32, xc *int32, xm *float32, nb int, out *[panelRows * panelToks]float32)) func([]byte, *ActTiles, int, *[panelRows * panelToks]float32) {
	return func(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
		i := tile * a.NB * panelToks
		_ = panel[a.NB*panelKBlockBytes-1]
		k(&panel[0], &a.Q[i*format.QK], &a.D[i], &a.C[i], &a.M[i], a.NB, out)
	}
}

func panelQ6KOf(k func(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)) func([]byte, *ActTiles, int, *[panelRows * panelToks]float32) {
	return func(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
		i := tile * a.NB * panelToks
		_ = panel[a.NB*panelKBlockBytes-1]
		k(&panel[0], &a.Q[i*format.QK], &a.D[i], &a.C[2*i], a.NB, out)
	}
}

//go:noescape
func packValuesQ4KAVX2(dst *byte, w *byte, nsb int, bias uint32)

// packRowQ4KAVX2 is Ops.PackRow for Q4_K: the values by packValuesQ4KAVX2
// (a bounds check on the last block's last group: dst starts at 4·r), the
// float rows in Go.
func packRowQ4KAVX2(dst, w []byte, nb int, signed bool) {
	if nb < 8 {
		return
	}
	_, _ = dst[(nb-1)*panelKBlockBytes+451], w[nb/8*q4KBytes-1]
	packValuesQ4KAVX2(&dst[0], &w[0], nb/8, packRowQ4Bias(signed))
	packFloatsK(dst, w, format.Q4_K, nb)
}

//go:noescape
func packPanelQ4KAVX512(dst *byte, rows *[panelRows]*byte, nsb int, bias uint32)

// packPanelQ4K is Ops.PackPanel for Q4_K by packPanelQ4KAVX512, each row
// and the panel's last block checked for length first.
func packPanelQ4K(dst []byte, row func(r int) []byte, nb int, signed bool) {
	if nb < 8 {
		return
	}
	_ = dst[nb*panelKBlockBytes-1]
	var rows [panelRows]*byte
	for r := range rows {
		w := row(r)
		_ = w[nb/8*q4KBytes-1]
		rows[r] = &w[0]
	}
	packPanelQ4KAVX512(&dst[0], &rows, nb/8, packRowQ4Bias(signed))
}
