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
// activations, prefetching the record at next (three rows of n: six cache
// lines per 64 elements of a and b). n is a multiple of 64.
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
	PREFETCHT0 0(R12)
	PREFETCHT0 64(R12)
	PREFETCHT0 128(R12)
	PREFETCHT0 192(R12)
	PREFETCHT0 256(R12)
	PREFETCHT0 320(R12)
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
