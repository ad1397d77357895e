package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

//go:noescape
func dotBF16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotF16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotF32AVX2(w *float32, x *float32, n int) float32

//go:noescape
func axpyBF16AVX2(y *float32, a float32, w *uint16, n int)

//go:noescape
func axpyF16AVX2(y *float32, a float32, w *uint16, n int)

//go:noescape
func widenBF16AVX2(dst *float32, w *uint16, n int)

//go:noescape
func widenF16AVX2(dst *float32, w *uint16, n int)

// widenOf adapts a 16-bit widening kernel (whole groups of 16; the rest
// through the dtype's reference axpy into zeros).
func widenOf(k func(dst *float32, w *uint16, n int), ref func([]float32, float32, []byte)) func([]float32, []byte) {
	return func(dst []float32, w []byte) {
		n := len(dst) &^ 15
		if n > 0 {
			k(&dst[0], (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		if n < len(dst) {
			clear(dst[n:])
			ref(dst[n:], 1, w[2*n:])
		}
	}
}

//go:noescape
func axpyF32AVX2(y *float32, a float32, w *float32, n int)

//go:noescape
func dot4BF16AVX2(w *uint16, x0, x1, x2, x3 *float32, n int, out *[4]float32)

//go:noescape
func dotQ80AVX2(w *byte, x *float32, nb int) float32

//go:noescape
func dotQ40AVX2(w *byte, x *float32, nb int) float32

//go:noescape
func axpyQ80AVX2(y *float32, a float32, w *byte, nb int)

//go:noescape
func axpyQ40AVX2(y *float32, a float32, w *byte, nb int)

//go:noescape
func axpy4Q40AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)

//go:noescape
func dotQ80Q8AVX2(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func dotQ40Q8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

//go:noescape
func dot4Q40Q8AVX2(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nb int, out *[4]float32)

//go:noescape
func gemmDownBF16AVX2(acc *float32, accStride int, h *float32, hStride int, down *uint16, recStride int, K int, H int)

//go:noescape
func dotBF16AVX512(w *uint16, x *float32, n int) float32

//go:noescape
func axpyBF16AVX512(y *float32, a float32, w *uint16, n int)

//go:noescape
func dotQ40AVX512(w *byte, x *float32, nb int) float32

//go:noescape
func dotQ80AVX512(w *byte, x *float32, nb int) float32

//go:noescape
func axpyQ40AVX512(y *float32, a float32, w *byte, nb int)

//go:noescape
func axpyQ80AVX512(y *float32, a float32, w *byte, nb int)

//go:noescape
func dotQ40Q8VNNI(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func axpy4Q40AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)

//go:noescape
func dot4F16AVX2(w *uint16, x0, x1, x2, x3 *float32, n int, out *[4]float32)

//go:noescape
func gemmDownF16AVX2(acc *float32, accStride int, h *float32, hStride int, down *uint16, recStride int, K int, H int)

//go:noescape
func dot2BF16AVX2(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)

//go:noescape
func dot2F16AVX2(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)

//go:noescape
func axpy4BF16AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func axpy4F16AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func dot2Q40Q8VNNI(a, b *byte, xq *int8, xd *float32, nb int, out *[2]float32, next *byte)

//go:noescape
func dotQ80Q8VNNI(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

//go:noescape
func dot2Q80Q8VNNI(a, b *byte, xq *int8, xd *float32, xs *int32, nb int, out *[2]float32, next *byte)

//go:noescape
func axpy4Q80AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)

//go:noescape
func gemm4x6AVX512(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)

//go:noescape
func hsum24AVX512(acc *[24][16]float32, out *[24]float32)

//go:noescape
func gemmDown6AVX512(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)

//go:noescape
func dotBF16DP(w *uint16, xb *uint16, n int) float32

// axpy8Q40ActVNNI is axpy8Q40ActRef for nb a multiple of 16 (AVX-512 VNNI
// and VBMI).
//
//go:noescape
func axpy8Q40ActVNNI(y *float32, a *[8]float32, w *[8]*byte, nb int)

// axpy8Q80ActVNNI is axpy8Q80ActRef for nb a multiple of 16 (AVX-512 VNNI
// + VBMI).
//
//go:noescape
func axpy8Q80ActVNNI(y *float32, a *[8]float32, w *[8]*byte, nb int)

// axpy8Q40ActAVX2 is axpy8Q40ActRef for nb a multiple of 8 (AVX2 and
// F16C).
//
//go:noescape
func axpy8Q40ActAVX2(y *float32, a *[8]float32, w *[8]*byte, nb int)

// attnScores4AVX2 is attnScores4Ref (kstride in float32s, hd a multiple
// of 32).
//
//go:noescape
func attnScores4AVX2(sc *[4]*float32, q, k *float32, kstride, hd, n int, scale float32)

// attnValues4AVX2 is attnValues4Ref for d < 16 (out keeps its 64-float
// head stride; the caller steps v and out by 16).
//
//go:noescape
func attnValues4AVX2(out *float32, p *[4]*float32, v *float32, vstride, n int)

// attnScores4AVX512 is attnScores4Ref (kstride in float32s, hd a multiple
// of 64).
//
//go:noescape
func attnScores4AVX512(sc *[4]*float32, q, k *float32, kstride, hd, n int, scale float32)

// attnValues4AVX512 is attnValues4Ref (vstride in float32s).
//
//go:noescape
func attnValues4AVX512(out *float32, p *[4]*float32, v *float32, vstride, n int)

//go:noescape
func maxAVX512(x *float32, n int) float32

//go:noescape
func scaleAVX512(x *float32, n int, s float32)

//go:noescape
func dot4Q40Q8VNNI(w *byte, x *[4]*int8, d *[4]*float32, nb int, out *[4]float32)

//go:noescape
func expSubSumAVX512(x *float32, n int, m float32) float32

//go:noescape
func quantizeBlocksAVX512(x *float32, q *int8, d *float32, s *int32, nb int)

//go:noescape
func gemm4x6AVX2(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)

//go:noescape
func hsum24AVX2(acc *[24][16]float32, out *[24]float32)

//go:noescape
func gemmDown6AVX2(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)

//go:noescape
func panelQ4AVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ8AVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func panelQ8VNNI(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)

//go:noescape
func dot4Q80Q8VNNI(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nb int, out *[4]float32)

//go:noescape
func siluMulAVX512(h *float32, gu *float32, n int)

//go:noescape
func siluMulAVX2(h *float32, gu *float32, n int)

//go:noescape
func expSubSumAVX2(x *float32, n int, m float32) float32

//go:noescape
func gemmDown6BF16DP(acc *float32, accStride int, h *uint32, w *uint16, ldw int, P int, H int)

//go:noescape
func interleaveBF16DP(dst *uint16, a, b *uint16, n int)

//go:noescape
func packRowQ40AVX2(dst *byte, w *byte, nb int, bias uint32)

//go:noescape
func packRowQ80AVX2(dst *byte, w *byte, nb int, flip uint32)

//go:noescape
func dot1BF16AVX512(w *uint16, x *float32, n int) float32

//go:noescape
func dot1F16AVX512(w *uint16, x *float32, n int) float32

//go:noescape
func dotRowsF16AVX512(w *uint16, x *float32, n, rows, stride int, out *float32)

//go:noescape
func dotRowsBF16AVX512(w *uint16, x *float32, n, rows, stride int, out *float32)

//go:noescape
func roundBF16AVX512(xb *uint16, xr *float32, x *float32, n int)

//go:noescape
func gemm4x6AVX512Panel(w *float32, x *[6]*float32, n int, out *[24]float32)

//go:noescape
func gemm4x6BF16DPPack(w *[4]*uint16, panel *uint16, x *[6]*uint16, n int, out *[24]float32)

//go:noescape
func gemm4x6BF16DPPanel(w *uint16, x *[6]*uint16, n int, out *[24]float32)

//go:noescape
func dot2BF16DP(a, b *uint16, xb *uint16, n int, out *[2]float32, next *byte)

//go:noescape
func dot2BF16AVX512(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)

//go:noescape
func dot2F16AVX512(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)

//go:noescape
func axpy4BF16AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func axpy4F16AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)

//go:noescape
func fmaPeakAVX2(iters int) float32

//go:noescape
func fmaPeakAVX512(iters int) float32

//go:noescape
func gemm4x6AVX512PanelF16(w *uint16, x *[6]*float32, n int, out *[24]float32)

//go:noescape
func gemm4x6AVX512PackF16(w *[4]*uint16, panel *uint16, x *[6]*float32, n int, out *[24]float32)

//go:noescape
func sumBytesAVX2(p *byte, n int) uint64

//go:noescape
func prefetchL2AVX2(p *byte, n int)

// The amd64 tables, each extending the one before: "avx2" (AVX2 + FMA +
// F16C, the baseline every amd64 path has) and "avx512" (AVX-512F
// block-type kernels, the 16-bit row and decode FFN kernels 16 lanes wide,
// plus integer VNNI dots where the CPU has AVX512_VNNI: the default for
// Q4_0 and Q8_0 there); "avx512[-vnni]-narrow16", opt-in only, keeps the
// 16-bit row dots, pair dots and row axpys at AVX2's 8 lanes (the tiled
// down projection, AxpyTiles, is AVX-512 in both). The wide 16-bit
// kernels are the default: with every pack in 2 MiB pages they decode
// 1.03-1.06× the narrow ones with one thread and 1.00-1.04× with two (f16
// and bf16; docs/performance.md).
func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		register()
		return
	}
	avx2 := avx2Table()
	if !cpu.X86.HasAVX512F {
		register(avx2)
		return
	}
	avx512 := avx512Table(avx2)
	narrow := derive(avx512, avx512.Name+"-narrow16")
	b, f := &avx512.ops[format.BF16], &avx512.ops[format.F16]
	// Dot is Dot2's arithmetic for one row (dot1*: the same lanes, fold
	// and tail), so a row's dot does not depend on which kernel took it.
	// The row axpys over the four-row ones' multiples of 64 (the rest by the
	// reference): a version 3 block's down rows go one at a time, the
	// other layouts' four at a time, and the sums must not depend on it.
	b.Dot, b.Axpy = rowDot(dot1BF16AVX512, dotBF16Ref, 63), rowAxpy(axpyBF16AVX512, axpyBF16Ref, 63)
	b.Dot2, b.Axpy4 = dot2OfN(dot2BF16AVX512, dotBF16Ref, 63), axpy4OfN(axpy4BF16AVX512, axpyBF16Ref, 63)
	f.Dot, f.Axpy = rowDot(dot1F16AVX512, dotF16Ref, 63), rowAxpy(axpyF16AVX2, axpyF16Ref, 63)
	f.Dot2, f.Axpy4 = dot2OfN(dot2F16AVX512, dotF16Ref, 63), axpy4OfN(axpy4F16AVX512, axpyF16Ref, 63)
	b.DotRows, f.DotRows = rowsDot(dotRowsBF16AVX512, b.Dot), rowsDot(dotRowsF16AVX512, f.Dot)
	// The narrow table is registered before avx512 so that avx512 is the
	// default; sirun's SIPACK_KERNELS=avx512[-vnni]-narrow16 picks it.
	register(avx2, narrow, avx512)
}

