// Macros shared by the amd64 kernel files (avx2_amd64.s, avx512_amd64.s,
// vnni_amd64.s), included by each. Only #define lines: no code or data.

// Horizontal sum of Y0 into X0[0].
#define HSUM VEXTRACTF128 $1, Y0, X1; VADDPS X1, X0, X0; VHADDPS X0, X0, X0; VHADDPS X0, X0, X0

// Sum of Z0 and Z1 into X0[0].
#define HSUMZ VADDPS Z1, Z0, Z0; VEXTRACTF64X4 $1, Z0, Y1; VADDPS Y1, Y0, Y0; HSUM

// ACCROWLD and ACCROWST load and store one token's 64 accumulators.
#define ACCROWLD(base, a0, a1, a2, a3) \
	VMOVUPS 0(base), a0; \
	VMOVUPS 64(base), a1; \
	VMOVUPS 128(base), a2; \
	VMOVUPS 192(base), a3

#define ACCROWST(base, a0, a1, a2, a3) \
	VMOVUPS a0, 0(base); \
	VMOVUPS a1, 64(base); \
	VMOVUPS a2, 128(base); \
	VMOVUPS a3, 192(base)

// ACC24LD and ACC24ST load and store the prefill micro-kernels' 24
// partial-sum vectors Z0-Z23 at base.
#define ACC24LD(base) \
	VMOVUPS 0(base), Z0; \
	VMOVUPS 64(base), Z1; \
	VMOVUPS 128(base), Z2; \
	VMOVUPS 192(base), Z3; \
	VMOVUPS 256(base), Z4; \
	VMOVUPS 320(base), Z5; \
	VMOVUPS 384(base), Z6; \
	VMOVUPS 448(base), Z7; \
	VMOVUPS 512(base), Z8; \
	VMOVUPS 576(base), Z9; \
	VMOVUPS 640(base), Z10; \
	VMOVUPS 704(base), Z11; \
	VMOVUPS 768(base), Z12; \
	VMOVUPS 832(base), Z13; \
	VMOVUPS 896(base), Z14; \
	VMOVUPS 960(base), Z15; \
	VMOVUPS 1024(base), Z16; \
	VMOVUPS 1088(base), Z17; \
	VMOVUPS 1152(base), Z18; \
	VMOVUPS 1216(base), Z19; \
	VMOVUPS 1280(base), Z20; \
	VMOVUPS 1344(base), Z21; \
	VMOVUPS 1408(base), Z22; \
	VMOVUPS 1472(base), Z23

#define ACC24ST(base) \
	VMOVUPS Z0, 0(base); \
	VMOVUPS Z1, 64(base); \
	VMOVUPS Z2, 128(base); \
	VMOVUPS Z3, 192(base); \
	VMOVUPS Z4, 256(base); \
	VMOVUPS Z5, 320(base); \
	VMOVUPS Z6, 384(base); \
	VMOVUPS Z7, 448(base); \
	VMOVUPS Z8, 512(base); \
	VMOVUPS Z9, 576(base); \
	VMOVUPS Z10, 640(base); \
	VMOVUPS Z11, 704(base); \
	VMOVUPS Z12, 768(base); \
	VMOVUPS Z13, 832(base); \
	VMOVUPS Z14, 896(base); \
	VMOVUPS Z15, 960(base); \
	VMOVUPS Z16, 1024(base); \
	VMOVUPS Z17, 1088(base); \
	VMOVUPS Z18, 1152(base); \
	VMOVUPS Z19, 1216(base); \
	VMOVUPS Z20, 1280(base); \
	VMOVUPS Z21, 1344(base); \
	VMOVUPS Z22, 1408(base); \
	VMOVUPS Z23, 1472(base)

// TILE6(OP) loads (OP = ACCROWLD) or stores (ACCROWST) the down
// projections' six token rows of 64 accumulators (Z0-Z23) at DI, rows R13
// bytes apart (AX scratch).
#define TILE6(OP) \
	MOVQ DI, AX; \
	OP(AX, Z0, Z1, Z2, Z3); \
	ADDQ R13, AX; \
	OP(AX, Z4, Z5, Z6, Z7); \
	ADDQ R13, AX; \
	OP(AX, Z8, Z9, Z10, Z11); \
	ADDQ R13, AX; \
	OP(AX, Z12, Z13, Z14, Z15); \
	ADDQ R13, AX; \
	OP(AX, Z16, Z17, Z18, Z19); \
	ADDQ R13, AX; \
	OP(AX, Z20, Z21, Z22, Z23)

// LOAD4P(src, r0, r1, r2, r3): the four pointers of the array at src.
#define LOAD4P(src, r0, r1, r2, r3) MOVQ 0(src), r0; MOVQ 8(src), r1; MOVQ 16(src), r2; MOVQ 24(src), r3

