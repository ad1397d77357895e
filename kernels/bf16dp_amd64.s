#include "textflag.h"
#include "amd64_macros.h"

// BF16 decode dots with VDPBF16PS (needs AVX512_BF16): BF16 weights against
// activations rounded to BF16 once per token, 32 products a register summed
// in pairs into 16 float32 lanes, as llama.cpp's BF16 path does. Go's
// assembler has no VDPBF16PS, so each use is its EVEX encoding (from GNU as)
// for fixed registers, named by what it computes.

// DP_Z0_Z4_Z6 is VDPBF16PS Z6, Z4, Z0: Z0 += Σ pairs of Z4·Z6.
#define DP_Z0_Z4_Z6 BYTE $0x62; BYTE $0xf2; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc6
#define DP_Z1_Z5_Z7 BYTE $0x62; BYTE $0xf2; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xcf
#define DP_Z2_Z4_Z8 BYTE $0x62; BYTE $0xd2; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xd0
#define DP_Z3_Z5_Z9 BYTE $0x62; BYTE $0xd2; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xd9
#define DP_Z0_Z4_Z8 BYTE $0x62; BYTE $0xd2; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc0
#define DP_Z1_Z5_Z9 BYTE $0x62; BYTE $0xd2; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xc9
#define DP_Z2_Z6_Z10 BYTE $0x62; BYTE $0xd2; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xd2
#define DP_Z3_Z7_Z11 BYTE $0x62; BYTE $0xd2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xdb