// avx2Table is the AVX2 + FMA + F16C table.
func avx2Table() *Table {
	t := derive(&Generic, "avx2")
	// The decode's down projection in int8 (Axpy8Act, Table.Int8Down):
	// sirun bench on the 1B-shape q4_k_m pack, 2 threads, against the
	// float one: dense decode 1.19× (1.13-1.33), q4_0 1.11×.
	t.Int8Down = true
	bf16, f16, f32 := &t.ops[format.BF16], &t.ops[format.F16], &t.ops[format.F32]
	q80, q40 := &t.ops[format.Q8_0], &t.ops[format.Q4_0]
	// The row dots over multiples of 32, as the pair dots (Dot2): the
	// same lanes and fold, so a row's dot is the same taken alone or paired;
	// the row axpys too, as the four-row ones (a version 3 block's down
	// rows go one at a time, the other layouts' four at a time).
	bf16.Dot, bf16.Axpy = rowDot(dotBF16AVX2, dotBF16Ref, 31), rowAxpy(axpyBF16AVX2, axpyBF16Ref, 31)
	bf16.Dot4 = dot4Of(dot4BF16AVX2, dotBF16Ref)
	bf16.Dot2, bf16.Axpy4 = dot2Of(dot2BF16AVX2, dotBF16Ref), axpy4Of(axpy4BF16AVX2, axpyBF16Ref)
	bf16.GemmDown = gemmDownOf(gemmDownBF16AVX2, gemmDownBF16Ref)
	bf16.Widen, f16.Widen = widenOf(widenBF16AVX2, axpyBF16Ref), widenOf(widenF16AVX2, axpyF16Ref)
	f16.Dot, f16.Axpy = rowDot(dotF16AVX2, dotF16Ref, 31), rowAxpy(axpyF16AVX2, axpyF16Ref, 31)
	f16.AxpyTiles = tilesAxpy(axpyTilesF16AVX2)
	bf16.AxpyTiles = tilesAxpy(axpyTilesBF16AVX2)
	f16.AxpyTilesGap, bf16.AxpyTilesGap = tilesAxpy(axpyTilesGapF16AVX2), tilesAxpy(axpyTilesGapBF16AVX2)
	f16.Dot4 = dot4Of(dot4F16AVX2, dotF16Ref)
	f16.Dot2, f16.Axpy4 = dot2Of(dot2F16AVX2, dotF16Ref), axpy4Of(axpy4F16AVX2, axpyF16Ref)
	// The decode attention's scores, and its weighted values 16 of the
	// 64 a call.
	t.AttnScores, t.AttnValues = attnScoresOf(attnScores4AVX2), attnValuesOf(attnValues4AVX2, 16)
	t.SiLUMul, t.SiLUVec = siluMulOf(siluMulAVX2, 8), 8
	// The softmax's exponentials (attention over a prompt: a 2048-token
	// prompt's are a billion), eight at a time.
	t.ExpSubSum = expSubSumOf(expSubSumAVX2, 8)
	f16.GemmDown = gemmDownOf(gemmDownF16AVX2, gemmDownF16Ref)
	f32.Dot = func(w []byte, x []float32) float32 {
		n := len(x) &^ 7
		s := float32(0)
		if n > 0 {
			s = dotF32AVX2((*float32)(unsafe.Pointer(&w[0])), &x[0], n)
		}
		return s + dotF32Ref(w[4*n:], x[n:])
	}
	f32.Axpy = func(y []float32, a float32, w []byte) {
		n := len(y) &^ 7
		if n > 0 {
			axpyF32AVX2(&y[0], a, (*float32)(unsafe.Pointer(&w[0])), n)
		}
		axpyF32Ref(y[n:], a, w[4*n:])
	}
	q80.Dot, q40.Dot = blockDot(dotQ80AVX2), blockDot(dotQ40AVX2)
	// The integer GEMM panels' packing, a row at a time (BenchmarkPackPanel).
	q40.PackRow = packRowOf(packRowQ40AVX2, packRowQ4Bias)
	q80.PackRow = packRowOf(packRowQ80AVX2, packRowQ8Flip)
	q80.Axpy, q40.Axpy = blockAxpy(axpyQ80AVX2), blockAxpy(axpyQ40AVX2)
	q80.AxpyTiles, q40.AxpyTiles = tilesAxpy(axpyTilesQ80AVX2), tilesAxpy(axpyTilesQ40AVX2)
	q80.AxpyTilesGap, q40.AxpyTilesGap = tilesAxpy(axpyTilesGapQ80AVX2), tilesAxpy(axpyTilesGapQ40AVX2)
	// Q4_0's four-row axpy loads and stores y once for four down rows (a
	// row at a time, y's round trips through L1 bound it), adding them as
	// four row axpys would, to the bit. Q8_0 has none here: the decode
	// adds its down rows one at a time.
	q80.Axpy4 = nil
	q40.Axpy4 = blockAxpy4(axpy4Q40AVX2, fourRows(q40.Axpy))
	// The integer path by default, as llama.cpp's AVX2 build takes it: the
	// AVX2 table forced on the AMD EPYC, one thread, two rounds, against
	// the float path: q4_0 decode 1.27-1.33× dense, 1.35-1.40× γ0.7 φ0.4,
	// q8_0 1.06-1.09× and 1.04-1.10×, prefill 0.99-1.25× and 1.14-1.19×.
	if cpu.X86.HasSSSE3 {
		q80.ActDot, q40.ActDot = true, true
		q80.DotAct = q8ActDot(dotQ80Q8AVX2)
		q40.DotAct = func(w []byte, a *Q8Act) float32 {
			if len(a.D) == 0 {
				return 0
			}
			return dotQ40Q8AVX2(&w[0], &a.Q[0], &a.D[0], &a.S[0], len(a.D))
		}
		// The prefill's integer GEMM tile (panelQ4AVX2, panelQ8AVX2): Q4_0
		// on unsigned panels as the VNNI tile, Q8_0 on signed ones (its
		// sign moves to the activations, so VPMADDUBSW's 16-bit pairs hold).
		q40.PanelAct = panelActOf(panelQ4AVX2)
		q40.Axpy8Act = blockAxpy8Act(axpy8Q40ActAVX2, format.Q4_0, 8)
		q80.PanelAct, q80.PanelSigned = panelActOf(panelQ8AVX2), true
		// The prefill's four tokens a row: the nibbles unpacked once,
		// each token's sum DotAct's to the bit.
		q40.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
			if len(a0.D) == 0 {
				return out
			}
			x := [4]*int8{&a0.Q[0], &a1.Q[0], &a2.Q[0], &a3.Q[0]}
			d := [4]*float32{&a0.D[0], &a1.D[0], &a2.D[0], &a3.D[0]}
			s := [4]*int32{&a0.S[0], &a1.S[0], &a2.S[0], &a3.S[0]}
			dot4Q40Q8AVX2(&w[0], &x, &d, &s, len(a0.D), &out)
			return out
		}
	}
	kquantAVX2(t)
	t.FMAPeak, t.FMALanes = fmaPeakAVX2, 8
	// The prefill GEMM (gemm_avx2_amd64.s): the float tile for every
	// dtype's matrices and the FFN's gate and up rows, the down projection
	// over widened rows; with it the block types' prefill takes the
	// integer tiles (PanelAct) for the gate and up rows too.
	t.Gemm = &GemmKernel{Tile: gemm4x6AVX2, Fold: hsum24AVX2, Down: gemmDown6AVX2}
	t.PrefetchL2 = func(b []byte) {
		if len(b) > 0 {
			prefetchL2AVX2(&b[0], len(b))
		}
	}
	t.SumBytes = func(b []byte) uint64 {
		n := len(b) &^ 127
		var s uint64
		if n > 0 {
			s = sumBytesAVX2(&b[0], n)
		}
		return s + sumBytesRef(b[n:])
	}
	return t
}