// HSUM4Z(za, ya, zb, yb, zc, yc, zd, yd): the sums of four vectors' lanes
// into X14 (lanes 0-3: a, b, c, d); Y12-Y15 are scratch.
#define HSUM4Z(za, ya, zb, yb, zc, yc, zd, yd) \
	VEXTRACTF64X4 $1, za, Y12; \
	VADDPS Y12, ya, ya; \
	VEXTRACTF64X4 $1, zb, Y12; \
	VADDPS Y12, yb, yb; \
	VEXTRACTF64X4 $1, zc, Y12; \
	VADDPS Y12, yc, yc; \
	VEXTRACTF64X4 $1, zd, Y12; \
	VADDPS Y12, yd, yd; \
	VHADDPS yb, ya, Y12; \
	VHADDPS yd, yc, Y13; \
	VHADDPS Y13, Y12, Y14; \
	VEXTRACTF128 $1, Y14, X15; \
	VADDPS X15, X14, X14

// PFL2x2(r, o), PFL2x6(r, o): prefetch into L2 (PREFETCHT2) the two or six
// cache lines from o(r) (the fused decode dots' prefetch of the next record).
#define PFL2x2(r, o) PREFETCHT2 o(r); PREFETCHT2 o+64(r)
#define PFL2x6(r, o) PFL2x2(r, o); PFL2x2(r, o+128); PFL2x2(r, o+256)

// TOK6PTRS(shift), for the prefill tiles' (…, x *[6]*T, n int, …) frames:
// the six token pointers into R12, R13, R14, SI, DI, BX and n << shift
// (bytes) into CX.
#define TOK6PTRS(shift) \
	MOVQ x+8(FP), AX; \
	LOAD4P(AX, R12, R13, R14, SI); \
	MOVQ 32(AX), DI; \
	MOVQ 40(AX), BX; \
	MOVQ n+16(FP), CX; \
	SHLQ shift, CX

// TOK6PROLOGUE(shift): TOK6PTRS, the accumulators from acc *[24][16]float32
// into Z0-Z23 (AX keeps acc), DX = 0.
#define TOK6PROLOGUE(shift) \
	TOK6PTRS(shift); \
	MOVQ acc+24(FP), AX; \
	ACC24LD(AX); \
	XORQ DX, DX

// TOK6PROLOGUEOUT(shift) is TOK6PROLOGUE for the panel tiles' (…, n int,
// out *[24]float32) frames: the accumulators start at zero and AX keeps
// out, for FOLD24.
#define TOK6PROLOGUEOUT(shift) \
	TOK6PTRS(shift); \
	MOVQ out+24(FP), AX; \
	ACC24ZERO; \
	XORQ DX, DX

// PACKPROLOGUE(shift), for the packing tiles' (w *[4]*uint16, panel
// *uint16, x *[6]*T, n int, out *[24]float32) frames: the four rows into
// R8-R11, the six tokens into R12, R13, R14, SI, DI, BX, n << shift (bytes
// of x) into CX, zero accumulators, AX = panel, DX = 0.
#define PACKPROLOGUE(shift) \
	MOVQ w+0(FP), AX; \
	LOAD4P(AX, R8, R9, R10, R11); \
	MOVQ x+16(FP), AX; \
	LOAD4P(AX, R12, R13, R14, SI); \
	MOVQ 32(AX), DI; \
	MOVQ 40(AX), BX; \
	MOVQ n+24(FP), CX; \
	SHLQ shift, CX; \
	ACC24ZERO; \
	MOVQ panel+8(FP), AX; \
	XORQ DX, DX

#define ACC24ZERO \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; VPXORD Z17, Z17, Z17; VPXORD Z18, Z18, Z18; VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; VPXORD Z21, Z21, Z21; VPXORD Z22, Z22, Z22; VPXORD Z23, Z23, Z23

// FOLD24(out) sums each of the accumulators Z0-Z23 over its 16 lanes into
// out[0..23] (a register holding the address), in registers: pairs of
// vectors are folded into one by shuffles and an add, four levels (lanes
// i + i+8, then + i+4, + i+2, + i+1: hsum24AVX512's order, so the sums are
// the same bit for bit), leaving source k + 4m in lane 4k + m, which
// fold24idx puts back in order. Z24-Z27 are clobbered.
#define FOLDL1(a, b) VSHUFF32X4 $0x44, b, a, Z24; VSHUFF32X4 $0xEE, b, a, Z25; VADDPS Z25, Z24, a
#define FOLDL2(a, b) VSHUFF32X4 $0x88, b, a, Z24; VSHUFF32X4 $0xDD, b, a, Z25; VADDPS Z25, Z24, a
#define FOLDL3(a, b) VSHUFPS $0x44, b, a, Z24; VSHUFPS $0xEE, b, a, Z25; VADDPS Z25, Z24, a
#define FOLDL4(a, b) VSHUFPS $0x88, b, a, Z24; VSHUFPS $0xDD, b, a, Z25; VADDPS Z25, Z24, a
#define FOLD24(out) \
	FOLDL1(Z0, Z1); FOLDL1(Z2, Z3); FOLDL1(Z4, Z5); FOLDL1(Z6, Z7); \
	FOLDL1(Z8, Z9); FOLDL1(Z10, Z11); FOLDL1(Z12, Z13); FOLDL1(Z14, Z15); \
	FOLDL1(Z16, Z17); FOLDL1(Z18, Z19); FOLDL1(Z20, Z21); FOLDL1(Z22, Z23); \
	FOLDL2(Z0, Z2); FOLDL2(Z4, Z6); FOLDL2(Z8, Z10); FOLDL2(Z12, Z14); \
	FOLDL2(Z16, Z18); FOLDL2(Z20, Z22); \
	FOLDL3(Z0, Z4); FOLDL3(Z8, Z12); FOLDL3(Z16, Z20); \
	FOLDL4(Z0, Z8); FOLDL4(Z16, Z16); \
	VMOVDQU32 ·fold24idx(SB), Z26; \
	VPERMPS Z0, Z26, Z27; \
	VMOVUPS Z27, 0(out); \
	VPERMPS Z16, Z26, Z27; \
	VMOVUPS Y27, 64(out)

