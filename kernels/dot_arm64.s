#include "textflag.h"

// NEON kernels for arm64 devices. n is a multiple of 16 (the Go wrappers
// handle the tail). BF16 widens by zero-extending to 32 bits (UXTL) and
// shifting left 16, F16 by FCVTL.

#define WIDEN16 VUXTL V4.H4, V6.S4; VUXTL2 V4.H8, V7.S4; VUXTL V5.H4, V8.S4; VUXTL2 V5.H8, V9.S4; VSHL $16, V6.S4, V6.S4; VSHL $16, V7.S4, V7.S4; VSHL $16, V8.S4, V8.S4; VSHL $16, V9.S4, V9.S4

// F16 widens with FCVTL/FCVTL2 (half to single), WORD-encoded since Go's
// assembler has no mnemonic for them: V6-V9 from V4.H8, V5.H8 as WIDEN16.
#define WIDENF16 WORD $0x0E217886; WORD $0x4E217887; WORD $0x0E2178A8; WORD $0x4E2178A9

// The dot and axpy bodies, written once over the widening of 16 weights.
// DOT16: R0 = w, R1 = x, R2 = n, R3 = acc (four partial sums stored; the
// wrapper adds them).
#define DOT16(WIDEN) \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	dloop:; \
	CMP  $16, R2; \
	BLT  ddone; \
	VLD1.P 32(R0), [V4.H8, V5.H8]; \
	WIDEN; \
	VLD1.P 64(R1), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	VFMLA V10.S4, V6.S4, V0.S4; \
	VFMLA V11.S4, V7.S4, V1.S4; \
	VFMLA V12.S4, V8.S4, V2.S4; \
	VFMLA V13.S4, V9.S4, V3.S4; \
	SUB  $16, R2, R2; \
	B    dloop; \
	ddone:; \
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R3); \
	RET

// AXPY16: y[i] += a·w[i]; R0 = y, V15 = a in every lane, R1 = w, R2 = n.
#define AXPY16(WIDEN) \
	aloop:; \
	CMP  $16, R2; \
	BLT  adone; \
	VLD1.P 32(R1), [V4.H8, V5.H8]; \
	WIDEN; \
	VLD1 (R0), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	VFMLA V6.S4, V15.S4, V10.S4; \
	VFMLA V7.S4, V15.S4, V11.S4; \
	VFMLA V8.S4, V15.S4, V12.S4; \
	VFMLA V9.S4, V15.S4, V13.S4; \
	VST1.P [V10.S4, V11.S4, V12.S4, V13.S4], 64(R0); \
	SUB  $16, R2, R2; \
	B    aloop; \
	adone:; \
	RET

// func dotBF16NEON(w *uint16, x *float32, n int, acc *[16]float32)
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	MOVD acc+24(FP), R3
	DOT16(WIDEN16)

// func dotF16NEON(w *uint16, x *float32, n int, acc *[16]float32)
TEXT ·dotF16NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	MOVD acc+24(FP), R3
	DOT16(WIDENF16)

// func axpyBF16NEON(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F15
	VDUP  V15.S[0], V15.S4
	MOVD  w+16(FP), R1
	MOVD  n+24(FP), R2
	AXPY16(WIDEN16)

// func axpyF16NEON(y *float32, a float32, w *uint16, n int)
TEXT ·axpyF16NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F15
	VDUP  V15.S[0], V15.S4
	MOVD  w+16(FP), R1
	MOVD  n+24(FP), R2
	AXPY16(WIDENF16)

// F1 = d_w·d_x of the next block: its fp16 scale (R0, advanced) times the
// activations' scale (R2, advanced).
#define BLOCKSCALE MOVHU.P 2(R0), R4; FMOVS R4, F1; FCVTHS F1, F1; FMOVS.P 4(R2), F2; FMULS F2, F1, F1

// F0 += F1 · Σ (V5·V7 + V6·V8) over signed bytes: the two WORD-encoded
// SDOTs (Go's assembler has no mnemonic for them), SDOT V9.4S, V5.16B,
// V7.16B and SDOT V9.4S, V6.16B, V8.16B, then the lanes summed.
#define SDOTBLOCK VEOR V9.B16, V9.B16, V9.B16; WORD $0x4E8794A9; WORD $0x4E8894C9; VADDV V9.S4, V9; VMOV V9.S[0], R5; SCVTFWS R5, F3; FMULS F1, F3, F3; FADDS F3, F0, F0

// The integer Q4_0 dot with the ARMv8.2 dot-product instructions (Cortex-A55/
// A76/A78 and later; FEAT_DotProd): per block, the nibbles minus 8 as signed
// bytes, two SDOTs against the Q8 activations into four int32 lanes, their
// sum scaled by d_w·d_x (SDOTBLOCK).
// func dotQ40Q8NEON(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ40Q8NEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nb+24(FP), R3
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	FMOVS ZR, F0
qloop:
	CBZ  R3, qdone
	BLOCKSCALE
	VLD1.P 16(R0), [V4.B16]
	VAND V30.B16, V4.B16, V5.B16
	VUSHR $4, V4.B16, V6.B16
	VSUB V31.B16, V5.B16, V5.B16
	VSUB V31.B16, V6.B16, V6.B16
	VLD1.P 32(R1), [V7.B16, V8.B16]
	SDOTBLOCK
	SUB  $1, R3, R3
	B    qloop
qdone:
	FMOVS F0, ret+32(FP)
	RET

// The integer Q8_0 dot: SDOTBLOCK on the block's 32 signed weight bytes
// (V5, V6) against the activations (V7, V8).
// func dotQ80Q8NEON(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ80Q8NEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nb+24(FP), R3
	FMOVS ZR, F0
q8loop:
	CBZ  R3, q8done
	BLOCKSCALE
	VLD1.P 32(R0), [V5.B16, V6.B16]
	VLD1.P 32(R1), [V7.B16, V8.B16]
	SDOTBLOCK
	SUB  $1, R3, R3
	B    q8loop
q8done:
	FMOVS F0, ret+32(FP)
	RET