// avx512Table extends avx2 with the AVX-512F block-type kernels (a Q4_0
// block unpacks in four instructions against fourteen on AVX2, and
// quantised decode is bound by that unpacking) and, with AVX512_VNNI, the
// integer dots, then the default path for both block types.
func avx512Table(avx2 *Table) *Table {
	t := derive(avx2, "avx512")
	// The float down projection: with VNNI whole steps run as fast as with
	// int8 coefficients (1.00-1.04× q4_0, 0.98-1.00× q8_0), and it is exact.
	t.Int8Down = false
	t.FMAPeak, t.FMALanes = fmaPeakAVX512, 16
	q80, q40 := &t.ops[format.Q8_0], &t.ops[format.Q4_0]
	q40.Dot, q80.Dot = blockDot(dotQ40AVX512), blockDot(dotQ80AVX512)
	// Without VNNI the block types keep the float path through these
	// (AVX2's integer default is not measured against them; VNNI below
	// takes the integer path).
	q40.ActDot, q80.ActDot = false, false
	q40.PanelAct, q80.PanelAct, q80.PanelSigned = nil, nil, false
	q40.Axpy, q80.Axpy = blockAxpy(axpyQ40AVX512), blockAxpy(axpyQ80AVX512)
	q80.AxpyTiles, q40.AxpyTiles = tilesAxpy(axpyTilesQ80AVX512), tilesAxpy(axpyTilesQ40AVX512)
	q80.AxpyTilesGap, q40.AxpyTilesGap = tilesAxpy(axpyTilesGapQ80AVX512), tilesAxpy(axpyTilesGapQ40AVX512)
	t.ops[format.F16].AxpyTiles = tilesAxpy(axpyTilesF16AVX512)
	t.ops[format.BF16].AxpyTiles = tilesAxpy(axpyTilesBF16AVX512)
	t.ops[format.F16].AxpyTilesGap, t.ops[format.BF16].AxpyTilesGap = tilesAxpy(axpyTilesGapF16AVX512), tilesAxpy(axpyTilesGapBF16AVX512)
	// Rows of other lengths than whole chunks of 16 blocks: four of the
	// row axpys, the same arithmetic in the same order, so every band
	// layout (four rows at a time, one, or tiled) sums to the same bits.
	q40.Axpy4, q80.Axpy4 = blockAxpy4(axpy4Q40AVX512, fourRows(q40.Axpy)), blockAxpy4(axpy4Q80AVX512, fourRows(q80.Axpy))
	t.Gemm = &GemmKernel{Tile: gemm4x6AVX512, Panel: gemm4x6AVX512Panel, PanelF16: gemm4x6AVX512PanelF16, PackF16: gemm4x6AVX512PackF16, Fold: hsum24AVX512, Down: gemmDown6AVX512}
	// The softmax's exponentials, 16 a step (a 256-token prefill takes
	// about 17 million): 7 % of a prefill's profile in Go.
	t.ExpSubSum = expSubSumOf(expSubSumAVX512, 16)
	// The decode attention by key/value head (attentionDecode).
	t.AttnScores, t.AttnValues = attnScoresOf(attnScores4AVX512), attnValuesOf(attnValues4AVX512, 64)
	// The softmax's maximum and scaling passes (at a 1500-token prompt the
	// two Go loops took 8× the time of the exponentials beside them).
	t.Max = func(x []float32) float32 {
		n := len(x) &^ 15
		if n == 0 {
			return maxRef(x)
		}
		m := maxAVX512(&x[0], n)
		if n < len(x) {
			m = max(m, maxRef(x[n:]))
		}
		return m
	}
	t.Scale = func(x []float32, s float32) {
		n := len(x) &^ 15
		if n > 0 {
			scaleAVX512(&x[0], n, s)
		}
		scaleRef(x[n:], s)
	}
	// 2048 activations: 10 µs in Go, under 2 in AVX-512 (BenchmarkQuantize).
	t.Quantize = func(q []int8, d []float32, s []int32, x []float32) {
		if len(d) > 0 {
			quantizeBlocksAVX512(&x[0], &q[0], &d[0], &s[0], len(d))
		}
	}
	t.SiLUMul, t.SiLUVec = siluMulOf(siluMulAVX512, 16), 16
	if cpu.X86.HasAVX512BF16 {
		bf16DotTable(t)
	}
	kquantAVX512(t, cpu.X86.HasAVX512VNNI)
	if !cpu.X86.HasAVX512VNNI {
		return t
	}
	t.Name = "avx512-vnni"
	// Whole chunks of 16 blocks through VNNI, the blocks after the last
	// chunk through the AVX2 integer dot.
	q40Full := func(a *Q8Act) int {
		if len(a.Quad) == 0 {
			return 0
		}
		return len(a.D) &^ 15
	}
	q40Tail := func(w []byte, a *Q8Act, from int) float32 {
		if from == len(a.D) {
			return 0
		}
		return dotQ40Q8AVX2(&w[18*from], &a.Q[32*from], &a.D[from], &a.S[from], len(a.D)-from)
	}
	q40.ActDot, q40.Quad = true, true
	q40.DotAct = func(w []byte, a *Q8Act) float32 {
		full, s := q40Full(a), float32(0)
		if full > 0 {
			s = dotQ40Q8VNNI(&w[0], (*int8)(unsafe.Pointer(&a.Quad[0])), &a.D[0], full)
		}
		return s + q40Tail(w, a, full)
	}
	q40.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		full := q40Full(act)
		*out = [2]float32{}
		if full > 0 {
			dot2Q40Q8VNNI(&a[0], &b[0], (*int8)(unsafe.Pointer(&act.Quad[0])), &act.D[0], full, out, prefetchFrom(next))
		}
		out[0] += q40Tail(a, act, full)
		out[1] += q40Tail(b, act, full)
	}
	if cpu.X86.HasAVX512VBMI {
		// The down projection eight records at a time in integers
		// (VPERMB transposes four rows' quant bytes); used where
		// Table.Int8Down is on.
		q40.Axpy8Act = blockAxpy8Act(axpy8Q40ActVNNI, format.Q4_0, 16)
		q80.Axpy8Act = blockAxpy8Act(axpy8Q80ActVNNI, format.Q8_0, 16)
	}
	q40.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		a := [4]*Q8Act{a0, a1, a2, a3}
		full := q40Full(a[0])
		for _, x := range a[1:] {
			full = min(full, q40Full(x))
		}
		if full > 0 {
			x := [4]*int8{(*int8)(unsafe.Pointer(&a[0].Quad[0])), (*int8)(unsafe.Pointer(&a[1].Quad[0])),
				(*int8)(unsafe.Pointer(&a[2].Quad[0])), (*int8)(unsafe.Pointer(&a[3].Quad[0]))}
			d := [4]*float32{&a[0].D[0], &a[1].D[0], &a[2].D[0], &a[3].D[0]}
			dot4Q40Q8VNNI(&w[0], &x, &d, full, &out)
		}
		if full < len(a[0].D) {
			for t, act := range a {
				out[t] += q40Tail(w, act, full)
			}
		}
		return out
	}
	// Q8_0: weights' sign bits flipped for VPDPBUSD.
	q80Tail := func(w []byte, a *Q8Act, from int) float32 {
		if from == len(a.D) {
			return 0
		}
		return dotQ80Q8AVX2(&w[34*from], &a.Q[32*from], &a.D[from], len(a.D)-from)
	}
	q80.ActDot = true
	q80.DotAct = func(w []byte, a *Q8Act) float32 {
		full, s := len(a.D)&^15, float32(0)
		if full > 0 {
			s = dotQ80Q8VNNI(&w[0], &a.Q[0], &a.D[0], &a.S[0], full)
		}
		return s + q80Tail(w, a, full)
	}
	q80.Dot4Act = func(w []byte, a0, a1, a2, a3 *Q8Act) (out [4]float32) {
		a := [4]*Q8Act{a0, a1, a2, a3}
		full := len(a[0].D) &^ 15
		if full > 0 {
			x := [4]*int8{&a[0].Q[0], &a[1].Q[0], &a[2].Q[0], &a[3].Q[0]}
			d := [4]*float32{&a[0].D[0], &a[1].D[0], &a[2].D[0], &a[3].D[0]}
			s := [4]*int32{&a[0].S[0], &a[1].S[0], &a[2].S[0], &a[3].S[0]}
			dot4Q80Q8VNNI(&w[0], &x, &d, &s, full, &out)
		}
		if full < len(a[0].D) {
			for t, act := range a {
				out[t] += q80Tail(w, act, full)
			}
		}
		return out
	}
	// The prefill's integer GEMM tile, one kernel for both block types
	// (packPanel makes their values unsigned bytes alike).
	panelAct := panelActOf(panelQ8VNNI)
	q40.PanelAct, q80.PanelAct = panelAct, panelAct
	q80.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		full := len(act.D) &^ 15
		*out = [2]float32{}
		if full > 0 {
			dot2Q80Q8VNNI(&a[0], &b[0], &act.Q[0], &act.D[0], &act.S[0], full, out, prefetchFrom(next))
		}
		out[0] += q80Tail(a, act, full)
		out[1] += q80Tail(b, act, full)
	}
	return t
}

