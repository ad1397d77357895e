#include "textflag.h"
#include "amd64_macros.h"

// The prefill GEMM on AVX2 + FMA (GemmKernel for CPUs without AVX-512):
// the same tile shapes as the AVX-512 kernels (gemm_amd64.s), in eight
// lanes and sixteen registers.

// Tile: four rows × six tokens in dot form. Twenty-four accumulators do
// not fit sixteen registers, so the tile runs as two passes over the
// columns, rows 0-1 then rows 2-3, each with its twelve accumulators in
// Y0-Y11 (token t's rows a and b in Y(2t), Y(2t+1)); the columns stay in
// L1 (the driver blocks them), and every row vector is loaded once a pass
// for six multiply-adds, every token vector once for two. The partial
// sums live in lanes 0-7 of the [24][16] accumulators (lanes 8-15 stay as
// the driver cleared them), folded by the Fold at the end.

// PAIR6(w0, w1): one pass, rows w0 and w1 (registers), over CX bytes of
// columns; acc entry (4t + i) at AX + (4t + i)·64.
#define LOADACC2(i) \
	VMOVUPS (i*64)(AX), Y0; \
	VMOVUPS (i*64+64)(AX), Y1; \
	VMOVUPS (i*64+256)(AX), Y2; \
	VMOVUPS (i*64+320)(AX), Y3; \
	VMOVUPS (i*64+512)(AX), Y4; \
	VMOVUPS (i*64+576)(AX), Y5; \
	VMOVUPS (i*64+768)(AX), Y6; \
	VMOVUPS (i*64+832)(AX), Y7; \
	VMOVUPS (i*64+1024)(AX), Y8; \
	VMOVUPS (i*64+1088)(AX), Y9; \
	VMOVUPS (i*64+1280)(AX), Y10; \
	VMOVUPS (i*64+1344)(AX), Y11
#define STOREACC2(i) \
	VMOVUPS Y0, (i*64)(AX); \
	VMOVUPS Y1, (i*64+64)(AX); \
	VMOVUPS Y2, (i*64+256)(AX); \
	VMOVUPS Y3, (i*64+320)(AX); \
	VMOVUPS Y4, (i*64+512)(AX); \
	VMOVUPS Y5, (i*64+576)(AX); \
	VMOVUPS Y6, (i*64+768)(AX); \
	VMOVUPS Y7, (i*64+832)(AX); \
	VMOVUPS Y8, (i*64+1024)(AX); \
	VMOVUPS Y9, (i*64+1088)(AX); \
	VMOVUPS Y10, (i*64+1280)(AX); \
	VMOVUPS Y11, (i*64+1344)(AX)
#define TOKFMA2(xp, a, b) \
	VMOVUPS (xp)(DX*1), Y14; \
	VFMADD231PS Y12, Y14, a; \
	VFMADD231PS Y13, Y14, b
#define PAIR6(w0, w1, label) \
	XORQ DX, DX; \
label: \
	VMOVUPS (w0)(DX*1), Y12; \
	VMOVUPS (w1)(DX*1), Y13; \
	TOKFMA2(R12, Y0, Y1); \
	TOKFMA2(R13, Y2, Y3); \
	TOKFMA2(R14, Y4, Y5); \
	TOKFMA2(SI, Y6, Y7); \
	TOKFMA2(DI, Y8, Y9); \
	TOKFMA2(BX, Y10, Y11); \
	ADDQ $32, DX; \
	CMPQ DX, CX; \
	JLT  label

// func gemm4x6AVX2(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)
TEXT ·gemm4x6AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), AX
	LOAD4P(AX, R8, R9, R10, R11)
	TOK6PTRS($2)
	MOVQ acc+24(FP), AX
	TESTQ CX, CX
	JZ   g2done
	LOADACC2(0)
	PAIR6(R8, R9, g2loop01)
	STOREACC2(0)
	LOADACC2(2)
	PAIR6(R10, R11, g2loop23)
	STOREACC2(2)
g2done:
	VZEROUPPER
	RET

// Down: six tokens × 16 columns of the output over K records,
// acc[t·accStride + c] += Σ_j h[j·6 + t]·down[j·ldd + c] (float32 rows
// widened by the driver, h six tokens a record), the twelve accumulators
// in Y0-Y11 (token t in Y(2t), Y(2t+1)), a record's 16 columns in Y12/Y13.
// H is a multiple of 16 (the Go wrapper takes any rest).
#define DTOK2(off, a, b) \
	VBROADCASTSS off(BX), Y14; \
	VFMADD231PS Y12, Y14, a; \
	VFMADD231PS Y13, Y14, b
#define LDROW2(r, a, b) VMOVUPS 0(r), a; VMOVUPS 32(r), b
#define STROW2(r, a, b) VMOVUPS a, 0(r); VMOVUPS b, 32(r)
#define TILE6Y(OP) \
	MOVQ DI, AX; \
	OP(AX, Y0, Y1); \
	ADDQ R13, AX; \
	OP(AX, Y2, Y3); \
	ADDQ R13, AX; \
	OP(AX, Y4, Y5); \
	ADDQ R13, AX; \
	OP(AX, Y6, Y7); \
	ADDQ R13, AX; \
	OP(AX, Y8, Y9); \
	ADDQ R13, AX; \
	OP(AX, Y10, Y11)

// func gemmDown6AVX2(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)
TEXT ·gemmDown6AVX2(SB), NOSPLIT, $0-56
	DOWN6ARGS
	TESTQ R14, R14
	JZ   d2done
d2col:
	CMPQ R11, $16
	JL   d2done
	TILE6Y(LDROW2)
	MOVQ R14, CX
	MOVQ SI, BX
	MOVQ R8, R9
d2inner:
	VMOVUPS 0(R9), Y12
	VMOVUPS 32(R9), Y13
	DTOK2(0, Y0, Y1)
	DTOK2(4, Y2, Y3)
	DTOK2(8, Y4, Y5)
	DTOK2(12, Y6, Y7)
	DTOK2(16, Y8, Y9)
	DTOK2(20, Y10, Y11)
	ADDQ $24, BX
	ADDQ R10, R9
	DECQ CX
	JNZ  d2inner
	TILE6Y(STROW2)
	ADDQ $64, DI
	ADDQ $64, R8
	SUBQ $16, R11
	JMP  d2col
d2done:
	VZEROUPPER
	RET

// Fold: out[i] = the sum of acc[i]'s 16 lanes, for i < 24.
#define HSUM16Y(i) \
	VMOVUPS (i*64)(SI), Y0; \
	VADDPS (i*64+32)(SI), Y0, Y0; \
	HSUMY0ST(i)

// func hsum24AVX2(acc *[24][16]float32, out *[24]float32)
TEXT ·hsum24AVX2(SB), NOSPLIT, $0-16
	MOVQ acc+0(FP), SI
	MOVQ out+8(FP), DI
	FOR24(HSUM16Y)
	VZEROUPPER
	RET
