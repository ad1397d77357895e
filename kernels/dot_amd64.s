#include "textflag.h"

// AVX2 + FMA kernels. Every function takes n, a multiple of 8 (the Go
// wrappers handle the ragged tail). BF16 widens by zero-extending to 32 bits
// and shifting left 16; F16 uses F16C's VCVTPH2PS.

#define LOADBF16(off, r) VPMOVZXWD off(SI), r; VPSLLD $16, r, r
#define LOADF16(off, r)  VCVTPH2PS off(SI), r

// The same widening from any base register, for the kernels written once
// for both 16-bit types (DOT4, GEMMDOWN) and instantiated per type.
#define LOADBF16W(off, base, r) VPMOVZXWD off(base), r; VPSLLD $16, r, r
#define LOADF16W(off, base, r)  VCVTPH2PS off(base), r

// Horizontal sum of Y0 into X0[0].
#define HSUM VEXTRACTF128 $1, Y0, X1; VADDPS X1, X0, X0; VHADDPS X0, X0, X0; VHADDPS X0, X0, X0

// func dotBF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
bf16loop32:
	CMPQ CX, $32
	JL   bf16loop8
	PREFETCHT0 8192(SI)
	LOADBF16(0, Y4)
	LOADBF16(16, Y5)
	LOADBF16(32, Y6)
	LOADBF16(48, Y7)
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  bf16loop32
bf16loop8:
	CMPQ CX, $8
	JL   bf16done
	LOADBF16(0, Y4)
	VFMADD231PS 0(DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  bf16loop8
bf16done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
f16loop32:
	CMPQ CX, $32
	JL   f16loop8
	PREFETCHT0 8192(SI)
	LOADF16(0, Y4)
	LOADF16(16, Y5)
	LOADF16(32, Y6)
	LOADF16(48, Y7)
	VFMADD231PS 0(DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f16loop32
f16loop8:
	CMPQ CX, $8
	JL   f16done
	LOADF16(0, Y4)
	VFMADD231PS 0(DI), Y4, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16loop8
f16done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM
	VZEROUPPER
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

// y[i] += a·w[i]
// func axpyBF16AVX2(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
abf16loop32:
	CMPQ CX, $32
	JL   abf16loop8
	LOADBF16(0, Y4)
	LOADBF16(16, Y5)
	LOADBF16(32, Y6)
	LOADBF16(48, Y7)
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	VFMADD231PS Y4, Y15, Y8
	VFMADD231PS Y5, Y15, Y9
	VFMADD231PS Y6, Y15, Y10
	VFMADD231PS Y7, Y15, Y11
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  abf16loop32
abf16loop8:
	CMPQ CX, $8
	JL   abf16done
	LOADBF16(0, Y4)
	VMOVUPS 0(DI), Y8
	VFMADD231PS Y4, Y15, Y8
	VMOVUPS Y8, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  abf16loop8
abf16done:
	VZEROUPPER
	RET

// func axpyF16AVX2(y *float32, a float32, w *uint16, n int)
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
af16loop32:
	CMPQ CX, $32
	JL   af16loop8
	LOADF16(0, Y4)
	LOADF16(16, Y5)
	LOADF16(32, Y6)
	LOADF16(48, Y7)
	VMOVUPS 0(DI), Y8
	VMOVUPS 32(DI), Y9
	VMOVUPS 64(DI), Y10
	VMOVUPS 96(DI), Y11
	VFMADD231PS Y4, Y15, Y8
	VFMADD231PS Y5, Y15, Y9
	VFMADD231PS Y6, Y15, Y10
	VFMADD231PS Y7, Y15, Y11
	VMOVUPS Y8, 0(DI)
	VMOVUPS Y9, 32(DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y11, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  af16loop32
af16loop8:
	CMPQ CX, $8
	JL   af16done
	LOADF16(0, Y4)
	VMOVUPS 0(DI), Y8
	VFMADD231PS Y4, Y15, Y8
	VMOVUPS Y8, 0(DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  af16loop8
af16done:
	VZEROUPPER
	RET

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
// prefetches 8 KiB ahead as the decode kernels do (without, it read 5-10 %
// less than those kernels stream, and the bound would be an underestimate).
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
#define Q4(a, b, c, d) VPMOVZXBD 2(SI), a; VPMOVZXBD 10(SI), b; VPSRLD $4, a, c; VPSRLD $4, b, d; VPAND Y2, a, a; VPAND Y2, b, b; VPSUBD Y3, a, a; VPSUBD Y3, b, b; VPSUBD Y3, c, c; VPSUBD Y3, d, d; VCVTDQ2PS a, a; VCVTDQ2PS b, b; VCVTDQ2PS c, c; VCVTDQ2PS d, d
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

// Integer dots against activations quantised to Q8 per block of 32 (as
// llama.cpp does): xq holds 32 int8 per block, xd the block scales, xs the
// block sums of xq. For each block: s = Σ qw·qx by VPMADDUBSW (unsigned ×
// signed bytes into int16 pairs) and VPMADDWD (pairs into int32).

// func dotQ80Q8AVX2(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ80Q8AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nb+24(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $1, AX
	VMOVQ AX, X2
	VPBROADCASTW X2, Y2 // int16 ones
qq8loop:
	TESTQ CX, CX
	JE    qq8done
	MOVWLZX 0(SI), AX
	VMOVQ AX, X1
	VCVTPH2PS X1, X1
	VMULSS 0(R8), X1, X1
	VBROADCASTSS X1, Y1 // d_w · d_x
	VMOVDQU 2(SI), Y4   // qw
	VMOVDQU 0(DI), Y5   // qx
	VPSIGNB Y4, Y4, Y6  // |qw|
	VPSIGNB Y4, Y5, Y7  // qx · sign(qw)
	VPMADDUBSW Y7, Y6, Y6
	VPMADDWD Y2, Y6, Y6
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ $34, SI
	ADDQ $32, DI
	ADDQ $4, R8
	DECQ CX
	JMP  qq8loop
qq8done:
	HSUM
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// Σ_b d_w·d_x·(Σ q·qx − 8·Σ qx), q the unsigned nibbles; 8·Σqx is taken
// off one lane of the block's int32 sums before they become float, so no
// two large float sums cancel.
// func dotQ40Q8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32
TEXT ·dotQ40Q8AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nb+32(FP), CX
	VXORPS Y0, Y0, Y0
	MOVL $1, AX
	VMOVQ AX, X2
	VPBROADCASTW X2, Y2 // int16 ones
	MOVL $0x0f0f0f0f, AX
	VMOVQ AX, X3
	VPBROADCASTD X3, Y3 // nibble mask
qq4loop:
	TESTQ CX, CX
	JE    qq4done
	MOVWLZX 0(SI), AX
	VMOVQ AX, X1
	VCVTPH2PS X1, X1
	VMULSS 0(R8), X1, X1
	VBROADCASTSS X1, Y1        // d_w · d_x
	VMOVDQU 2(SI), X4          // 16 bytes
	VPSRLW $4, X4, X5
	VINSERTI128 $1, X5, Y4, Y4 // [bytes | bytes>>4]
	VPAND Y3, Y4, Y4           // nibbles: elements 0..31
	VMOVDQU 0(DI), Y5
	VPMADDUBSW Y5, Y4, Y6
	VPMADDWD Y2, Y6, Y6
	MOVL 0(R9), AX
	SHLL $3, AX
	VMOVD AX, X7               // [8·Σqx, 0, …, 0]
	VPSUBD Y7, Y6, Y6          // the offset, exactly, in integers
	VCVTDQ2PS Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ $18, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JMP  qq4loop
qq4done:
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

// AVX-512F variants of the BF16 dot and axpy (16 lanes per register); n is
// a multiple of 16.
#define LOADBF16Z(off, r) VPMOVZXWD off(SI), r; VPSLLD $16, r, r

// func dotBF16AVX512(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
z64:
	CMPQ CX, $64
	JL   z16
	LOADBF16Z(0, Z4)
	LOADBF16Z(32, Z5)
	LOADBF16Z(64, Z6)
	LOADBF16Z(96, Z7)
	VFMADD231PS 0(DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ $128, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  z64
z16:
	CMPQ CX, $16
	JL   zdone
	LOADBF16Z(0, Z4)
	VFMADD231PS 0(DI), Z4, Z0
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  z16
zdone:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyBF16AVX512(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
za64:
	CMPQ CX, $64
	JL   za16
	LOADBF16Z(0, Z4)
	LOADBF16Z(32, Z5)
	LOADBF16Z(64, Z6)
	LOADBF16Z(96, Z7)
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VMOVUPS 128(DI), Z10
	VMOVUPS 192(DI), Z11
	VFMADD231PS Z4, Z15, Z8
	VFMADD231PS Z5, Z15, Z9
	VFMADD231PS Z6, Z15, Z10
	VFMADD231PS Z7, Z15, Z11
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VMOVUPS Z10, 128(DI)
	VMOVUPS Z11, 192(DI)
	ADDQ $128, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  za64
za16:
	CMPQ CX, $16
	JL   zadone
	LOADBF16Z(0, Z4)
	VMOVUPS 0(DI), Z8
	VFMADD231PS Z4, Z15, Z8
	VMOVUPS Z8, 0(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  za16
zadone:
	VZEROUPPER
	RET

// AVX-512F block-quantised kernels (16 lanes). A Q4_0 block's nibbles are
// widened to dwords once; VPERMPS then looks each nibble (its low four bits
// are the index) up in a register holding the floats −8…7, so a block
// becomes two float vectors in four instructions (AVX2 needs fourteen).
// Q8_0 widens with VPMOVSXBD and converts. The block scale is broadcast
// as a half and widened with VCVTPH2PS.
DATA q4values<>+0(SB)/4, $0xc1000000
DATA q4values<>+4(SB)/4, $0xc0e00000
DATA q4values<>+8(SB)/4, $0xc0c00000
DATA q4values<>+12(SB)/4, $0xc0a00000
DATA q4values<>+16(SB)/4, $0xc0800000
DATA q4values<>+20(SB)/4, $0xc0400000
DATA q4values<>+24(SB)/4, $0xc0000000
DATA q4values<>+28(SB)/4, $0xbf800000
DATA q4values<>+32(SB)/4, $0x00000000
DATA q4values<>+36(SB)/4, $0x3f800000
DATA q4values<>+40(SB)/4, $0x40000000
DATA q4values<>+44(SB)/4, $0x40400000
DATA q4values<>+48(SB)/4, $0x40800000
DATA q4values<>+52(SB)/4, $0x40a00000
DATA q4values<>+56(SB)/4, $0x40c00000
DATA q4values<>+60(SB)/4, $0x40e00000
GLOBL q4values<>(SB), RODATA|NOPTR, $64

// The 16 fp16 scales of a chunk of 16 Q4_0 blocks (18 bytes each, so the
// scale of block k is word 9k of the chunk) are picked out of the chunk
// with word permutes: blocks 0-7 from its first 128 bytes, 8-14 from the
// next 128, 15 from the last 32. A VPGATHERDD did it in one instruction but
// was half the time of the whole VNNI dot on AMD Zen 5 (41 against 20 ns a
// 2048-wide row), and sixteen scalar moves through the stack cost a failed
// store-to-load forward per chunk. q4scaleidx holds the three index
// vectors (32 words each): for the first pair of vectors, the second, and
// the last 32 bytes.
DATA q4scaleidx<>+0(SB)/2, $0
DATA q4scaleidx<>+2(SB)/2, $9
DATA q4scaleidx<>+4(SB)/2, $18
DATA q4scaleidx<>+6(SB)/2, $27
DATA q4scaleidx<>+8(SB)/2, $36
DATA q4scaleidx<>+10(SB)/2, $45
DATA q4scaleidx<>+12(SB)/2, $54
DATA q4scaleidx<>+14(SB)/2, $63
DATA q4scaleidx<>+16(SB)/2, $0
DATA q4scaleidx<>+18(SB)/2, $0
DATA q4scaleidx<>+20(SB)/2, $0
DATA q4scaleidx<>+22(SB)/2, $0
DATA q4scaleidx<>+24(SB)/2, $0
DATA q4scaleidx<>+26(SB)/2, $0
DATA q4scaleidx<>+28(SB)/2, $0
DATA q4scaleidx<>+30(SB)/2, $0
DATA q4scaleidx<>+32(SB)/2, $0
DATA q4scaleidx<>+34(SB)/2, $0
DATA q4scaleidx<>+36(SB)/2, $0
DATA q4scaleidx<>+38(SB)/2, $0
DATA q4scaleidx<>+40(SB)/2, $0
DATA q4scaleidx<>+42(SB)/2, $0
DATA q4scaleidx<>+44(SB)/2, $0
DATA q4scaleidx<>+46(SB)/2, $0
DATA q4scaleidx<>+48(SB)/2, $0
DATA q4scaleidx<>+50(SB)/2, $0
DATA q4scaleidx<>+52(SB)/2, $0
DATA q4scaleidx<>+54(SB)/2, $0
DATA q4scaleidx<>+56(SB)/2, $0
DATA q4scaleidx<>+58(SB)/2, $0
DATA q4scaleidx<>+60(SB)/2, $0
DATA q4scaleidx<>+62(SB)/2, $0
DATA q4scaleidx<>+64(SB)/2, $0
DATA q4scaleidx<>+66(SB)/2, $0
DATA q4scaleidx<>+68(SB)/2, $0
DATA q4scaleidx<>+70(SB)/2, $0
DATA q4scaleidx<>+72(SB)/2, $0
DATA q4scaleidx<>+74(SB)/2, $0
DATA q4scaleidx<>+76(SB)/2, $0
DATA q4scaleidx<>+78(SB)/2, $0
DATA q4scaleidx<>+80(SB)/2, $8
DATA q4scaleidx<>+82(SB)/2, $17
DATA q4scaleidx<>+84(SB)/2, $26
DATA q4scaleidx<>+86(SB)/2, $35
DATA q4scaleidx<>+88(SB)/2, $44
DATA q4scaleidx<>+90(SB)/2, $53
DATA q4scaleidx<>+92(SB)/2, $62
DATA q4scaleidx<>+94(SB)/2, $0
DATA q4scaleidx<>+96(SB)/2, $0
DATA q4scaleidx<>+98(SB)/2, $0
DATA q4scaleidx<>+100(SB)/2, $0
DATA q4scaleidx<>+102(SB)/2, $0
DATA q4scaleidx<>+104(SB)/2, $0
DATA q4scaleidx<>+106(SB)/2, $0
DATA q4scaleidx<>+108(SB)/2, $0
DATA q4scaleidx<>+110(SB)/2, $0
DATA q4scaleidx<>+112(SB)/2, $0
DATA q4scaleidx<>+114(SB)/2, $0
DATA q4scaleidx<>+116(SB)/2, $0
DATA q4scaleidx<>+118(SB)/2, $0
DATA q4scaleidx<>+120(SB)/2, $0
DATA q4scaleidx<>+122(SB)/2, $0
DATA q4scaleidx<>+124(SB)/2, $0
DATA q4scaleidx<>+126(SB)/2, $0
DATA q4scaleidx<>+128(SB)/2, $0
DATA q4scaleidx<>+130(SB)/2, $0
DATA q4scaleidx<>+132(SB)/2, $0
DATA q4scaleidx<>+134(SB)/2, $0
DATA q4scaleidx<>+136(SB)/2, $0
DATA q4scaleidx<>+138(SB)/2, $0
DATA q4scaleidx<>+140(SB)/2, $0
DATA q4scaleidx<>+142(SB)/2, $0
DATA q4scaleidx<>+144(SB)/2, $0
DATA q4scaleidx<>+146(SB)/2, $0
DATA q4scaleidx<>+148(SB)/2, $0
DATA q4scaleidx<>+150(SB)/2, $0
DATA q4scaleidx<>+152(SB)/2, $0
DATA q4scaleidx<>+154(SB)/2, $0
DATA q4scaleidx<>+156(SB)/2, $0
DATA q4scaleidx<>+158(SB)/2, $7
DATA q4scaleidx<>+160(SB)/2, $0
DATA q4scaleidx<>+162(SB)/2, $0
DATA q4scaleidx<>+164(SB)/2, $0
DATA q4scaleidx<>+166(SB)/2, $0
DATA q4scaleidx<>+168(SB)/2, $0
DATA q4scaleidx<>+170(SB)/2, $0
DATA q4scaleidx<>+172(SB)/2, $0
DATA q4scaleidx<>+174(SB)/2, $0
DATA q4scaleidx<>+176(SB)/2, $0
DATA q4scaleidx<>+178(SB)/2, $0
DATA q4scaleidx<>+180(SB)/2, $0
DATA q4scaleidx<>+182(SB)/2, $0
DATA q4scaleidx<>+184(SB)/2, $0
DATA q4scaleidx<>+186(SB)/2, $0
DATA q4scaleidx<>+188(SB)/2, $0
DATA q4scaleidx<>+190(SB)/2, $0
GLOBL q4scaleidx<>(SB), RODATA|NOPTR, $192

// Q4SCALESETUP loads the index vectors (Z27-Z29) and the merge masks (K2:
// lanes 8-14, K3: lane 15) that SCALES16Q4 needs.
#define Q4SCALESETUP VMOVDQU16 q4scaleidx<>+0(SB), Z27; VMOVDQU16 q4scaleidx<>+64(SB), Z28; VMOVDQU16 q4scaleidx<>+128(SB), Z29; MOVL $0x7f00, AX; KMOVW AX, K2; MOVL $0x8000, AX; KMOVW AX, K3

// SCALES16Q4(base, z): the chunk's 16 scales at base, widened to float32
// in z (Z26, Z30 and Z31 are scratch).
#define SCALES16Q4(base, z) VMOVDQU16 0(base), Z30; VPERMT2W 64(base), Z27, Z30; VMOVDQU16 128(base), Z26; VPERMT2W 192(base), Z28, Z26; VMOVDQU16 Z26, K2, Z30; VMOVDQU16 256(base), Y31; VPERMW Z31, Z29, K3, Z30; VCVTPH2PS Y30, z

// The 16 scales of a chunk of 16 Q8_0 blocks (34 bytes each: block k's
// scale is word 17k) by word permutes, as for Q4_0: four blocks from each
// 128 bytes. q8scaleidx holds the four index vectors.
DATA q8scaleidx<>+0(SB)/2, $0
DATA q8scaleidx<>+2(SB)/2, $17
DATA q8scaleidx<>+4(SB)/2, $34
DATA q8scaleidx<>+6(SB)/2, $51
DATA q8scaleidx<>+8(SB)/2, $0
DATA q8scaleidx<>+10(SB)/2, $0
DATA q8scaleidx<>+12(SB)/2, $0
DATA q8scaleidx<>+14(SB)/2, $0
DATA q8scaleidx<>+16(SB)/2, $0
DATA q8scaleidx<>+18(SB)/2, $0
DATA q8scaleidx<>+20(SB)/2, $0
DATA q8scaleidx<>+22(SB)/2, $0
DATA q8scaleidx<>+24(SB)/2, $0
DATA q8scaleidx<>+26(SB)/2, $0
DATA q8scaleidx<>+28(SB)/2, $0
DATA q8scaleidx<>+30(SB)/2, $0
DATA q8scaleidx<>+32(SB)/2, $0
DATA q8scaleidx<>+34(SB)/2, $0
DATA q8scaleidx<>+36(SB)/2, $0
DATA q8scaleidx<>+38(SB)/2, $0
DATA q8scaleidx<>+40(SB)/2, $0
DATA q8scaleidx<>+42(SB)/2, $0
DATA q8scaleidx<>+44(SB)/2, $0
DATA q8scaleidx<>+46(SB)/2, $0
DATA q8scaleidx<>+48(SB)/2, $0
DATA q8scaleidx<>+50(SB)/2, $0
DATA q8scaleidx<>+52(SB)/2, $0
DATA q8scaleidx<>+54(SB)/2, $0
DATA q8scaleidx<>+56(SB)/2, $0
DATA q8scaleidx<>+58(SB)/2, $0
DATA q8scaleidx<>+60(SB)/2, $0
DATA q8scaleidx<>+62(SB)/2, $0
DATA q8scaleidx<>+64(SB)/2, $0
DATA q8scaleidx<>+66(SB)/2, $0
DATA q8scaleidx<>+68(SB)/2, $0
DATA q8scaleidx<>+70(SB)/2, $0
DATA q8scaleidx<>+72(SB)/2, $4
DATA q8scaleidx<>+74(SB)/2, $21
DATA q8scaleidx<>+76(SB)/2, $38
DATA q8scaleidx<>+78(SB)/2, $55
DATA q8scaleidx<>+80(SB)/2, $0
DATA q8scaleidx<>+82(SB)/2, $0
DATA q8scaleidx<>+84(SB)/2, $0
DATA q8scaleidx<>+86(SB)/2, $0
DATA q8scaleidx<>+88(SB)/2, $0
DATA q8scaleidx<>+90(SB)/2, $0
DATA q8scaleidx<>+92(SB)/2, $0
DATA q8scaleidx<>+94(SB)/2, $0
DATA q8scaleidx<>+96(SB)/2, $0
DATA q8scaleidx<>+98(SB)/2, $0
DATA q8scaleidx<>+100(SB)/2, $0
DATA q8scaleidx<>+102(SB)/2, $0
DATA q8scaleidx<>+104(SB)/2, $0
DATA q8scaleidx<>+106(SB)/2, $0
DATA q8scaleidx<>+108(SB)/2, $0
DATA q8scaleidx<>+110(SB)/2, $0
DATA q8scaleidx<>+112(SB)/2, $0
DATA q8scaleidx<>+114(SB)/2, $0
DATA q8scaleidx<>+116(SB)/2, $0
DATA q8scaleidx<>+118(SB)/2, $0
DATA q8scaleidx<>+120(SB)/2, $0
DATA q8scaleidx<>+122(SB)/2, $0
DATA q8scaleidx<>+124(SB)/2, $0
DATA q8scaleidx<>+126(SB)/2, $0
DATA q8scaleidx<>+128(SB)/2, $0
DATA q8scaleidx<>+130(SB)/2, $0
DATA q8scaleidx<>+132(SB)/2, $0
DATA q8scaleidx<>+134(SB)/2, $0
DATA q8scaleidx<>+136(SB)/2, $0
DATA q8scaleidx<>+138(SB)/2, $0
DATA q8scaleidx<>+140(SB)/2, $0
DATA q8scaleidx<>+142(SB)/2, $0
DATA q8scaleidx<>+144(SB)/2, $8
DATA q8scaleidx<>+146(SB)/2, $25
DATA q8scaleidx<>+148(SB)/2, $42
DATA q8scaleidx<>+150(SB)/2, $59
DATA q8scaleidx<>+152(SB)/2, $0
DATA q8scaleidx<>+154(SB)/2, $0
DATA q8scaleidx<>+156(SB)/2, $0
DATA q8scaleidx<>+158(SB)/2, $0
DATA q8scaleidx<>+160(SB)/2, $0
DATA q8scaleidx<>+162(SB)/2, $0
DATA q8scaleidx<>+164(SB)/2, $0
DATA q8scaleidx<>+166(SB)/2, $0
DATA q8scaleidx<>+168(SB)/2, $0
DATA q8scaleidx<>+170(SB)/2, $0
DATA q8scaleidx<>+172(SB)/2, $0
DATA q8scaleidx<>+174(SB)/2, $0
DATA q8scaleidx<>+176(SB)/2, $0
DATA q8scaleidx<>+178(SB)/2, $0
DATA q8scaleidx<>+180(SB)/2, $0
DATA q8scaleidx<>+182(SB)/2, $0
DATA q8scaleidx<>+184(SB)/2, $0
DATA q8scaleidx<>+186(SB)/2, $0
DATA q8scaleidx<>+188(SB)/2, $0
DATA q8scaleidx<>+190(SB)/2, $0
DATA q8scaleidx<>+192(SB)/2, $0
DATA q8scaleidx<>+194(SB)/2, $0
DATA q8scaleidx<>+196(SB)/2, $0
DATA q8scaleidx<>+198(SB)/2, $0
DATA q8scaleidx<>+200(SB)/2, $0
DATA q8scaleidx<>+202(SB)/2, $0
DATA q8scaleidx<>+204(SB)/2, $0
DATA q8scaleidx<>+206(SB)/2, $0
DATA q8scaleidx<>+208(SB)/2, $0
DATA q8scaleidx<>+210(SB)/2, $0
DATA q8scaleidx<>+212(SB)/2, $0
DATA q8scaleidx<>+214(SB)/2, $0
DATA q8scaleidx<>+216(SB)/2, $12
DATA q8scaleidx<>+218(SB)/2, $29
DATA q8scaleidx<>+220(SB)/2, $46
DATA q8scaleidx<>+222(SB)/2, $63
DATA q8scaleidx<>+224(SB)/2, $0
DATA q8scaleidx<>+226(SB)/2, $0
DATA q8scaleidx<>+228(SB)/2, $0
DATA q8scaleidx<>+230(SB)/2, $0
DATA q8scaleidx<>+232(SB)/2, $0
DATA q8scaleidx<>+234(SB)/2, $0
DATA q8scaleidx<>+236(SB)/2, $0
DATA q8scaleidx<>+238(SB)/2, $0
DATA q8scaleidx<>+240(SB)/2, $0
DATA q8scaleidx<>+242(SB)/2, $0
DATA q8scaleidx<>+244(SB)/2, $0
DATA q8scaleidx<>+246(SB)/2, $0
DATA q8scaleidx<>+248(SB)/2, $0
DATA q8scaleidx<>+250(SB)/2, $0
DATA q8scaleidx<>+252(SB)/2, $0
DATA q8scaleidx<>+254(SB)/2, $0
GLOBL q8scaleidx<>(SB), RODATA|NOPTR, $256

// Q8SCALESETUP loads SCALES16Q8's index vectors (Z24, Z25, Z27, Z28) and
// merge masks (K4-K6: lanes 4-7, 8-11, 12-15).
#define Q8SCALESETUP VMOVDQU16 q8scaleidx<>+0(SB), Z24; VMOVDQU16 q8scaleidx<>+64(SB), Z25; VMOVDQU16 q8scaleidx<>+128(SB), Z27; VMOVDQU16 q8scaleidx<>+192(SB), Z28; MOVL $0xf0, AX; KMOVW AX, K4; MOVL $0xf00, AX; KMOVW AX, K5; MOVL $0xf000, AX; KMOVW AX, K6

// SCALES16Q8(base, z): the chunk's 16 scales at base, widened to float32
// in z (Z26 and Z30 are scratch).
#define SCALES16Q8(base, z) VMOVDQU16 0(base), Z30; VPERMT2W 64(base), Z24, Z30; VMOVDQU16 128(base), Z26; VPERMT2W 192(base), Z25, Z26; VMOVDQU16 Z26, K4, Z30; VMOVDQU16 256(base), Z26; VPERMT2W 320(base), Z27, Z26; VMOVDQU16 Z26, K5, Z30; VMOVDQU16 384(base), Z26; VPERMT2W 448(base), Z28, Z26; VMOVDQU16 Z26, K6, Z30; VCVTPH2PS Y30, z

// Block at off(SI) into lo (elements 0-15) and hi (16-31), table in Z2.
#define Q4Z(off, lo, hi) VPMOVZXBD off+2(SI), lo; VPSRLD $4, lo, hi; VPERMPS Z2, lo, lo; VPERMPS Z2, hi, hi
#define Q8Z(off, lo, hi) VPMOVSXBD off+2(SI), lo; VPMOVSXBD off+18(SI), hi; VCVTDQ2PS lo, lo; VCVTDQ2PS hi, hi
#define SCALEZ(off, y, z) VPBROADCASTW off(SI), y; VCVTPH2PS y, z

// Sum of Z0 and Z1 into X0[0].
#define HSUMZ VADDPS Z1, Z0, Z0; VEXTRACTF64X4 $1, Z0, Y1; VADDPS Y1, Y0, Y0; HSUM

// One block's dot: Z4/Z5 widened weights, Z6 scale, into accumulator acc.
#define DOTBLKZ(xoff, lo, hi, sc, acc) VMULPS xoff(DI), lo, lo; VFMADD231PS xoff+64(DI), hi, lo; VFMADD231PS lo, sc, acc

// The kernels take chunks of 16 blocks: the 16 half scales are copied
// (scalar loads and stores, off the vector ports) into a contiguous
// array on the stack, widened by one VCVTPH2PS, and each block's scale
// is then an embedded broadcast from memory (.BCST), which costs no
// shuffle. On AVX-512 only ports 0 and 5 run vector ALU work, and port 5
// is also the one every widening and VPERMPS needs; broadcasting scales
// with VPBROADCASTW would add two more shuffles per block. A tail of
// fewer than 16 blocks goes one block at a time. Four accumulators hide
// the FMA latency.
// func dotQ40AVX512(w *byte, x *float32, nb int) float32
TEXT ·dotQ40AVX512(SB), NOSPLIT, $96-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VMOVUPS q4values<>(SB), Z2
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Q4SCALESETUP
q4zchunk:
	CMPQ CX, $16
	JL   q4ztail
	SCALES16Q4(SI, Z3)
	VMOVUPS Z3, 0(SP)
	VPMOVZXBD 2(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 0(DI), Z4, Z4
	VFMADD231PS 64(DI), Z5, Z4
	VFMADD231PS.BCST 0(SP), Z4, Z0
	VPMOVZXBD 20(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 128(DI), Z4, Z4
	VFMADD231PS 192(DI), Z5, Z4
	VFMADD231PS.BCST 4(SP), Z4, Z1
	VPMOVZXBD 38(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 256(DI), Z4, Z4
	VFMADD231PS 320(DI), Z5, Z4
	VFMADD231PS.BCST 8(SP), Z4, Z12
	VPMOVZXBD 56(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 384(DI), Z4, Z4
	VFMADD231PS 448(DI), Z5, Z4
	VFMADD231PS.BCST 12(SP), Z4, Z13
	VPMOVZXBD 74(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 512(DI), Z4, Z4
	VFMADD231PS 576(DI), Z5, Z4
	VFMADD231PS.BCST 16(SP), Z4, Z0
	VPMOVZXBD 92(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 640(DI), Z4, Z4
	VFMADD231PS 704(DI), Z5, Z4
	VFMADD231PS.BCST 20(SP), Z4, Z1
	VPMOVZXBD 110(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 768(DI), Z4, Z4
	VFMADD231PS 832(DI), Z5, Z4
	VFMADD231PS.BCST 24(SP), Z4, Z12
	VPMOVZXBD 128(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 896(DI), Z4, Z4
	VFMADD231PS 960(DI), Z5, Z4
	VFMADD231PS.BCST 28(SP), Z4, Z13
	VPMOVZXBD 146(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1024(DI), Z4, Z4
	VFMADD231PS 1088(DI), Z5, Z4
	VFMADD231PS.BCST 32(SP), Z4, Z0
	VPMOVZXBD 164(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1152(DI), Z4, Z4
	VFMADD231PS 1216(DI), Z5, Z4
	VFMADD231PS.BCST 36(SP), Z4, Z1
	VPMOVZXBD 182(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1280(DI), Z4, Z4
	VFMADD231PS 1344(DI), Z5, Z4
	VFMADD231PS.BCST 40(SP), Z4, Z12
	VPMOVZXBD 200(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1408(DI), Z4, Z4
	VFMADD231PS 1472(DI), Z5, Z4
	VFMADD231PS.BCST 44(SP), Z4, Z13
	VPMOVZXBD 218(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1536(DI), Z4, Z4
	VFMADD231PS 1600(DI), Z5, Z4
	VFMADD231PS.BCST 48(SP), Z4, Z0
	VPMOVZXBD 236(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1664(DI), Z4, Z4
	VFMADD231PS 1728(DI), Z5, Z4
	VFMADD231PS.BCST 52(SP), Z4, Z1
	VPMOVZXBD 254(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1792(DI), Z4, Z4
	VFMADD231PS 1856(DI), Z5, Z4
	VFMADD231PS.BCST 56(SP), Z4, Z12
	VPMOVZXBD 272(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMULPS 1920(DI), Z4, Z4
	VFMADD231PS 1984(DI), Z5, Z4
	VFMADD231PS.BCST 60(SP), Z4, Z13
	ADDQ $288, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  q4zchunk
q4ztail:
	TESTQ CX, CX
	JE    q4zdone
	Q4Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	DOTBLKZ(0, Z4, Z5, Z6, Z0)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q4ztail
q4zdone:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ80AVX512(w *byte, x *float32, nb int) float32
TEXT ·dotQ80AVX512(SB), NOSPLIT, $96-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Q8SCALESETUP
q8zchunk:
	CMPQ CX, $16
	JL   q8ztail
	SCALES16Q8(SI, Z3)
	VMOVUPS Z3, 0(SP)
	VPMOVSXBD 2(SI), Z4
	VPMOVSXBD 18(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 0(DI), Z4, Z4
	VFMADD231PS 64(DI), Z5, Z4
	VFMADD231PS.BCST 0(SP), Z4, Z0
	VPMOVSXBD 36(SI), Z4
	VPMOVSXBD 52(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 128(DI), Z4, Z4
	VFMADD231PS 192(DI), Z5, Z4
	VFMADD231PS.BCST 4(SP), Z4, Z1
	VPMOVSXBD 70(SI), Z4
	VPMOVSXBD 86(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 256(DI), Z4, Z4
	VFMADD231PS 320(DI), Z5, Z4
	VFMADD231PS.BCST 8(SP), Z4, Z12
	VPMOVSXBD 104(SI), Z4
	VPMOVSXBD 120(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 384(DI), Z4, Z4
	VFMADD231PS 448(DI), Z5, Z4
	VFMADD231PS.BCST 12(SP), Z4, Z13
	VPMOVSXBD 138(SI), Z4
	VPMOVSXBD 154(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 512(DI), Z4, Z4
	VFMADD231PS 576(DI), Z5, Z4
	VFMADD231PS.BCST 16(SP), Z4, Z0
	VPMOVSXBD 172(SI), Z4
	VPMOVSXBD 188(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 640(DI), Z4, Z4
	VFMADD231PS 704(DI), Z5, Z4
	VFMADD231PS.BCST 20(SP), Z4, Z1
	VPMOVSXBD 206(SI), Z4
	VPMOVSXBD 222(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 768(DI), Z4, Z4
	VFMADD231PS 832(DI), Z5, Z4
	VFMADD231PS.BCST 24(SP), Z4, Z12
	VPMOVSXBD 240(SI), Z4
	VPMOVSXBD 256(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 896(DI), Z4, Z4
	VFMADD231PS 960(DI), Z5, Z4
	VFMADD231PS.BCST 28(SP), Z4, Z13
	VPMOVSXBD 274(SI), Z4
	VPMOVSXBD 290(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1024(DI), Z4, Z4
	VFMADD231PS 1088(DI), Z5, Z4
	VFMADD231PS.BCST 32(SP), Z4, Z0
	VPMOVSXBD 308(SI), Z4
	VPMOVSXBD 324(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1152(DI), Z4, Z4
	VFMADD231PS 1216(DI), Z5, Z4
	VFMADD231PS.BCST 36(SP), Z4, Z1
	VPMOVSXBD 342(SI), Z4
	VPMOVSXBD 358(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1280(DI), Z4, Z4
	VFMADD231PS 1344(DI), Z5, Z4
	VFMADD231PS.BCST 40(SP), Z4, Z12
	VPMOVSXBD 376(SI), Z4
	VPMOVSXBD 392(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1408(DI), Z4, Z4
	VFMADD231PS 1472(DI), Z5, Z4
	VFMADD231PS.BCST 44(SP), Z4, Z13
	VPMOVSXBD 410(SI), Z4
	VPMOVSXBD 426(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1536(DI), Z4, Z4
	VFMADD231PS 1600(DI), Z5, Z4
	VFMADD231PS.BCST 48(SP), Z4, Z0
	VPMOVSXBD 444(SI), Z4
	VPMOVSXBD 460(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1664(DI), Z4, Z4
	VFMADD231PS 1728(DI), Z5, Z4
	VFMADD231PS.BCST 52(SP), Z4, Z1
	VPMOVSXBD 478(SI), Z4
	VPMOVSXBD 494(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1792(DI), Z4, Z4
	VFMADD231PS 1856(DI), Z5, Z4
	VFMADD231PS.BCST 56(SP), Z4, Z12
	VPMOVSXBD 512(SI), Z4
	VPMOVSXBD 528(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMULPS 1920(DI), Z4, Z4
	VFMADD231PS 1984(DI), Z5, Z4
	VFMADD231PS.BCST 60(SP), Z4, Z13
	ADDQ $544, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  q8zchunk
q8ztail:
	TESTQ CX, CX
	JE    q8zdone
	Q8Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	DOTBLKZ(0, Z4, Z5, Z6, Z0)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q8ztail
q8zdone:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// y[i] += a·d·w[i] for one block: sc = a·d, lo/hi the widened weights.
#define AXPYBLKZ(lo, hi, sc) VFMADD213PS 0(DI), sc, lo; VFMADD213PS 64(DI), sc, hi; VMOVUPS lo, 0(DI); VMOVUPS hi, 64(DI)

// func axpyQ40AVX512(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ40AVX512(SB), NOSPLIT, $96-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
	VMOVUPS q4values<>(SB), Z2
	Q4SCALESETUP
aq4zchunk:
	CMPQ CX, $16
	JL   aq4ztail
	SCALES16Q4(SI, Z3)
	VMULPS Z15, Z3, Z3
	VMOVUPS Z3, 0(SP)
	VPMOVZXBD 2(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VFMADD231PS.BCST 0(SP), Z4, Z8
	VFMADD231PS.BCST 0(SP), Z5, Z9
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VPMOVZXBD 20(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 128(DI), Z8
	VMOVUPS 192(DI), Z9
	VFMADD231PS.BCST 4(SP), Z4, Z8
	VFMADD231PS.BCST 4(SP), Z5, Z9
	VMOVUPS Z8, 128(DI)
	VMOVUPS Z9, 192(DI)
	VPMOVZXBD 38(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 256(DI), Z8
	VMOVUPS 320(DI), Z9
	VFMADD231PS.BCST 8(SP), Z4, Z8
	VFMADD231PS.BCST 8(SP), Z5, Z9
	VMOVUPS Z8, 256(DI)
	VMOVUPS Z9, 320(DI)
	VPMOVZXBD 56(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 384(DI), Z8
	VMOVUPS 448(DI), Z9
	VFMADD231PS.BCST 12(SP), Z4, Z8
	VFMADD231PS.BCST 12(SP), Z5, Z9
	VMOVUPS Z8, 384(DI)
	VMOVUPS Z9, 448(DI)
	VPMOVZXBD 74(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VFMADD231PS.BCST 16(SP), Z4, Z8
	VFMADD231PS.BCST 16(SP), Z5, Z9
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VPMOVZXBD 92(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 640(DI), Z8
	VMOVUPS 704(DI), Z9
	VFMADD231PS.BCST 20(SP), Z4, Z8
	VFMADD231PS.BCST 20(SP), Z5, Z9
	VMOVUPS Z8, 640(DI)
	VMOVUPS Z9, 704(DI)
	VPMOVZXBD 110(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 768(DI), Z8
	VMOVUPS 832(DI), Z9
	VFMADD231PS.BCST 24(SP), Z4, Z8
	VFMADD231PS.BCST 24(SP), Z5, Z9
	VMOVUPS Z8, 768(DI)
	VMOVUPS Z9, 832(DI)
	VPMOVZXBD 128(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 896(DI), Z8
	VMOVUPS 960(DI), Z9
	VFMADD231PS.BCST 28(SP), Z4, Z8
	VFMADD231PS.BCST 28(SP), Z5, Z9
	VMOVUPS Z8, 896(DI)
	VMOVUPS Z9, 960(DI)
	VPMOVZXBD 146(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1024(DI), Z8
	VMOVUPS 1088(DI), Z9
	VFMADD231PS.BCST 32(SP), Z4, Z8
	VFMADD231PS.BCST 32(SP), Z5, Z9
	VMOVUPS Z8, 1024(DI)
	VMOVUPS Z9, 1088(DI)
	VPMOVZXBD 164(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1152(DI), Z8
	VMOVUPS 1216(DI), Z9
	VFMADD231PS.BCST 36(SP), Z4, Z8
	VFMADD231PS.BCST 36(SP), Z5, Z9
	VMOVUPS Z8, 1152(DI)
	VMOVUPS Z9, 1216(DI)
	VPMOVZXBD 182(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1280(DI), Z8
	VMOVUPS 1344(DI), Z9
	VFMADD231PS.BCST 40(SP), Z4, Z8
	VFMADD231PS.BCST 40(SP), Z5, Z9
	VMOVUPS Z8, 1280(DI)
	VMOVUPS Z9, 1344(DI)
	VPMOVZXBD 200(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1408(DI), Z8
	VMOVUPS 1472(DI), Z9
	VFMADD231PS.BCST 44(SP), Z4, Z8
	VFMADD231PS.BCST 44(SP), Z5, Z9
	VMOVUPS Z8, 1408(DI)
	VMOVUPS Z9, 1472(DI)
	VPMOVZXBD 218(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1536(DI), Z8
	VMOVUPS 1600(DI), Z9
	VFMADD231PS.BCST 48(SP), Z4, Z8
	VFMADD231PS.BCST 48(SP), Z5, Z9
	VMOVUPS Z8, 1536(DI)
	VMOVUPS Z9, 1600(DI)
	VPMOVZXBD 236(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1664(DI), Z8
	VMOVUPS 1728(DI), Z9
	VFMADD231PS.BCST 52(SP), Z4, Z8
	VFMADD231PS.BCST 52(SP), Z5, Z9
	VMOVUPS Z8, 1664(DI)
	VMOVUPS Z9, 1728(DI)
	VPMOVZXBD 254(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1792(DI), Z8
	VMOVUPS 1856(DI), Z9
	VFMADD231PS.BCST 56(SP), Z4, Z8
	VFMADD231PS.BCST 56(SP), Z5, Z9
	VMOVUPS Z8, 1792(DI)
	VMOVUPS Z9, 1856(DI)
	VPMOVZXBD 272(SI), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VMOVUPS 1920(DI), Z8
	VMOVUPS 1984(DI), Z9
	VFMADD231PS.BCST 60(SP), Z4, Z8
	VFMADD231PS.BCST 60(SP), Z5, Z9
	VMOVUPS Z8, 1920(DI)
	VMOVUPS Z9, 1984(DI)
	ADDQ $288, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  aq4zchunk
aq4ztail:
	TESTQ CX, CX
	JE    aq4zdone
	Q4Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	VMULPS Z15, Z6, Z6
	AXPYBLKZ(Z4, Z5, Z6)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq4ztail
aq4zdone:
	VZEROUPPER
	RET

// func axpyQ80AVX512(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ80AVX512(SB), NOSPLIT, $96-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
	Q8SCALESETUP
aq8zchunk:
	CMPQ CX, $16
	JL   aq8ztail
	SCALES16Q8(SI, Z3)
	VMULPS Z15, Z3, Z3
	VMOVUPS Z3, 0(SP)
	VPMOVSXBD 2(SI), Z4
	VPMOVSXBD 18(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VFMADD231PS.BCST 0(SP), Z4, Z8
	VFMADD231PS.BCST 0(SP), Z5, Z9
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VPMOVSXBD 36(SI), Z4
	VPMOVSXBD 52(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 128(DI), Z8
	VMOVUPS 192(DI), Z9
	VFMADD231PS.BCST 4(SP), Z4, Z8
	VFMADD231PS.BCST 4(SP), Z5, Z9
	VMOVUPS Z8, 128(DI)
	VMOVUPS Z9, 192(DI)
	VPMOVSXBD 70(SI), Z4
	VPMOVSXBD 86(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 256(DI), Z8
	VMOVUPS 320(DI), Z9
	VFMADD231PS.BCST 8(SP), Z4, Z8
	VFMADD231PS.BCST 8(SP), Z5, Z9
	VMOVUPS Z8, 256(DI)
	VMOVUPS Z9, 320(DI)
	VPMOVSXBD 104(SI), Z4
	VPMOVSXBD 120(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 384(DI), Z8
	VMOVUPS 448(DI), Z9
	VFMADD231PS.BCST 12(SP), Z4, Z8
	VFMADD231PS.BCST 12(SP), Z5, Z9
	VMOVUPS Z8, 384(DI)
	VMOVUPS Z9, 448(DI)
	VPMOVSXBD 138(SI), Z4
	VPMOVSXBD 154(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VFMADD231PS.BCST 16(SP), Z4, Z8
	VFMADD231PS.BCST 16(SP), Z5, Z9
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VPMOVSXBD 172(SI), Z4
	VPMOVSXBD 188(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 640(DI), Z8
	VMOVUPS 704(DI), Z9
	VFMADD231PS.BCST 20(SP), Z4, Z8
	VFMADD231PS.BCST 20(SP), Z5, Z9
	VMOVUPS Z8, 640(DI)
	VMOVUPS Z9, 704(DI)
	VPMOVSXBD 206(SI), Z4
	VPMOVSXBD 222(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 768(DI), Z8
	VMOVUPS 832(DI), Z9
	VFMADD231PS.BCST 24(SP), Z4, Z8
	VFMADD231PS.BCST 24(SP), Z5, Z9
	VMOVUPS Z8, 768(DI)
	VMOVUPS Z9, 832(DI)
	VPMOVSXBD 240(SI), Z4
	VPMOVSXBD 256(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 896(DI), Z8
	VMOVUPS 960(DI), Z9
	VFMADD231PS.BCST 28(SP), Z4, Z8
	VFMADD231PS.BCST 28(SP), Z5, Z9
	VMOVUPS Z8, 896(DI)
	VMOVUPS Z9, 960(DI)
	VPMOVSXBD 274(SI), Z4
	VPMOVSXBD 290(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1024(DI), Z8
	VMOVUPS 1088(DI), Z9
	VFMADD231PS.BCST 32(SP), Z4, Z8
	VFMADD231PS.BCST 32(SP), Z5, Z9
	VMOVUPS Z8, 1024(DI)
	VMOVUPS Z9, 1088(DI)
	VPMOVSXBD 308(SI), Z4
	VPMOVSXBD 324(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1152(DI), Z8
	VMOVUPS 1216(DI), Z9
	VFMADD231PS.BCST 36(SP), Z4, Z8
	VFMADD231PS.BCST 36(SP), Z5, Z9
	VMOVUPS Z8, 1152(DI)
	VMOVUPS Z9, 1216(DI)
	VPMOVSXBD 342(SI), Z4
	VPMOVSXBD 358(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1280(DI), Z8
	VMOVUPS 1344(DI), Z9
	VFMADD231PS.BCST 40(SP), Z4, Z8
	VFMADD231PS.BCST 40(SP), Z5, Z9
	VMOVUPS Z8, 1280(DI)
	VMOVUPS Z9, 1344(DI)
	VPMOVSXBD 376(SI), Z4
	VPMOVSXBD 392(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1408(DI), Z8
	VMOVUPS 1472(DI), Z9
	VFMADD231PS.BCST 44(SP), Z4, Z8
	VFMADD231PS.BCST 44(SP), Z5, Z9
	VMOVUPS Z8, 1408(DI)
	VMOVUPS Z9, 1472(DI)
	VPMOVSXBD 410(SI), Z4
	VPMOVSXBD 426(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1536(DI), Z8
	VMOVUPS 1600(DI), Z9
	VFMADD231PS.BCST 48(SP), Z4, Z8
	VFMADD231PS.BCST 48(SP), Z5, Z9
	VMOVUPS Z8, 1536(DI)
	VMOVUPS Z9, 1600(DI)
	VPMOVSXBD 444(SI), Z4
	VPMOVSXBD 460(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1664(DI), Z8
	VMOVUPS 1728(DI), Z9
	VFMADD231PS.BCST 52(SP), Z4, Z8
	VFMADD231PS.BCST 52(SP), Z5, Z9
	VMOVUPS Z8, 1664(DI)
	VMOVUPS Z9, 1728(DI)
	VPMOVSXBD 478(SI), Z4
	VPMOVSXBD 494(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1792(DI), Z8
	VMOVUPS 1856(DI), Z9
	VFMADD231PS.BCST 56(SP), Z4, Z8
	VFMADD231PS.BCST 56(SP), Z5, Z9
	VMOVUPS Z8, 1792(DI)
	VMOVUPS Z9, 1856(DI)
	VPMOVSXBD 512(SI), Z4
	VPMOVSXBD 528(SI), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VMOVUPS 1920(DI), Z8
	VMOVUPS 1984(DI), Z9
	VFMADD231PS.BCST 60(SP), Z4, Z8
	VFMADD231PS.BCST 60(SP), Z5, Z9
	VMOVUPS Z8, 1920(DI)
	VMOVUPS Z9, 1984(DI)
	ADDQ $544, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  aq8zchunk
aq8ztail:
	TESTQ CX, CX
	JE    aq8zdone
	Q8Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	VMULPS Z15, Z6, Z6
	AXPYBLKZ(Z4, Z5, Z6)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq8ztail
aq8zdone:
	VZEROUPPER
	RET

// Q4QUADW(off, base, xw, zw, zh): the quants of the four Q4_0 blocks at
// off(base) side by side in zw (xw is its low 128 bits), split into their
// low (zw) and high (zh) nibbles as unsigned bytes. Needs Z2 = 0x0f bytes.
#define Q4QUADW(off, base, xw, zw, zh) VMOVDQU off+2(base), xw; VINSERTI32X4 $1, off+20(base), zw, zw; VINSERTI32X4 $2, off+38(base), zw, zw; VINSERTI32X4 $3, off+56(base), zw, zw; VPSRLW $4, zw, zh; VPANDD Z2, zw, zw; VPANDD Z2, zh, zh

// Q8PAIRW(off, base, yw, zw): the quants of the two Q8_0 blocks at
// off(base) side by side in zw (yw is its low 256 bits), sign bits flipped
// to unsigned (w + 128). Needs Z2 = 0x80 bytes.
#define Q8PAIRW(off, base, yw, zw) VMOVDQU off+2(base), yw; VINSERTI64X4 $1, off+36(base), zw, zw; VPXORD Z2, zw, zw

// SCALEDSUM(sums, sc, idx, tmp, acc): acc += float(sums) · (the block
// scales sc picked per dword by idx).
#define SCALEDSUM(sums, sc, idx, tmp, acc) VCVTDQ2PS sums, sums; VPERMPS sc, idx, tmp; VFMADD231PS sums, tmp, acc

// One group of each kernel below: a quad of Q4_0 blocks (row, or rows a
// and b sharing the activation loads), a pair of Q8_0 blocks likewise.
#define ROWQ4QUAD(wq, xq, idx, acc) Q4QUADW(wq, SI, X4, Z4, Z5); VMOVDQU32 xq+128(DI), Z6; VPDPBUSD xq(DI), Z4, Z6; VPDPBUSD xq+64(DI), Z5, Z6; SCALEDSUM(Z6, Z3, idx, Z7, acc)
#define DOT2Q4QUAD(wq, xq, idx, acca, accb) VMOVDQU32 xq(DI), Z24; VMOVDQU32 xq+64(DI), Z25; VMOVDQU32 xq+128(DI), Z6; VMOVDQA32 Z6, Z8; Q4QUADW(wq, SI, X4, Z4, Z5); VPDPBUSD Z24, Z4, Z6; VPDPBUSD Z25, Z5, Z6; SCALEDSUM(Z6, Z3, idx, Z7, acca); Q4QUADW(wq, BX, X14, Z14, Z15); VPDPBUSD Z24, Z14, Z8; VPDPBUSD Z25, Z15, Z8; SCALEDSUM(Z8, Z13, idx, Z9, accb)
#define ROWQ8PAIR(wp, xp, idx, acc) Q8PAIRW(wp, SI, Y4, Z4); VPXORD Z6, Z6, Z6; VPDPBUSD xp(DI), Z4, Z6; SCALEDSUM(Z6, Z3, idx, Z4, acc)
#define DOT2Q8PAIR(wp, xp, idx, acca, accb) ROWQ8PAIR(wp, xp, idx, acca); Q8PAIRW(wp, BX, Y5, Z5); VPXORD Z7, Z7, Z7; VPDPBUSD xp(DI), Z5, Z7; SCALEDSUM(Z7, Z14, idx, Z5, accb)

// The integer Q4_0 dot with AVX-512 VNNI, four blocks per 512-bit vector:
// the 16 bytes of blocks 4q..4q+3 are placed side by side (three inserts)
// and split into their low and high nibbles, two vectors of 64 unsigned
// bytes; the activations were laid out to match (Q8Act.Quad: the four
// blocks' x[0:16], their x[16:32], then 16 int32 offsets), so two VPDPBUSD
// into one accumulator leave 16 int32 sums of eight products, four dwords
// a block. The accumulator starts at −8·Σ of the same eight activations
// (the nibbles' offset), so nothing is corrected afterwards. A VPERMPS
// picks each dword's block scale d_w·d_x for the final FMA. Fourteen
// instructions per four blocks (the two-block layout before took eleven
// per two). nb must be a multiple of 16.
DATA q4quadidx<>+0(SB)/4, $0
DATA q4quadidx<>+4(SB)/4, $0
DATA q4quadidx<>+8(SB)/4, $0
DATA q4quadidx<>+12(SB)/4, $0
DATA q4quadidx<>+16(SB)/4, $1
DATA q4quadidx<>+20(SB)/4, $1
DATA q4quadidx<>+24(SB)/4, $1
DATA q4quadidx<>+28(SB)/4, $1
DATA q4quadidx<>+32(SB)/4, $2
DATA q4quadidx<>+36(SB)/4, $2
DATA q4quadidx<>+40(SB)/4, $2
DATA q4quadidx<>+44(SB)/4, $2
DATA q4quadidx<>+48(SB)/4, $3
DATA q4quadidx<>+52(SB)/4, $3
DATA q4quadidx<>+56(SB)/4, $3
DATA q4quadidx<>+60(SB)/4, $3
DATA q4quadidx<>+64(SB)/4, $4
DATA q4quadidx<>+68(SB)/4, $4
DATA q4quadidx<>+72(SB)/4, $4
DATA q4quadidx<>+76(SB)/4, $4
DATA q4quadidx<>+80(SB)/4, $5
DATA q4quadidx<>+84(SB)/4, $5
DATA q4quadidx<>+88(SB)/4, $5
DATA q4quadidx<>+92(SB)/4, $5
DATA q4quadidx<>+96(SB)/4, $6
DATA q4quadidx<>+100(SB)/4, $6
DATA q4quadidx<>+104(SB)/4, $6
DATA q4quadidx<>+108(SB)/4, $6
DATA q4quadidx<>+112(SB)/4, $7
DATA q4quadidx<>+116(SB)/4, $7
DATA q4quadidx<>+120(SB)/4, $7
DATA q4quadidx<>+124(SB)/4, $7
DATA q4quadidx<>+128(SB)/4, $8
DATA q4quadidx<>+132(SB)/4, $8
DATA q4quadidx<>+136(SB)/4, $8
DATA q4quadidx<>+140(SB)/4, $8
DATA q4quadidx<>+144(SB)/4, $9
DATA q4quadidx<>+148(SB)/4, $9
DATA q4quadidx<>+152(SB)/4, $9
DATA q4quadidx<>+156(SB)/4, $9
DATA q4quadidx<>+160(SB)/4, $10
DATA q4quadidx<>+164(SB)/4, $10
DATA q4quadidx<>+168(SB)/4, $10
DATA q4quadidx<>+172(SB)/4, $10
DATA q4quadidx<>+176(SB)/4, $11
DATA q4quadidx<>+180(SB)/4, $11
DATA q4quadidx<>+184(SB)/4, $11
DATA q4quadidx<>+188(SB)/4, $11
DATA q4quadidx<>+192(SB)/4, $12
DATA q4quadidx<>+196(SB)/4, $12
DATA q4quadidx<>+200(SB)/4, $12
DATA q4quadidx<>+204(SB)/4, $12
DATA q4quadidx<>+208(SB)/4, $13
DATA q4quadidx<>+212(SB)/4, $13
DATA q4quadidx<>+216(SB)/4, $13
DATA q4quadidx<>+220(SB)/4, $13
DATA q4quadidx<>+224(SB)/4, $14
DATA q4quadidx<>+228(SB)/4, $14
DATA q4quadidx<>+232(SB)/4, $14
DATA q4quadidx<>+236(SB)/4, $14
DATA q4quadidx<>+240(SB)/4, $15
DATA q4quadidx<>+244(SB)/4, $15
DATA q4quadidx<>+248(SB)/4, $15
DATA q4quadidx<>+252(SB)/4, $15
GLOBL q4quadidx<>(SB), RODATA|NOPTR, $256

// func dotQ40Q8VNNI(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ40Q8VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z2
	Q4SCALESETUP
	VMOVDQU32 q4quadidx<>+0(SB), Z16
	VMOVDQU32 q4quadidx<>+64(SB), Z17
	VMOVDQU32 q4quadidx<>+128(SB), Z18
	VMOVDQU32 q4quadidx<>+192(SB), Z19
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
vq4chunk:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI)
	SCALES16Q4(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	ROWQ4QUAD(0, 0, Z16, Z0)
	ROWQ4QUAD(72, 192, Z17, Z1)
	ROWQ4QUAD(144, 384, Z18, Z0)
	ROWQ4QUAD(216, 576, Z19, Z1)
	ADDQ $288, SI
	ADDQ $768, DI
	ADDQ $64, R8
	SUBQ $16, CX
	JNZ  vq4chunk
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// Four Q4_0 rows into one y: y[i] += Σ_r a[r]·w_r[i], the decode FFN's down
// projection four records at a time, so y is loaded and stored once per
// four rows instead of once per row. nb must be a multiple of 16.
// func axpy4Q40AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q40AVX512(SB), NOSPLIT, $384-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nb+48(FP), CX
	VMOVUPS q4values<>(SB), Z2
	Q4SCALESETUP
a4q4chunk:
	CMPQ CX, $16
	JL   a4q4done
	SCALES16Q4(R10, Z3)
	VBROADCASTSS 0(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 0(SP)
	SCALES16Q4(R11, Z3)
	VBROADCASTSS 4(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 64(SP)
	SCALES16Q4(R12, Z3)
	VBROADCASTSS 8(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 128(SP)
	SCALES16Q4(R13, Z3)
	VBROADCASTSS 12(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 192(SP)
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VPMOVZXBD 2(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 0(SP), Z4, Z8
	VFMADD231PS.BCST 0(SP), Z5, Z9
	VPMOVZXBD 2(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 64(SP), Z4, Z8
	VFMADD231PS.BCST 64(SP), Z5, Z9
	VPMOVZXBD 2(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 128(SP), Z4, Z8
	VFMADD231PS.BCST 128(SP), Z5, Z9
	VPMOVZXBD 2(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 192(SP), Z4, Z8
	VFMADD231PS.BCST 192(SP), Z5, Z9
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VMOVUPS 128(DI), Z8
	VMOVUPS 192(DI), Z9
	VPMOVZXBD 20(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 4(SP), Z4, Z8
	VFMADD231PS.BCST 4(SP), Z5, Z9
	VPMOVZXBD 20(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 68(SP), Z4, Z8
	VFMADD231PS.BCST 68(SP), Z5, Z9
	VPMOVZXBD 20(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 132(SP), Z4, Z8
	VFMADD231PS.BCST 132(SP), Z5, Z9
	VPMOVZXBD 20(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 196(SP), Z4, Z8
	VFMADD231PS.BCST 196(SP), Z5, Z9
	VMOVUPS Z8, 128(DI)
	VMOVUPS Z9, 192(DI)
	VMOVUPS 256(DI), Z8
	VMOVUPS 320(DI), Z9
	VPMOVZXBD 38(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 8(SP), Z4, Z8
	VFMADD231PS.BCST 8(SP), Z5, Z9
	VPMOVZXBD 38(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 72(SP), Z4, Z8
	VFMADD231PS.BCST 72(SP), Z5, Z9
	VPMOVZXBD 38(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 136(SP), Z4, Z8
	VFMADD231PS.BCST 136(SP), Z5, Z9
	VPMOVZXBD 38(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 200(SP), Z4, Z8
	VFMADD231PS.BCST 200(SP), Z5, Z9
	VMOVUPS Z8, 256(DI)
	VMOVUPS Z9, 320(DI)
	VMOVUPS 384(DI), Z8
	VMOVUPS 448(DI), Z9
	VPMOVZXBD 56(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 12(SP), Z4, Z8
	VFMADD231PS.BCST 12(SP), Z5, Z9
	VPMOVZXBD 56(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 76(SP), Z4, Z8
	VFMADD231PS.BCST 76(SP), Z5, Z9
	VPMOVZXBD 56(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 140(SP), Z4, Z8
	VFMADD231PS.BCST 140(SP), Z5, Z9
	VPMOVZXBD 56(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 204(SP), Z4, Z8
	VFMADD231PS.BCST 204(SP), Z5, Z9
	VMOVUPS Z8, 384(DI)
	VMOVUPS Z9, 448(DI)
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VPMOVZXBD 74(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 16(SP), Z4, Z8
	VFMADD231PS.BCST 16(SP), Z5, Z9
	VPMOVZXBD 74(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 80(SP), Z4, Z8
	VFMADD231PS.BCST 80(SP), Z5, Z9
	VPMOVZXBD 74(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 144(SP), Z4, Z8
	VFMADD231PS.BCST 144(SP), Z5, Z9
	VPMOVZXBD 74(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 208(SP), Z4, Z8
	VFMADD231PS.BCST 208(SP), Z5, Z9
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS 640(DI), Z8
	VMOVUPS 704(DI), Z9
	VPMOVZXBD 92(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 20(SP), Z4, Z8
	VFMADD231PS.BCST 20(SP), Z5, Z9
	VPMOVZXBD 92(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 84(SP), Z4, Z8
	VFMADD231PS.BCST 84(SP), Z5, Z9
	VPMOVZXBD 92(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 148(SP), Z4, Z8
	VFMADD231PS.BCST 148(SP), Z5, Z9
	VPMOVZXBD 92(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 212(SP), Z4, Z8
	VFMADD231PS.BCST 212(SP), Z5, Z9
	VMOVUPS Z8, 640(DI)
	VMOVUPS Z9, 704(DI)
	VMOVUPS 768(DI), Z8
	VMOVUPS 832(DI), Z9
	VPMOVZXBD 110(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 24(SP), Z4, Z8
	VFMADD231PS.BCST 24(SP), Z5, Z9
	VPMOVZXBD 110(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 88(SP), Z4, Z8
	VFMADD231PS.BCST 88(SP), Z5, Z9
	VPMOVZXBD 110(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 152(SP), Z4, Z8
	VFMADD231PS.BCST 152(SP), Z5, Z9
	VPMOVZXBD 110(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 216(SP), Z4, Z8
	VFMADD231PS.BCST 216(SP), Z5, Z9
	VMOVUPS Z8, 768(DI)
	VMOVUPS Z9, 832(DI)
	VMOVUPS 896(DI), Z8
	VMOVUPS 960(DI), Z9
	VPMOVZXBD 128(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 28(SP), Z4, Z8
	VFMADD231PS.BCST 28(SP), Z5, Z9
	VPMOVZXBD 128(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 92(SP), Z4, Z8
	VFMADD231PS.BCST 92(SP), Z5, Z9
	VPMOVZXBD 128(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 156(SP), Z4, Z8
	VFMADD231PS.BCST 156(SP), Z5, Z9
	VPMOVZXBD 128(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 220(SP), Z4, Z8
	VFMADD231PS.BCST 220(SP), Z5, Z9
	VMOVUPS Z8, 896(DI)
	VMOVUPS Z9, 960(DI)
	VMOVUPS 1024(DI), Z8
	VMOVUPS 1088(DI), Z9
	VPMOVZXBD 146(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 32(SP), Z4, Z8
	VFMADD231PS.BCST 32(SP), Z5, Z9
	VPMOVZXBD 146(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 96(SP), Z4, Z8
	VFMADD231PS.BCST 96(SP), Z5, Z9
	VPMOVZXBD 146(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 160(SP), Z4, Z8
	VFMADD231PS.BCST 160(SP), Z5, Z9
	VPMOVZXBD 146(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 224(SP), Z4, Z8
	VFMADD231PS.BCST 224(SP), Z5, Z9
	VMOVUPS Z8, 1024(DI)
	VMOVUPS Z9, 1088(DI)
	VMOVUPS 1152(DI), Z8
	VMOVUPS 1216(DI), Z9
	VPMOVZXBD 164(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 36(SP), Z4, Z8
	VFMADD231PS.BCST 36(SP), Z5, Z9
	VPMOVZXBD 164(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 100(SP), Z4, Z8
	VFMADD231PS.BCST 100(SP), Z5, Z9
	VPMOVZXBD 164(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 164(SP), Z4, Z8
	VFMADD231PS.BCST 164(SP), Z5, Z9
	VPMOVZXBD 164(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 228(SP), Z4, Z8
	VFMADD231PS.BCST 228(SP), Z5, Z9
	VMOVUPS Z8, 1152(DI)
	VMOVUPS Z9, 1216(DI)
	VMOVUPS 1280(DI), Z8
	VMOVUPS 1344(DI), Z9
	VPMOVZXBD 182(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 40(SP), Z4, Z8
	VFMADD231PS.BCST 40(SP), Z5, Z9
	VPMOVZXBD 182(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 104(SP), Z4, Z8
	VFMADD231PS.BCST 104(SP), Z5, Z9
	VPMOVZXBD 182(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 168(SP), Z4, Z8
	VFMADD231PS.BCST 168(SP), Z5, Z9
	VPMOVZXBD 182(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 232(SP), Z4, Z8
	VFMADD231PS.BCST 232(SP), Z5, Z9
	VMOVUPS Z8, 1280(DI)
	VMOVUPS Z9, 1344(DI)
	VMOVUPS 1408(DI), Z8
	VMOVUPS 1472(DI), Z9
	VPMOVZXBD 200(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 44(SP), Z4, Z8
	VFMADD231PS.BCST 44(SP), Z5, Z9
	VPMOVZXBD 200(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 108(SP), Z4, Z8
	VFMADD231PS.BCST 108(SP), Z5, Z9
	VPMOVZXBD 200(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 172(SP), Z4, Z8
	VFMADD231PS.BCST 172(SP), Z5, Z9
	VPMOVZXBD 200(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 236(SP), Z4, Z8
	VFMADD231PS.BCST 236(SP), Z5, Z9
	VMOVUPS Z8, 1408(DI)
	VMOVUPS Z9, 1472(DI)
	VMOVUPS 1536(DI), Z8
	VMOVUPS 1600(DI), Z9
	VPMOVZXBD 218(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 48(SP), Z4, Z8
	VFMADD231PS.BCST 48(SP), Z5, Z9
	VPMOVZXBD 218(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 112(SP), Z4, Z8
	VFMADD231PS.BCST 112(SP), Z5, Z9
	VPMOVZXBD 218(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 176(SP), Z4, Z8
	VFMADD231PS.BCST 176(SP), Z5, Z9
	VPMOVZXBD 218(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 240(SP), Z4, Z8
	VFMADD231PS.BCST 240(SP), Z5, Z9
	VMOVUPS Z8, 1536(DI)
	VMOVUPS Z9, 1600(DI)
	VMOVUPS 1664(DI), Z8
	VMOVUPS 1728(DI), Z9
	VPMOVZXBD 236(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 52(SP), Z4, Z8
	VFMADD231PS.BCST 52(SP), Z5, Z9
	VPMOVZXBD 236(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 116(SP), Z4, Z8
	VFMADD231PS.BCST 116(SP), Z5, Z9
	VPMOVZXBD 236(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 180(SP), Z4, Z8
	VFMADD231PS.BCST 180(SP), Z5, Z9
	VPMOVZXBD 236(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 244(SP), Z4, Z8
	VFMADD231PS.BCST 244(SP), Z5, Z9
	VMOVUPS Z8, 1664(DI)
	VMOVUPS Z9, 1728(DI)
	VMOVUPS 1792(DI), Z8
	VMOVUPS 1856(DI), Z9
	VPMOVZXBD 254(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 56(SP), Z4, Z8
	VFMADD231PS.BCST 56(SP), Z5, Z9
	VPMOVZXBD 254(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 120(SP), Z4, Z8
	VFMADD231PS.BCST 120(SP), Z5, Z9
	VPMOVZXBD 254(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 184(SP), Z4, Z8
	VFMADD231PS.BCST 184(SP), Z5, Z9
	VPMOVZXBD 254(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 248(SP), Z4, Z8
	VFMADD231PS.BCST 248(SP), Z5, Z9
	VMOVUPS Z8, 1792(DI)
	VMOVUPS Z9, 1856(DI)
	VMOVUPS 1920(DI), Z8
	VMOVUPS 1984(DI), Z9
	VPMOVZXBD 272(R10), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 60(SP), Z4, Z8
	VFMADD231PS.BCST 60(SP), Z5, Z9
	VPMOVZXBD 272(R11), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 124(SP), Z4, Z8
	VFMADD231PS.BCST 124(SP), Z5, Z9
	VPMOVZXBD 272(R12), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 188(SP), Z4, Z8
	VFMADD231PS.BCST 188(SP), Z5, Z9
	VPMOVZXBD 272(R13), Z4
	VPSRLD $4, Z4, Z5
	VPERMPS Z2, Z4, Z4
	VPERMPS Z2, Z5, Z5
	VFMADD231PS.BCST 252(SP), Z4, Z8
	VFMADD231PS.BCST 252(SP), Z5, Z9
	VMOVUPS Z8, 1920(DI)
	VMOVUPS Z9, 1984(DI)
	ADDQ $288, R10
	ADDQ $288, R11
	ADDQ $288, R12
	ADDQ $288, R13
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  a4q4chunk
a4q4done:
	VZEROUPPER
	RET


// Decode FFN kernels for the 16-bit types: the gate and up dots of one
// neuron record in one pass (x loaded once for both rows), and the down
// projection four records at a time (y loaded and stored once per four
// rows). Written once as macros over the widening load, instantiated for
// BF16 and F16. The mix of dot and axpy kernels, each alone streaming at the
// memory bound, measured 30 % slower than either; the fused pair restores it.

#define LOADBF16X(off, base, r) VPMOVZXWD off(base)(AX*1), r; VPSLLD $16, r, r
#define LOADF16X(off, base, r)  VCVTPH2PS off(base)(AX*1), r

// DOT2: SI = row a, BX = row b, DI = x, CX = n (a multiple of 32), DX = out,
// R12 = the next record to prefetch (3 rows of n elements: three cache
// lines per 32 elements of a and b).
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
	PREFETCHT0 0(R12); \
	PREFETCHT0 64(R12); \
	PREFETCHT0 128(R12); \
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

// The gate and up dots of one Q4_0 record against the same Q8 activations
// (the VNNI kernel above, two rows at a time: the activations and their
// offsets are loaded once for both rows), prefetching the next record
// (next: 14 cache lines per chunk of 16 blocks, enough for three rows).
// nb must be a multiple of 16.
// func dot2Q40Q8VNNI(a, b *byte, xq *int8, xd *float32, nb int, out *[2]float32, next *byte)
TEXT ·dot2Q40Q8VNNI(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	MOVQ next+48(FP), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z2
	Q4SCALESETUP
	VMOVDQU32 q4quadidx<>+0(SB), Z16
	VMOVDQU32 q4quadidx<>+64(SB), Z17
	VMOVDQU32 q4quadidx<>+128(SB), Z18
	VMOVDQU32 q4quadidx<>+192(SB), Z19
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
v2q4chunk:
	PREFETCHT0 0(R12)
	PREFETCHT0 64(R12)
	PREFETCHT0 128(R12)
	PREFETCHT0 192(R12)
	PREFETCHT0 256(R12)
	PREFETCHT0 320(R12)
	PREFETCHT0 384(R12)
	PREFETCHT0 448(R12)
	PREFETCHT0 512(R12)
	PREFETCHT0 576(R12)
	PREFETCHT0 640(R12)
	PREFETCHT0 704(R12)
	PREFETCHT0 768(R12)
	PREFETCHT0 832(R12)
	SCALES16Q4(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	SCALES16Q4(BX, Z13)
	VMULPS 0(R8), Z13, Z13
	DOT2Q4QUAD(0, 0, Z16, Z0, Z10)
	DOT2Q4QUAD(72, 192, Z17, Z1, Z11)
	DOT2Q4QUAD(144, 384, Z18, Z0, Z10)
	DOT2Q4QUAD(216, 576, Z19, Z1, Z11)
	ADDQ $288, SI
	ADDQ $288, BX
	ADDQ $768, DI
	ADDQ $64, R8
	ADDQ $896, R12
	SUBQ $16, CX
	JNZ  v2q4chunk
	VADDPS Z1, Z0, Z0
	VADDPS Z11, Z10, Z10
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF64X4 $1, Z10, Y11
	VADDPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VHADDPS X10, X0, X0
	VHADDPS X0, X0, X0
	VMOVQ X0, 0(DX)
	VZEROUPPER
	RET

// Q8_0 integer dots with AVX-512 VNNI. VPDPBUSD multiplies unsigned by
// signed bytes, so the weights go in with their sign bit flipped (w + 128,
// one XOR) and the excess 128·Σx of each block is taken off after the
// block's scale: Σ_b d_b·(Σ (w+128)·x − 128·S_b), S_b the activation block
// sums the Q8 activations carry. Two blocks per 512-bit register (lanes
// 0-7 block 2p, 8-15 block 2p+1), q8pairidx picks each lane's d_w·d_x.

DATA q8pairidx<>+0(SB)/4, $0
DATA q8pairidx<>+4(SB)/4, $0
DATA q8pairidx<>+8(SB)/4, $0
DATA q8pairidx<>+12(SB)/4, $0
DATA q8pairidx<>+16(SB)/4, $0
DATA q8pairidx<>+20(SB)/4, $0
DATA q8pairidx<>+24(SB)/4, $0
DATA q8pairidx<>+28(SB)/4, $0
DATA q8pairidx<>+32(SB)/4, $1
DATA q8pairidx<>+36(SB)/4, $1
DATA q8pairidx<>+40(SB)/4, $1
DATA q8pairidx<>+44(SB)/4, $1
DATA q8pairidx<>+48(SB)/4, $1
DATA q8pairidx<>+52(SB)/4, $1
DATA q8pairidx<>+56(SB)/4, $1
DATA q8pairidx<>+60(SB)/4, $1
DATA q8pairidx<>+64(SB)/4, $2
DATA q8pairidx<>+68(SB)/4, $2
DATA q8pairidx<>+72(SB)/4, $2
DATA q8pairidx<>+76(SB)/4, $2
DATA q8pairidx<>+80(SB)/4, $2
DATA q8pairidx<>+84(SB)/4, $2
DATA q8pairidx<>+88(SB)/4, $2
DATA q8pairidx<>+92(SB)/4, $2
DATA q8pairidx<>+96(SB)/4, $3
DATA q8pairidx<>+100(SB)/4, $3
DATA q8pairidx<>+104(SB)/4, $3
DATA q8pairidx<>+108(SB)/4, $3
DATA q8pairidx<>+112(SB)/4, $3
DATA q8pairidx<>+116(SB)/4, $3
DATA q8pairidx<>+120(SB)/4, $3
DATA q8pairidx<>+124(SB)/4, $3
DATA q8pairidx<>+128(SB)/4, $4
DATA q8pairidx<>+132(SB)/4, $4
DATA q8pairidx<>+136(SB)/4, $4
DATA q8pairidx<>+140(SB)/4, $4
DATA q8pairidx<>+144(SB)/4, $4
DATA q8pairidx<>+148(SB)/4, $4
DATA q8pairidx<>+152(SB)/4, $4
DATA q8pairidx<>+156(SB)/4, $4
DATA q8pairidx<>+160(SB)/4, $5
DATA q8pairidx<>+164(SB)/4, $5
DATA q8pairidx<>+168(SB)/4, $5
DATA q8pairidx<>+172(SB)/4, $5
DATA q8pairidx<>+176(SB)/4, $5
DATA q8pairidx<>+180(SB)/4, $5
DATA q8pairidx<>+184(SB)/4, $5
DATA q8pairidx<>+188(SB)/4, $5
DATA q8pairidx<>+192(SB)/4, $6
DATA q8pairidx<>+196(SB)/4, $6
DATA q8pairidx<>+200(SB)/4, $6
DATA q8pairidx<>+204(SB)/4, $6
DATA q8pairidx<>+208(SB)/4, $6
DATA q8pairidx<>+212(SB)/4, $6
DATA q8pairidx<>+216(SB)/4, $6
DATA q8pairidx<>+220(SB)/4, $6
DATA q8pairidx<>+224(SB)/4, $7
DATA q8pairidx<>+228(SB)/4, $7
DATA q8pairidx<>+232(SB)/4, $7
DATA q8pairidx<>+236(SB)/4, $7
DATA q8pairidx<>+240(SB)/4, $7
DATA q8pairidx<>+244(SB)/4, $7
DATA q8pairidx<>+248(SB)/4, $7
DATA q8pairidx<>+252(SB)/4, $7
DATA q8pairidx<>+256(SB)/4, $8
DATA q8pairidx<>+260(SB)/4, $8
DATA q8pairidx<>+264(SB)/4, $8
DATA q8pairidx<>+268(SB)/4, $8
DATA q8pairidx<>+272(SB)/4, $8
DATA q8pairidx<>+276(SB)/4, $8
DATA q8pairidx<>+280(SB)/4, $8
DATA q8pairidx<>+284(SB)/4, $8
DATA q8pairidx<>+288(SB)/4, $9
DATA q8pairidx<>+292(SB)/4, $9
DATA q8pairidx<>+296(SB)/4, $9
DATA q8pairidx<>+300(SB)/4, $9
DATA q8pairidx<>+304(SB)/4, $9
DATA q8pairidx<>+308(SB)/4, $9
DATA q8pairidx<>+312(SB)/4, $9
DATA q8pairidx<>+316(SB)/4, $9
DATA q8pairidx<>+320(SB)/4, $10
DATA q8pairidx<>+324(SB)/4, $10
DATA q8pairidx<>+328(SB)/4, $10
DATA q8pairidx<>+332(SB)/4, $10
DATA q8pairidx<>+336(SB)/4, $10
DATA q8pairidx<>+340(SB)/4, $10
DATA q8pairidx<>+344(SB)/4, $10
DATA q8pairidx<>+348(SB)/4, $10
DATA q8pairidx<>+352(SB)/4, $11
DATA q8pairidx<>+356(SB)/4, $11
DATA q8pairidx<>+360(SB)/4, $11
DATA q8pairidx<>+364(SB)/4, $11
DATA q8pairidx<>+368(SB)/4, $11
DATA q8pairidx<>+372(SB)/4, $11
DATA q8pairidx<>+376(SB)/4, $11
DATA q8pairidx<>+380(SB)/4, $11
DATA q8pairidx<>+384(SB)/4, $12
DATA q8pairidx<>+388(SB)/4, $12
DATA q8pairidx<>+392(SB)/4, $12
DATA q8pairidx<>+396(SB)/4, $12
DATA q8pairidx<>+400(SB)/4, $12
DATA q8pairidx<>+404(SB)/4, $12
DATA q8pairidx<>+408(SB)/4, $12
DATA q8pairidx<>+412(SB)/4, $12
DATA q8pairidx<>+416(SB)/4, $13
DATA q8pairidx<>+420(SB)/4, $13
DATA q8pairidx<>+424(SB)/4, $13
DATA q8pairidx<>+428(SB)/4, $13
DATA q8pairidx<>+432(SB)/4, $13
DATA q8pairidx<>+436(SB)/4, $13
DATA q8pairidx<>+440(SB)/4, $13
DATA q8pairidx<>+444(SB)/4, $13
DATA q8pairidx<>+448(SB)/4, $14
DATA q8pairidx<>+452(SB)/4, $14
DATA q8pairidx<>+456(SB)/4, $14
DATA q8pairidx<>+460(SB)/4, $14
DATA q8pairidx<>+464(SB)/4, $14
DATA q8pairidx<>+468(SB)/4, $14
DATA q8pairidx<>+472(SB)/4, $14
DATA q8pairidx<>+476(SB)/4, $14
DATA q8pairidx<>+480(SB)/4, $15
DATA q8pairidx<>+484(SB)/4, $15
DATA q8pairidx<>+488(SB)/4, $15
DATA q8pairidx<>+492(SB)/4, $15
DATA q8pairidx<>+496(SB)/4, $15
DATA q8pairidx<>+500(SB)/4, $15
DATA q8pairidx<>+504(SB)/4, $15
DATA q8pairidx<>+508(SB)/4, $15
GLOBL q8pairidx<>(SB), RODATA|NOPTR, $512

// func dotQ80Q8VNNI(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32
TEXT ·dotQ80Q8VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z2
	Q8SCALESETUP
	VMOVDQU32 q8pairidx<>+0(SB), Z16
	VMOVDQU32 q8pairidx<>+64(SB), Z17
	VMOVDQU32 q8pairidx<>+128(SB), Z18
	VMOVDQU32 q8pairidx<>+192(SB), Z19
	VMOVDQU32 q8pairidx<>+256(SB), Z20
	VMOVDQU32 q8pairidx<>+320(SB), Z21
	VMOVDQU32 q8pairidx<>+384(SB), Z22
	VMOVDQU32 q8pairidx<>+448(SB), Z23
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
vq8chunk:
	PREFETCHT0 4352(SI)
	PREFETCHT0 4416(SI)
	PREFETCHT0 4480(SI)
	PREFETCHT0 4544(SI)
	PREFETCHT0 4608(SI)
	PREFETCHT0 4672(SI)
	PREFETCHT0 4736(SI)
	PREFETCHT0 4800(SI)
	PREFETCHT0 4864(SI)
	SCALES16Q8(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	VCVTDQ2PS 0(R9), Z8
	VFMADD231PS Z8, Z3, Z10
	ROWQ8PAIR(0, 0, Z16, Z0)
	ROWQ8PAIR(68, 64, Z17, Z1)
	ROWQ8PAIR(136, 128, Z18, Z0)
	ROWQ8PAIR(204, 192, Z19, Z1)
	ROWQ8PAIR(272, 256, Z20, Z0)
	ROWQ8PAIR(340, 320, Z21, Z1)
	ROWQ8PAIR(408, 384, Z22, Z0)
	ROWQ8PAIR(476, 448, Z23, Z1)
	ADDQ $544, SI
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JNZ  vq8chunk
	MOVL $0x43000000, AX
	VPBROADCASTD AX, Z11
	VFNMADD231PS Z11, Z10, Z0
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// The gate and up dots of one Q8_0 record (two rows sharing each
// activation load), prefetching the next record: 26 cache lines a chunk,
// three rows of 16 blocks.
// func dot2Q80Q8VNNI(a, b *byte, xq *int8, xd *float32, xs *int32, nb int, out *[2]float32, next *byte)
TEXT ·dot2Q80Q8VNNI(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R9
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), DX
	MOVQ next+56(FP), R12
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z2
	Q8SCALESETUP
	VMOVDQU32 q8pairidx<>+0(SB), Z16
	VMOVDQU32 q8pairidx<>+64(SB), Z17
	VMOVDQU32 q8pairidx<>+128(SB), Z18
	VMOVDQU32 q8pairidx<>+192(SB), Z19
	VMOVDQU32 q8pairidx<>+256(SB), Z20
	VMOVDQU32 q8pairidx<>+320(SB), Z21
	VMOVDQU32 q8pairidx<>+384(SB), Z22
	VMOVDQU32 q8pairidx<>+448(SB), Z23
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
v2q8chunk:
	PREFETCHT0 0(R12)
	PREFETCHT0 64(R12)
	PREFETCHT0 128(R12)
	PREFETCHT0 192(R12)
	PREFETCHT0 256(R12)
	PREFETCHT0 320(R12)
	PREFETCHT0 384(R12)
	PREFETCHT0 448(R12)
	PREFETCHT0 512(R12)
	PREFETCHT0 576(R12)
	PREFETCHT0 640(R12)
	PREFETCHT0 704(R12)
	PREFETCHT0 768(R12)
	PREFETCHT0 832(R12)
	PREFETCHT0 896(R12)
	PREFETCHT0 960(R12)
	PREFETCHT0 1024(R12)
	PREFETCHT0 1088(R12)
	PREFETCHT0 1152(R12)
	PREFETCHT0 1216(R12)
	PREFETCHT0 1280(R12)
	PREFETCHT0 1344(R12)
	PREFETCHT0 1408(R12)
	PREFETCHT0 1472(R12)
	PREFETCHT0 1536(R12)
	PREFETCHT0 1600(R12)
	SCALES16Q8(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	SCALES16Q8(BX, Z14)
	VMULPS 0(R8), Z14, Z14
	VCVTDQ2PS 0(R9), Z8
	VFMADD231PS Z8, Z3, Z12
	VFMADD231PS Z8, Z14, Z13
	DOT2Q8PAIR(0, 0, Z16, Z0, Z10)
	DOT2Q8PAIR(68, 64, Z17, Z1, Z11)
	DOT2Q8PAIR(136, 128, Z18, Z0, Z10)
	DOT2Q8PAIR(204, 192, Z19, Z1, Z11)
	DOT2Q8PAIR(272, 256, Z20, Z0, Z10)
	DOT2Q8PAIR(340, 320, Z21, Z1, Z11)
	DOT2Q8PAIR(408, 384, Z22, Z0, Z10)
	DOT2Q8PAIR(476, 448, Z23, Z1, Z11)
	ADDQ $544, SI
	ADDQ $544, BX
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $1664, R12
	SUBQ $16, CX
	JNZ  v2q8chunk
	MOVL $0x43000000, AX
	VPBROADCASTD AX, Z15
	VADDPS Z1, Z0, Z0
	VFNMADD231PS Z15, Z12, Z0
	VADDPS Z11, Z10, Z10
	VFNMADD231PS Z15, Z13, Z10
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF64X4 $1, Z10, Y11
	VADDPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VHADDPS X10, X0, X0
	VHADDPS X0, X0, X0
	VMOVQ X0, 0(DX)
	VZEROUPPER
	RET

// Four Q8_0 rows into one y, y[i] += Σ_r a[r]·w_r[i] (the decode FFN's
// down projection four records at a time, y loaded and stored once per
// four rows). Each row's 16 scales of a chunk are gathered, multiplied by
// its factor and kept on the stack for embedded broadcasts. nb must be a
// multiple of 16.
// func axpy4Q80AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q80AVX512(SB), NOSPLIT, $256-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nb+48(FP), CX
	Q8SCALESETUP
a4q8chunk:
	SCALES16Q8(R10, Z3)
	VBROADCASTSS 0(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 0(SP)
	SCALES16Q8(R11, Z3)
	VBROADCASTSS 4(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 64(SP)
	SCALES16Q8(R12, Z3)
	VBROADCASTSS 8(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 128(SP)
	SCALES16Q8(R13, Z3)
	VBROADCASTSS 12(R9), Z6
	VMULPS Z6, Z3, Z3
	VMOVUPS Z3, 192(SP)
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VPMOVSXBD 2(R10), Z4
	VPMOVSXBD 18(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 0(SP), Z4, Z8
	VFMADD231PS.BCST 0(SP), Z5, Z9
	VPMOVSXBD 2(R11), Z4
	VPMOVSXBD 18(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 64(SP), Z4, Z8
	VFMADD231PS.BCST 64(SP), Z5, Z9
	VPMOVSXBD 2(R12), Z4
	VPMOVSXBD 18(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 128(SP), Z4, Z8
	VFMADD231PS.BCST 128(SP), Z5, Z9
	VPMOVSXBD 2(R13), Z4
	VPMOVSXBD 18(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 192(SP), Z4, Z8
	VFMADD231PS.BCST 192(SP), Z5, Z9
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VMOVUPS 128(DI), Z8
	VMOVUPS 192(DI), Z9
	VPMOVSXBD 36(R10), Z4
	VPMOVSXBD 52(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 4(SP), Z4, Z8
	VFMADD231PS.BCST 4(SP), Z5, Z9
	VPMOVSXBD 36(R11), Z4
	VPMOVSXBD 52(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 68(SP), Z4, Z8
	VFMADD231PS.BCST 68(SP), Z5, Z9
	VPMOVSXBD 36(R12), Z4
	VPMOVSXBD 52(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 132(SP), Z4, Z8
	VFMADD231PS.BCST 132(SP), Z5, Z9
	VPMOVSXBD 36(R13), Z4
	VPMOVSXBD 52(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 196(SP), Z4, Z8
	VFMADD231PS.BCST 196(SP), Z5, Z9
	VMOVUPS Z8, 128(DI)
	VMOVUPS Z9, 192(DI)
	VMOVUPS 256(DI), Z8
	VMOVUPS 320(DI), Z9
	VPMOVSXBD 70(R10), Z4
	VPMOVSXBD 86(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 8(SP), Z4, Z8
	VFMADD231PS.BCST 8(SP), Z5, Z9
	VPMOVSXBD 70(R11), Z4
	VPMOVSXBD 86(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 72(SP), Z4, Z8
	VFMADD231PS.BCST 72(SP), Z5, Z9
	VPMOVSXBD 70(R12), Z4
	VPMOVSXBD 86(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 136(SP), Z4, Z8
	VFMADD231PS.BCST 136(SP), Z5, Z9
	VPMOVSXBD 70(R13), Z4
	VPMOVSXBD 86(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 200(SP), Z4, Z8
	VFMADD231PS.BCST 200(SP), Z5, Z9
	VMOVUPS Z8, 256(DI)
	VMOVUPS Z9, 320(DI)
	VMOVUPS 384(DI), Z8
	VMOVUPS 448(DI), Z9
	VPMOVSXBD 104(R10), Z4
	VPMOVSXBD 120(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 12(SP), Z4, Z8
	VFMADD231PS.BCST 12(SP), Z5, Z9
	VPMOVSXBD 104(R11), Z4
	VPMOVSXBD 120(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 76(SP), Z4, Z8
	VFMADD231PS.BCST 76(SP), Z5, Z9
	VPMOVSXBD 104(R12), Z4
	VPMOVSXBD 120(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 140(SP), Z4, Z8
	VFMADD231PS.BCST 140(SP), Z5, Z9
	VPMOVSXBD 104(R13), Z4
	VPMOVSXBD 120(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 204(SP), Z4, Z8
	VFMADD231PS.BCST 204(SP), Z5, Z9
	VMOVUPS Z8, 384(DI)
	VMOVUPS Z9, 448(DI)
	VMOVUPS 512(DI), Z8
	VMOVUPS 576(DI), Z9
	VPMOVSXBD 138(R10), Z4
	VPMOVSXBD 154(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 16(SP), Z4, Z8
	VFMADD231PS.BCST 16(SP), Z5, Z9
	VPMOVSXBD 138(R11), Z4
	VPMOVSXBD 154(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 80(SP), Z4, Z8
	VFMADD231PS.BCST 80(SP), Z5, Z9
	VPMOVSXBD 138(R12), Z4
	VPMOVSXBD 154(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 144(SP), Z4, Z8
	VFMADD231PS.BCST 144(SP), Z5, Z9
	VPMOVSXBD 138(R13), Z4
	VPMOVSXBD 154(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 208(SP), Z4, Z8
	VFMADD231PS.BCST 208(SP), Z5, Z9
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS 640(DI), Z8
	VMOVUPS 704(DI), Z9
	VPMOVSXBD 172(R10), Z4
	VPMOVSXBD 188(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 20(SP), Z4, Z8
	VFMADD231PS.BCST 20(SP), Z5, Z9
	VPMOVSXBD 172(R11), Z4
	VPMOVSXBD 188(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 84(SP), Z4, Z8
	VFMADD231PS.BCST 84(SP), Z5, Z9
	VPMOVSXBD 172(R12), Z4
	VPMOVSXBD 188(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 148(SP), Z4, Z8
	VFMADD231PS.BCST 148(SP), Z5, Z9
	VPMOVSXBD 172(R13), Z4
	VPMOVSXBD 188(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 212(SP), Z4, Z8
	VFMADD231PS.BCST 212(SP), Z5, Z9
	VMOVUPS Z8, 640(DI)
	VMOVUPS Z9, 704(DI)
	VMOVUPS 768(DI), Z8
	VMOVUPS 832(DI), Z9
	VPMOVSXBD 206(R10), Z4
	VPMOVSXBD 222(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 24(SP), Z4, Z8
	VFMADD231PS.BCST 24(SP), Z5, Z9
	VPMOVSXBD 206(R11), Z4
	VPMOVSXBD 222(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 88(SP), Z4, Z8
	VFMADD231PS.BCST 88(SP), Z5, Z9
	VPMOVSXBD 206(R12), Z4
	VPMOVSXBD 222(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 152(SP), Z4, Z8
	VFMADD231PS.BCST 152(SP), Z5, Z9
	VPMOVSXBD 206(R13), Z4
	VPMOVSXBD 222(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 216(SP), Z4, Z8
	VFMADD231PS.BCST 216(SP), Z5, Z9
	VMOVUPS Z8, 768(DI)
	VMOVUPS Z9, 832(DI)
	VMOVUPS 896(DI), Z8
	VMOVUPS 960(DI), Z9
	VPMOVSXBD 240(R10), Z4
	VPMOVSXBD 256(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 28(SP), Z4, Z8
	VFMADD231PS.BCST 28(SP), Z5, Z9
	VPMOVSXBD 240(R11), Z4
	VPMOVSXBD 256(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 92(SP), Z4, Z8
	VFMADD231PS.BCST 92(SP), Z5, Z9
	VPMOVSXBD 240(R12), Z4
	VPMOVSXBD 256(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 156(SP), Z4, Z8
	VFMADD231PS.BCST 156(SP), Z5, Z9
	VPMOVSXBD 240(R13), Z4
	VPMOVSXBD 256(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 220(SP), Z4, Z8
	VFMADD231PS.BCST 220(SP), Z5, Z9
	VMOVUPS Z8, 896(DI)
	VMOVUPS Z9, 960(DI)
	VMOVUPS 1024(DI), Z8
	VMOVUPS 1088(DI), Z9
	VPMOVSXBD 274(R10), Z4
	VPMOVSXBD 290(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 32(SP), Z4, Z8
	VFMADD231PS.BCST 32(SP), Z5, Z9
	VPMOVSXBD 274(R11), Z4
	VPMOVSXBD 290(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 96(SP), Z4, Z8
	VFMADD231PS.BCST 96(SP), Z5, Z9
	VPMOVSXBD 274(R12), Z4
	VPMOVSXBD 290(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 160(SP), Z4, Z8
	VFMADD231PS.BCST 160(SP), Z5, Z9
	VPMOVSXBD 274(R13), Z4
	VPMOVSXBD 290(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 224(SP), Z4, Z8
	VFMADD231PS.BCST 224(SP), Z5, Z9
	VMOVUPS Z8, 1024(DI)
	VMOVUPS Z9, 1088(DI)
	VMOVUPS 1152(DI), Z8
	VMOVUPS 1216(DI), Z9
	VPMOVSXBD 308(R10), Z4
	VPMOVSXBD 324(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 36(SP), Z4, Z8
	VFMADD231PS.BCST 36(SP), Z5, Z9
	VPMOVSXBD 308(R11), Z4
	VPMOVSXBD 324(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 100(SP), Z4, Z8
	VFMADD231PS.BCST 100(SP), Z5, Z9
	VPMOVSXBD 308(R12), Z4
	VPMOVSXBD 324(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 164(SP), Z4, Z8
	VFMADD231PS.BCST 164(SP), Z5, Z9
	VPMOVSXBD 308(R13), Z4
	VPMOVSXBD 324(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 228(SP), Z4, Z8
	VFMADD231PS.BCST 228(SP), Z5, Z9
	VMOVUPS Z8, 1152(DI)
	VMOVUPS Z9, 1216(DI)
	VMOVUPS 1280(DI), Z8
	VMOVUPS 1344(DI), Z9
	VPMOVSXBD 342(R10), Z4
	VPMOVSXBD 358(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 40(SP), Z4, Z8
	VFMADD231PS.BCST 40(SP), Z5, Z9
	VPMOVSXBD 342(R11), Z4
	VPMOVSXBD 358(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 104(SP), Z4, Z8
	VFMADD231PS.BCST 104(SP), Z5, Z9
	VPMOVSXBD 342(R12), Z4
	VPMOVSXBD 358(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 168(SP), Z4, Z8
	VFMADD231PS.BCST 168(SP), Z5, Z9
	VPMOVSXBD 342(R13), Z4
	VPMOVSXBD 358(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 232(SP), Z4, Z8
	VFMADD231PS.BCST 232(SP), Z5, Z9
	VMOVUPS Z8, 1280(DI)
	VMOVUPS Z9, 1344(DI)
	VMOVUPS 1408(DI), Z8
	VMOVUPS 1472(DI), Z9
	VPMOVSXBD 376(R10), Z4
	VPMOVSXBD 392(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 44(SP), Z4, Z8
	VFMADD231PS.BCST 44(SP), Z5, Z9
	VPMOVSXBD 376(R11), Z4
	VPMOVSXBD 392(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 108(SP), Z4, Z8
	VFMADD231PS.BCST 108(SP), Z5, Z9
	VPMOVSXBD 376(R12), Z4
	VPMOVSXBD 392(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 172(SP), Z4, Z8
	VFMADD231PS.BCST 172(SP), Z5, Z9
	VPMOVSXBD 376(R13), Z4
	VPMOVSXBD 392(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 236(SP), Z4, Z8
	VFMADD231PS.BCST 236(SP), Z5, Z9
	VMOVUPS Z8, 1408(DI)
	VMOVUPS Z9, 1472(DI)
	VMOVUPS 1536(DI), Z8
	VMOVUPS 1600(DI), Z9
	VPMOVSXBD 410(R10), Z4
	VPMOVSXBD 426(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 48(SP), Z4, Z8
	VFMADD231PS.BCST 48(SP), Z5, Z9
	VPMOVSXBD 410(R11), Z4
	VPMOVSXBD 426(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 112(SP), Z4, Z8
	VFMADD231PS.BCST 112(SP), Z5, Z9
	VPMOVSXBD 410(R12), Z4
	VPMOVSXBD 426(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 176(SP), Z4, Z8
	VFMADD231PS.BCST 176(SP), Z5, Z9
	VPMOVSXBD 410(R13), Z4
	VPMOVSXBD 426(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 240(SP), Z4, Z8
	VFMADD231PS.BCST 240(SP), Z5, Z9
	VMOVUPS Z8, 1536(DI)
	VMOVUPS Z9, 1600(DI)
	VMOVUPS 1664(DI), Z8
	VMOVUPS 1728(DI), Z9
	VPMOVSXBD 444(R10), Z4
	VPMOVSXBD 460(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 52(SP), Z4, Z8
	VFMADD231PS.BCST 52(SP), Z5, Z9
	VPMOVSXBD 444(R11), Z4
	VPMOVSXBD 460(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 116(SP), Z4, Z8
	VFMADD231PS.BCST 116(SP), Z5, Z9
	VPMOVSXBD 444(R12), Z4
	VPMOVSXBD 460(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 180(SP), Z4, Z8
	VFMADD231PS.BCST 180(SP), Z5, Z9
	VPMOVSXBD 444(R13), Z4
	VPMOVSXBD 460(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 244(SP), Z4, Z8
	VFMADD231PS.BCST 244(SP), Z5, Z9
	VMOVUPS Z8, 1664(DI)
	VMOVUPS Z9, 1728(DI)
	VMOVUPS 1792(DI), Z8
	VMOVUPS 1856(DI), Z9
	VPMOVSXBD 478(R10), Z4
	VPMOVSXBD 494(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 56(SP), Z4, Z8
	VFMADD231PS.BCST 56(SP), Z5, Z9
	VPMOVSXBD 478(R11), Z4
	VPMOVSXBD 494(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 120(SP), Z4, Z8
	VFMADD231PS.BCST 120(SP), Z5, Z9
	VPMOVSXBD 478(R12), Z4
	VPMOVSXBD 494(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 184(SP), Z4, Z8
	VFMADD231PS.BCST 184(SP), Z5, Z9
	VPMOVSXBD 478(R13), Z4
	VPMOVSXBD 494(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 248(SP), Z4, Z8
	VFMADD231PS.BCST 248(SP), Z5, Z9
	VMOVUPS Z8, 1792(DI)
	VMOVUPS Z9, 1856(DI)
	VMOVUPS 1920(DI), Z8
	VMOVUPS 1984(DI), Z9
	VPMOVSXBD 512(R10), Z4
	VPMOVSXBD 528(R10), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 60(SP), Z4, Z8
	VFMADD231PS.BCST 60(SP), Z5, Z9
	VPMOVSXBD 512(R11), Z4
	VPMOVSXBD 528(R11), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 124(SP), Z4, Z8
	VFMADD231PS.BCST 124(SP), Z5, Z9
	VPMOVSXBD 512(R12), Z4
	VPMOVSXBD 528(R12), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 188(SP), Z4, Z8
	VFMADD231PS.BCST 188(SP), Z5, Z9
	VPMOVSXBD 512(R13), Z4
	VPMOVSXBD 528(R13), Z5
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VFMADD231PS.BCST 252(SP), Z4, Z8
	VFMADD231PS.BCST 252(SP), Z5, Z9
	VMOVUPS Z8, 1920(DI)
	VMOVUPS Z9, 1984(DI)
	ADDQ $544, R10
	ADDQ $544, R11
	ADDQ $544, R12
	ADDQ $544, R13
	ADDQ $2048, DI
	SUBQ $16, CX
	JNZ  a4q8chunk
	VZEROUPPER
	RET