// panelActOf adapts an integer GEMM tile kernel to Ops.PanelAct: the
// tile's activations, scales and corrections from tiles.
func panelActOf(k func(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[panelRows * panelToks]float32)) func([]byte, *ActTiles, int, *[panelRows * panelToks]float32) {
	return func(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
		i := tile * a.NB * panelToks
		k(&panel[0], &a.Q[i*format.QK], &a.D[i], &a.C[i], a.NB, out)
	}
}

// packRowOf adapts a row-packing kernel to Ops.PackRow: its four-byte
// argument (the Q4_0 bias, the Q8_0 flip) from the panel's signedness, and
// a bounds check on the row's last write (4 bytes at 512 + 4·r of the last
// block; dst starts at 4·r).
func packRowOf(k func(dst, w *byte, nb int, arg uint32), arg func(signed bool) uint32) func(dst, w []byte, nb int, signed bool) {
	return func(dst, w []byte, nb int, signed bool) {
		if nb > 0 {
			_ = dst[(nb-1)*panelBlockBytes+515]
			k(&dst[0], &w[0], nb, arg(signed))
		}
	}
}

// roundBF16Fast is GemmKernel.RoundBF16 through roundBF16AVX512, the
// tail past a multiple of 16 on the reference.
func roundBF16Fast(xb []uint16, xr, x []float32) {
	n := len(x) &^ 15
	if n > 0 {
		var r *float32
		if xr != nil {
			r = &xr[0]
		}
		roundBF16AVX512(&xb[0], r, &x[0], n)
	}
	var rt []float32
	if xr != nil {
		rt = xr[n:]
	}
	roundBF16Ref(xb[n:], rt, x[n:])
}

