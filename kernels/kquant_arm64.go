package kernels

import "github.com/sipack/sipack/format"

//go:noescape
func dotQ4KQ8NEON(w *byte, xq *int8, xd *float32, xs *int32, nsb int, acc *[4]float32)

//go:noescape
func dot2Q4KQ8NEON(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, acc *[8]float32, next *byte, nstep int)

//go:noescape
func dot4Q4KQ8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, xs *[4]*int32, nsb int, acc *[16]float32)

//go:noescape
func dotQ6KQ8NEON(w *byte, xq *int8, xd *float32, nsb int, acc *[4]float32)

//go:noescape
func dot2Q6KQ8NEON(a, b *byte, xq *int8, xd *float32, nsb int, acc *[8]float32, next *byte, nstep int)

//go:noescape
func axpyQ4KNEON(y *float32, a float32, w *byte, nsb int)

//go:noescape
func axpyQ6KNEON(y *float32, a float32, w *byte, nsb int)

//go:noescape
func axpy4Q4KNEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int, sc *[64]float32)

// kquantNEON gives t the K-quants' float axpys (the down projection on
// every path): each x̂ as the reference dequantises it, y += a·x̂ fused.
// Q4_K's four-row axpy loads and stores y once for four rows (four row
// axpys' bits); Q6_K's composes four row axpys, in row order.
func kquantNEON(t *Table) {
	q4k, q6k := &t.ops[format.Q4_K], &t.ops[format.Q6_K]
	q4k.Axpy = func(y []float32, a float32, w []byte) {
		if nsb := len(y) / format.QKK; nsb > 0 {
			_ = w[nsb*q4KBytes-1]
			axpyQ4KNEON(&y[0], a, &w[0], nsb)
		}
	}
	q6k.Axpy = func(y []float32, a float32, w []byte) {
		if nsb := len(y) / format.QKK; nsb > 0 {
			_ = w[nsb*q6KBytes-1]
			axpyQ6KNEON(&y[0], a, &w[0], nsb)
		}
	}
	q4k.Axpy4 = func(y []float32, a *[4]float32, w *[4][]byte) {
		nsb := len(y) / format.QKK
		if nsb == 0 {
			return
		}
		end := nsb*q4KBytes - 1
		_, _, _, _ = w[0][end], w[1][end], w[2][end], w[3][end]
		var sc [64]float32 // one super-block's d·sc and dmin·m, four rows
		axpy4Q4KNEON(&y[0], a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], nsb, &sc)
	}
	q6k.Axpy4 = fourRows(q6k.Axpy)
}

// kquantSDOT gives t (a CPU with the dot-product instructions) the
// K-quants' integer dots against the Q8 activations Q4_0 uses (blocks of
// 32: a Q4_K sub-block, two Q6_K ones), and turns the integer path on: a
// row, the decode FFN's gate and up rows in one call, and (Q4_K) a row
// against four tokens. Each form keeps one arithmetic per row and token
// (kquant_arm64.s), so a row's value does not depend on the form.
func kquantSDOT(t *Table) {
	q4k, q6k := &t.ops[format.Q4_K], &t.ops[format.Q6_K]
	q4k.ActDot, q6k.ActDot = true, true
	q4k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_ = w[nsb*q4KBytes-1]
		var acc [4]float32
		dotQ4KQ8NEON(&w[0], &a.Q[0], &a.D[0], &a.S[0], nsb, &acc)
		return lanes4(acc[:])
	}
	q4k.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		nsb := len(act.D) / 8
		if nsb == 0 {
			*out = [2]float32{}
			return
		}
		_, _ = a[nsb*q4KBytes-1], b[nsb*q4KBytes-1]
		nx, step := kquantNext(a, next, 3*q4KBytes)
		var acc [8]float32
		dot2Q4KQ8NEON(&a[0], &b[0], &act.Q[0], &act.D[0], &act.S[0], nsb, &acc, nx, step)
		out[0], out[1] = lanes4(acc[:4]), lanes4(acc[4:])
	}
	q4k.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		nsb := len(a0.D) / 8
		if nsb == 0 {
			return out
		}
		_ = w[nsb*q4KBytes-1]
		for _, a := range [...]*Q8Act{a1, a2, a3} {
			_ = a.S[8*nsb-1]
		}
		var acc [16]float32
		dot4Q4KQ8NEON(&w[0], &[4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]},
			&[4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]},
			&[4]*int32{&a0.S[0], &a1.S[0], &a2.S[0], &a3.S[0]}, nsb, &acc)
		for i := range out {
			out[i] = lanes4(acc[4*i : 4*i+4])
		}
		return out
	}
	q6k.DotAct = func(w []byte, a *Q8Act) float32 {
		nsb := len(a.D) / 8
		if nsb == 0 {
			return 0
		}
		_ = w[nsb*q6KBytes-1]
		var acc [4]float32
		dotQ6KQ8NEON(&w[0], &a.Q[0], &a.D[0], nsb, &acc)
		return lanes4(acc[:])
	}
	q6k.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		nsb := len(act.D) / 8
		if nsb == 0 {
			*out = [2]float32{}
			return
		}
		_, _ = a[nsb*q6KBytes-1], b[nsb*q6KBytes-1]
		nx, step := kquantNext(a, next, 3*q6KBytes)
		var acc [8]float32
		dot2Q6KQ8NEON(&a[0], &b[0], &act.Q[0], &act.D[0], nsb, &acc, nx, step)
		out[0], out[1] = lanes4(acc[:4]), lanes4(acc[4:])
	}
	// Long prompts: the integer GEMM tiles over K-quant panels, signed as
	// Q4_0's and Q8_0's on this table.
	q4k.PanelAct, q6k.PanelAct = sdotPanelQ4K, sdotPanelQ6K
	q4k.PanelSigned, q6k.PanelSigned = true, true
}

// lanes4 adds a dot's four float lanes, one order for every form.
func lanes4(a []float32) float32 { return (a[0] + a[1]) + (a[2] + a[3]) }

// kquantNext is where a fused dot prefetches and how far it steps a
// super-block: through next (a record of three rows, step bytes a
// super-block), or, with none, the first lines of row a again (a hint that
// never faults, not walked past the row).
func kquantNext(a, next []byte, step int) (*byte, int) {
	if len(next) > 0 {
		return &next[0], step
	}
	return &a[0], 0
}

//go:noescape
func panelQ4KSDOT(panel *byte, xq *int8, xd *float32, xm *float32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ6KSDOT(panel *byte, xq *int8, xd *float32, nb int, out *[panelRows * panelToks]float32)

// sdotPanelQ4K and sdotPanelQ6K are Ops.PanelAct of the K-quants by their
// SDOT tiles (signed panels: no corrections).
func sdotPanelQ4K(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
	i := tile * a.NB * panelToks
	_ = panel[a.NB*panelKBlockBytes-1]
	panelQ4KSDOT(&panel[0], &a.Q[i*format.QK], &a.D[i], &a.M[i], a.NB, out)
}

func sdotPanelQ6K(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
	i := tile * a.NB * panelToks
	_ = panel[a.NB*panelKBlockBytes-1]
	panelQ6KSDOT(&panel[0], &a.Q[i*format.QK], &a.D[i], a.NB, out)
}
