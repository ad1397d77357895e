#include "textflag.h"

// The K-quants' integer GEMM tiles (gemmactk.go): 16 rows × 8 tokens of a
// K-quant panel, as the Q4_0 and Q8_0 tiles of gemmact_amd64.s, each with
// the float terms its layout adds per block.

// AVX-512 VNNI. Per block the eight groups stay in Z0-Z7 and the block's
// two float rows in Z8 and Z10; the tokens' accumulators are Z16-Z23.

// TOKQ4K(t, zi, acc): token t's Q4_K block: the 16 rows' Σ(q−8)·qx in zi
// (from the correction −8·Σqx), then acc += (D·d·sc)·Σ + (8·d·sc − dmin·m)·M.
#define TOKQ4K(t, zi, acc) \
	VPBROADCASTD t*4(R10), zi; \
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
	VFMADD231PS zi, Z9, acc; \
	VFMADD231PS.BCST t*4(R9), Z10, acc

// TOKQ6K(t, zi, zj, acc): token t's Q6_K block: the sums of the first and
// last 16 values in zi and zj, each from its correction (−32·Σqx), then
// acc += D·(d·sc₀·Σ₀ + d·sc₁·Σ₁).
#define TOKQ6K(t, zi, zj, acc) \
	VPBROADCASTD t*4(R9), zi; \
	VPBROADCASTD t*4+32(R9), zj; \
	VPDPBUSD.BCST t*32+0(DI), Z0, zi; \
	VPDPBUSD.BCST t*32+4(DI), Z1, zi; \
	VPDPBUSD.BCST t*32+8(DI), Z2, zi; \
	VPDPBUSD.BCST t*32+12(DI), Z3, zi; \
	VPDPBUSD.BCST t*32+16(DI), Z4, zj; \
	VPDPBUSD.BCST t*32+20(DI), Z5, zj; \
	VPDPBUSD.BCST t*32+24(DI), Z6, zj; \
	VPDPBUSD.BCST t*32+28(DI), Z7, zj; \
	VCVTDQ2PS zi, zi; \
	VCVTDQ2PS zj, zj; \
	VMULPS Z8, zi, zi; \
	VFMADD231PS Z10, zj, zi; \
	VFMADD231PS.BCST t*4(R8), zi, acc

// KBLOCK loads a block's groups and float rows.
#define KBLOCK \
	VMOVDQU32 0(SI), Z0; \
	VMOVDQU32 64(SI), Z1; \
	VMOVDQU32 128(SI), Z2; \
	VMOVDQU32 192(SI), Z3; \
	VMOVDQU32 256(SI), Z4; \
	VMOVDQU32 320(SI), Z5; \
	VMOVDQU32 384(SI), Z6; \
	VMOVDQU32 448(SI), Z7; \
	VMOVUPS 512(SI), Z8; \
	VMOVUPS 576(SI), Z10

#define KZERO \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

#define KSTORE \
	VMOVUPS Z16, 0(DX); \
	VMOVUPS Z17, 64(DX); \
	VMOVUPS Z18, 128(DX); \
	VMOVUPS Z19, 192(DX); \
	VMOVUPS Z20, 256(DX); \
	VMOVUPS Z21, 320(DX); \
	VMOVUPS Z22, 384(DX); \
	VMOVUPS Z23, 448(DX)

// func panelQ4KVNNI(panel *byte, xq *int8, xd *float32, xc *int32, xm *float32, nb int, out *[128]float32)
TEXT ·panelQ4KVNNI(SB), NOSPLIT, $0-56
	MOVQ panel+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xc+24(FP), R10
	MOVQ xm+32(FP), R9
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), DX
	KZERO
pq4kblock:
	KBLOCK
	TOKQ4K(0, Z24, Z16)
	TOKQ4K(1, Z25, Z17)
	TOKQ4K(2, Z26, Z18)
	TOKQ4K(3, Z27, Z19)
	TOKQ4K(4, Z28, Z20)
	TOKQ4K(5, Z29, Z21)
	TOKQ4K(6, Z30, Z22)
	TOKQ4K(7, Z31, Z23)
	ADDQ $640, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	DECQ CX
	JNZ  pq4kblock
	KSTORE
	VZEROUPPER
	RET

// func panelQ6KVNNI(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[128]float32)
TEXT ·panelQ6KVNNI(SB), NOSPLIT, $0-48
	MOVQ panel+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xc+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	KZERO
pq6kblock:
	KBLOCK
	TOKQ6K(0, Z24, Z9, Z16)
	TOKQ6K(1, Z25, Z11, Z17)
	TOKQ6K(2, Z26, Z12, Z18)
	TOKQ6K(3, Z27, Z13, Z19)
	TOKQ6K(4, Z28, Z14, Z20)
	TOKQ6K(5, Z29, Z15, Z21)
	TOKQ6K(6, Z30, Z9, Z22)
	TOKQ6K(7, Z31, Z11, Z23)
	ADDQ $640, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $64, R9
	DECQ CX
	JNZ  pq6kblock
	KSTORE
	VZEROUPPER
	RET

// packValuesQ4KAVX2 is packValuesKRef for Q4_K rows (AVX2): nsb
// super-blocks at w into the panel at dst (the row's offset, 4·r, already
// added), sub-block 2k from the low nibbles of the 32 bytes at 16 + 32k,
// 2k+1 from their high nibbles, each byte less bias (0 or 8, as subBytes),
// the 32 values' eight dwords at 64-byte steps of the sub-block's block.

// KGROUPS(y, x, o): the eight dwords of y (x its low half) into the groups
// of the block at o.
#define KGROUPS(y, x, o) \
	VMOVD x, o(DI); \
	VPEXTRD $1, x, o+64(DI); \
	VPEXTRD $2, x, o+128(DI); \
	VPEXTRD $3, x, o+192(DI); \
	VEXTRACTI128 $1, y, X5; \
	VMOVD X5, o+256(DI); \
	VPEXTRD $1, X5, o+320(DI); \
	VPEXTRD $2, X5, o+384(DI); \
	VPEXTRD $3, X5, o+448(DI)

// KNIBBLES(k): sub-blocks 2k and 2k+1 of the super-block.
#define KNIBBLES(k) \
	VMOVDQU 16+32*k(SI), Y1; \
	VPAND Y6, Y1, Y2; \
	VPSRLW $4, Y1, Y3; \
	VPAND Y6, Y3, Y3; \
	VPSUBB Y7, Y2, Y2; \
	VPSUBB Y7, Y3, Y3; \
	KGROUPS(Y2, X2, 1280*k); \
	KGROUPS(Y3, X3, 1280*k+640)

// func packValuesQ4KAVX2(dst *byte, w *byte, nsb int, bias uint32)
TEXT ·packValuesQ4KAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ nsb+16(FP), CX
	MOVL bias+24(FP), AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X6
	VPBROADCASTD X6, Y6
	TESTQ CX, CX
	JZ   pvkdone
pvkloop:
	KNIBBLES(0)
	KNIBBLES(1)
	KNIBBLES(2)
	KNIBBLES(3)
	ADDQ $144, SI
	ADDQ $5120, DI
	DECQ CX
	JNZ  pvkloop
pvkdone:
	VZEROUPPER
	RET