// HSUMY0ST(i): the eight lanes of Y0 summed (lanes i + i+4, then + i+2,
// then + i+1) into the float at (i*4)(DI), X1 scratch: the end of the
// prefill tiles' folds (hsum24AVX512, hsum24AVX2).
#define HSUMY0ST(i) \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0x4e, X0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0xb1, X0, X1; \
	VADDSS X1, X0, X0; \
	VMOVSS X0, (i*4)(DI)

// FOR24(M) expands M(0) … M(23).
#define FOR24(M) M(0); M(1); M(2); M(3); M(4); M(5); M(6); M(7); M(8); M(9); M(10); M(11); M(12); M(13); M(14); M(15); M(16); M(17); M(18); M(19); M(20); M(21); M(22); M(23)

// DOWN6ARGS loads the prefill down tiles' (acc *float32, accStride int,
// h *float32, down *float32, ldd int, K int, H int) arguments: acc in DI,
// its row stride in bytes in R13, h in SI, down in R8, its row stride in
// bytes in R10, K in R14, H in R11.
#define DOWN6ARGS \
	MOVQ acc+0(FP), DI; \
	MOVQ accStride+8(FP), R13; \
	SHLQ $2, R13; \
	MOVQ h+16(FP), SI; \
	MOVQ down+24(FP), R8; \
	MOVQ ldd+32(FP), R10; \
	SHLQ $2, R10; \
	MOVQ K+40(FP), R14; \
	MOVQ H+48(FP), R11

// PANELARGS loads the integer GEMM tiles' (panel *byte, xq *int8, xd
// *float32, xc *int32, nb int, out *[128]float32) arguments into R10-R14
// and DX (the AVX2 tiles' passes start from them).
#define PANELARGS \
	MOVQ panel+0(FP), R10; \
	MOVQ xq+8(FP), R11; \
	MOVQ xd+16(FP), R12; \
	MOVQ xc+24(FP), R13; \
	MOVQ nb+32(FP), R14; \
	MOVQ out+40(FP), DX

// INT8PACK8(mask, lo, hi): the int8 down projections' coefficients — the
// int32 q_r of eight rows in Y0-Y7, lanes the eight blocks of a chunk —
// packed to bytes and transposed so that each block's eight q_r are one
// qword: blocks 0, 1, 4, 5 at lo, blocks 2, 3, 6, 7 at hi (mask: in each
// 128-bit lane, byte 4b+r takes byte 4r+b). Y0-Y7 clobbered.
#define INT8PACK8(mask, lo, hi) \
	VPACKSSDW Y1, Y0, Y0; \
	VPACKSSDW Y3, Y2, Y2; \
	VPACKSSDW Y5, Y4, Y4; \
	VPACKSSDW Y7, Y6, Y6; \
	VPACKSSWB Y2, Y0, Y0; \
	VPACKSSWB Y6, Y4, Y4; \
	VPSHUFB mask, Y0, Y0; \
	VPSHUFB mask, Y4, Y4; \
	VPUNPCKLDQ Y4, Y0, Y1; \
	VPUNPCKHDQ Y4, Y0, Y2; \
	VMOVDQU Y1, lo; \
	VMOVDQU Y2, hi

// NIBMADD(x, t, mask, c, d, lo, hi): the int8 down projections' inner
// step: x's bytes split into low nibbles (x) and high ones (t), each byte
// pair times the coefficient pair c (low) or d (high) by VPMADDUBSW, the
// int16 sums added into lo and hi.
#define NIBMADD(x, t, mask, c, d, lo, hi) \
	VPSRLW $4, x, t; \
	VPAND mask, x, x; \
	VPAND mask, t, t; \
	VPMADDUBSW c, x, x; \
	VPMADDUBSW d, t, t; \
	VPADDW x, lo, lo; \
	VPADDW t, hi, hi

// INT8ROUND(inv, y): y = round-half-even(y·inv) as int32.
#define INT8ROUND(inv, y) VMULPS inv, y, y; VCVTPS2DQ y, y
