#include "textflag.h"

// FCVTL/FCVTL2 (half to single, the low and high four halves) and
// FCVTN/FCVTN2 (single to half, round to nearest even under the default
// FPCR), WORD-encoded: Go's assembler has no mnemonics for them.
#define FCVTL4S(n, d) WORD $(0x0E217800 | (n<<5) | d)
#define FCVTL24S(n, d) WORD $(0x4E217800 | (n<<5) | d)
#define FCVTN4H(n, d) WORD $(0x0E216800 | (n<<5) | d)
#define FCVTN28H(n, d) WORD $(0x4E216800 | (n<<5) | d)

// attnValues4NEON over a row of halves: 16 halves (32 bytes) a position,
// widened into V16-V19, then the same sixteen accumulators.

// func attnValues4F16NEON(out *float32, p *[4]*float32, v *uint16, vstride, n int)
TEXT ·attnValues4F16NEON(SB), NOSPLIT, $0-40
	MOVD out+0(FP), R0
	MOVD p+8(FP), R9
	MOVD 0(R9), R2
	MOVD 8(R9), R3
	MOVD 16(R9), R4
	MOVD 24(R9), R6
	MOVD v+16(FP), R1
	MOVD vstride+24(FP), R7
	LSL  $1, R7
	MOVD n+32(FP), R8
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
	CBZ  R8, hv4done
hv4loop:
	VLD1 (R1), [V24.H8, V25.H8]
	ADD  R7, R1
	FCVTL4S(24, 16)
	FCVTL24S(24, 17)
	FCVTL4S(25, 18)
	FCVTL24S(25, 19)
	FMOVS (R2), F20
	VDUP  V20.S[0], V20.S4
	FMOVS (R3), F21
	VDUP  V21.S[0], V21.S4
	FMOVS (R4), F22
	VDUP  V22.S[0], V22.S4
	FMOVS (R6), F23
	VDUP  V23.S[0], V23.S4
	ADD  $4, R2
	ADD  $4, R3
	ADD  $4, R4
	ADD  $4, R6
	VFMLA V16.S4, V20.S4, V0.S4
	VFMLA V17.S4, V20.S4, V1.S4
	VFMLA V18.S4, V20.S4, V2.S4
	VFMLA V19.S4, V20.S4, V3.S4
	VFMLA V16.S4, V21.S4, V4.S4
	VFMLA V17.S4, V21.S4, V5.S4
	VFMLA V18.S4, V21.S4, V6.S4
	VFMLA V19.S4, V21.S4, V7.S4
	VFMLA V16.S4, V22.S4, V8.S4
	VFMLA V17.S4, V22.S4, V9.S4
	VFMLA V18.S4, V22.S4, V10.S4
	VFMLA V19.S4, V22.S4, V11.S4
	VFMLA V16.S4, V23.S4, V12.S4
	VFMLA V17.S4, V23.S4, V13.S4
	VFMLA V18.S4, V23.S4, V14.S4
	VFMLA V19.S4, V23.S4, V15.S4
	SUB  $1, R8
	CBNZ R8, hv4loop
hv4done:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R0)
	ADD  $256, R0, R9
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R9)
	ADD  $256, R9
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R9)
	ADD  $256, R9
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R9)
	RET

// func f32ToF16NEON(dst *uint16, src *float32, n int)
TEXT ·f32ToF16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2
	CBZ  R2, h16done
h16loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FCVTN4H(0, 2)
	FCVTN28H(1, 2)
	VST1.P [V2.H8], 16(R0)
	SUB  $1, R2
	CBNZ R2, h16loop
h16done:
	RET
