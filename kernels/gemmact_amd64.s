#include "textflag.h"

// The prefill's integer GEMM tile over a packed panel (gemmact.go): 16 rows
// × 8 tokens, AVX-512 VNNI. Per block the panel's eight 64-byte groups stay
// in Z0-Z7 and its 16 row scales in Z8; for each token one VPDPBUSD per
// group multiplies the 16 rows' four unsigned values by the token's four
// signed values broadcast from memory (.BCST) into lanes that start at the
// token's offset correction, so the lane holds the row's exact integer dot
// for the block; one conversion, one multiply of the row scales by the
// token's scale and one multiply-add fold it into the token's accumulator
// (Z16-Z23: 16 rows of one token, stored token-major at the end).

// TOKQ(t, i): token t's block: its integer sums in Zi, then into Z(16+t).
#define TOKQ(t, zi, acc) \
	VPBROADCASTD t*4(R9), zi; \
	VPDPBUSD.BCST t*32+0(DI), Z0, zi; \
	VPDPBUSD.BCST t*32+4(DI), Z1, zi; \
	VPDPBUSD.BCST t*32+8(DI), Z2, zi; \
	VPDPBUSD.BCST t*32+12(DI), Z3, zi; \
	VPDPBUSD.BCST t*32+16(DI), Z4, zi; \
	VPDPBUSD.BCST t*32+20(DI), Z5, zi; \
	VPDPBUSD.BCST t*32+24(DI), Z6, zi; \
	VPDPBUSD.BCST t*32+28(DI), Z7, zi; \
	VCVTDQ2PS zi, zi; \
	VMULPS.BCST t*4(R8), Z8, Z9; \
	VFMADD231PS zi, Z9, acc

// func panelQ8VNNI(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[128]float32)
TEXT ·panelQ8VNNI(SB), NOSPLIT, $0-48
	MOVQ panel+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xc+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
pq8block:
	VMOVDQU32 0(SI), Z0
	VMOVDQU32 64(SI), Z1
	VMOVDQU32 128(SI), Z2
	VMOVDQU32 192(SI), Z3
	VMOVDQU32 256(SI), Z4
	VMOVDQU32 320(SI), Z5
	VMOVDQU32 384(SI), Z6
	VMOVDQU32 448(SI), Z7
	VMOVUPS 512(SI), Z8
	TOKQ(0, Z24, Z16)
	TOKQ(1, Z25, Z17)
	TOKQ(2, Z26, Z18)
	TOKQ(3, Z27, Z19)
	TOKQ(4, Z28, Z20)
	TOKQ(5, Z29, Z21)
	TOKQ(6, Z30, Z22)
	TOKQ(7, Z31, Z23)
	ADDQ $576, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  pq8block
	VMOVUPS Z16, 0(DX)
	VMOVUPS Z17, 64(DX)
	VMOVUPS Z18, 128(DX)
	VMOVUPS Z19, 192(DX)
	VMOVUPS Z20, 256(DX)
	VMOVUPS Z21, 320(DX)
	VMOVUPS Z22, 384(DX)
	VMOVUPS Z23, 448(DX)
	VZEROUPPER
	RET

// packRowQ40AVX2 and packRowQ80AVX2 are packPanel's loop for one row (AVX2
// + F16C): nb blocks at w into the panel at dst (the row's offset, 4·r,
// already added), per block its eight groups of four values at 64-byte
// steps and its scale as float32 at 512. Q4_0: the low nibbles of the
// block's 16 bytes are values 0-15 (groups 0-3), the high nibbles 16-31
// (groups 4-7), each byte less bias (0 or 8, bytes wrapping, as subBytes);
// Q8_0: the 32 values XOR flip (0x80 or 0 a byte).

// PACKSCALE: the block's F16 scale at 0(SI) as float32 at 512(DI).
#define PACKSCALE \
	MOVWLZX 0(SI), AX; \
	VMOVD AX, X0; \
	VCVTPH2PS X0, X0; \
	VMOVD X0, 512(DI)

// PACKGROUPS(x, o): the four dwords of x into the groups at o, o+64, o+128, o+192.
#define PACKGROUPS(x, o) \
	VMOVD x, o(DI); \
	VPEXTRD $1, x, o+64(DI); \
	VPEXTRD $2, x, o+128(DI); \
	VPEXTRD $3, x, o+192(DI)

// func packRowQ40AVX2(dst *byte, w *byte, nb int, bias uint32)
TEXT ·packRowQ40AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL bias+24(FP), AX
	VMOVD AX, X7
	VPBROADCASTD X7, X7
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X6
	VPBROADCASTD X6, X6
	TESTQ CX, CX
	JZ   pq4done
pq4loop:
	PACKSCALE
	VMOVDQU 2(SI), X1
	VPAND X6, X1, X2
	VPSRLW $4, X1, X3
	VPAND X6, X3, X3
	VPSUBB X7, X2, X2
	VPSUBB X7, X3, X3
	PACKGROUPS(X2, 0)
	PACKGROUPS(X3, 256)
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  pq4loop
pq4done:
	VZEROUPPER
	RET

// func packRowQ80AVX2(dst *byte, w *byte, nb int, flip uint32)
TEXT ·packRowQ80AVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ nb+16(FP), CX
	MOVL flip+24(FP), AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	TESTQ CX, CX
	JZ   pq8done
pq8loop:
	PACKSCALE
	VMOVDQU 2(SI), Y1
	VPXOR Y7, Y1, Y1
	VEXTRACTI128 $1, Y1, X2
	PACKGROUPS(X1, 0)
	PACKGROUPS(X2, 256)
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  pq8loop
pq8done:
	VZEROUPPER
	RET
