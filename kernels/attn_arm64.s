#include "textflag.h"

// The decode attention's weighted sum of values for four query heads that
// share a key/value head, 16 of a 64-wide slice of the head dimension a
// call (the caller steps v and out by 16): out[h·64 + d] = Σ_{i<n}
// p_h[i]·v[i·vstride + d] for h < 4, d < 16. Sixteen accumulators (V0-V15,
// head h in V4h-V4h+3), one 64-byte load of the row and four duplicated
// weights a position.

// func attnValues4NEON(out *float32, p *[4]*float32, v *float32, vstride, n int)
TEXT ·attnValues4NEON(SB), NOSPLIT, $0-40
	MOVD out+0(FP), R0
	MOVD p+8(FP), R9
	MOVD 0(R9), R2
	MOVD 8(R9), R3
	MOVD 16(R9), R4
	MOVD 24(R9), R6
	MOVD v+16(FP), R1
	MOVD vstride+24(FP), R7
	LSL  $2, R7
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
	CBZ  R8, av4done
av4loop:
	VLD1 (R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD  R7, R1
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
	CBNZ R8, av4loop
av4done:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R0)
	ADD  $256, R0, R9
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R9)
	ADD  $256, R9
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R9)
	ADD  $256, R9
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R9)
	RET
