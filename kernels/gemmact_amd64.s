#include "textflag.h"
#include "amd64_macros.h"

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

// The prefill's integer GEMM tile on AVX2 (16 rows × 8 tokens of a packed
// panel, gemmact.go), for CPUs without AVX-512 VNNI. AVX2's byte multiply,
// VPMADDUBSW, sums pairs of unsigned × signed byte products into 16-bit
// lanes, and has sixteen 256-bit registers: the tile takes the tokens two
// at a time (four passes over the panel, which stays in cache), each
// token's 16 rows in two registers of eight 32-bit lanes.
//
// Q4_0 (unsigned panel: nibbles 0-15): a pair's sum is at most
// 2·15·127 = 3810, so a block's eight groups add in 16-bit lanes (at most
// 30480) and one VPMADDWD by ones widens the block's sums to 32 bits; the
// tiles' correction −8·Σq then makes them the exact dot.
//
// Q8_0 (signed panel: the values as they are): 255·127 pairs would
// overflow, so the sign moves to the activations (VPSIGNB: x·sign(w)) and
// the magnitudes (VPABSB, at most 128) meet them, 2·128·127 = 32512 a
// pair; each group widens to 32 bits at once.
//
// Registers: Y0 16-bit ones, Y1/Y2 a group's rows 0-7/8-15, Y3/Y4 their
// magnitudes (Q8_0), Y5 the token's broadcast values, Y6/Y7 scratch,
// Y8-Y11 the two tokens' integer sums (rows 0-7, 8-15), Y12-Y15 their
// float accumulators.

// GRP4(k, ta, tb): group k against tokens ta and tb (Q4_0, 16-bit sums).
#define GRP4(k, ta, tb) \
	VMOVDQU k*64(SI), Y1; \
	VMOVDQU k*64+32(SI), Y2; \
	VPBROADCASTD ta*32+k*4(DI), Y5; \
	VPMADDUBSW Y5, Y1, Y6; \
	VPADDW Y6, Y8, Y8; \
	VPMADDUBSW Y5, Y2, Y7; \
	VPADDW Y7, Y9, Y9; \
	VPBROADCASTD tb*32+k*4(DI), Y5; \
	VPMADDUBSW Y5, Y1, Y6; \
	VPADDW Y6, Y10, Y10; \
	VPMADDUBSW Y5, Y2, Y7; \
	VPADDW Y7, Y11, Y11

// SGN8(w, m, acc): one register of rows against the broadcast values in
// Y5 by sign transfer, its 32-bit sums into acc (Q8_0).
#define SGN8(w, m, acc) \
	VPSIGNB w, Y5, Y6; \
	VPMADDUBSW Y6, m, Y6; \
	VPMADDWD Y0, Y6, Y6; \
	VPADDD Y6, acc, acc

// GRP8(k, ta, tb): group k against tokens ta and tb (Q8_0, 32-bit sums).
#define GRP8(k, ta, tb) \
	VMOVDQU k*64(SI), Y1; \
	VMOVDQU k*64+32(SI), Y2; \
	VPABSB Y1, Y3; \
	VPABSB Y2, Y4; \
	VPBROADCASTD ta*32+k*4(DI), Y5; \
	SGN8(Y1, Y3, Y8); \
	SGN8(Y2, Y4, Y9); \
	VPBROADCASTD tb*32+k*4(DI), Y5; \
	SGN8(Y1, Y3, Y10); \
	SGN8(Y2, Y4, Y11)

// FOLD(t, lo, hi, flo, fhi): token t's block sums (32-bit, corrected) into
// its float accumulators, times the rows' scales and the token's.
#define FOLD(t, lo, hi, flo, fhi) \
	VCVTDQ2PS lo, lo; \
	VCVTDQ2PS hi, hi; \
	VBROADCASTSS t*4(R8), Y5; \
	VMULPS 512(SI), Y5, Y6; \
	VFMADD231PS Y6, lo, flo; \
	VMULPS 544(SI), Y5, Y6; \
	VFMADD231PS Y6, hi, fhi

// FIX4(t, lo, hi): token t's 16-bit sums widened, plus its correction.
#define FIX4(t, lo, hi) \
	VPMADDWD Y0, lo, lo; \
	VPMADDWD Y0, hi, hi; \
	VPBROADCASTD t*4(R9), Y5; \
	VPADDD Y5, lo, lo; \
	VPADDD Y5, hi, hi

// PASSBEGIN/PASSEND: a pass over the panel's nb blocks for tokens ta, tb
// (the arguments in R10-R14 and the output in DX: PANELARGS).
#define PASSBEGIN \
	MOVQ R10, SI; \
	MOVQ R11, DI; \
	MOVQ R12, R8; \
	MOVQ R13, R9; \
	MOVQ R14, CX; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y13, Y13, Y13; \
	VXORPS Y14, Y14, Y14; \
	VXORPS Y15, Y15, Y15