// bf16DotTable gives t the VDPBF16PS kernels: the prefill GEMM tile over
// BF16 rows against activations rounded to BF16 (the default: 1.4× less CPU
// time for a 1B prefill, TestGoldenRoundedPrefill bounds its logits), and
// BF16 decode dots against activations rounded once per token, opt-in
// (WithBF16Rounding): they move the tiny model's logits by up to 0.2
// against the exact path and measured no faster. Rows whose width is not a
// multiple of 64 finish on the reference over the rounded activations, so
// the path is one rounding whatever the width.
func bf16DotTable(t *Table) {
	if t.Gemm != nil {
		g := *t.Gemm
		g.PanelBF16, g.PackBF16 = gemm4x6BF16DPPanel, gemm4x6BF16DPPack
		g.DownBF16, g.Interleave = gemmDown6BF16DP, interleaveBF16DP
		g.RoundBF16 = roundBF16Fast
		t.Gemm = &g
		t.PrefillBF16 = true
	}
	o := &t.ops[format.BF16]
	o.ActBF16 = true
	o.DotAct = func(w []byte, a *Q8Act) float32 {
		n := len(a.B) &^ 31
		s := float32(0)
		if n > 0 {
			s = dotBF16DP((*uint16)(unsafe.Pointer(&w[0])), &a.B[0], n)
		}
		return s + dotBF16BRef(w[2*n:], a.B[n:])
	}
	o.Dot2Act = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
		n := len(act.B) &^ 63
		*out = [2]float32{}
		if n > 0 {
			dot2BF16DP((*uint16)(unsafe.Pointer(&a[0])), (*uint16)(unsafe.Pointer(&b[0])), &act.B[0], n, out, prefetchFrom(next))
		}
		if n < len(act.B) {
			out[0] += dotBF16BRef(a[2*n:], act.B[n:])
			out[1] += dotBF16BRef(b[2*n:], act.B[n:])
		}
	}
}

