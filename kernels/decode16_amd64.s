#include "textflag.h"
#include "amd64_macros.h"

// AVX-512 forms of the decode FFN's 16-bit kernels (needs AVX-512F, and
// F16C-class VCVTPH2PS on zmm, part of AVX-512F): the fused gate/up dot of
// one record and the four-record down axpy, 16 weights widened per
// instruction where the AVX2 forms widen 8. Same structure and prefetch as
// DOT2/AXPY4W in avx2_amd64.s; 64 elements an iteration.

#define LDBF16Z(off, base, r) VPMOVZXWD off(base)(AX*1), r; VPSLLD $16, r, r
#define LDF16Z(off, base, r)  VCVTPH2PS off(base)(AX*1), r

// DOTZA(LOADW): 64 elements of row a (SI) against x (DI) at AX: x into
// Z8-Z11 (DOT2Z reuses them for row b), row a's products into Z0-Z3.
#define DOTZA(LOADW) \
	VMOVUPS 0(DI)(AX*2), Z8; \
	VMOVUPS 64(DI)(AX*2), Z9; \
	VMOVUPS 128(DI)(AX*2), Z10; \
	VMOVUPS 192(DI)(AX*2), Z11; \
	LOADW(0, SI, Z12); \
	LOADW(32, SI, Z13); \
	LOADW(64, SI, Z14); \
	LOADW(96, SI, Z15); \
	VFMADD231PS Z8, Z12, Z0; \
	VFMADD231PS Z9, Z13, Z1; \
	VFMADD231PS Z10, Z14, Z2; \
	VFMADD231PS Z11, Z15, Z3

// DOT1Z: DOT2Z's arithmetic for row a alone (SI = the row, DI = x, CX = n,
// a multiple of 64; the sum into X0): the same lanes, the same fold, so a
// row's dot is the same to the bit whether it is taken alone or in a pair
// (the float path's split FFN takes gate rows alone and up rows in pairs,
// and must equal the interleaved records' pairs).
#define DOT1Z(LOADW) \
	XORQ AX, AX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	z1loop:; \
	DOTZA(LOADW); \
	ADDQ $128, AX; \
	SUBQ $64, CX; \
	JNZ  z1loop; \
	VADDPS Z2, Z0, Z0; \
	VADDPS Z3, Z1, Z1; \
	HSUMZ

// DOT2Z: SI = row a, BX = row b, DI = x, CX = n (a multiple of 64), DX =
// out, R12 = the next record (six cache lines per 64 elements of a and b).
#define DOT2Z(LOADW) \
	XORQ AX, AX; \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	z2loop:; \
	PFL2x6(R12, 0); \
	ADDQ $384, R12; \
	DOTZA(LOADW); \
	LOADW(0, BX, Z12); \
	LOADW(32, BX, Z13); \
	LOADW(64, BX, Z14); \
	LOADW(96, BX, Z15); \
	VFMADD231PS Z8, Z12, Z4; \
	VFMADD231PS Z9, Z13, Z5; \
	VFMADD231PS Z10, Z14, Z6; \
	VFMADD231PS Z11, Z15, Z7; \
	ADDQ $128, AX; \
	SUBQ $64, CX; \
	JNZ  z2loop; \
	VADDPS Z2, Z0, Z0; \
	VADDPS Z3, Z1, Z1; \
	VADDPS Z6, Z4, Z4; \
	VADDPS Z7, Z5, Z5; \
	VADDPS Z5, Z4, Z16; \
	HSUMZ; \
	VMOVSS X0, 0(DX); \
	VMOVAPS Z16, Z0; \
	VPXORD Z1, Z1, Z1; \
	HSUMZ; \
	VMOVSS X0, 4(DX); \
	VZEROUPPER; \
	RET

