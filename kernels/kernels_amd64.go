package kernels

import (
	"os"
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
func dotQ80Q8AVX2(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func dotQ40Q8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32

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
func fmaPeakAVX2(iters int) float32

//go:noescape
func sumBytesAVX2(p *byte, n int) uint64

func init() {
	defer applyQDotEnv()
	if os.Getenv("SIPACK_KERNELS") == "generic" {
		return
	}
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA) {
		return
	}
	Path = "avx2+fma"
	dotBF16 = func(w []byte, x []float32) float32 {
		n := len(x) &^ 7
		s := float32(0)
		if n > 0 {
			s = dotBF16AVX2((*uint16)(unsafe.Pointer(&w[0])), &x[0], n)
		}
		return s + dotBF16Ref(w[2*n:], x[n:])
	}
	axpyBF16 = func(y []float32, a float32, w []byte) {
		n := len(y) &^ 7
		if n > 0 {
			axpyBF16AVX2(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		axpyBF16Ref(y[n:], a, w[2*n:])
	}
	dotF32 = func(w []byte, x []float32) float32 {
		n := len(x) &^ 7
		s := float32(0)
		if n > 0 {
			s = dotF32AVX2((*float32)(unsafe.Pointer(&w[0])), &x[0], n)
		}
		return s + dotF32Ref(w[4*n:], x[n:])
	}
	axpyF32 = func(y []float32, a float32, w []byte) {
		n := len(y) &^ 7
		if n > 0 {
			axpyF32AVX2(&y[0], a, (*float32)(unsafe.Pointer(&w[0])), n)
		}
		axpyF32Ref(y[n:], a, w[4*n:])
	}
	dot4BF16 = dot4Of(dot4BF16AVX2, dotBF16Ref)
	dot2BF16, axpy4BF16 = dot2Of(dot2BF16AVX2, dotBF16Ref), axpy4Of(axpy4BF16AVX2, axpyBF16Ref)
	gemmDownBF16 = gemmDownOf(gemmDownBF16AVX2, gemmDownBF16Ref)
	fmaPeak = fmaPeakAVX2
	sumBytes = func(b []byte) uint64 {
		n := len(b) &^ 127
		var s uint64
		if n > 0 {
			s = sumBytesAVX2(&b[0], n)
		}
		return s + sumBytesRef(b[n:])
	}
	if cpu.X86.HasF16C {
		Path = "avx2+fma+f16c"
		dotQ80, dotQ40 = blockDot(dotQ80AVX2), blockDot(dotQ40AVX2)
		axpyQ80, axpyQ40 = blockAxpy(axpyQ80AVX2), blockAxpy(axpyQ40AVX2)
		if cpu.X86.HasSSSE3 {
			dotQ80Q8 = q8ActDot(dotQ80Q8AVX2)
			dotQ40Q8 = func(w []byte, a *Q8Act) float32 {
				if len(a.D) == 0 {
					return 0
				}
				return dotQ40Q8AVX2(&w[0], &a.Q[0], &a.D[0], &a.S[0], len(a.D))
			}
		}
		dot4F16 = dot4Of(dot4F16AVX2, dotF16Ref)
		dot2F16, axpy4F16 = dot2Of(dot2F16AVX2, dotF16Ref), axpy4Of(axpy4F16AVX2, axpyF16Ref)
		gemmDownF16 = gemmDownOf(gemmDownF16AVX2, gemmDownF16Ref)
		dotF16 = func(w []byte, x []float32) float32 {
			n := len(x) &^ 7
			s := float32(0)
			if n > 0 {
				s = dotF16AVX2((*uint16)(unsafe.Pointer(&w[0])), &x[0], n)
			}
			return s + dotF16Ref(w[2*n:], x[n:])
		}
		axpyF16 = func(y []float32, a float32, w []byte) {
			n := len(y) &^ 7
			if n > 0 {
				axpyF16AVX2(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
			}
			axpyF16Ref(y[n:], a, w[2*n:])
		}
	}
	if !cpu.X86.HasAVX512F || os.Getenv("SIPACK_KERNELS") == "avx2" {
		return
	}
	// AVX-512F block-type kernels, the default where the CPU has them: a
	// Q4_0 block unpacks in four instructions (a VPERMPS table lookup per
	// nibble) against fourteen on AVX2, and quantised decode is bound by
	// that unpacking, not by memory. SIPACK_KERNELS=avx2 keeps the AVX2 ones.
	Path += "+avx512f"
	dotQ40, dotQ80 = blockDot(dotQ40AVX512), blockDot(dotQ80AVX512)
	axpyQ40, axpyQ80 = blockAxpy(axpyQ40AVX512), blockAxpy(axpyQ80AVX512)
	axpy4Q40, axpy4Q80 = blockAxpy4(axpy4Q40AVX512, axpy4Q40Ref), blockAxpy4(axpy4Q80AVX512, axpy4Q80Ref)
	// The integer Q4_0 dot with VNNI, used for rows of whole chunks of 16
	// blocks, and then the default for Q4_0 (see IntegerDot).
	if cpu.X86.HasAVX512VNNI && cpu.X86.HasF16C {
		Path += "+vnni"
		quadActivations = true
		IntegerDot[format.Q4_0] = true
		// Both block types: whole chunks of 16 blocks through VNNI, the
		// blocks after the last chunk through the AVX2 integer dot.
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
		dotQ40Q8 = func(w []byte, a *Q8Act) float32 {
			full, s := q40Full(a), float32(0)
			if full > 0 {
				s = dotQ40Q8VNNI(&w[0], (*int8)(unsafe.Pointer(&a.Quad[0])), &a.D[0], full)
			}
			return s + q40Tail(w, a, full)
		}
		dot2Q40Q8 = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
			full := q40Full(act)
			*out = [2]float32{}
			if full > 0 {
				dot2Q40Q8VNNI(&a[0], &b[0], (*int8)(unsafe.Pointer(&act.Quad[0])), &act.D[0], full, out, prefetchFrom(a, next))
			}
			out[0] += q40Tail(a, act, full)
			out[1] += q40Tail(b, act, full)
		}
		// Q8_0 integer dots: weights' sign bits flipped for VPDPBUSD.
		IntegerDot[format.Q8_0] = true
		q80Tail := func(w []byte, a *Q8Act, from int) float32 {
			if from == len(a.D) {
				return 0
			}
			return dotQ80Q8AVX2(&w[34*from], &a.Q[32*from], &a.D[from], len(a.D)-from)
		}
		dotQ80Q8 = func(w []byte, a *Q8Act) float32 {
			full, s := len(a.D)&^15, float32(0)
			if full > 0 {
				s = dotQ80Q8VNNI(&w[0], &a.Q[0], &a.D[0], &a.S[0], full)
			}
			return s + q80Tail(w, a, full)
		}
		dot2Q80Q8 = func(a, b []byte, act *Q8Act, out *[2]float32, next []byte) {
			full := len(act.D) &^ 15
			*out = [2]float32{}
			if full > 0 {
				dot2Q80Q8VNNI(&a[0], &b[0], &act.Q[0], &act.D[0], &act.S[0], full, out, prefetchFrom(a, next))
			}
			out[0] += q80Tail(a, act, full)
			out[1] += q80Tail(b, act, full)
		}
	}
	// AVX-512F BF16 decode kernels, opt-in with SIPACK_KERNELS=avx512. On
	// the AMD EPYC (Zen 4, 512-bit ops split in two) this project was first
	// measured on they were not faster: `go test -bench MatVecBF16 ./kernels`
	// gave 17.1/11.8 GB/s (1 thread) and 24.5/25.9 GB/s (2 threads) against
	// AVX2's 21.1/17.8 and 24.4/32.7 in alternating runs. On an Intel Xeon
	// (Sapphire Rapids class) the cached dot is 2.5× faster with them, yet
	// 1B-shape dense decode on 2 threads was slower: 2.61/2.71 tok/s against
	// AVX2's 3.86/3.68 in alternating `sirun bench --quick --dtypes bf16`
	// runs. BF16 decode is memory-bound, so AVX2 stays the default for it.
	if os.Getenv("SIPACK_KERNELS") == "avx512" {
		Path += "+bf16-avx512"
		dotBF16 = func(w []byte, x []float32) float32 {
			n := len(x) &^ 15
			s := float32(0)
			if n > 0 {
				s = dotBF16AVX512((*uint16)(unsafe.Pointer(&w[0])), &x[0], n)
			}
			return s + dotBF16Ref(w[2*n:], x[n:])
		}
		axpyBF16 = func(y []float32, a float32, w []byte) {
			n := len(y) &^ 15
			if n > 0 {
				axpyBF16AVX512(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
			}
			axpyBF16Ref(y[n:], a, w[2*n:])
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
// record to come, the row it reads anyway (a prefetch never faults, so
// the kernels need no branch for it).
func prefetchFrom(cur, next []byte) *byte {
	if len(next) > 0 {
		return &next[0]
	}
	return &cur[0]
}

// dot2Of adapts a two-row dot over a multiple of 32 elements, finishing
// the ragged tail with the row reference.
func dot2Of(k func(a, b *uint16, x *float32, n int, out *[2]float32, next *byte), ref func([]byte, []float32) float32) func([]byte, []byte, []float32, *[2]float32, []byte) {
	return func(a, b []byte, x []float32, out *[2]float32, next []byte) {
		n := len(x) &^ 31
		if n > 0 {
			k((*uint16)(unsafe.Pointer(&a[0])), (*uint16)(unsafe.Pointer(&b[0])), &x[0], n, out, prefetchFrom(a, next))
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
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		n := len(y) &^ 31
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