// rowDot adapts a 16-bit row dot over a multiple of mask+1 elements,
// finishing the ragged tail with the reference.
func rowDot(k func(w *uint16, x *float32, n int) float32, ref func([]byte, []float32) float32, mask int) func([]byte, []float32) float32 {
	return func(w []byte, x []float32) float32 {
		n := len(x) &^ mask
		s := float32(0)
		if n > 0 {
			_ = w[2*n-1] // the row holds the n values the kernel reads
			s = k((*uint16)(unsafe.Pointer(&w[0])), &x[0], n)
		}
		if n == len(x) { // no tail: a call saved a row (the tiny model's rows are 256 values)
			return s
		}
		return s + ref(w[2*n:], x[n:])
	}
}

// rowAxpy adapts a 16-bit row axpy over a multiple of mask+1 elements.
func rowAxpy(k func(y *float32, a float32, w *uint16, n int), ref func([]float32, float32, []byte), mask int) func([]float32, float32, []byte) {
	return func(y []float32, a float32, w []byte) {
		n := len(y) &^ mask
		if n > 0 {
			_ = w[2*n-1] // the row holds the n values the kernel reads
			k(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		if n < len(y) {
			ref(y[n:], a, w[2*n:])
		}
	}
}

// dot4Of adapts a four-token dot over a multiple of 8 elements, finishing
// the ragged tail with the row reference.
func dot4Of(k func(w *uint16, x0, x1, x2, x3 *float32, n int, out *[4]float32), ref func([]byte, []float32) float32) func([]byte, []float32, []float32, []float32, []float32, *[4]float32) {
	return func(w []byte, x0, x1, x2, x3 []float32, out *[4]float32) {
		n := len(x0) &^ 7
		if n > 0 {
			k((*uint16)(unsafe.Pointer(&w[0])), &x0[0], &x1[0], &x2[0], &x3[0], n, out)
		} else {
			*out = [4]float32{}
		}
		out[0] += ref(w[2*n:], x0[n:])
		out[1] += ref(w[2*n:], x1[n:])
		out[2] += ref(w[2*n:], x2[n:])
		out[3] += ref(w[2*n:], x3[n:])
	}
}

// prefetchFrom is where a fused dot prefetches: next, or, when there is no
// record to come, a small buffer that stays in cache (the kernels need no
// branch for it; a prefetch never faults). Not the row being read: an L2
// prefetch of the lines the dot is about to load cost two thirds of a
// Q4_0 matvec's rate (17 → 7 GB/s a thread, rows in pairs).
func prefetchFrom(next []byte) *byte {
	if len(next) > 0 {
		return &next[0]
	}
	return &prefetchIdle[0]
}

// prefetchIdle is what the fused dots prefetch when nothing is to come:
// as long as the farthest they reach from next (a 2048-wide BF16 pair dot
// covers 12 KiB), so an idle prefetch re-reads its own cached lines rather
// than whatever memory lies after a shorter buffer.
var prefetchIdle [16384]byte

// dot2Of adapts a two-row dot over a multiple of 32 elements, finishing
// the ragged tail with the row reference.
func dot2Of(k func(a, b *uint16, x *float32, n int, out *[2]float32, next *byte), ref func([]byte, []float32) float32) func([]byte, []byte, []float32, *[2]float32, []byte) {
	return dot2OfN(k, ref, 31)
}

// dot2OfN is dot2Of for a kernel over a multiple of mask+1 elements.
func dot2OfN(k func(a, b *uint16, x *float32, n int, out *[2]float32, next *byte), ref func([]byte, []float32) float32, mask int) func([]byte, []byte, []float32, *[2]float32, []byte) {
	return func(a, b []byte, x []float32, out *[2]float32, next []byte) {
		n := len(x) &^ mask
		if n > 0 {
			k((*uint16)(unsafe.Pointer(&a[0])), (*uint16)(unsafe.Pointer(&b[0])), &x[0], n, out, prefetchFrom(next))
		} else {
			*out = [2]float32{}
		}
		if n < len(x) {
			out[0] += ref(a[2*n:], x[n:])
			out[1] += ref(b[2*n:], x[n:])
		}
	}
}

// axpy4Of adapts a four-row axpy over a multiple of 32 elements, finishing
// the ragged tail with the row reference.
func axpy4Of(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int), ref func([]float32, float32, []byte)) func([]float32, *[4]float32, *[4][]byte) {
	return axpy4OfN(k, ref, 31)
}

// axpy4OfN is axpy4Of for a kernel over a multiple of mask+1 elements.
func axpy4OfN(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int), ref func([]float32, float32, []byte), mask int) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		n := len(y) &^ mask
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

