package kernels

import (
	"math"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

//go:noescape
func siluMulNEON(h *float32, gu *float32, n int, c *[52]float32)

//go:noescape
func expSubSumNEON(x *float32, n int, m float32, c *[52]float32, sum *[4]float32)

// siluConsts is siluMulNEON's and expSubSumNEON's constants, each four
// times: log2e, ln2 in two parts (expf's), the Taylor coefficients 1/7! …
// 1/2, 1, the exponent bias 127 (as int32 bits) and the clamps, 88.3 and
// −87.3.
var siluConsts = func() (c [52]float32) {
	v := []float32{1.44269504088896341, 0.693359375, -2.12194440e-4,
		1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1,
		math.Float32frombits(127), 88.3, -87.3}
	for i, x := range v {
		c[4*i], c[4*i+1], c[4*i+2], c[4*i+3] = x, x, x, x
	}
	return c
}()

//go:noescape
func dotBF16NEON(w *uint16, x *float32, n int, acc *[16]float32)

//go:noescape
func axpyBF16NEON(y *float32, a float32, w *uint16, n int)

//go:noescape
func dotF16NEON(w *uint16, x *float32, n int, acc *[16]float32)

//go:noescape
func axpyF16NEON(y *float32, a float32, w *uint16, n int)

//go:noescape
func dot2BF16NEON(a, b *uint16, x *float32, n int, acc *[32]float32, next *byte)

//go:noescape
func dot2F16NEON(a, b *uint16, x *float32, n int, acc *[32]float32, next *byte)

//go:noescape
func axpy4BF16NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func axpy4F16NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func dotQ40Q8NEON(w *byte, xq *int8, xd *float32, nb int, acc *[4]float32)

//go:noescape
func dot2Q40Q8NEON(a, b *byte, xq *int8, xd *float32, nb int, acc *[8]float32, next *byte)

//go:noescape
func dot2Q80Q8NEON(a, b *byte, xq *int8, xd *float32, nb int, acc *[8]float32, next *byte)

//go:noescape
func axpyQ40NEON(y *float32, a float32, w *byte, nb int)

//go:noescape
func axpyQ80NEON(y *float32, a float32, w *byte, nb int)

//go:noescape
func dotQ40NEON(w *byte, x *float32, nb int, acc *[4]float32)

//go:noescape
func dotQ80NEON(w *byte, x *float32, nb int, acc *[4]float32)

//go:noescape
func axpy4Q40NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)

//go:noescape
func axpy4Q80NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)

//go:noescape
func dot4BF16NEON(w *uint16, x *[4]*float32, n int, acc *[32]float32)

//go:noescape
func dot4F16NEON(w *uint16, x *[4]*float32, n int, acc *[32]float32)

//go:noescape
func dot4Q40Q8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, nb int, acc *[16]float32)

//go:noescape
func dot4Q80Q8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, nb int, acc *[16]float32)

// attnValues4NEON is attnValues4Ref for d < 16 (out keeps its 64-float
// head stride; the caller steps v and out by 16).
//
//go:noescape
func attnValues4NEON(out *float32, p *[4]*float32, v *float32, vstride, n int)

//go:noescape
func gemm4x6NEON(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)

//go:noescape
func gemm4x6NEONPanel(w *float32, x *[6]*float32, n int, acc *[24][16]float32)

// panelNEON is GemmKernel.Panel through gemm4x6NEONPanel: from zero
// accumulators, folded after.
func panelNEON(w *float32, x *[6]*float32, n int, out *[24]float32) {
	var acc [24][16]float32
	gemm4x6NEONPanel(w, x, n, &acc)
	hsum24Ref(&acc, out)
}

//go:noescape
func gemmDown6NEON(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)

//go:noescape
func dotQ80Q8NEON(w *byte, xq *int8, xd *float32, nb int, acc *[4]float32)

//go:noescape
func panelQ8SDOT(panel *byte, xq *int8, xd *float32, nb int, out *[128]float32)