// func dotBF16DP(w *uint16, xb *uint16, n int) float32
// n is a multiple of 32.
TEXT ·dotBF16DP(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ xb+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ AX, AX
d128:
	CMPQ CX, $128
	JL   d32
	VMOVDQU32 0(DI)(AX*1), Z4
	VMOVDQU32 64(DI)(AX*1), Z5
	VMOVDQU32 128(DI)(AX*1), Z6
	VMOVDQU32 192(DI)(AX*1), Z7
	VMOVDQU32 0(SI)(AX*1), Z8
	VMOVDQU32 64(SI)(AX*1), Z9
	VMOVDQU32 128(SI)(AX*1), Z10
	VMOVDQU32 192(SI)(AX*1), Z11
	DP_Z0_Z4_Z8
	DP_Z1_Z5_Z9
	DP_Z2_Z6_Z10
	DP_Z3_Z7_Z11
	ADDQ $256, AX
	SUBQ $128, CX
	JMP  d128
d32:
	CMPQ CX, $32
	JL   ddone
	VMOVDQU32 0(DI)(AX*1), Z4
	VMOVDQU32 0(SI)(AX*1), Z8
	DP_Z0_Z4_Z8
	ADDQ $64, AX
	SUBQ $32, CX
	JMP  d32
ddone:
	VADDPS Z2, Z0, Z0
	VADDPS Z3, Z1, Z1
	HSUMZ
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot2BF16DP(a, b *uint16, xb *uint16, n int, out *[2]float32, next *byte)
// The decode FFN's gate and up rows of one record against the same
// activations, prefetching the record at next into L2 (PREFETCHT2, as
// dot2Q40Q8VNNI; three rows of n: six cache lines per 64 elements of a and
// b). n is a multiple of 64.
TEXT ·dot2BF16DP(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xb+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), DX
	MOVQ next+40(FP), R12
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ AX, AX
	TESTQ CX, CX
	JZ   t2done
t2loop:
	PFL2x6(R12, 0)
	ADDQ $384, R12
	VMOVDQU32 0(DI)(AX*1), Z4
	VMOVDQU32 64(DI)(AX*1), Z5
	VMOVDQU32 0(SI)(AX*1), Z6
	VMOVDQU32 64(SI)(AX*1), Z7
	VMOVDQU32 0(BX)(AX*1), Z8
	VMOVDQU32 64(BX)(AX*1), Z9
	DP_Z0_Z4_Z6
	DP_Z1_Z5_Z7
	DP_Z2_Z4_Z8
	DP_Z3_Z5_Z9
	ADDQ $128, AX
	SUBQ $64, CX
	JNZ  t2loop
t2done:
	VADDPS Z3, Z2, Z5
	HSUMZ
	VMOVSS X0, 0(DX)
	VMOVAPS Z5, Z0
	VPXORD Z1, Z1, Z1
	HSUMZ
	VMOVSS X0, 4(DX)
	VZEROUPPER
	RET

// The BF16 prefill micro-kernel: gemm4x6AVX512's register tiling (4 weight
// rows × 6 tokens, 24 accumulators of 16 lanes) over BF16 rows as stored
// and activations rounded to BF16, 32 columns a step through VDPBF16PS
// (each lane sums a pair of products), so rows are not widened and one
// instruction does twice the multiply-adds of an FMA. The lanes are
// partial sums as in the float kernel, so hsum24AVX512 folds them.
// DP_Zacc_Zx_Zw is VDPBF16PS Zw, Zx, Zacc (acc += Σ pairs of x·w), as
// GNU as encodes it.

#define DP_Z0_Z28_Z24 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
#define DP_Z1_Z28_Z25 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
#define DP_Z2_Z28_Z26 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xd2
#define DP_Z3_Z28_Z27 BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xdb
#define DP_Z4_Z29_Z24 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe0
#define DP_Z5_Z29_Z25 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe9
#define DP_Z6_Z29_Z26 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf2
#define DP_Z7_Z29_Z27 BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xfb
#define DP_Z8_Z28_Z24 BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
#define DP_Z9_Z28_Z25 BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
#define DP_Z10_Z28_Z26 BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xd2
#define DP_Z11_Z28_Z27 BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xdb
#define DP_Z12_Z29_Z24 BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe0
#define DP_Z13_Z29_Z25 BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe9
#define DP_Z14_Z29_Z26 BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf2
#define DP_Z15_Z29_Z27 BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xfb
#define DP_Z16_Z28_Z24 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0
#define DP_Z17_Z28_Z25 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9
#define DP_Z18_Z28_Z26 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xd2
#define DP_Z19_Z28_Z27 BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xdb
#define DP_Z20_Z29_Z24 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe0
#define DP_Z21_Z29_Z25 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe9
#define DP_Z22_Z29_Z26 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf2
#define DP_Z23_Z29_Z27 BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xfb

// DP6TOK: the six tokens' 32 columns at DX (pointers R12, R13, R14, SI,
// DI, BX) against the four row vectors Z24-Z27, into the 24 accumulators.
#define DP6TOK \
	VMOVDQU32 (R12)(DX*1), Z28 \
	DP_Z0_Z28_Z24 \
	DP_Z1_Z28_Z25 \
	DP_Z2_Z28_Z26 \
	DP_Z3_Z28_Z27 \
	VMOVDQU32 (R13)(DX*1), Z29 \
	DP_Z4_Z29_Z24 \
	DP_Z5_Z29_Z25 \
	DP_Z6_Z29_Z26 \
	DP_Z7_Z29_Z27 \
	VMOVDQU32 (R14)(DX*1), Z28 \
	DP_Z8_Z28_Z24 \
	DP_Z9_Z28_Z25 \
	DP_Z10_Z28_Z26 \
	DP_Z11_Z28_Z27 \
	VMOVDQU32 (SI)(DX*1), Z29 \
	DP_Z12_Z29_Z24 \
	DP_Z13_Z29_Z25 \
	DP_Z14_Z29_Z26 \
	DP_Z15_Z29_Z27 \
	VMOVDQU32 (DI)(DX*1), Z28 \
	DP_Z16_Z28_Z24 \
	DP_Z17_Z28_Z25 \
	DP_Z18_Z28_Z26 \
	DP_Z19_Z28_Z27 \
	VMOVDQU32 (BX)(DX*1), Z29 \
	DP_Z20_Z29_Z24 \
	DP_Z21_Z29_Z25 \
	DP_Z22_Z29_Z26 \
	DP_Z23_Z29_Z27

// gemm4x6BF16DPPanel: the four rows come packed into one panel, 32 columns
// of each row in turn (256 bytes a step), one sequential stream for the
// rows instead of four.
// func gemm4x6BF16DPPanel(w *uint16, x *[6]*uint16, n int, out *[24]float32)
// n is a multiple of 32.
TEXT ·gemm4x6BF16DPPanel(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), R8
	TOK6PROLOGUEOUT($1)
	TESTQ CX, CX
	JZ   bpstore
bploop:
	VMOVDQU32 0(R8), Z24
	VMOVDQU32 64(R8), Z25
	VMOVDQU32 128(R8), Z26
	VMOVDQU32 192(R8), Z27
	DP6TOK
	ADDQ $256, R8
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  bploop
bpstore:
	FOLD24(AX)
	VZEROUPPER
	RET

// gemm4x6BF16DPPack is gemm4x6BF16DPPanel for a panel's first token
// group: the four rows come from where they are stored (four streams, read
// from memory once), are written into the panel as PanelBF16 reads it, and
// meet the six tokens on the way, so the copy overlaps the arithmetic
// instead of being a pass of its own.
// func gemm4x6BF16DPPack(w *[4]*uint16, panel *uint16, x *[6]*uint16, n int, out *[24]float32)
// n is a multiple of 32.
TEXT ·gemm4x6BF16DPPack(SB), NOSPLIT, $0-40
	PACKPROLOGUE($1)
	TESTQ CX, CX
	JZ   bkstore
bkloop:
	VMOVDQU32 (R8)(DX*1), Z24
	VMOVDQU32 (R9)(DX*1), Z25
	VMOVDQU32 (R10)(DX*1), Z26
	VMOVDQU32 (R11)(DX*1), Z27
	VMOVDQU32 Z24, 0(AX)(DX*4)
	VMOVDQU32 Z25, 64(AX)(DX*4)
	VMOVDQU32 Z26, 128(AX)(DX*4)
	VMOVDQU32 Z27, 192(AX)(DX*4)
	DP6TOK
	ADDQ $64, DX
	CMPQ DX, CX
	JLT  bkloop
bkstore:
	MOVQ out+32(FP), AX
	FOLD24(AX)
	VZEROUPPER
	RET

// The BF16 prefill down projection: gemmDown6AVX512's tile (six tokens ×
// 64 columns, accumulated over records) on records taken in pairs, each
// pair's two down columns interleaved word by word (interleaveBF16DP) and
// h rounded to BF16 in matching pairs, one VDPBF16PS per pair where the
// float kernel takes two FMAs and a widening. w is column-block major: for
// each 64 columns, the P pairs' 128 words in turn (ldw words apart), the
// next 64 columns right after, so a tile reads one sequential stream (pairs
// a whole row apart, 2H words, fell in one L1 set and missed it).
// acc[t·accStride + 64b + c] += Σ_p Σ_{k<2} h[p·6 + t].k · w[(b·P + p)·ldw + 2c + k].
// func gemmDown6BF16DP(acc *float32, accStride int, h *uint32, w *uint16, ldw int, P int, H int)
TEXT ·gemmDown6BF16DP(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ accStride+8(FP), R13
	SHLQ $2, R13
	MOVQ h+16(FP), SI
	MOVQ w+24(FP), R8
	MOVQ ldw+32(FP), R10
	SHLQ $1, R10
	MOVQ P+40(FP), R14
	MOVQ H+48(FP), R11
	TESTQ R14, R14
	JZ   bddone
bdcol:
	CMPQ R11, $64
	JL   bddone
	TILE6(ACCROWLD)
	MOVQ R14, CX
	MOVQ SI, BX
	MOVQ R8, R9
bdinner:
	VMOVDQU32 0(R9), Z24
	VMOVDQU32 64(R9), Z25
	VMOVDQU32 128(R9), Z26
	VMOVDQU32 192(R9), Z27
	VPBROADCASTD 0(BX), Z28
	DP_Z0_Z28_Z24
	DP_Z1_Z28_Z25
	DP_Z2_Z28_Z26
	DP_Z3_Z28_Z27
	VPBROADCASTD 4(BX), Z29
	DP_Z4_Z29_Z24
	DP_Z5_Z29_Z25
	DP_Z6_Z29_Z26
	DP_Z7_Z29_Z27
	VPBROADCASTD 8(BX), Z28
	DP_Z8_Z28_Z24
	DP_Z9_Z28_Z25
	DP_Z10_Z28_Z26
	DP_Z11_Z28_Z27
	VPBROADCASTD 12(BX), Z29
	DP_Z12_Z29_Z24
	DP_Z13_Z29_Z25
	DP_Z14_Z29_Z26
	DP_Z15_Z29_Z27
	VPBROADCASTD 16(BX), Z28
	DP_Z16_Z28_Z24
	DP_Z17_Z28_Z25
	DP_Z18_Z28_Z26
	DP_Z19_Z28_Z27
	VPBROADCASTD 20(BX), Z29
	DP_Z20_Z29_Z24
	DP_Z21_Z29_Z25
	DP_Z22_Z29_Z26
	DP_Z23_Z29_Z27
	ADDQ $24, BX
	ADDQ R10, R9
	DECQ CX
	JNZ  bdinner
	TILE6(ACCROWST)
	ADDQ $256, DI
	MOVQ R9, R8
	SUBQ $64, R11
	JMP  bdcol
bddone:
	VZEROUPPER
	RET

// interleaveBF16DP writes dst[2i] = a[i], dst[2i+1] = b[i]: two BF16 rows
// into word pairs (a record pair for gemmDown6BF16DP), 32 words of each a
// step through VPERMT2W. n is a multiple of 32.
DATA bf16ilo<>+0(SB)/2, $0
DATA bf16ilo<>+2(SB)/2, $32
DATA bf16ilo<>+4(SB)/2, $1
DATA bf16ilo<>+6(SB)/2, $33
DATA bf16ilo<>+8(SB)/2, $2
DATA bf16ilo<>+10(SB)/2, $34
DATA bf16ilo<>+12(SB)/2, $3
DATA bf16ilo<>+14(SB)/2, $35
DATA bf16ilo<>+16(SB)/2, $4
DATA bf16ilo<>+18(SB)/2, $36
DATA bf16ilo<>+20(SB)/2, $5
DATA bf16ilo<>+22(SB)/2, $37
DATA bf16ilo<>+24(SB)/2, $6
DATA bf16ilo<>+26(SB)/2, $38
DATA bf16ilo<>+28(SB)/2, $7
DATA bf16ilo<>+30(SB)/2, $39
DATA bf16ilo<>+32(SB)/2, $8
DATA bf16ilo<>+34(SB)/2, $40
DATA bf16ilo<>+36(SB)/2, $9
DATA bf16ilo<>+38(SB)/2, $41
DATA bf16ilo<>+40(SB)/2, $10
DATA bf16ilo<>+42(SB)/2, $42
DATA bf16ilo<>+44(SB)/2, $11
DATA bf16ilo<>+46(SB)/2, $43
DATA bf16ilo<>+48(SB)/2, $12
DATA bf16ilo<>+50(SB)/2, $44
DATA bf16ilo<>+52(SB)/2, $13
DATA bf16ilo<>+54(SB)/2, $45
DATA bf16ilo<>+56(SB)/2, $14
DATA bf16ilo<>+58(SB)/2, $46
DATA bf16ilo<>+60(SB)/2, $15
DATA bf16ilo<>+62(SB)/2, $47
GLOBL bf16ilo<>(SB), RODATA|NOPTR, $64
DATA bf16ihi<>+0(SB)/2, $16
DATA bf16ihi<>+2(SB)/2, $48
DATA bf16ihi<>+4(SB)/2, $17
DATA bf16ihi<>+6(SB)/2, $49
DATA bf16ihi<>+8(SB)/2, $18
DATA bf16ihi<>+10(SB)/2, $50
DATA bf16ihi<>+12(SB)/2, $19
DATA bf16ihi<>+14(SB)/2, $51
DATA bf16ihi<>+16(SB)/2, $20
DATA bf16ihi<>+18(SB)/2, $52
DATA bf16ihi<>+20(SB)/2, $21
DATA bf16ihi<>+22(SB)/2, $53
DATA bf16ihi<>+24(SB)/2, $22
DATA bf16ihi<>+26(SB)/2, $54
DATA bf16ihi<>+28(SB)/2, $23
DATA bf16ihi<>+30(SB)/2, $55
DATA bf16ihi<>+32(SB)/2, $24
DATA bf16ihi<>+34(SB)/2, $56
DATA bf16ihi<>+36(SB)/2, $25
DATA bf16ihi<>+38(SB)/2, $57
DATA bf16ihi<>+40(SB)/2, $26
DATA bf16ihi<>+42(SB)/2, $58
DATA bf16ihi<>+44(SB)/2, $27
DATA bf16ihi<>+46(SB)/2, $59
DATA bf16ihi<>+48(SB)/2, $28
DATA bf16ihi<>+50(SB)/2, $60
DATA bf16ihi<>+52(SB)/2, $29
DATA bf16ihi<>+54(SB)/2, $61
DATA bf16ihi<>+56(SB)/2, $30
DATA bf16ihi<>+58(SB)/2, $62
DATA bf16ihi<>+60(SB)/2, $31
DATA bf16ihi<>+62(SB)/2, $63
GLOBL bf16ihi<>(SB), RODATA|NOPTR, $64

// func interleaveBF16DP(dst *uint16, a, b *uint16, n int)
TEXT ·interleaveBF16DP(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), BX
	MOVQ n+24(FP), CX
	VMOVDQU16 bf16ilo<>(SB), Z4
	VMOVDQU16 bf16ihi<>(SB), Z5
ilv32:
	CMPQ CX, $32
	JL   ilvdone
	VMOVDQU16 0(SI), Z0
	VMOVDQU16 0(BX), Z1
	VMOVDQA32 Z4, Z2
	VPERMI2W Z1, Z0, Z2
	VMOVDQA32 Z5, Z3
	VPERMI2W Z1, Z0, Z3
	VMOVDQU16 Z2, 0(DI)
	VMOVDQU16 Z3, 64(DI)
	ADDQ $64, SI
	ADDQ $64, BX
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  ilv32
ilvdone:
	VZEROUPPER
	RET

// roundBF16AVX512 rounds n floats at x to BF16 as F32ToBF16 does (to
// nearest even, NaN kept quiet with its sign) into xb, and, where xr is not
// nil, writes the rounded values back as float32 into xr: 16 a step in
// integer lanes, so the result is F32ToBF16's bit for bit (VCVTNEPS2BF16
// would flush subnormals). n is a multiple of 16.
// func roundBF16AVX512(xb *uint16, xr *float32, x *float32, n int)
TEXT ·roundBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ xb+0(FP), DI
	MOVQ xr+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	MOVL $1, AX
	VPBROADCASTD AX, Z8
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z9
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z10
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z11
	MOVL $0x40, AX
	VPBROADCASTD AX, Z12
	SHRQ $4, CX
	JZ   rbdone
rbloop:
	VMOVDQU32 (SI), Z0
	VPSRLD $16, Z0, Z1
	VPANDD Z8, Z1, Z2
	VPADDD Z9, Z0, Z3
	VPADDD Z2, Z3, Z3
	VPSRLD $16, Z3, Z3
	VPANDD Z10, Z0, Z4
	VPCMPUD $6, Z11, Z4, K1
	VPORD Z12, Z1, K1, Z3
	VPMOVDW Z3, (DI)
	TESTQ DX, DX
	JZ   rbnext
	VPSLLD $16, Z3, Z5
	VMOVDQU32 Z5, (DX)
	ADDQ $64, DX
rbnext:
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  rbloop
rbdone:
	VZEROUPPER
	RET