#define PASSSTEP \
	ADDQ $576, SI; \
	ADDQ $256, DI; \
	ADDQ $32, R8; \
	ADDQ $32, R9; \
	DECQ CX
#define PASSEND(ta, tb) \
	VMOVUPS Y12, ta*64(DX); \
	VMOVUPS Y13, ta*64+32(DX); \
	VMOVUPS Y14, tb*64(DX); \
	VMOVUPS Y15, tb*64+32(DX)

#define ZERO4 VPXOR Y8, Y8, Y8; VPXOR Y9, Y9, Y9; VPXOR Y10, Y10, Y10; VPXOR Y11, Y11, Y11

// PASS(GRP, FIX, ta, tb, label): one pass for tokens ta and tb, a block's
// eight groups by GRP, its sums finished by FIX (Q4_0's widening and
// correction; NOFIX for Q8_0, whose groups widen as they go).
#define PASS(GRP, FIX, ta, tb, label) \
	PASSBEGIN; \
label: \
	ZERO4; \
	GRP(0, ta, tb); \
	GRP(1, ta, tb); \
	GRP(2, ta, tb); \
	GRP(3, ta, tb); \
	GRP(4, ta, tb); \
	GRP(5, ta, tb); \
	GRP(6, ta, tb); \
	GRP(7, ta, tb); \
	FIX(ta, Y8, Y9); \
	FIX(tb, Y10, Y11); \
	FOLD(ta, Y8, Y9, Y12, Y13); \
	FOLD(tb, Y10, Y11, Y14, Y15); \
	PASSSTEP; \
	JNZ label; \
	PASSEND(ta, tb)

#define NOFIX(t, lo, hi)

// ONES16 sets Y0 to 16-bit ones.
#define ONES16 MOVL $0x00010001, AX; VMOVD AX, X0; VPBROADCASTD X0, Y0

// func panelQ4AVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[128]float32)
TEXT ·panelQ4AVX2(SB), NOSPLIT, $0-48
	PANELARGS
	ONES16
	PASS(GRP4, FIX4, 0, 1, pa4p0)
	PASS(GRP4, FIX4, 2, 3, pa4p1)
	PASS(GRP4, FIX4, 4, 5, pa4p2)
	PASS(GRP4, FIX4, 6, 7, pa4p3)
	VZEROUPPER
	RET

// func panelQ8AVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[128]float32)
TEXT ·panelQ8AVX2(SB), NOSPLIT, $0-48
	PANELARGS
	ONES16
	PASS(GRP8, NOFIX, 0, 1, pa8p0)
	PASS(GRP8, NOFIX, 2, 3, pa8p1)
	PASS(GRP8, NOFIX, 4, 5, pa8p2)
	PASS(GRP8, NOFIX, 6, 7, pa8p3)
	VZEROUPPER
	RET

// The K-quants' AVX2 tiles (gemmactk.go): the passes above over a K-quant
// panel's blocks (640 bytes), two tokens a pass.
//
// Q4_K (unsigned nibbles, the tiles' C −8·Σq as for Q4_0): Q4_0's groups
// and widening, the block's sums folded with the row scales at 512, then
// the mins' term (8·d·sc − dmin·m at 576) times the token's M (AX).
//
// Q6_K (unsigned values 0-63): a pair's sum is at most 2·63·128 = 16128,
// so each group widens to 32 bits at once; the block's first four groups
// (values 0-15) take the correction at 0(R9) and the scales at 512, the
// last four the one at 32(R9) and the scales at 576.

// MINS(t, flo, fhi): the rows' min terms times token t's M.
#define MINS(t, flo, fhi) \
	VBROADCASTSS t*4(AX), Y5; \
	VFMADD231PS 576(SI), Y5, flo; \
	VFMADD231PS 608(SI), Y5, fhi

// GRP6(k, ta, tb): group k against tokens ta and tb (Q6_K, 32-bit sums).
#define GRP6(k, ta, tb) \
	VMOVDQU k*64(SI), Y1; \
	VMOVDQU k*64+32(SI), Y2; \
	VPBROADCASTD ta*32+k*4(DI), Y5; \
	VPMADDUBSW Y5, Y1, Y6; \
	VPMADDWD Y0, Y6, Y6; \
	VPADDD Y6, Y8, Y8; \
	VPMADDUBSW Y5, Y2, Y7; \
	VPMADDWD Y0, Y7, Y7; \
	VPADDD Y7, Y9, Y9; \
	VPBROADCASTD tb*32+k*4(DI), Y5; \
	VPMADDUBSW Y5, Y1, Y6; \
	VPMADDWD Y0, Y6, Y6; \
	VPADDD Y6, Y10, Y10; \
	VPMADDUBSW Y5, Y2, Y7; \
	VPMADDWD Y0, Y7, Y7; \
	VPADDD Y7, Y11, Y11