// gemmDownOf adapts a prefill down-projection GEMM micro-kernel (H a
// multiple of 16; otherwise the reference).
func gemmDownOf(k func(acc *float32, accStride int, h *float32, hStride int, down *uint16, recStride int, K int, H int), ref func(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int)) func(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int) {
	return func(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int) {
		if K == 0 {
			return
		}
		if H%16 != 0 {
			ref(acc, accStride, h, hStride, down, recStride, K, H)
			return
		}
		k(&acc[0], accStride, &h[0], hStride, (*uint16)(unsafe.Pointer(&down[0])), recStride, K, H)
	}
}

//go:noescape
func axpyTilesQ80AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesQ80AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesQ40AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesQ40AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesBF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesBF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

// rowsDot adapts a many-row 16-bit dot kernel (DOTROWSZ: DOT1Z a row) to
// Ops.DotRows: rows of a multiple of 64 elements go through it, others row
// by row through dot (the table's Dot, whose value for such rows is the
// same kernel's).
func rowsDot(k func(w *uint16, x *float32, n, rows, stride int, out *float32), dot func([]byte, []float32) float32) func([]float32, []byte, []float32) {
	return func(out []float32, w []byte, x []float32) {
		n, rows := len(x), len(out)
		if rows == 0 {
			return
		}
		if n == 0 || n%64 != 0 {
			for r := range out {
				out[r] = dot(w[2*n*r:2*n*(r+1)], x)
			}
			return
		}
		_ = w[2*n*rows-1]
		k((*uint16)(unsafe.Pointer(&w[0])), &x[0], n, rows, 2*n, &out[0])
	}
}

