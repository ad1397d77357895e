#include "textflag.h"

// The prefill's integer GEMM tile over a packed panel (gemmact.go) with the
// dot-product extension: 16 rows × 8 tokens, the panel packed signed
// (Ops.PanelSigned: SDOT multiplies signed bytes by signed bytes, and
// Q8_0's values do not fit an unsigned byte less 128). NEON has 32 vector
// registers, so the eight tokens go in two passes of four over the panel:
// V0-V15 hold the pass's float accumulators (token t, rows 4g..4g+3 in
// V(4t+g)). Per block and token, the panel's eight 64-byte groups (values
// 4k..4k+3 of the 16 rows, four registers) are read in turn and each SDOT
// by element takes the token's four values k (V24/V25 lane k mod 4) against
// four rows' four, leaving in V16-V19 the block's exact integer dot of all
// 16 rows; one conversion, one multiply by the token's scale (lane t of
// V30) and one multiply-add by the row scales (V26-V29) fold it in. The
// panel is read from L1 once per token; that keeps every register busy
// with no spill. Speed unmeasured (no arm64 machine here); checked against
// the reference under qemu (make test-arm64).

// SDOT by element, Vd.4S += Σ4 Vn.16B · Vm.4B[i] (WORD-encoded: no mnemonic).
#define SDOTE(d, n, m, i) WORD $(0x4F80E000 | ((i&1)<<21) | ((m>>4)<<20) | ((m&15)<<16) | ((i>>1)<<11) | (n<<5) | d)
// FMUL by element, Vd.4S = Vn.4S · Vm.S[i].
#define FMULE(d, n, m, i) WORD $(0x4F809000 | ((i&1)<<21) | ((m>>4)<<20) | ((m&15)<<16) | ((i>>1)<<11) | (n<<5) | d)
#define SCVTF4S(n, d) WORD $(0x4E21D800 | (n<<5) | d)

// GROUP(m, i): the next 64-byte group of the panel (R12, advanced) into
// V20-V23, its four rows' dots with the token's values in lane i of Vm.
#define GROUP(m, i) \
	VLD1.P 64(R12), [V20.B16, V21.B16, V22.B16, V23.B16]; \
	SDOTE(16, 20, m, i); SDOTE(17, 21, m, i); SDOTE(18, 22, m, i); SDOTE(19, 23, m, i)

// TOK(t, a0, a1, a2, a3): token t of the pass against the block's panel.
#define TOK(t, a0, a1, a2, a3) \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	VLD1.P 32(R11), [V24.B16, V25.B16]; \
	MOVD R6, R12; \
	GROUP(24, 0); GROUP(24, 1); GROUP(24, 2); GROUP(24, 3); \
	GROUP(25, 0); GROUP(25, 1); GROUP(25, 2); GROUP(25, 3); \
	SCVTF4S(16, 16); SCVTF4S(17, 17); SCVTF4S(18, 18); SCVTF4S(19, 19); \
	FMULE(16, 16, 30, t); FMULE(17, 17, 30, t); FMULE(18, 18, 30, t); FMULE(19, 19, 30, t); \
	VFMLA V26.S4, V16.S4, a0; \
	VFMLA V27.S4, V17.S4, a1; \
	VFMLA V28.S4, V18.S4, a2; \
	VFMLA V29.S4, V19.S4, a3

// func panelQ8SDOT(panel *byte, xq *int8, xd *float32, nb int, out *[128]float32)
TEXT ·panelQ8SDOT(SB), NOSPLIT, $0-40
	MOVD panel+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD out+32(FP), R4
	MOVD $0, R5
ppass:
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	MOVD R0, R6          // the block's panel
	ADD  R5<<7, R1, R7   // the block's first token of the pass (4·32 bytes a pass)
	ADD  R5<<4, R2, R8   // its scale
	MOVD R3, R9
pblock:
	ADD  $512, R6, R10
	VLD1 (R10), [V26.S4, V27.S4, V28.S4, V29.S4]
	VLD1 (R8), [V30.S4]
	MOVD R7, R11
	TOK(0, V0.S4, V1.S4, V2.S4, V3.S4)
	TOK(1, V4.S4, V5.S4, V6.S4, V7.S4)
	TOK(2, V8.S4, V9.S4, V10.S4, V11.S4)
	TOK(3, V12.S4, V13.S4, V14.S4, V15.S4)
	ADD  $576, R6
	ADD  $256, R7
	ADD  $32, R8
	SUB  $1, R9
	CBNZ R9, pblock
	ADD  R5<<8, R4, R10  // out[16·(4·pass)]
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R10)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R10)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R10)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R10)
	ADD  $1, R5
	CMP  $2, R5
	BLT  ppass
	RET

// The K-quants' tiles (gemmactk.go), signed panels of 640-byte blocks:
// TOK's passes with, for Q4_K (values q − 8), the rows' min terms (at 576,
// read into V20-V23 once the groups are done) times the token's M (lane t
// of V31); for Q6_K (values q − 32), the first four groups' sums and the
// last four's folded apart, with the scales at 512 (V26-V29) and at 576.
// Unmeasured as the Q8_0 tile; checked against the reference under qemu.