// The arm64 table "neon": NEON is part of every arm64 CPU (ASIMD, with its
// half-precision conversions, is mandatory in ARMv8-A), so the BF16 and F16
// kernels need no feature check. Where the CPU has the dot-product
// instructions (Cortex-A76/A78, so Jetson Orin), "neon-dotprod" adds
// integer dots for Q4_0 and Q8_0, then their default path.
func init() {
	neon := derive(&Generic, "neon")
	bf16, f16 := &neon.ops[format.BF16], &neon.ops[format.F16]
	bf16.Dot, bf16.Axpy = neonDot(dotBF16NEON, dotBF16Ref), neonAxpy(axpyBF16NEON, axpyBF16Ref)
	f16.Dot, f16.Axpy = neonDot(dotF16NEON, dotF16Ref), neonAxpy(axpyF16NEON, axpyF16Ref)
	// Prefill: one row against four tokens, widened once for the four (the
	// references' GEMM down projection calls the reference row kernels:
	// the FFN composes the NEON rows instead).
	bf16.Dot4, f16.Dot4 = neonDot4(dot4BF16NEON, dotBF16Ref), neonDot4(dot4F16NEON, dotF16Ref)
	bf16.GemmDown, f16.GemmDown = nil, nil
	// The prefill GEMM's register tile (4 rows × 6 tokens, four lanes of
	// each accumulator), the same over rows widened into one packed panel
	// (one stream for the four rows, as on amd64) and the FFN's down
	// projection for six tokens.
	neon.Gemm = &GemmKernel{Tile: gemm4x6NEON, Panel: panelNEON, Fold: hsum24Ref, Down: gemmDown6NEON}
	// A decode token's attention by key/value head (attentionDecode): the
	// scores through that tile, the weighted values 16 of 64 a call.
	neon.AttnValues = attnValuesOf(attnValues4NEON, 16)
	neon.SiLUMul, neon.SiLUVec = func(h, gu []float32) {
		n := len(h) &^ 3
		if n > 0 {
			siluMulNEON(&h[0], &gu[0], n, &siluConsts)
		}
		siluMulRef(h[n:], gu[2*n:])
	}, 4
	// The softmax's exponentials (attention over a prompt), four at a time.
	neon.ExpSubSum = func(x []float32, m float32) float32 {
		n := len(x) &^ 3
		var s [4]float32
		if n > 0 {
			expSubSumNEON(&x[0], n, m, &siluConsts, &s)
		}
		return (s[0] + s[1]) + (s[2] + s[3]) + expSubSumRef(x[n:], m)
	}
	// The decode FFN's fused forms, as on amd64.
	bf16.Dot2, bf16.Axpy4 = neonDot2(dot2BF16NEON, dotBF16Ref), neonAxpy4(axpy4BF16NEON, axpyBF16Ref)
	f16.Dot2, f16.Axpy4 = neonDot2(dot2F16NEON, dotF16Ref), neonAxpy4(axpy4F16NEON, axpyF16Ref)
	// The block types' float path (dots against float32 activations) and
	// their axpys (the down projection, on every path).
	q80, q40 := &neon.ops[format.Q8_0], &neon.ops[format.Q4_0]
	q80.Dot, q40.Dot = neonBlockDot(dotQ80NEON), neonBlockDot(dotQ40NEON)
	q80.Axpy, q40.Axpy = blockAxpy(axpyQ80NEON), blockAxpy(axpyQ40NEON)
	q80.Axpy4, q40.Axpy4 = neonBlockAxpy4(axpy4Q80NEON), neonBlockAxpy4(axpy4Q40NEON)
	q80.AxpyTiles, q40.AxpyTiles = tilesAxpy(axpyTilesQ80NEON), tilesAxpy(axpyTilesQ40NEON)
	f16.AxpyTiles = tilesAxpy(axpyTilesF16NEON)
	bf16.AxpyTiles = tilesAxpy(axpyTilesBF16NEON)
	// The K-quants' float axpys (kquant_arm64.go).
	kquantNEON(neon)
	if !cpu.ARM64.HasASIMDDP {
		register(neon)
		return
	}
	dp := derive(neon, "neon-dotprod")
	q80, q40 = &dp.ops[format.Q8_0], &dp.ops[format.Q4_0]
	q80.ActDot, q40.ActDot = true, true
	q80.DotAct, q40.DotAct = neonActDot(dotQ80Q8NEON), neonActDot(dotQ40Q8NEON)
	// The decode FFN's gate and up dots of a record in one pass over the
	// activations, prefetching the record to come (as on amd64).
	q80.Dot2Act, q40.Dot2Act = neonActDot2(dot2Q80Q8NEON), neonActDot2(dot2Q40Q8NEON)
	// Prefill: a row unpacked once for four tokens.
	q80.Dot4Act, q40.Dot4Act = neonActDot4(dot4Q80Q8NEON), neonActDot4(dot4Q40Q8NEON)
	// Long prompts: the integer GEMM tile over panels packed signed (16
	// rows × 8 tokens, as amd64's VNNI tile).
	q80.PanelAct, q40.PanelAct = neonPanelAct, neonPanelAct
	q80.PanelSigned, q40.PanelSigned = true, true
	// The K-quants' integer dots, their default path as on amd64.
	kquantSDOT(dp)
	register(neon, dp)
}