// siluMulOf adapts a vector SiLUMul kernel over multiples of w values (a
// power of two), the rest by the reference.
func siluMulOf(k func(h, gu *float32, n int), w int) func(h, gu []float32) {
	return func(h, gu []float32) {
		n := len(h) &^ (w - 1)
		if n > 0 {
			k(&h[0], &gu[0], n)
		}
		siluMulRef(h[n:], gu[2*n:])
	}
}

// expSubSumOf adapts a vector ExpSubSum kernel over multiples of w values
// (a power of two), the rest by the reference.
func expSubSumOf(k func(x *float32, n int, m float32) float32, w int) func(x []float32, m float32) float32 {
	return func(x []float32, m float32) float32 {
		n := len(x) &^ (w - 1)
		var s float32
		if n > 0 {
			s = k(&x[0], n, m)
		}
		return s + expSubSumRef(x[n:], m)
	}
}

//go:noescape
func axpyTilesGapQ80AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapQ40AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapQ80AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapQ40AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapBF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func axpyTilesGapBF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)

//go:noescape
func dotQ4KQ8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nsb int) float32

//go:noescape
func dot2Q4KQ8AVX2(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, out *[2]float32, next *byte)

//go:noescape
func dot4Q4KQ8AVX2(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nsb int, out *[4]float32)

//go:noescape
func dotQ6KQ8AVX2(w *byte, xq *int8, xd *float32, nsb int) float32

//go:noescape
func dot4Q6KQ8AVX2(w *byte, x *[4]*int8, d *[4]*float32, nsb int, out *[4]float32)

//go:noescape
func axpyQ4KAVX2(y *float32, a float32, w *byte, nsb int)