// DOTROWSZ(LOADW): the body of dotRows*: DOT1Z over rows consecutive
// rows (w the first, stride the bytes from one to the next, x, n a
// multiple of 64, rows ≥ 1, out), each row's dot DOT1Z's to the bit,
// without a call a row (a 2048-wide 16-bit row is 4 KiB, 110 ns from
// memory).
#define DOTROWSZ(LOADW) \
	MOVQ w+0(FP), SI; \
	MOVQ x+8(FP), DI; \
	MOVQ n+16(FP), R8; \
	MOVQ rows+24(FP), R9; \
	MOVQ stride+32(FP), R10; \
	MOVQ out+40(FP), R11; \
	rloop:; \
	MOVQ R8, CX; \
	DOT1Z(LOADW); \
	VMOVSS X0, (R11); \
	ADDQ $4, R11; \
	ADDQ R10, SI; \
	DECQ R9; \
	JNZ  rloop; \
	VZEROUPPER; \
	RET

// func dot2BF16AVX512(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)
TEXT ·dot2BF16AVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	MOVQ next+40(FP), R12
	DOT2Z(LDBF16Z)

// func dot2F16AVX512(a, b *uint16, x *float32, n int, out *[2]float32, next *byte)
TEXT ·dot2F16AVX512(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	MOVQ next+40(FP), R12
	DOT2Z(LDF16Z)

// func dot1BF16AVX512(w *uint16, x *float32, n int) float32
TEXT ·dot1BF16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOT1Z(LDBF16Z)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot1F16AVX512(w *uint16, x *float32, n int) float32
TEXT ·dot1F16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOT1Z(LDF16Z)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// ROWZ(LOADW, base, f) adds f times the 64 weights of one row at base into
// the accumulators Z0-Z3.
#define ROWZ(LOADW, base, f) \
	LOADW(0, base, Z4); \
	LOADW(32, base, Z5); \
	LOADW(64, base, Z6); \
	LOADW(96, base, Z7); \
	VFMADD231PS Z4, f, Z0; \
	VFMADD231PS Z5, f, Z1; \
	VFMADD231PS Z6, f, Z2; \
	VFMADD231PS Z7, f, Z3

// AXPY4Z: DI = y, DX = the four factors, R8..R11 = rows, CX = n (a multiple of 64).
#define AXPY4Z(LOADW) \
	XORQ AX, AX; \
	VBROADCASTSS 0(DX), Z12; \
	VBROADCASTSS 4(DX), Z13; \
	VBROADCASTSS 8(DX), Z14; \
	VBROADCASTSS 12(DX), Z15; \
	z4loop:; \
	VMOVUPS 0(DI)(AX*2), Z0; \
	VMOVUPS 64(DI)(AX*2), Z1; \
	VMOVUPS 128(DI)(AX*2), Z2; \
	VMOVUPS 192(DI)(AX*2), Z3; \
	ROWZ(LOADW, R8, Z12); \
	ROWZ(LOADW, R9, Z13); \
	ROWZ(LOADW, R10, Z14); \
	ROWZ(LOADW, R11, Z15); \
	VMOVUPS Z0, 0(DI)(AX*2); \
	VMOVUPS Z1, 64(DI)(AX*2); \
	VMOVUPS Z2, 128(DI)(AX*2); \
	VMOVUPS Z3, 192(DI)(AX*2); \
	ADDQ $128, AX; \
	SUBQ $64, CX; \
	JNZ  z4loop; \
	VZEROUPPER; \
	RET

// func axpy4BF16AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4BF16AVX512(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), DX
	MOVQ w0+16(FP), R8
	MOVQ w1+24(FP), R9
	MOVQ w2+32(FP), R10
	MOVQ w3+40(FP), R11
	MOVQ n+48(FP), CX
	AXPY4Z(LDBF16Z)

// func axpy4F16AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4F16AVX512(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), DX
	MOVQ w0+16(FP), R8
	MOVQ w1+24(FP), R9
	MOVQ w2+32(FP), R10
	MOVQ w3+40(FP), R11
	MOVQ n+48(FP), CX
	AXPY4Z(LDF16Z)

// func dotRowsF16AVX512(w *uint16, x *float32, n, rows, stride int, out *float32)
TEXT ·dotRowsF16AVX512(SB), NOSPLIT, $0-48
	DOTROWSZ(LDF16Z)

// func dotRowsBF16AVX512(w *uint16, x *float32, n, rows, stride int, out *float32)
TEXT ·dotRowsBF16AVX512(SB), NOSPLIT, $0-48
	DOTROWSZ(LDBF16Z)