// neonDot4 adapts a 16-bit NEON four-token dot over a multiple of 16
// elements (two partial-sum vectors a token), the tail by the reference.
func neonDot4(k func(w *uint16, x *[4]*float32, n int, acc *[32]float32), ref func([]byte, []float32) float32) func([]byte, []float32, []float32, []float32, []float32, *[4]float32) {
	return func(w []byte, x0, x1, x2, x3 []float32, out *[4]float32) {
		n := len(x0) &^ 15
		*out = [4]float32{}
		xs := [4][]float32{x0, x1, x2, x3}
		if n > 0 {
			var acc [32]float32
			k((*uint16)(unsafe.Pointer(&w[0])), &[4]*float32{&x0[0], &x1[0], &x2[0], &x3[0]}, n, &acc)
			for t := range out {
				for _, v := range acc[8*t : 8*t+8] {
					out[t] += v
				}
			}
		}
		if n < len(x0) {
			for t, x := range xs {
				out[t] += ref(w[2*n:], x[n:])
			}
		}
	}
}

// neonActDot4 adapts an SDOT four-token dot (four lanes a token).
func neonActDot4(k func(w *byte, xq *[4]*int8, xd *[4]*float32, nb int, acc *[16]float32)) func([]byte, *Q8Act, *Q8Act, *Q8Act, *Q8Act) [4]float32 {
	return func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		if len(a0.D) == 0 {
			return out
		}
		var acc [16]float32
		k(&w[0], &[4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}, &[4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}, len(a0.D), &acc)
		for t := range out {
			out[t] = acc[4*t] + acc[4*t+1] + acc[4*t+2] + acc[4*t+3]
		}
		return out
	}
}

// neonPanelAct is Ops.PanelAct by panelQ8SDOT.
func neonPanelAct(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
	i := tile * a.NB * panelToks
	panelQ8SDOT(&panel[0], &a.Q[i*format.QK], &a.D[i], a.NB, out)
}

// neonBlockDot adapts a block-type NEON float dot over whole blocks.
func neonBlockDot(k func(w *byte, x *float32, nb int, acc *[4]float32)) func([]byte, []float32) float32 {
	return func(w []byte, x []float32) float32 {
		nb := len(x) / format.QK
		if nb == 0 {
			return 0
		}
		var acc [4]float32
		k(&w[0], &x[0], nb, &acc)
		return acc[0] + acc[1] + acc[2] + acc[3]
	}
}

// neonBlockAxpy4 adapts a four-row block-type NEON axpy over whole blocks.
func neonBlockAxpy4(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		if nb := len(y) / format.QK; nb > 0 {
			k(&y[0], a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], nb)
		}
	}
}