// CORR(t, o, lo, hi): token t's correction at o(R9) added to its sums.
#define CORR(t, o, lo, hi) \
	VPBROADCASTD t*4+o(R9), Y5; \
	VPADDD Y5, lo, lo; \
	VPADDD Y5, hi, hi

// FOLDAT(t, o, lo, hi, flo, fhi): FOLD with the row scales at o(SI).
#define FOLDAT(t, o, lo, hi, flo, fhi) \
	VCVTDQ2PS lo, lo; \
	VCVTDQ2PS hi, hi; \
	VBROADCASTSS t*4(R8), Y5; \
	VMULPS o(SI), Y5, Y6; \
	VFMADD231PS Y6, lo, flo; \
	VMULPS o+32(SI), Y5, Y6; \
	VFMADD231PS Y6, hi, fhi

// KPASSBEGIN/KPASSSTEP: PASSBEGIN and PASSSTEP over K-quant blocks, the
// tiles' M (Q4_K) from BX in AX.
#define KPASSBEGIN \
	PASSBEGIN; \
	MOVQ BX, AX
#define KPASSSTEP \
	ADDQ $32, AX; \
	ADDQ $64, SI; \
	PASSSTEP

// Q4KPASS(ta, tb, label) and Q6KPASS(ta, tb, label): one pass for tokens
// ta and tb.
#define Q4KPASS(ta, tb, label) \
	KPASSBEGIN; \
label: \
	ZERO4; \
	GRP4(0, ta, tb); \
	GRP4(1, ta, tb); \
	GRP4(2, ta, tb); \
	GRP4(3, ta, tb); \
	GRP4(4, ta, tb); \
	GRP4(5, ta, tb); \
	GRP4(6, ta, tb); \
	GRP4(7, ta, tb); \
	FIX4(ta, Y8, Y9); \
	FIX4(tb, Y10, Y11); \
	FOLD(ta, Y8, Y9, Y12, Y13); \
	FOLD(tb, Y10, Y11, Y14, Y15); \
	MINS(ta, Y12, Y13); \
	MINS(tb, Y14, Y15); \
	KPASSSTEP; \
	JNZ label; \
	PASSEND(ta, tb)

#define Q6KPASS(ta, tb, label) \
	KPASSBEGIN; \
label: \
	ZERO4; \
	GRP6(0, ta, tb); \
	GRP6(1, ta, tb); \
	GRP6(2, ta, tb); \
	GRP6(3, ta, tb); \
	CORR(ta, 0, Y8, Y9); \
	CORR(tb, 0, Y10, Y11); \
	FOLDAT(ta, 512, Y8, Y9, Y12, Y13); \
	FOLDAT(tb, 512, Y10, Y11, Y14, Y15); \
	ZERO4; \
	GRP6(4, ta, tb); \
	GRP6(5, ta, tb); \
	GRP6(6, ta, tb); \
	GRP6(7, ta, tb); \
	CORR(ta, 32, Y8, Y9); \
	CORR(tb, 32, Y10, Y11); \
	FOLDAT(ta, 576, Y8, Y9, Y12, Y13); \
	FOLDAT(tb, 576, Y10, Y11, Y14, Y15); \
	ADDQ $32, R9; \
	KPASSSTEP; \
	JNZ label; \
	PASSEND(ta, tb)

// func panelQ4KAVX2(panel *byte, xq *int8, xd *float32, xc *int32, xm *float32, nb int, out *[128]float32)
TEXT ·panelQ4KAVX2(SB), NOSPLIT, $0-56
	MOVQ panel+0(FP), R10
	MOVQ xq+8(FP), R11
	MOVQ xd+16(FP), R12
	MOVQ xc+24(FP), R13
	MOVQ xm+32(FP), BX
	MOVQ nb+40(FP), R14
	MOVQ out+48(FP), DX
	ONES16
	Q4KPASS(0, 1, pk4p0)
	Q4KPASS(2, 3, pk4p1)
	Q4KPASS(4, 5, pk4p2)
	Q4KPASS(6, 7, pk4p3)
	VZEROUPPER
	RET

// func panelQ6KAVX2(panel *byte, xq *int8, xd *float32, xc *int32, nb int, out *[128]float32)
TEXT ·panelQ6KAVX2(SB), NOSPLIT, $0-48
	PANELARGS
	MOVQ $0, BX
	ONES16
	Q6KPASS(0, 1, pk6p0)
	Q6KPASS(2, 3, pk6p1)
	Q6KPASS(4, 5, pk6p2)
	Q6KPASS(6, 7, pk6p3)
	VZEROUPPER
	RET
