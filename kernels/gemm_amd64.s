#include "textflag.h"
#include "amd64_macros.h"

// Prefill GEMM micro-kernel (needs AVX-512F): four weight rows against six
// tokens in dot form, every weight row and token vector loaded once per 16
// columns for 24 multiply-adds. The rows are float32 (the driver widens
// other dtypes into a scratch block first, so one kernel serves every
// dtype); the 24 partial-sum vectors live in memory between calls, so the
// driver can block the columns to keep the rows and tokens in L1 and fold
// the vectors once at the end (hsum24AVX512).

// FMA6TOK: the six tokens' 16 columns at DX (pointers R12, R13, R14, SI,
// DI, BX) times the four row vectors Z24-Z27 into the 24 accumulators.
#define FMA6TOK \
	VMOVUPS (R12)(DX*1), Z28 \
	VFMADD231PS Z24, Z28, Z0 \
	VFMADD231PS Z25, Z28, Z1 \
	VFMADD231PS Z26, Z28, Z2 \
	VFMADD231PS Z27, Z28, Z3 \
	VMOVUPS (R13)(DX*1), Z29 \
	VFMADD231PS Z24, Z29, Z4 \
	VFMADD231PS Z25, Z29, Z5 \
	VFMADD231PS Z26, Z29, Z6 \
	VFMADD231PS Z27, Z29, Z7 \
	VMOVUPS (R14)(DX*1), Z28 \
	VFMADD231PS Z24, Z28, Z8 \
	VFMADD231PS Z25, Z28, Z9 \
	VFMADD231PS Z26, Z28, Z10 \
	VFMADD231PS Z27, Z28, Z11 \
	VMOVUPS (SI)(DX*1), Z29 \
	VFMADD231PS Z24, Z29, Z12 \
	VFMADD231PS Z25, Z29, Z13 \
	VFMADD231PS Z26, Z29, Z14 \
	VFMADD231PS Z27, Z29, Z15 \
	VMOVUPS (DI)(DX*1), Z28 \
	VFMADD231PS Z24, Z28, Z16 \
	VFMADD231PS Z25, Z28, Z17 \
	VFMADD231PS Z26, Z28, Z18 \
	VFMADD231PS Z27, Z28, Z19 \
	VMOVUPS (BX)(DX*1), Z29 \
	VFMADD231PS Z24, Z29, Z20 \
	VFMADD231PS Z25, Z29, Z21 \
	VFMADD231PS Z26, Z29, Z22 \
	VFMADD231PS Z27, Z29, Z23

// func gemm4x6AVX512(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)
TEXT ·gemm4x6AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), AX
	LOAD4P(AX, R8, R9, R10, R11)
	TOK6PROLOGUE($2)
	TESTQ CX, CX
	JZ   gstore
gloop:
	VMOVUPS (R8)(DX*1), Z24
	VMOVUPS (R9)(DX*1), Z25
	VMOVUPS (R10)(DX*1), Z26
	VMOVUPS (R11)(DX*1), Z27
	FMA6TOK
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  gloop
gstore:
	ACC24ST(AX)
	VZEROUPPER
	RET

// gemm4x6AVX512Panel is gemm4x6AVX512 with the four rows packed into one
// panel, 16 columns of each row in turn (256 bytes a step): one sequential
// stream for the rows instead of four.
// The panel tiles start their accumulators at zero and fold them into
// out in registers (FOLD24) instead of storing 24 vectors for a Fold.
// func gemm4x6AVX512Panel(w *float32, x *[6]*float32, n int, out *[24]float32)
TEXT ·gemm4x6AVX512Panel(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), R8
	TOK6PROLOGUEOUT($2)
	TESTQ CX, CX
	JZ   gpstore
gploop:
	VMOVUPS 0(R8), Z24
	VMOVUPS 64(R8), Z25
	VMOVUPS 128(R8), Z26
	VMOVUPS 192(R8), Z27
	FMA6TOK
	ADDQ $256, R8
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  gploop
gpstore:
	FOLD24(AX)
	VZEROUPPER
	RET

// gemm4x6AVX512PanelF16 is gemm4x6AVX512Panel over a panel of F16 rows as
// stored (16 columns of each row in turn, packF16Panel), each 16 widened by
// VCVTPH2PS on the way in: half the panel bytes of the widened float panel
// for the same arithmetic (F16 × F32, sums in F32: exact as Panel is).
// func gemm4x6AVX512PanelF16(w *uint16, x *[6]*float32, n int, out *[24]float32)
TEXT ·gemm4x6AVX512PanelF16(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), R8
	TOK6PROLOGUEOUT($2)
	TESTQ CX, CX
	JZ   gphstore
gphloop:
	VCVTPH2PS 0(R8), Z24
	VCVTPH2PS 32(R8), Z25
	VCVTPH2PS 64(R8), Z26
	VCVTPH2PS 96(R8), Z27
	FMA6TOK
	ADDQ $128, R8
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  gphloop
gphstore:
	FOLD24(AX)
	VZEROUPPER
	RET