// neonActDot adapts an SDOT dot against Q8 activations (four float lanes).
func neonActDot(k func(w *byte, xq *int8, xd *float32, nb int, acc *[4]float32)) func([]byte, *Q8Act) float32 {
	return func(w []byte, a *Q8Act) float32 {
		if len(a.D) == 0 {
			return 0
		}
		var acc [4]float32
		k(&w[0], &a.Q[0], &a.D[0], len(a.D), &acc)
		return acc[0] + acc[1] + acc[2] + acc[3]
	}
}

// neonActDot2 adapts a fused two-row SDOT dot (the gate and up rows of one
// record) prefetching next, the record to come (or, with none, the row a:
// PRFM does not fault).
func neonActDot2(k func(a, b *byte, xq *int8, xd *float32, nb int, acc *[8]float32, next *byte)) func([]byte, []byte, *Q8Act, *[2]float32, []byte) {
	return func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		*out = [2]float32{}
		if len(act.D) == 0 {
			return
		}
		nx := &a[0]
		if len(next) > 0 {
			nx = &next[0]
		}
		var acc [8]float32
		k(&a[0], &b[0], &act.Q[0], &act.D[0], len(act.D), &acc, nx)
		out[0] = acc[0] + acc[1] + acc[2] + acc[3]
		out[1] = acc[4] + acc[5] + acc[6] + acc[7]
	}
}

// neonDot adapts a 16-bit NEON dot over a multiple of 16 elements (four
// partial sums of four lanes), finishing the tail with the reference.
func neonDot(k func(w *uint16, x *float32, n int, acc *[16]float32), ref func([]byte, []float32) float32) func([]byte, []float32) float32 {
	return func(w []byte, x []float32) float32 {
		n := len(x) &^ 15
		var s float32
		if n > 0 {
			var acc [16]float32
			k((*uint16)(unsafe.Pointer(&w[0])), &x[0], n, &acc)
			for _, v := range acc {
				s += v
			}
		}
		return s + ref(w[2*n:], x[n:])
	}
}

// neonAxpy adapts a 16-bit NEON axpy over a multiple of 16 elements.
func neonAxpy(k func(y *float32, a float32, w *uint16, n int), ref func([]float32, float32, []byte)) func([]float32, float32, []byte) {
	return func(y []float32, a float32, w []byte) {
		n := len(y) &^ 15
		if n > 0 {
			k(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		ref(y[n:], a, w[2*n:])
	}
}

// neonDot2 adapts a fused two-row NEON dot over a multiple of 16 elements
// (four partial-sum vectors per row), finishing the tail with the reference.
func neonDot2(k func(a, b *uint16, x *float32, n int, acc *[32]float32, next *byte), ref func([]byte, []float32) float32) func([]byte, []byte, []float32, *[2]float32, []byte) {
	return func(a, b []byte, x []float32, out *[2]float32, next []byte) {
		n := len(x) &^ 15
		*out = [2]float32{}
		if n > 0 {
			var acc [32]float32
			nx := &a[0]
			if len(next) > 0 {
				nx = &next[0]
			}
			k((*uint16)(unsafe.Pointer(&a[0])), (*uint16)(unsafe.Pointer(&b[0])), &x[0], n, &acc, nx)
			for i := 0; i < 16; i++ {
				out[0] += acc[i]
				out[1] += acc[16+i]
			}
		}
		if n < len(x) {
			out[0] += ref(a[2*n:], x[n:])
			out[1] += ref(b[2*n:], x[n:])
		}
	}
}

// neonAxpy4 adapts a four-row NEON axpy over a multiple of 16 elements.
func neonAxpy4(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int), ref func([]float32, float32, []byte)) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		n := len(y) &^ 15
		if n > 0 {
			k(&y[0], a, (*uint16)(unsafe.Pointer(&w[0][0])), (*uint16)(unsafe.Pointer(&w[1][0])), (*uint16)(unsafe.Pointer(&w[2][0])), (*uint16)(unsafe.Pointer(&w[3][0])), n)
		}
		if n < len(y) {
			for r := range w {
				ref(y[n:], a[r], w[r][2*n:])
			}
		}
	}
}

//go:noescape
func axpyTilesQ80NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesQ40NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesF16NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesBF16NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)
