#include "textflag.h"
#include "amd64_macros.h"

// AVX2 kernels (needs AVX2, FMA and F16C): the 16- and 32-bit float dots
// and axpys, their four-token (prefill) and two-row/four-row (decode FFN)
// forms, the prefill down-projection GEMM, the Q4_0/Q8_0 float and
// integer (VPMADDUBSW) kernels, and the fmaPeak and sumBytes probes.
// Comments here say what and why; the timings behind the choices are in
// docs/performance.md.

// The float kernels take n, a multiple of 8 (the Go wrappers handle the
// ragged tail). BF16 widens by zero-extending to 32 bits and shifting left
// 16; F16 uses F16C's VCVTPH2PS. The widening from any base register, for
// the kernels written once for both 16-bit types (DOTW, AXPYW, DOT4,
// GEMMDOWN) and instantiated per type:
#define LOADBF16W(off, base, r) VPMOVZXWD off(base), r; VPSLLD $16, r, r
#define LOADF16W(off, base, r)  VCVTPH2PS off(base), r

// The body of dotBF16AVX2 and dotF16AVX2 (w in SI, x in DI, n in CX),
// written once over the widening load; leaves the sum in X0. No software
// prefetch: rows are read in order, which the hardware prefetcher follows,
// and a PREFETCHT0 8 KiB ahead cost a third of the streaming rate (a 1B
// model's lm_head matvec on 2 threads: 35 GB/s with it, 52 without, the
// plain stream 51).
#define DOTW(LOADW) \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	loop32:; \
	CMPQ CX, $32; \
	JL   loop8; \
	LOADW(0, SI, Y4); \
	LOADW(16, SI, Y5); \
	LOADW(32, SI, Y6); \
	LOADW(48, SI, Y7); \
	VFMADD231PS 0(DI), Y4, Y0; \
	VFMADD231PS 32(DI), Y5, Y1; \
	VFMADD231PS 64(DI), Y6, Y2; \
	VFMADD231PS 96(DI), Y7, Y3; \
	ADDQ $64, SI; \
	ADDQ $128, DI; \
	SUBQ $32, CX; \
	JMP  loop32; \
	loop8:; \
	CMPQ CX, $8; \
	JL   done; \
	LOADW(0, SI, Y4); \
	VFMADD231PS 0(DI), Y4, Y0; \
	ADDQ $16, SI; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP  loop8; \
	done:; \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	HSUM; \
	VZEROUPPER

// func dotBF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOTW(LOADBF16W)
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOTW(LOADF16W)
	MOVSS X0, ret+24(FP)
	RET

// func dotF32AVX2(w *float32, x *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
f32loop32:
	CMPQ CX, $32
	JL   f32loop8
	VMOVUPS 0(SI), Y4
	VMOVUPS 32(SI), Y5
	VMOVUPS 64(SI), Y6
	VMOVUPS 96(SI), Y7
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f32loop32
f32loop8:
	CMPQ CX, $8
	JL   f32done
	VMOVUPS 0(SI), Y4
	VFMADD231PS 0(DI), Y4, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f32loop8
f32done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// y[i] += a·w[i]. The body of axpyBF16AVX2 and axpyF16AVX2 (y in DI, a
// broadcast in Y15, w in SI, n in CX), written once over the widening load.
#define AXPYW(LOADW) \
	loop32:; \
	CMPQ CX, $32; \
	JL   loop8; \
	LOADW(0, SI, Y4); \
	LOADW(16, SI, Y5); \
	LOADW(32, SI, Y6); \
	LOADW(48, SI, Y7); \
	VMOVUPS 0(DI), Y8; \
	VMOVUPS 32(DI), Y9; \
	VMOVUPS 64(DI), Y10; \
	VMOVUPS 96(DI), Y11; \
	VFMADD231PS Y4, Y15, Y8; \
	VFMADD231PS Y5, Y15, Y9; \
	VFMADD231PS Y6, Y15, Y10; \
	VFMADD231PS Y7, Y15, Y11; \
	VMOVUPS Y8, 0(DI); \
	VMOVUPS Y9, 32(DI); \
	VMOVUPS Y10, 64(DI); \
	VMOVUPS Y11, 96(DI); \
	ADDQ $64, SI; \
	ADDQ $128, DI; \
	SUBQ $32, CX; \
	JMP  loop32; \
	loop8:; \
	CMPQ CX, $8; \
	JL   done; \
	LOADW(0, SI, Y4); \
	VMOVUPS 0(DI), Y8; \
	VFMADD231PS Y4, Y15, Y8; \
	VMOVUPS Y8, 0(DI); \
	ADDQ $16, SI; \
	ADDQ $32, DI; \
	SUBQ $8, CX; \
	JMP  loop8; \
	done:; \
	VZEROUPPER; \
	RET

// func axpyBF16AVX2(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
	AXPYW(LOADBF16W)

// func axpyF16AVX2(y *float32, a float32, w *uint16, n int)
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
	AXPYW(LOADF16W)