// gemm4x6AVX512PackF16 is gemm4x6AVX512PanelF16 for a panel's first token
// group: the four F16 rows come from where they are stored (read from
// memory once), are written into the panel as PanelF16 reads it, and meet
// the six tokens on the way (as gemm4x6BF16DPPack).
// func gemm4x6AVX512PackF16(w *[4]*uint16, panel *uint16, x *[6]*float32, n int, out *[24]float32)
TEXT ·gemm4x6AVX512PackF16(SB), NOSPLIT, $0-40
	PACKPROLOGUE($2)
	TESTQ CX, CX
	JZ   phkstore
phkloop:
	VMOVDQU32 (R8), Y24
	VMOVDQU32 (R9), Y25
	VMOVDQU32 (R10), Y26
	VMOVDQU32 (R11), Y27
	VMOVDQU32 Y24, 0(AX)
	VMOVDQU32 Y25, 32(AX)
	VMOVDQU32 Y26, 64(AX)
	VMOVDQU32 Y27, 96(AX)
	VCVTPH2PS Y24, Z24
	VCVTPH2PS Y25, Z25
	VCVTPH2PS Y26, Z26
	VCVTPH2PS Y27, Z27
	FMA6TOK
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $128, AX
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  phkloop
phkstore:
	MOVQ out+32(FP), AX
	FOLD24(AX)
	VZEROUPPER
	RET

// fold24idx: lane j of FOLD24's result is lane 4(j mod 4) + j/4 of its
// last fold.
DATA ·fold24idx+0(SB)/4, $0
DATA ·fold24idx+4(SB)/4, $4
DATA ·fold24idx+8(SB)/4, $8
DATA ·fold24idx+12(SB)/4, $12
DATA ·fold24idx+16(SB)/4, $1
DATA ·fold24idx+20(SB)/4, $5
DATA ·fold24idx+24(SB)/4, $9
DATA ·fold24idx+28(SB)/4, $13
DATA ·fold24idx+32(SB)/4, $2
DATA ·fold24idx+36(SB)/4, $6
DATA ·fold24idx+40(SB)/4, $10
DATA ·fold24idx+44(SB)/4, $14
DATA ·fold24idx+48(SB)/4, $3
DATA ·fold24idx+52(SB)/4, $7
DATA ·fold24idx+56(SB)/4, $11
DATA ·fold24idx+60(SB)/4, $15
GLOBL ·fold24idx(SB), RODATA|NOPTR, $64

// HSUM16(i) folds the 16 floats at acc[i] into out[i].
#define HSUM16(i) \
	VMOVUPS (i*64)(SI), Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	HSUMY0ST(i)

// func hsum24AVX512(acc *[24][16]float32, out *[24]float32)
TEXT ·hsum24AVX512(SB), NOSPLIT, $0-16
	MOVQ acc+0(FP), SI
	MOVQ out+8(FP), DI
	FOR24(HSUM16)
	VZEROUPPER
	RET

// The prefill down projection (needs AVX-512F): six tokens × 64 columns of
// the output, accumulated over K records: acc[t·accStride + c] +=
// Σ_j h[j·6 + t]·down[j·ldd + c], down rows float32 (widened by the
// driver), h laid out six tokens a record so the six broadcasts are
// adjacent. H is a multiple of 64.

// DOWNTOK(t, off) broadcasts h[j·6+t] and adds its products with the four
// column vectors Z24-Z27 into that token's accumulators.
#define DOWNTOK(off, a0, a1, a2, a3) \
	VBROADCASTSS off(BX), Z28; \
	VFMADD231PS Z24, Z28, a0; \
	VFMADD231PS Z25, Z28, a1; \
	VFMADD231PS Z26, Z28, a2; \
	VFMADD231PS Z27, Z28, a3

// func gemmDown6AVX512(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)
TEXT ·gemmDown6AVX512(SB), NOSPLIT, $0-56
	DOWN6ARGS
	TESTQ R14, R14
	JZ   ddone
dcol:
	CMPQ R11, $64
	JL   ddone
	// token rows of acc: DI, DI+R13, ..., DI+5·R13
	TILE6(ACCROWLD)
	MOVQ R14, CX
	MOVQ SI, BX
	MOVQ R8, R9
dinner:
	VMOVUPS 0(R9), Z24
	VMOVUPS 64(R9), Z25
	VMOVUPS 128(R9), Z26
	VMOVUPS 192(R9), Z27
	DOWNTOK(0, Z0, Z1, Z2, Z3)
	DOWNTOK(4, Z4, Z5, Z6, Z7)
	DOWNTOK(8, Z8, Z9, Z10, Z11)
	DOWNTOK(12, Z12, Z13, Z14, Z15)
	DOWNTOK(16, Z16, Z17, Z18, Z19)
	DOWNTOK(20, Z20, Z21, Z22, Z23)
	ADDQ $24, BX
	ADDQ R10, R9
	DECQ CX
	JNZ  dinner
	TILE6(ACCROWST)
	ADDQ $256, DI
	ADDQ $256, R8
	SUBQ $64, R11
	JMP  dcol
ddone:
	VZEROUPPER
	RET
