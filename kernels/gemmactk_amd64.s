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

// packPanelQ4KAVX512 packs a whole Q4_K panel (AVX-512 F and BW): per
// super-block and place of a dword in it, one gather of that dword from
// each of the 16 rows (two VPGATHERQD of eight, the rows' addresses as
// qword offsets from row 0) is a whole group of a block, so every store is
// 64 bytes where packing row by row scatters four-byte pieces. Values as
// packValuesQ4KAVX2; the float rows from the gathered d, dmin and 12 scale
// bytes, unpacked as kScaleMin in 16 lanes and rounded as packFloatsK
// (d·sc, then 8·(d·sc) − dmin·m, each product rounded).

// G16(off, z, y, yhi): the dword at off of the super-block of the 16 rows
// into z (y its low half; yhi scratch).
#define G16(off, z, y, yhi) \
	VPXORD y, y, y; \
	VPXORD yhi, yhi, yhi; \
	KXNORW K1, K1, K1; \
	KXNORW K2, K2, K2; \
	VPGATHERQD off(BX)(Z30*1), K1, y; \
	VPGATHERQD off(BX)(Z31*1), K2, yhi; \
	VINSERTI64X4 $1, yhi, z, z

// PVAL(p, k): group k of sub-blocks 2p (low nibbles) and 2p+1 (high).
#define PVAL(p, k) \
	G16(16+32*p+4*k, Z0, Y0, Y1); \
	VPANDD Z28, Z0, Z2; \
	VPSRLD $4, Z0, Z3; \
	VPANDD Z28, Z3, Z3; \
	VPSUBB Z27, Z2, Z2; \
	VPSUBB Z27, Z3, Z3; \
	VMOVDQU32 Z2, (1280*p+64*k)(DI); \
	VMOVDQU32 Z3, (1280*p+640+64*k)(DI)

#define PPAIR(p) \
	PVAL(p, 0); PVAL(p, 1); PVAL(p, 2); PVAL(p, 3); \
	PVAL(p, 4); PVAL(p, 5); PVAL(p, 6); PVAL(p, 7)

// PFLOATS(j): sub-block j's float rows from its scale (Z14) and min (Z15)
// as integers: d·sc at 512, 8·d·sc − dmin·m at 576.
#define PFLOATS(j) \
	VCVTDQ2PS Z14, Z14; \
	VCVTDQ2PS Z15, Z15; \
	VMULPS Z14, Z6, Z14; \
	VMULPS Z15, Z7, Z15; \
	VMULPS Z23, Z14, Z16; \
	VSUBPS Z15, Z16, Z16; \
	VMOVUPS Z14, (640*j+512)(DI); \
	VMOVUPS Z16, (640*j+576)(DI)

// PLOW(j): j < 4, sc = s[j] & 63, m = s[j+4] & 63 (s: the scale bytes,
// 0-3 in Z8, 4-7 in Z10).
#define PLOW(j) \
	VPSRLD $(8*j), Z8, Z14; \
	VPANDD Z26, Z14, Z14; \
	VPSRLD $(8*j), Z10, Z15; \
	VPANDD Z26, Z15, Z15; \
	PFLOATS(j)

// PHIGH(j): j ≥ 4, sc = s[j+4] & 15 | (s[j−4] >> 6) << 4, m = s[j+4] >> 4 |
// (s[j] >> 6) << 4 (bytes 8-11 in Z12).
#define PHIGH(j) \
	VPSRLD $(8*j-32), Z12, Z14; \
	VPANDD Z25, Z14, Z14; \
	VPSRLD $(8*j-26), Z8, Z16; \
	VPANDD Z24, Z16, Z16; \
	VPSLLD $4, Z16, Z16; \
	VPORD Z16, Z14, Z14; \
	VPSRLD $(8*j-28), Z12, Z15; \
	VPANDD Z25, Z15, Z15; \
	VPSRLD $(8*j-26), Z10, Z16; \
	VPANDD Z24, Z16, Z16; \
	VPSLLD $4, Z16, Z16; \
	VPORD Z16, Z15, Z15; \
	PFLOATS(j)

// func packPanelQ4KAVX512(dst *byte, rows *[16]*byte, nsb int, bias uint32)
TEXT ·packPanelQ4KAVX512(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ rows+8(FP), SI
	MOVQ nsb+16(FP), CX
	MOVL bias+24(FP), AX
	VPBROADCASTD AX, Z27
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z28
	MOVL $63, AX
	VPBROADCASTD AX, Z26
	MOVL $15, AX
	VPBROADCASTD AX, Z25
	MOVL $3, AX
	VPBROADCASTD AX, Z24
	MOVL $0x41000000, AX // 8.0
	VPBROADCASTD AX, Z23
	MOVQ 0(SI), BX
	VPBROADCASTQ BX, Z29
	VMOVDQU64 0(SI), Z30
	VMOVDQU64 64(SI), Z31
	VPSUBQ Z29, Z30, Z30
	VPSUBQ Z29, Z31, Z31
	TESTQ CX, CX
	JZ   ppkdone
ppkloop:
	PPAIR(0)
	PPAIR(1)
	PPAIR(2)
	PPAIR(3)
	G16(0, Z4, Y4, Y5)
	VPMOVDW Z4, Y6
	VCVTPH2PS Y6, Z6
	VPSRLD $16, Z4, Z7
	VPMOVDW Z7, Y7
	VCVTPH2PS Y7, Z7
	G16(4, Z8, Y8, Y9)
	G16(8, Z10, Y10, Y11)
	G16(12, Z12, Y12, Y13)
	PLOW(0)
	PLOW(1)
	PLOW(2)
	PLOW(3)
	PHIGH(4)
	PHIGH(5)
	PHIGH(6)
	PHIGH(7)
	ADDQ $144, BX
	ADDQ $5120, DI
	DECQ CX
	JNZ  ppkloop
ppkdone:
	VZEROUPPER
	RET