// func axpyF32AVX2(y *float32, a float32, w *float32, n int)
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
af32loop8:
	CMPQ CX, $8
	JL   af32done
	VMOVUPS 0(SI), Y4
	VMOVUPS 0(DI), Y8
	VFMADD231PS Y4, Y15, Y8
	VMOVUPS Y8, 0(DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  af32loop8
af32done:
	VZEROUPPER
	RET

// Four dot products sharing one weight row: out[j] = Σ w[i]·x_j[i], for
// the prefill GEMM (the row is widened once for four tokens).
// The body of dot4BF16AVX2 and dot4F16AVX2 (arguments in registers, out in
// DX), written once and instantiated with each type's widening load.
#define DOT4(LOADW) \
	XORQ AX, AX; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	d4loop16:; \
	CMPQ CX, $16; \
	JL   d4loop8; \
	LOADW(0, SI, Y4); \
	LOADW(16, SI, Y5); \
	VFMADD231PS 0(R8)(AX*1), Y4, Y0; \
	VFMADD231PS 0(R9)(AX*1), Y4, Y1; \
	VFMADD231PS 0(R10)(AX*1), Y4, Y2; \
	VFMADD231PS 0(R11)(AX*1), Y4, Y3; \
	VFMADD231PS 32(R8)(AX*1), Y5, Y8; \
	VFMADD231PS 32(R9)(AX*1), Y5, Y9; \
	VFMADD231PS 32(R10)(AX*1), Y5, Y10; \
	VFMADD231PS 32(R11)(AX*1), Y5, Y11; \
	ADDQ $32, SI; \
	ADDQ $64, AX; \
	SUBQ $16, CX; \
	JMP  d4loop16; \
	d4loop8:; \
	CMPQ CX, $8; \
	JL   d4done; \
	LOADW(0, SI, Y4); \
	VFMADD231PS 0(R8)(AX*1), Y4, Y0; \
	VFMADD231PS 0(R9)(AX*1), Y4, Y1; \
	VFMADD231PS 0(R10)(AX*1), Y4, Y2; \
	VFMADD231PS 0(R11)(AX*1), Y4, Y3; \
	ADDQ $16, SI; \
	ADDQ $32, AX; \
	SUBQ $8, CX; \
	JMP  d4loop8; \
	d4done:; \
	VADDPS Y8, Y0, Y0; \
	VADDPS Y9, Y1, Y1; \
	VADDPS Y10, Y2, Y2; \
	VADDPS Y11, Y3, Y3; \
	VEXTRACTF128 $1, Y0, X4; \
	VADDPS X4, X0, X0; \
	VEXTRACTF128 $1, Y1, X5; \
	VADDPS X5, X1, X1; \
	VEXTRACTF128 $1, Y2, X6; \
	VADDPS X6, X2, X2; \
	VEXTRACTF128 $1, Y3, X7; \
	VADDPS X7, X3, X3; \
	VHADDPS X1, X0, X0; \
	VHADDPS X3, X2, X2; \
	VHADDPS X2, X0, X0; \
	VMOVUPS X0, (DX); \
	VZEROUPPER; \
	RET

// func dot4BF16AVX2(w *uint16, x0, x1, x2, x3 *float32, n int, out *[4]float32)
TEXT ·dot4BF16AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ x0+8(FP), R8
	MOVQ x1+16(FP), R9
	MOVQ x2+24(FP), R10
	MOVQ x3+32(FP), R11
	MOVQ n+40(FP), CX
	MOVQ out+48(FP), DX
	DOT4(LOADBF16W)

// func dot4F16AVX2(w *uint16, x0, x1, x2, x3 *float32, n int, out *[4]float32)
TEXT ·dot4F16AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ x0+8(FP), R8
	MOVQ x1+16(FP), R9
	MOVQ x2+24(FP), R10
	MOVQ x3+32(FP), R11
	MOVQ n+40(FP), CX
	MOVQ out+48(FP), DX
	DOT4(LOADF16W)

// A register-only FMA loop: 10 independent accumulators, iters × 10
// VFMADD231PS of 8 lanes (2 FLOPs per lane). Measures the peak.
// func fmaPeakAVX2(iters int) float32
TEXT ·fmaPeakAVX2(SB), NOSPLIT, $0-12
	MOVQ iters+0(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VPCMPEQD Y14, Y14, Y14
	VPSRLD $10, Y14, Y14 // a small positive float pattern, never denormal
	VMOVAPS Y14, Y15
peak:
	VFMADD231PS Y14, Y15, Y0
	VFMADD231PS Y14, Y15, Y1
	VFMADD231PS Y14, Y15, Y2
	VFMADD231PS Y14, Y15, Y3
	VFMADD231PS Y14, Y15, Y4
	VFMADD231PS Y14, Y15, Y5
	VFMADD231PS Y14, Y15, Y6
	VFMADD231PS Y14, Y15, Y7
	VFMADD231PS Y14, Y15, Y8
	VFMADD231PS Y14, Y15, Y9
	DECQ CX
	JNZ  peak
	VADDPS Y1, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+8(FP)
	RET

// A streaming read of n bytes (a multiple of 128): the bandwidth probe. It
// prefetches 8 KiB ahead as the decode kernels do, so that it reads as fast
// as they stream and the bound it gives is not an underestimate.
// func sumBytesAVX2(p *byte, n int) uint64
TEXT ·sumBytesAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
sumloop:
	CMPQ CX, $128
	JL   sumdone
	PREFETCHT0 8192(SI)
	PREFETCHT0 8256(SI)
	VPADDQ 0(SI), Y0, Y0
	VPADDQ 32(SI), Y1, Y1
	VPADDQ 64(SI), Y2, Y2
	VPADDQ 96(SI), Y3, Y3
	ADDQ $128, SI
	SUBQ $128, CX
	JMP  sumloop
sumdone:
	VPADDQ Y1, Y0, Y0
	VPADDQ Y3, Y2, Y2
	VPADDQ Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPEXTRQ $0, X0, AX
	VPEXTRQ $1, X0, BX
	ADDQ BX, AX
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

// Block-quantised kernels; nb is the number of 32-weight blocks.
#define SCALE(r) MOVWLZX 0(SI), AX; VMOVQ AX, X1; VCVTPH2PS X1, X1; VBROADCASTSS X1, r
#define Q8(off, r) VPMOVSXBD off(SI), r; VCVTDQ2PS r, r

// func dotQ80AVX2(w *byte, x *float32, nb int) float32
TEXT ·dotQ80AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y9, Y9, Y9
q8loop:
	TESTQ CX, CX
	JE    q8done
	SCALE(Y1)
	Q8(2, Y4)
	Q8(10, Y5)
	Q8(18, Y6)
	Q8(26, Y7)
	VMULPS 0(DI), Y4, Y4
	VFMADD231PS 32(DI), Y5, Y4
	VMULPS 64(DI), Y6, Y6
	VFMADD231PS 96(DI), Y7, Y6
	VADDPS Y6, Y4, Y4
	VFMADD231PS Y4, Y1, Y0
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q8loop
q8done:
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q4 nibbles of a block's 16 bytes into four float vectors (elements
// 0-7, 8-15, 16-23, 24-31), minus 8. Needs Y2 = 15s and Y3 = 8s.
#define Q4AT(p, a, b, c, d) VPMOVZXBD 2(p), a; VPMOVZXBD 10(p), b; VPSRLD $4, a, c; VPSRLD $4, b, d; VPAND Y2, a, a; VPAND Y2, b, b; VPSUBD Y3, a, a; VPSUBD Y3, b, b; VPSUBD Y3, c, c; VPSUBD Y3, d, d; VCVTDQ2PS a, a; VCVTDQ2PS b, b; VCVTDQ2PS c, c; VCVTDQ2PS d, d
#define Q4(a, b, c, d) Q4AT(SI, a, b, c, d)
#define Q4CONST MOVL $15, AX; VMOVQ AX, X2; VPBROADCASTD X2, Y2; MOVL $8, AX; VMOVQ AX, X3; VPBROADCASTD X3, Y3

// func dotQ40AVX2(w *byte, x *float32, nb int) float32
TEXT ·dotQ40AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	Q4CONST
	VXORPS Y0, Y0, Y0
q4loop:
	TESTQ CX, CX
	JE    q4done
	SCALE(Y1)
	Q4(Y4, Y5, Y6, Y7)
	VMULPS 0(DI), Y4, Y4
	VFMADD231PS 32(DI), Y5, Y4
	VMULPS 64(DI), Y6, Y6
	VFMADD231PS 96(DI), Y7, Y6
	VADDPS Y6, Y4, Y4
	VFMADD231PS Y4, Y1, Y0
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q4loop
q4done:
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

#define AXPY4(a, b, c, d) VMOVUPS 0(DI), Y8; VMOVUPS 32(DI), Y9; VMOVUPS 64(DI), Y10; VMOVUPS 96(DI), Y11; VFMADD231PS a, Y1, Y8; VFMADD231PS b, Y1, Y9; VFMADD231PS c, Y1, Y10; VFMADD231PS d, Y1, Y11; VMOVUPS Y8, 0(DI); VMOVUPS Y9, 32(DI); VMOVUPS Y10, 64(DI); VMOVUPS Y11, 96(DI)

// y[i] += a·d_b·q_i
// func axpyQ80AVX2(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ80AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VMOVSS a+8(FP), X15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
aq8loop:
	TESTQ CX, CX
	JE    aq8done
	MOVWLZX 0(SI), AX
	VMOVQ AX, X1
	VCVTPH2PS X1, X1
	VMULSS X15, X1, X1
	VBROADCASTSS X1, Y1
	Q8(2, Y4)
	Q8(10, Y5)
	Q8(18, Y6)
	Q8(26, Y7)
	AXPY4(Y4, Y5, Y6, Y7)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq8loop
aq8done:
	VZEROUPPER
	RET

// func axpyQ40AVX2(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ40AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VMOVSS a+8(FP), X15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
	Q4CONST
aq4loop:
	TESTQ CX, CX
	JE    aq4done
	MOVWLZX 0(SI), AX
	VMOVQ AX, X1
	VCVTPH2PS X1, X1
	VMULSS X15, X1, X1
	VBROADCASTSS X1, Y1
	Q4(Y4, Y5, Y6, Y7)
	AXPY4(Y4, Y5, Y6, Y7)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq4loop
aq4done:
	VZEROUPPER
	RET

// ROW4Q4(ptr, areg): one Q4_0 block of the row at ptr, times its d·a
// (areg holds a in its low lane), added into Y8..Y11 (the block's 32
// values of y); Y1, Y4..Y7 scratch, Y2 and Y3 the Q4CONST masks.
#define ROW4Q4(ptr, areg) \
	MOVWLZX 0(ptr), AX; \
	VMOVQ AX, X1; \
	VCVTPH2PS X1, X1; \
	VMULSS areg, X1, X1; \
	VBROADCASTSS X1, Y1; \
	Q4AT(ptr, Y4, Y5, Y6, Y7); \
	VFMADD231PS Y4, Y1, Y8; \
	VFMADD231PS Y5, Y1, Y9; \
	VFMADD231PS Y6, Y1, Y10; \
	VFMADD231PS Y7, Y1, Y11

// y[i] += Σ_r a[r]·d_r,b·q_r,i over four Q4_0 rows: y loaded and stored
// once a block for the four rows, which add in row order, each as
// axpyQ40AVX2 adds one (the same sums to the bit).
// func axpy4Q40AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q40AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), BX
	MOVQ w0+16(FP), SI
	MOVQ w1+24(FP), R8
	MOVQ w2+32(FP), R9
	MOVQ w3+40(FP), R10
	MOVQ nb+48(FP), CX
	VMOVSS 0(BX), X12
	VMOVSS 4(BX), X13
	VMOVSS 8(BX), X14
	VMOVSS 12(BX), X15
	Q4CONST
a4q4loop:
	TESTQ CX, CX
	JE    a4q4done
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	ROW4Q4(SI, X12)
	ROW4Q4(R8, X13)
	ROW4Q4(R9, X14)
	ROW4Q4(R10, X15)
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	ADDQ $18, SI
	ADDQ $18, R8
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $128, DI
	DECQ CX
	JMP  a4q4loop
a4q4done:
	VZEROUPPER
	RET

// Integer dots against activations quantised to Q8 per block of 32 (as
// llama.cpp does): xq holds 32 int8 per block, xd the block scales, xs the
// block sums of xq. For each block: s = Σ qw·qx by VPMADDUBSW (unsigned ×
// signed bytes into int16 pairs) and VPMADDWD (pairs into int32).

// SCALES8(bs): a chunk of eight blocks' (bs bytes each) d_w·d_x at
// 0(R10): the scales gathered from the blocks (VPINSRW), widened and
// multiplied by the activations' eight at once (X10/Y10 scratch).
#define SCALES8(bs) \
	MOVWLZX 0(SI), AX; \
	VMOVD AX, X10; \
	VPINSRW $1, (1*bs)(SI), X10, X10; \
	VPINSRW $2, (2*bs)(SI), X10, X10; \
	VPINSRW $3, (3*bs)(SI), X10, X10; \
	VPINSRW $4, (4*bs)(SI), X10, X10; \
	VPINSRW $5, (5*bs)(SI), X10, X10; \
	VPINSRW $6, (6*bs)(SI), X10, X10; \
	VPINSRW $7, (7*bs)(SI), X10, X10; \
	VCVTPH2PS X10, Y10; \
	VMULPS 0(R8), Y10, Y10; \
	VMOVUPS Y10, 0(R10)

// Q8SUMS(off): Σ qw·qx of the Q8_0 block at off·34(SI) and the
// activations at off·32(DI), by the sign transfer (|qw| × qx·sign(qw)),
// as float32 lanes in Y6 (Y4, Y5, Y7 scratch; Y2 int16 ones).
#define Q8SUMS(off) \
	VMOVDQU (off*34+2)(SI), Y4; \
	VMOVDQU (off*32)(DI), Y5; \
	VPSIGNB Y4, Y4, Y6; \
	VPSIGNB Y4, Y5, Y7; \
	VPMADDUBSW Y7, Y6, Y6; \
	VPMADDWD Y2, Y6, Y6; \
	VCVTDQ2PS Y6, Y6

// QQ8BLK8(off, acc): block off of a chunk into acc, its scale from
// SCALES8.
#define QQ8BLK8(off, acc) \
	Q8SUMS(off); \
	VBROADCASTSS (off*4)(R10), Y1; \
	VFMADD231PS Y6, Y1, acc

// func dotQ80Q8AVX2(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ80Q8AVX2(SB), NOSPLIT, $32-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nb+24(FP), CX
	LEAQ 0(SP), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	MOVL $1, AX
	VMOVQ AX, X2
	VPBROADCASTW X2, Y2 // int16 ones
	// Eight blocks a chunk, their scales gathered into one vector
	// (SCALES8) and the blocks alternating between two accumulators:
	// a block at a time into one, the FMA's latency held each block (a
	// cached 2048-wide row, BenchmarkMicroQ80Q8AVX2: 69.7-70.0 → 54.5-54.9
	// ns; four accumulators 55-56).
qq8chunk:
	CMPQ CX, $8
	JL   qq8loop
	SCALES8(34)
	QQ8BLK8(0, Y0)
	QQ8BLK8(1, Y8)
	QQ8BLK8(2, Y0)
	QQ8BLK8(3, Y8)
	QQ8BLK8(4, Y0)
	QQ8BLK8(5, Y8)
	QQ8BLK8(6, Y0)
	QQ8BLK8(7, Y8)
	ADDQ $272, SI
	ADDQ $256, DI
	ADDQ $32, R8
	SUBQ $8, CX
	JMP  qq8chunk
qq8loop:
	TESTQ CX, CX
	JE    qq8done
	MOVWLZX 0(SI), AX
	VMOVQ AX, X1
	VCVTPH2PS X1, X1
	VMULSS 0(R8), X1, X1
	VBROADCASTSS X1, Y1 // d_w · d_x
	Q8SUMS(0)
	VFMADD231PS Y6, Y1, Y0
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	JMP  qq8loop
qq8done:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// Q4CONSTS: Y2 int16 ones (VPMADDWD's), Y3 the nibble mask.
#define Q4CONSTS \
	MOVL $1, AX; \
	VMOVQ AX, X2; \
	VPBROADCASTW X2, Y2; \
	MOVL $0x0f0f0f0f, AX; \
	VMOVQ AX, X3; \
	VPBROADCASTD X3, Y3

// UNPACK4(off): the Q4_0 block at SI + off·18: its d_w into X1, its 32
// nibbles into Y14 (X5 scratch).
#define UNPACK4(off) \
	MOVWLZX (off*18)(SI), AX; \
	VMOVQ AX, X1; \
	VCVTPH2PS X1, X1; \
	NIBBLES4(off)

// NIBBLES4(off): the 32 nibbles of the Q4_0 block at SI + off·18 into
// Y14 as unsigned bytes (X5 scratch; Y3 the nibble mask).
#define NIBBLES4(off) \
	VMOVDQU (off*18+2)(SI), X14; \
	VPSRLW $4, X14, X5; \
	VINSERTI128 $1, X5, Y14, Y14; \
	VPAND Y3, Y14, Y14

// Q4TOK(x, s, d, acc): the unpacked block (UNPACK4) against one token's
// block, its 32 bytes at x, its Σqx at s and scale at d, into acc:
// d_w·d_x·(Σ q·qx − 8·Σ qx), the offset taken off one lane of the int32
// sums before they become float (Y6, X13, Y15 scratch).
#define Q4TOK(x, s, d, acc) \
	VMOVDQU x, Y6; \
	VPMADDUBSW Y6, Y14, Y6; \
	VPMADDWD Y2, Y6, Y6; \
	MOVL s, AX; \
	SHLL $3, AX; \
	VMOVD AX, X13; \
	VPSUBD Y13, Y6, Y6; \
	VCVTDQ2PS Y6, Y6; \
	VMULSS d, X1, X15; \
	VBROADCASTSS X15, Y15; \
	VFMADD231PS Y6, Y15, acc

// QQ4BLK(off, acc): block off of the row (SI) and of the token (xq at DI,
// xd and xs at R8, R9) into acc.
#define QQ4BLK(off, acc) \
	UNPACK4(off); \
	Q4TOK((off*32)(DI), (off*4)(R9), (off*4)(R8), acc)

// Σ_b d_w·d_x·(Σ q·qx − 8·Σ qx), q the unsigned nibbles; 8·Σqx is taken
// off one lane of the block's int32 sums before they become float, so no
// two large float sums cancel. Eight blocks a chunk: their scales are
// gathered into one vector (VPINSRW from the 18-byte blocks), widened and
// multiplied by the activations' eight at once, and their 8·Σqx shifted
// at once, both kept on the stack for each block's broadcast and
// subtraction — where a block at a time spent nine instructions of its
// twenty on them. The same products in the same order: the sums are the
// block-at-a-time loop's (the tail's) to the bit.
// QSCALES8: the chunk's d_w·d_x at 0(R10) (SCALES8), its 8·Σqx at
// 32(R10) (R10: the frame's 64 bytes).
#define QSCALES8 \
	SCALES8(18); \
	VMOVDQU 0(R9), Y11; \
	VPSLLD $3, Y11, Y11; \
	VMOVDQU Y11, 32(R10)

// QQ4BLK8(off, acc): block off of a chunk (its scale and offset from
// QSCALES8) into acc, as QQ4BLK.
#define QQ4BLK8(off, acc) \
	NIBBLES4(off); \
	VMOVDQU (off*32)(DI), Y6; \
	VPMADDUBSW Y6, Y14, Y6; \
	VPMADDWD Y2, Y6, Y6; \
	VMOVD (off*4+32)(R10), X13; \
	VPSUBD Y13, Y6, Y6; \
	VCVTDQ2PS Y6, Y6; \
	VBROADCASTSS (off*4)(R10), Y15; \
	VFMADD231PS Y6, Y15, acc

// func dotQ40Q8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32
TEXT ·dotQ40Q8AVX2(SB), NOSPLIT, $64-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nb+32(FP), CX
	LEAQ 0(SP), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	Q4CONSTS
	// Two accumulators, even blocks into Y0 and odd into Y8: one
	// accumulator's chain of FMAs held a block to the FMA's latency (a
	// 2048-wide row from cache, BenchmarkMicroQ40Q8AVX2: 68-79 → 62-67 ns;
	// four accumulators 63-69, no better).
qq4chunk:
	CMPQ CX, $8
	JL   qq4pair
	QSCALES8
	QQ4BLK8(0, Y0)
	QQ4BLK8(1, Y8)
	QQ4BLK8(2, Y0)
	QQ4BLK8(3, Y8)
	QQ4BLK8(4, Y0)
	QQ4BLK8(5, Y8)
	QQ4BLK8(6, Y0)
	QQ4BLK8(7, Y8)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	SUBQ $8, CX
	JMP  qq4chunk
qq4pair:
	CMPQ CX, $2
	JL   qq4one
	QQ4BLK(0, Y0)
	QQ4BLK(1, Y8)
	ADDQ $36, SI
	ADDQ $64, DI
	ADDQ $8, R8
	ADDQ $8, R9
	SUBQ $2, CX
	JMP  qq4pair
qq4one:
	TESTQ CX, CX
	JE    qq4done
	QQ4BLK(0, Y0)
qq4done:
	VADDPS Y8, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// The prefill FFN's down projection for four tokens, as a register-blocked
// GEMM: acc[t, i] += Σ_j h[t, j] · down_j[i] for t < 4, all i < H (H a
// multiple of 16), j < K. Eight accumulators hold a 4 × 16 output tile; each
// BF16 down row slice is widened once for four tokens.
// The body of gemmDownBF16AVX2 and gemmDownF16AVX2 (arguments in registers,
// K in R14), instantiated with each type's widening load.
#define GEMMDOWN(LOADW) \
	SHLQ $2, R13; \
	LEAQ (R13)(R13*2), R9; \
	SHLQ $2, DX; \
	LEAQ (DX)(DX*2), R12; \
	gcol:; \
	CMPQ R11, $16; \
	JL   gdone; \
	VMOVUPS 0(DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS 0(DI)(R13*1), Y2; \
	VMOVUPS 32(DI)(R13*1), Y3; \
	VMOVUPS 0(DI)(R13*2), Y4; \
	VMOVUPS 32(DI)(R13*2), Y5; \
	VMOVUPS 0(DI)(R9*1), Y6; \
	VMOVUPS 32(DI)(R9*1), Y7; \
	MOVQ R14, CX; \
	MOVQ SI, BX; \
	MOVQ R8, AX; \
	ginner:; \
	LOADW(0, AX, Y8); \
	LOADW(16, AX, Y9); \
	VBROADCASTSS 0(BX), Y10; \
	VBROADCASTSS 0(BX)(DX*1), Y11; \
	VBROADCASTSS 0(BX)(DX*2), Y12; \
	VBROADCASTSS 0(BX)(R12*1), Y13; \
	VFMADD231PS Y8, Y10, Y0; \
	VFMADD231PS Y9, Y10, Y1; \
	VFMADD231PS Y8, Y11, Y2; \
	VFMADD231PS Y9, Y11, Y3; \
	VFMADD231PS Y8, Y12, Y4; \
	VFMADD231PS Y9, Y12, Y5; \
	VFMADD231PS Y8, Y13, Y6; \
	VFMADD231PS Y9, Y13, Y7; \
	ADDQ $4, BX; \
	ADDQ R10, AX; \
	DECQ CX; \
	JNZ  ginner; \
	VMOVUPS Y0, 0(DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 0(DI)(R13*1); \
	VMOVUPS Y3, 32(DI)(R13*1); \
	VMOVUPS Y4, 0(DI)(R13*2); \
	VMOVUPS Y5, 32(DI)(R13*2); \
	VMOVUPS Y6, 0(DI)(R9*1); \
	VMOVUPS Y7, 32(DI)(R9*1); \
	ADDQ $64, DI; \
	ADDQ $32, R8; \
	SUBQ $16, R11; \
	JMP  gcol; \
	gdone:; \
	VZEROUPPER; \
	RET

// func gemmDownBF16AVX2(acc *float32, accStride int, h *float32, hStride int, down *uint16, recStride int, K int, H int)
TEXT ·gemmDownBF16AVX2(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ accStride+8(FP), R13
	MOVQ h+16(FP), SI
	MOVQ hStride+24(FP), DX
	MOVQ down+32(FP), R8
	MOVQ recStride+40(FP), R10
	MOVQ H+56(FP), R11
	MOVQ K+48(FP), R14
	GEMMDOWN(LOADBF16W)

// func gemmDownF16AVX2(acc *float32, accStride int, h *float32, hStride int, down *uint16, recStride int, K int, H int)
TEXT ·gemmDownF16AVX2(SB), NOSPLIT, $0-64
	MOVQ acc+0(FP), DI
	MOVQ accStride+8(FP), R13
	MOVQ h+16(FP), SI
	MOVQ hStride+24(FP), DX
	MOVQ down+32(FP), R8
	MOVQ recStride+40(FP), R10
	MOVQ H+56(FP), R11
	MOVQ K+48(FP), R14
	GEMMDOWN(LOADF16W)

// Decode FFN kernels for the 16-bit types: the gate and up dots of one
// neuron record in one pass (x loaded once for both rows), and the down
// projection four records at a time (y loaded and stored once per four
// rows). Written once as macros over the widening load, instantiated for
// BF16 and F16. Fused because separate dot and axpy kernels, each alone
// streaming at the memory bound, ran slower mixed than either alone.

#define LOADBF16X(off, base, r) VPMOVZXWD off(base)(AX*1), r; VPSLLD $16, r, r
#define LOADF16X(off, base, r)  VCVTPH2PS off(base)(AX*1), r

// DOT2: SI = row a, BX = row b, DI = x, CX = n (a multiple of 32), DX = out,
// R12 = the next record to prefetch into L2 (PREFETCHT2, as
// dot2Q40Q8VNNI in vnni_amd64.s; 3 rows of n elements: three cache lines
// per 32 elements of a and b).
#define DOT2(LOADW) \
	XORQ AX, AX; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	d2loop:; \
	PREFETCHT2 0(R12); \
	PREFETCHT2 64(R12); \
	PREFETCHT2 128(R12); \
	ADDQ $192, R12; \
	VMOVUPS 0(DI)(AX*2), Y8; \
	VMOVUPS 32(DI)(AX*2), Y9; \
	VMOVUPS 64(DI)(AX*2), Y10; \
	VMOVUPS 96(DI)(AX*2), Y11; \
	LOADW(0, SI, Y12); \
	LOADW(16, SI, Y13); \
	LOADW(32, SI, Y14); \
	LOADW(48, SI, Y15); \
	VFMADD231PS Y8, Y12, Y0; \
	VFMADD231PS Y9, Y13, Y1; \
	VFMADD231PS Y10, Y14, Y2; \
	VFMADD231PS Y11, Y15, Y3; \
	LOADW(0, BX, Y12); \
	LOADW(16, BX, Y13); \
	LOADW(32, BX, Y14); \
	LOADW(48, BX, Y15); \
	VFMADD231PS Y8, Y12, Y4; \
	VFMADD231PS Y9, Y13, Y5; \
	VFMADD231PS Y10, Y14, Y6; \
	VFMADD231PS Y11, Y15, Y7; \
	ADDQ $64, AX; \
	SUBQ $32, CX; \
	JNZ  d2loop; \
	VADDPS Y1, Y0, Y0; \
	VADDPS Y3, Y2, Y2; \
	VADDPS Y2, Y0, Y0; \
	VADDPS Y5, Y4, Y4; \
	VADDPS Y7, Y6, Y6; \
	VADDPS Y6, Y4, Y4; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VEXTRACTF128 $1, Y4, X5; \
	VADDPS X5, X4, X4; \
	VHADDPS X4, X0, X0; \
	VHADDPS X0, X0, X0; \
	VMOVQ X0, 0(DX); \
	VZEROUPPER; \
	RET

// func dot2BF16AVX2(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)
TEXT ·dot2BF16AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	MOVQ next+40(FP), R12
	DOT2(LOADBF16X)

// func dot2F16AVX2(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)
TEXT ·dot2F16AVX2(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	MOVQ next+40(FP), R12
	DOT2(LOADF16X)

// AXPY4: DI = y, DX = the four factors, R8..R11 = rows, CX = n (a multiple of 32).
#define AXPY4W(LOADW) \
	XORQ AX, AX; \
	VBROADCASTSS 0(DX), Y12; \
	VBROADCASTSS 4(DX), Y13; \
	VBROADCASTSS 8(DX), Y14; \
	VBROADCASTSS 12(DX), Y15; \
	a4loop:; \
	VMOVUPS 0(DI)(AX*2), Y0; \
	VMOVUPS 32(DI)(AX*2), Y1; \
	VMOVUPS 64(DI)(AX*2), Y2; \
	VMOVUPS 96(DI)(AX*2), Y3; \
	LOADW(0, R8, Y4); \
	LOADW(16, R8, Y5); \
	LOADW(32, R8, Y6); \
	LOADW(48, R8, Y7); \
	LOADW(0, R9, Y8); \
	LOADW(16, R9, Y9); \
	LOADW(32, R9, Y10); \
	LOADW(48, R9, Y11); \
	VFMADD231PS Y4, Y12, Y0; \
	VFMADD231PS Y5, Y12, Y1; \
	VFMADD231PS Y6, Y12, Y2; \
	VFMADD231PS Y7, Y12, Y3; \
	VFMADD231PS Y8, Y13, Y0; \
	VFMADD231PS Y9, Y13, Y1; \
	VFMADD231PS Y10, Y13, Y2; \
	VFMADD231PS Y11, Y13, Y3; \
	LOADW(0, R10, Y4); \
	LOADW(16, R10, Y5); \
	LOADW(32, R10, Y6); \
	LOADW(48, R10, Y7); \
	LOADW(0, R11, Y8); \
	LOADW(16, R11, Y9); \
	LOADW(32, R11, Y10); \
	LOADW(48, R11, Y11); \
	VFMADD231PS Y4, Y14, Y0; \
	VFMADD231PS Y5, Y14, Y1; \
	VFMADD231PS Y6, Y14, Y2; \
	VFMADD231PS Y7, Y14, Y3; \
	VFMADD231PS Y8, Y15, Y0; \
	VFMADD231PS Y9, Y15, Y1; \
	VFMADD231PS Y10, Y15, Y2; \
	VFMADD231PS Y11, Y15, Y3; \
	VMOVUPS Y0, 0(DI)(AX*2); \
	VMOVUPS Y1, 32(DI)(AX*2); \
	VMOVUPS Y2, 64(DI)(AX*2); \
	VMOVUPS Y3, 96(DI)(AX*2); \
	ADDQ $64, AX; \
	SUBQ $32, CX; \
	JNZ  a4loop; \
	VZEROUPPER; \
	RET

// func axpy4BF16AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4BF16AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), DX
	MOVQ w0+16(FP), R8
	MOVQ w1+24(FP), R9
	MOVQ w2+32(FP), R10
	MOVQ w3+40(FP), R11
	MOVQ n+48(FP), CX
	AXPY4W(LOADBF16X)

// func axpy4F16AVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4F16AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), DX
	MOVQ w0+16(FP), R8
	MOVQ w1+24(FP), R9
	MOVQ w2+32(FP), R10
	MOVQ w3+40(FP), R11
	MOVQ n+48(FP), CX
	AXPY4W(LOADF16X)

// The prefill GEMM's widening of a block of a 16-bit row to float32 (dst
// written, not accumulated: no clearing, no add). n is a multiple of 16.
#define WIDENW(LOAD) \
wloop: \
	CMPQ CX, $16; \
	JL   wdone; \
	LOAD(0, SI, Y0); \
	LOAD(16, SI, Y1); \
	VMOVUPS Y0, 0(DI); \
	VMOVUPS Y1, 32(DI); \
	ADDQ $32, SI; \
	ADDQ $64, DI; \
	SUBQ $16, CX; \
	JMP  wloop; \
wdone:

// func widenBF16AVX2(dst *float32, w *uint16, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	WIDENW(LOADBF16W)
	VZEROUPPER
	RET

// func widenF16AVX2(dst *float32, w *uint16, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	WIDENW(LOADF16W)
	VZEROUPPER
	RET

// PREFETCHT2 of every 64-byte line of [p, p+n): the parts of records the
// decode FFN reads apart from the fused dots' own prefetch (a split
// record's gate rows, down rows, the next block's first rows).
// func prefetchL2AVX2(p *byte, n int)
TEXT ·prefetchL2AVX2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
pfloop:
	CMPQ CX, $0
	JLE  pfdone
	PREFETCHT2 0(SI)
	ADDQ $64, SI
	SUBQ $64, CX
	JMP  pfloop
pfdone:
	RET

// siluMulAVX2's constants (expf's, as siluMulAVX512's EXPCONSTS): the
// Taylor coefficients 1/7! … 1/2, log2 e, ln 2 in two parts, 1, the clamp
// of −g (88.3 and −87.3, so that 2^n stays a normal float) and the
// exponent bias 127.
DATA siluavx2<>+0(SB)/4, $0x39500d01
DATA siluavx2<>+4(SB)/4, $0x3ab60b61
DATA siluavx2<>+8(SB)/4, $0x3c088889
DATA siluavx2<>+12(SB)/4, $0x3d2aaaab
DATA siluavx2<>+16(SB)/4, $0x3e2aaaab
DATA siluavx2<>+20(SB)/4, $0x3f000000
DATA siluavx2<>+24(SB)/4, $0x3fb8aa3b
DATA siluavx2<>+28(SB)/4, $0x3f318000
DATA siluavx2<>+32(SB)/4, $0xb95e8083
DATA siluavx2<>+36(SB)/4, $0x3f800000
DATA siluavx2<>+40(SB)/4, $0x42b0999a
DATA siluavx2<>+44(SB)/4, $0xc2ae999a
DATA siluavx2<>+48(SB)/4, $127
GLOBL siluavx2<>(SB), RODATA|NOPTR, $52

// EXP8: Y6 = e^Y4 for Y4 within [−87.3, 88.3] (clamped by the caller),
// as expf computes it: n = round(x·log2e) (Y5), r = x − n·ln2 in two parts
// (Y4), the Taylor series to r⁷ (Y6), times 2^n built in the exponent bits
// (Y7); Y8 scratch. Constants: Y15 log2e, Y14 and Y13 ln2, Y12 1, Y9 127.
#define EXP8 \
	VMULPS  Y15, Y4, Y5; \
	VROUNDPS $0, Y5, Y5; \
	VFNMADD231PS Y14, Y5, Y4; \
	VFNMADD231PS Y13, Y5, Y4; \
	VBROADCASTSS siluavx2<>+0(SB), Y6; \
	VBROADCASTSS siluavx2<>+4(SB), Y8; \
	VFMADD213PS Y8, Y4, Y6; \
	VBROADCASTSS siluavx2<>+8(SB), Y8; \
	VFMADD213PS Y8, Y4, Y6; \
	VBROADCASTSS siluavx2<>+12(SB), Y8; \
	VFMADD213PS Y8, Y4, Y6; \
	VBROADCASTSS siluavx2<>+16(SB), Y8; \
	VFMADD213PS Y8, Y4, Y6; \
	VBROADCASTSS siluavx2<>+20(SB), Y8; \
	VFMADD213PS Y8, Y4, Y6; \
	VFMADD213PS Y12, Y4, Y6; \
	VFMADD213PS Y12, Y4, Y6; \
	VCVTPS2DQ Y5, Y7; \
	VPADDD  Y9, Y7, Y7; \
	VPSLLD  $23, Y7, Y7; \
	VMULPS  Y7, Y6, Y6

// EXPCONSTS8 loads EXP8's constants.
#define EXPCONSTS8 \
	VBROADCASTSS siluavx2<>+24(SB), Y15; \
	VBROADCASTSS siluavx2<>+28(SB), Y14; \
	VBROADCASTSS siluavx2<>+32(SB), Y13; \
	VBROADCASTSS siluavx2<>+36(SB), Y12; \
	VBROADCASTSS siluavx2<>+48(SB), Y9

// func siluMulAVX2(h *float32, gu *float32, n int)
//
// h[i] = silu(gu[2i])·gu[2i+1] for i < n (a multiple of 8), eight at a
// time: the pairs split by VSHUFPS (g and u each in the order 0 1 4 5 |
// 2 3 6 7, put back by VPERMPD), e^-g as expf computes it (n =
// round(−g·log2e), r = −g − n·ln2 in two parts, the Taylor series to r⁷,
// times 2^n built in the exponent bits), then g / (1 + e^-g) · u.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ gu+8(FP), SI
	MOVQ n+16(FP), CX
	EXPCONSTS8
	VBROADCASTSS siluavx2<>+40(SB), Y11
	VBROADCASTSS siluavx2<>+44(SB), Y10
	TESTQ CX, CX
	JZ    silu8done
silu8:
	VMOVUPS 0(SI), Y0
	VMOVUPS 32(SI), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VXORPS  Y4, Y4, Y4
	VSUBPS  Y2, Y4, Y4
	VMINPS  Y11, Y4, Y4
	VMAXPS  Y10, Y4, Y4
	EXP8
	VADDPS  Y12, Y6, Y6
	VDIVPS  Y6, Y2, Y2
	VMULPS  Y3, Y2, Y2
	VPERMPD $0xD8, Y2, Y2
	VMOVUPS Y2, 0(DI)
	ADDQ $64, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  silu8
silu8done:
	VZEROUPPER
	RET

// func expSubSumAVX2(x *float32, n int, m float32) float32
//
// x[i] = e^(x[i] − m) for i < n (a multiple of 8), returning their sum;
// x − m clamped below at −87.3 (a smaller e^ is 0 to the sum's precision).
TEXT ·expSubSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y3
	EXPCONSTS8
	VBROADCASTSS siluavx2<>+44(SB), Y10
	VXORPS Y0, Y0, Y0
	TESTQ CX, CX
	JZ    exps8done
exps8:
	VMOVUPS 0(DI), Y4
	VSUBPS  Y3, Y4, Y4
	VMAXPS  Y10, Y4, Y4
	EXP8
	VMOVUPS Y6, 0(DI)
	VADDPS  Y6, Y0, Y0
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  exps8
exps8done:
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// dot4Q40Q8AVX2: DotAct of one Q4_0 row against four tokens' activations,
// the nibbles unpacked once for the four; each token's sum is
// dotQ40Q8AVX2's to the bit (the same blocks into the same two
// accumulators, even and odd, the same fold), so a row's dot does not
// depend on whether the prefill took it four tokens at a time.
//
// TOK4(t, off, acc): token t's block off (x at R8[t] + R11 + off·32, d and
// S at R9[t], R10[t] + R12 + off·4) into acc.
#define TOK4(t, off, acc) \
	MOVQ (t*8)(R8), BX; \
	MOVQ (t*8)(R10), R13; \
	MOVQ (t*8)(R9), DI; \
	Q4TOK((off*32)(BX)(R11*1), (off*4)(R13)(R12*1), (off*4)(DI)(R12*1), acc)

// BLOCK4(off, a0, a1, a2, a3): block off against the four tokens.
#define BLOCK4(off, a0, a1, a2, a3) \
	UNPACK4(off); \
	TOK4(0, off, a0); \
	TOK4(1, off, a1); \
	TOK4(2, off, a2); \
	TOK4(3, off, a3)

// FOLD4(a, b, xa, t): out[t] = the sum of accumulators a and b, as
// dotQ40Q8AVX2 folds them.
#define FOLD4(a, b, xa, t) \
	VADDPS b, a, a; \
	VEXTRACTF128 $1, a, X1; \
	VADDPS X1, xa, xa; \
	VHADDPS xa, xa, xa; \
	VHADDPS xa, xa, xa; \
	VMOVSS xa, (t*4)(DX)

// func dot4Q40Q8AVX2(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nb int, out *[4]float32)
TEXT ·dot4Q40Q8AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R8
	MOVQ d+16(FP), R9
	MOVQ s+24(FP), R10
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y4, Y4, Y4
	VXORPS Y7, Y7, Y7
	Q4CONSTS
	XORQ R11, R11
	XORQ R12, R12
q4x4pair:
	CMPQ CX, $2
	JL   q4x4one
	BLOCK4(0, Y0, Y9, Y11, Y4)
	BLOCK4(1, Y8, Y10, Y12, Y7)
	ADDQ $36, SI
	ADDQ $64, R11
	ADDQ $8, R12
	SUBQ $2, CX
	JMP  q4x4pair
q4x4one:
	TESTQ CX, CX
	JE    q4x4done
	BLOCK4(0, Y0, Y9, Y11, Y4)
q4x4done:
	FOLD4(Y0, Y8, X0, 0)
	FOLD4(Y9, Y10, X9, 1)
	FOLD4(Y11, Y12, X11, 2)
	FOLD4(Y4, Y7, X4, 3)
	VZEROUPPER
	RET
