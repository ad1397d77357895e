#include "textflag.h"

// NEON kernels for arm64 devices. n is a multiple of 16 (the Go wrappers
// handle the tail). BF16 widens by zero-extending to 32 bits (UXTL) and
// shifting left 16.

#define WIDEN16 VUXTL V4.H4, V6.S4; VUXTL2 V4.H8, V7.S4; VUXTL V5.H4, V8.S4; VUXTL2 V5.H8, V9.S4; VSHL $16, V6.S4, V6.S4; VSHL $16, V7.S4, V7.S4; VSHL $16, V8.S4, V8.S4; VSHL $16, V9.S4, V9.S4

// The four partial sums are stored to acc; the wrapper adds them.
// func dotBF16NEON(w *uint16, x *float32, n int, acc *[16]float32)
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	MOVD acc+24(FP), R3
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
dloop:
	CMP  $16, R2
	BLT  ddone
	VLD1.P 32(R0), [V4.H8, V5.H8]
	WIDEN16
	VLD1.P 64(R1), [V10.S4, V11.S4, V12.S4, V13.S4]
	VFMLA V10.S4, V6.S4, V0.S4
	VFMLA V11.S4, V7.S4, V1.S4
	VFMLA V12.S4, V8.S4, V2.S4
	VFMLA V13.S4, V9.S4, V3.S4
	SUB  $16, R2, R2
	B    dloop
ddone:
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R3)
	RET

// y[i] += a·w[i]
// func axpyBF16NEON(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F15
	VDUP  V15.S[0], V15.S4
	MOVD  w+16(FP), R1
	MOVD  n+24(FP), R2
aloop:
	CMP  $16, R2
	BLT  adone
	VLD1.P 32(R1), [V4.H8, V5.H8]
	WIDEN16
	VLD1 (R0), [V10.S4, V11.S4, V12.S4, V13.S4]
	VFMLA V6.S4, V15.S4, V10.S4
	VFMLA V7.S4, V15.S4, V11.S4
	VFMLA V8.S4, V15.S4, V12.S4
	VFMLA V9.S4, V15.S4, V13.S4
	VST1.P [V10.S4, V11.S4, V12.S4, V13.S4], 64(R0)
	SUB  $16, R2, R2
	B    aloop
adone:
	RET