// FMLA by element, Vd.4S += Vn.4S · Vm.S[i].
#define FMLAE(d, n, m, i) WORD $(0x4F801000 | ((i&1)<<21) | ((m>>4)<<20) | ((m&15)<<16) | ((i>>1)<<11) | (n<<5) | d)

// TOKQ4K(t, a0, a1, a2, a3): token t of the pass against a Q4_K block.
#define TOKQ4K(t, a0, a1, a2, a3) \
	TOK(t, a0, a1, a2, a3); \
	VLD1 (R13), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	FMLAE(4*t+0, 20, 31, t); FMLAE(4*t+1, 21, 31, t); FMLAE(4*t+2, 22, 31, t); FMLAE(4*t+3, 23, 31, t)

// HALF(m, t): the four groups against the token's values in Vm (V24: the
// block's first 16, V25: its last), the sums times the token's scale in
// V16-V19.
#define HALF(m, t) \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	GROUP(m, 0); GROUP(m, 1); GROUP(m, 2); GROUP(m, 3); \
	SCVTF4S(16, 16); SCVTF4S(17, 17); SCVTF4S(18, 18); SCVTF4S(19, 19); \
	FMULE(16, 16, 30, t); FMULE(17, 17, 30, t); FMULE(18, 18, 30, t); FMULE(19, 19, 30, t)

// TOKQ6K(t, a0, a1, a2, a3): token t of the pass against a Q6_K block.
#define TOKQ6K(t, a0, a1, a2, a3) \
	VLD1.P 32(R11), [V24.B16, V25.B16]; \
	MOVD R6, R12; \
	HALF(24, t); \
	VFMLA V26.S4, V16.S4, a0; \
	VFMLA V27.S4, V17.S4, a1; \
	VFMLA V28.S4, V18.S4, a2; \
	VFMLA V29.S4, V19.S4, a3; \
	HALF(25, t); \
	VLD1 (R13), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VFMLA V20.S4, V16.S4, a0; \
	VFMLA V21.S4, V17.S4, a1; \
	VFMLA V22.S4, V18.S4, a2; \
	VFMLA V23.S4, V19.S4, a3

// MLOAD: the pass's four tokens' M of the block (Q4_K) into V31.
#define MLOAD VLD1 (R20), [V31.S4]
#define NOMLOAD

// KPANEL(TOKK, LOADM, pass, block): the tile's two passes over nb blocks,
// each block's tokens by TOKK after LOADM (xm in R19).
#define KPANEL(TOKK, LOADM, pass, block) \
	MOVD $0, R5; \
pass: \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; \
	VEOR V5.B16, V5.B16, V5.B16; \
	VEOR V6.B16, V6.B16, V6.B16; \
	VEOR V7.B16, V7.B16, V7.B16; \
	VEOR V8.B16, V8.B16, V8.B16; \
	VEOR V9.B16, V9.B16, V9.B16; \
	VEOR V10.B16, V10.B16, V10.B16; \
	VEOR V11.B16, V11.B16, V11.B16; \
	VEOR V12.B16, V12.B16, V12.B16; \
	VEOR V13.B16, V13.B16, V13.B16; \
	VEOR V14.B16, V14.B16, V14.B16; \
	VEOR V15.B16, V15.B16, V15.B16; \
	MOVD R0, R6; \
	ADD  R5<<7, R1, R7; \
	ADD  R5<<4, R2, R8; \
	ADD  R5<<4, R19, R20; \
	MOVD R3, R9; \
block: \
	ADD  $512, R6, R10; \
	ADD  $576, R6, R13; \
	VLD1 (R10), [V26.S4, V27.S4, V28.S4, V29.S4]; \
	VLD1 (R8), [V30.S4]; \
	LOADM; \
	MOVD R7, R11; \
	TOKK(0, V0.S4, V1.S4, V2.S4, V3.S4); \
	TOKK(1, V4.S4, V5.S4, V6.S4, V7.S4); \
	TOKK(2, V8.S4, V9.S4, V10.S4, V11.S4); \
	TOKK(3, V12.S4, V13.S4, V14.S4, V15.S4); \
	ADD  $640, R6; \
	ADD  $256, R7; \
	ADD  $32, R8; \
	ADD  $32, R20; \
	SUB  $1, R9; \
	CBNZ R9, block; \
	ADD  R5<<8, R4, R10; \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R10); \
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R10); \
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R10); \
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R10); \
	ADD  $1, R5; \
	CMP  $2, R5; \
	BLT  pass

// func panelQ4KSDOT(panel *byte, xq *int8, xd *float32, xm *float32, nb int, out *[128]float32)
TEXT ·panelQ4KSDOT(SB), NOSPLIT, $0-48
	MOVD panel+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD xm+24(FP), R19
	MOVD nb+32(FP), R3
	MOVD out+40(FP), R4
	KPANEL(TOKQ4K, MLOAD, pk4pass, pk4block)
	RET

// func panelQ6KSDOT(panel *byte, xq *int8, xd *float32, nb int, out *[128]float32)
TEXT ·panelQ6KSDOT(SB), NOSPLIT, $0-40
	MOVD panel+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD $0, R19
	MOVD nb+24(FP), R3
	MOVD out+32(FP), R4
	KPANEL(TOKQ6K, NOMLOAD, pk6pass, pk6block)
	RET
