#include "textflag.h"

// siluMulNEON: h[i] = silu(gu[2i])·gu[2i+1] for i < n (n a multiple of
// 4), four at a time: the pairs split by VLD2, e^-g as expf computes it
// (n = round(−g·log2e), r = −g − n·ln2 in two parts, e^r by its Taylor
// series to r⁷, times 2^n built in the exponent bits), with −g clamped to
// [−87.3, 88.3] so that 2^n stays a normal float (beyond, silu is g or 0
// to float precision), then g / (1 + e^-g) · u. c holds the constants,
// each four times (siluConsts).
//
// Instructions Go's assembler has no mnemonic for, WORD-encoded (checked
// against binutils' aarch64 assembler): Vd.4S = op Vn.4S[, Vm.4S].
#define FNEG4S(n, d) WORD $(0x6EA0F800 | (n<<5) | d)
#define FMIN4S(m, n, d) WORD $(0x4EA0F400 | (m<<16) | (n<<5) | d)
#define FMAX4S(m, n, d) WORD $(0x4E20F400 | (m<<16) | (n<<5) | d)
#define FMUL4S(m, n, d) WORD $(0x6E20DC00 | (m<<16) | (n<<5) | d)
#define FADD4S(m, n, d) WORD $(0x4E20D400 | (m<<16) | (n<<5) | d)
#define FDIV4S(m, n, d) WORD $(0x6E20FC00 | (m<<16) | (n<<5) | d)
#define FRINTN4S(n, d) WORD $(0x4E218800 | (n<<5) | d)
#define FCVTZS4S(n, d) WORD $(0x4EA1B800 | (n<<5) | d)
#define FSUB4S(m, n, d) WORD $(0x4EA0D400 | (m<<16) | (n<<5) | d)

// HORNER(c, p, d): d = c + r·p, one step of the series (r in V4).
#define HORNER(c, p, d) VMOV c.B16, d.B16; VFMLA p.S4, V4.S4, d.S4

// EXP4: V6 = e^V2 for V2 within [−87.3, 88.3] (clamped by the caller), as
// expf computes it: n = round(x·log2e) (V3), r = x − n·ln2 in two parts
// (V4), the series to r⁷ (V6, V7), times 2^n built in the exponent bits
// (V8); the constants in V16-V26 (LOADCONSTS).
#define EXP4 \
	FMUL4S(16, 2, 3); \
	FRINTN4S(3, 3); \
	VMOV V2.B16, V4.B16; \
	VFMLS V17.S4, V3.S4, V4.S4; \
	VFMLS V18.S4, V3.S4, V4.S4; \
	HORNER(V20, V19, V6); \
	HORNER(V21, V6, V7); \
	HORNER(V22, V7, V6); \
	HORNER(V23, V6, V7); \
	HORNER(V24, V7, V6); \
	HORNER(V25, V6, V7); \
	HORNER(V25, V7, V6); \
	FCVTZS4S(3, 8); \
	VADD V26.S4, V8.S4, V8.S4; \
	VSHL $23, V8.S4, V8.S4; \
	FMUL4S(8, 6, 6)

// LOADCONSTS loads siluConsts from R3: V16 log2e, V17 ln2hi, V18 ln2lo,
// V19-V24 1/5040 … 1/2, V25 1, V26 127 (int32), V27 88.3, V28 −87.3.
#define LOADCONSTS \
	VLD1.P 64(R3), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD1.P 64(R3), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VLD1.P 64(R3), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	VLD1 (R3), [V28.S4]

// func siluMulNEON(h *float32, gu *float32, n int, c *[52]float32)
TEXT ·siluMulNEON(SB), NOSPLIT, $0-32
	MOVD h+0(FP), R0
	MOVD gu+8(FP), R1
	MOVD n+16(FP), R2
	MOVD c+24(FP), R3
	LOADCONSTS
	CBZ  R2, done
loop:
	VLD2.P 32(R1), [V0.S4, V1.S4]
	FNEG4S(0, 2)
	FMIN4S(27, 2, 2)
	FMAX4S(28, 2, 2)
	EXP4
	FADD4S(25, 6, 6)
	FDIV4S(6, 0, 0)
	FMUL4S(1, 0, 0)
	VST1.P [V0.S4], 16(R0)
	SUBS $4, R2, R2
	BNE  loop
done:
	RET

// func expSubSumNEON(x *float32, n int, m float32, c *[52]float32, sum *[4]float32)
//
// x[i] = e^(x[i] − m) for i < n (a multiple of 4), their sums by lane into
// sum; x − m clamped below at −87.3 (a smaller e^ is 0 to the sum's
// precision).
TEXT ·expSubSumNEON(SB), NOSPLIT, $0-40
	MOVD x+0(FP), R0
	MOVD n+8(FP), R2
	FMOVS m+16(FP), F29
	VDUP V29.S[0], V29.S4
	MOVD c+24(FP), R3
	MOVD sum+32(FP), R4
	LOADCONSTS
	VEOR V30.B16, V30.B16, V30.B16
	CBZ  R2, expdone
exploop:
	VLD1 (R0), [V2.S4]
	FSUB4S(29, 2, 2)
	FMAX4S(28, 2, 2)
	EXP4
	VST1.P [V6.S4], 16(R0)
	FADD4S(6, 30, 30)
	SUBS $4, R2, R2
	BNE  exploop
expdone:
	VST1 [V30.S4], (R4)
	RET
