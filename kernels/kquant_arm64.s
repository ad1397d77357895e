#include "textflag.h"

// K-quant kernels (Q4_K, Q6_K) for arm64: integer dots against Q8
// activations with SDOT (FEAT_DotProd), and the float axpys of the down
// projection with plain NEON. Go's assembler lacks these vector forms, so
// they are WORD-encoded with register numbers (d destination, n, m sources).
#define SDOT4S(d, n, m) WORD $(0x4E809400 | (m<<16) | (n<<5) | d)
#define ADDP4S(d, n, m) WORD $(0x4EA0BC00 | (m<<16) | (n<<5) | d)
#define MUL4S(d, n, m) WORD $(0x4EA09C00 | (m<<16) | (n<<5) | d)
#define FMUL4S(d, n, m) WORD $(0x6E20DC00 | (m<<16) | (n<<5) | d)
#define FADD4S(d, n, m) WORD $(0x4E20D400 | (m<<16) | (n<<5) | d)
#define FSUB4S(d, n, m) WORD $(0x4EA0D400 | (m<<16) | (n<<5) | d)
#define FMLA4S(d, n, m) WORD $(0x4E20CC00 | (m<<16) | (n<<5) | d)
#define FMLS4S(d, n, m) WORD $(0x4EA0CC00 | (m<<16) | (n<<5) | d)
#define SCVTF4S(n, d) WORD $(0x4E21D800 | (n<<5) | d)
#define UCVTF4S(n, d) WORD $(0x6E21D800 | (n<<5) | d)
#define VZERO(d) WORD $(0x6F00E400 | d)
#define UXTL8H(n, d) WORD $(0x2F08A400 | (n<<5) | d)
#define UXTL28H(n, d) WORD $(0x6F08A400 | (n<<5) | d)
#define UXTL4S(n, d) WORD $(0x2F10A400 | (n<<5) | d)
#define UXTL24S(n, d) WORD $(0x6F10A400 | (n<<5) | d)
#define SXTL8H(n, d) WORD $(0x0F08A400 | (n<<5) | d)
#define SXTL28H(n, d) WORD $(0x4F08A400 | (n<<5) | d)
#define SXTL4S(n, d) WORD $(0x0F10A400 | (n<<5) | d)
#define SXTL24S(n, d) WORD $(0x4F10A400 | (n<<5) | d)
#define VMOVQ(n, d) WORD $(0x4EA01C00 | (n<<16) | (n<<5) | d)

// ---- Q4_K ----
//
// The arithmetic of every Q4_K dot form, per row, token and super-block:
// I_j = Σ q·qx over sub-block j (SDOT, exact), lanes l < 4:
//
//	T_l = float(sc_l·I_l)·dx_l + float(sc_l+4·I_l+4)·dx_l+4
//	U_l = float(m_l·S_l)·dx_l + float(m_l+4·S_l+4)·dx_l+4
//	acc_l = (acc_l + d·T_l) − dmin·U_l   (each a fused multiply-add)
//
// and the wrapper adds the four lanes: one sequence whatever the form, so a
// row's value does not depend on which form took it (Dot2Act, Dot4Act).
// The integer products are below 2^24 (sc·I ≤ 63·32·15·127), so exact.

// K4SCALES(rs): the super-block at rs's eight 6-bit scales as int32 in
// V26 (j < 4) and V27 (j ≥ 4), its mins in V28, V29 (bytes 4-15: j < 4 the
// low six bits of bytes j and j+4; j ≥ 4 the nibbles of byte j+4 and the
// top two bits of bytes j−4 and j), four bytes at a time in R19-R23.
#define K4SCALES(rs) \
	MOVWU 4(rs), R19; \
	MOVWU 8(rs), R20; \
	MOVWU 12(rs), R21; \
	ANDW $0x0f0f0f0f, R21, R22; \
	LSRW $6, R19, R23; \
	ANDW $0x03030303, R23, R23; \
	ORRW R23<<4, R22, R22; \
	LSRW $4, R21, R21; \
	ANDW $0x0f0f0f0f, R21, R21; \
	LSRW $6, R20, R23; \
	ANDW $0x03030303, R23, R23; \
	ORRW R23<<4, R21, R21; \
	ANDW $0x3f3f3f3f, R19, R19; \
	ANDW $0x3f3f3f3f, R20, R20; \
	ORR  R22<<32, R19, R19; \
	ORR  R21<<32, R20, R20; \
	FMOVD R19, F26; \
	FMOVD R20, F28; \
	UXTL8H(26, 26); \
	UXTL8H(28, 28); \
	UXTL24S(26, 27); \
	UXTL4S(26, 26); \
	UXTL24S(28, 29); \
	UXTL4S(28, 28)

// K4HEAD(rs): d in every lane of V24, dmin in V25, then K4SCALES.
#define K4HEAD(rs) \
	MOVHU 0(rs), R19; \
	FMOVS R19, F24; \
	FCVTHS F24, F24; \
	VDUP V24.S[0], V24.S4; \
	MOVHU 2(rs), R19; \
	FMOVS R19, F25; \
	FCVTHS F25, F25; \
	VDUP V25.S[0], V25.S4; \
	K4SCALES(rs)

// K4NIB(rw): the next 32 quant bytes at rw (advanced): low nibbles
// (sub-block 2r) in V26, V27, high ones (2r+1) in V24, V25 (V30 = 0x0f).
#define K4NIB(rw) \
	VLD1.P 32(rw), [V24.B16, V25.B16]; \
	VAND  V30.B16, V24.B16, V26.B16; \
	VAND  V30.B16, V25.B16, V27.B16; \
	VUSHR $4, V24.B16, V24.B16; \
	VUSHR $4, V25.B16, V25.B16

// K4TOK(rx, p): the nibbles of K4NIB against the next two activation
// blocks at rx (advanced 64): Vp = [Σ sub 2r lanes 0+1, 2+3, sub 2r+1's]
// (V4-V7, V28, V29 scratch).
#define K4TOK(rx, p) \
	VLD1.P 64(rx), [V4.B16, V5.B16, V6.B16, V7.B16]; \
	VZERO(28); \
	VZERO(29); \
	SDOT4S(28, 26, 4); \
	SDOT4S(28, 27, 5); \
	SDOT4S(29, 24, 6); \
	SDOT4S(29, 25, 7); \
	ADDP4S(p, 28, 29)

// K4INT(rw, rx): the 128 quant bytes at rw against 256 activations at rx
// (both advanced): I_0..3 in V8, I_4..7 in V10.
#define K4INT(rw, rx) \
	K4NIB(rw); \
	K4TOK(rx, 8); \
	K4NIB(rw); \
	K4TOK(rx, 9); \
	K4NIB(rw); \
	K4TOK(rx, 10); \
	K4NIB(rw); \
	K4TOK(rx, 11); \
	ADDP4S(8, 8, 9); \
	ADDP4S(10, 10, 11)

// K4FLOAT(ilo, ihi, acc): the float step above for sums I in Vilo, Vihi,
// dx in V4, V5, S in V6, V7 (K4HEAD's V24-V29; all but acc clobbered).
#define K4FLOAT(ilo, ihi, acc) \
	MUL4S(ilo, ilo, 26); \
	MUL4S(ihi, ihi, 27); \
	SCVTF4S(ilo, ilo); \
	SCVTF4S(ihi, ihi); \
	FMUL4S(ilo, ilo, 4); \
	FMUL4S(ihi, ihi, 5); \
	FADD4S(ilo, ilo, ihi); \
	FMLA4S(acc, ilo, 24); \
	MUL4S(6, 6, 28); \
	MUL4S(7, 7, 29); \
	SCVTF4S(6, 6); \
	SCVTF4S(7, 7); \
	FMUL4S(6, 6, 4); \
	FMUL4S(7, 7, 5); \
	FADD4S(6, 6, 7); \
	FMLS4S(acc, 6, 25)

// K4ROW(rs, acc): the super-block at rs against the activations at R1
// (quants), R2 (scales), R3 (sums), all advanced; R9 scratch.
#define K4ROW(rs, acc) \
	ADD $16, rs, R9; \
	K4INT(R9, R1); \
	K4HEAD(rs); \
	VLD1.P 32(R2), [V4.S4, V5.S4]; \
	VLD1.P 32(R3), [V6.S4, V7.S4]; \
	K4FLOAT(8, 10, acc)

// func dotQ4KQ8NEON(w *byte, xq *int8, xd *float32, xs *int32, nsb int, acc *[4]float32)
TEXT ·dotQ4KQ8NEON(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD xs+24(FP), R3
	MOVD nsb+32(FP), R4
	MOVD acc+40(FP), R5
	VMOVI $15, V30.B16
	VZERO(0)
k4loop:
	K4ROW(R0, 0)
	ADD  $144, R0
	SUBS $1, R4
	BNE  k4loop
	VST1 [V0.S4], (R5)
	RET

// PREF7(r): prefetch into L2 the 448 bytes at r: a super-block's share of
// the record to come (gate, up and down: 3·144 bytes).
#define PREF7(r) \
	PRFM (r), PLDL2KEEP; \
	PRFM 64(r), PLDL2KEEP; \
	PRFM 128(r), PLDL2KEEP; \
	PRFM 192(r), PLDL2KEEP; \
	PRFM 256(r), PLDL2KEEP; \
	PRFM 320(r), PLDL2KEEP; \
	PRFM 384(r), PLDL2KEEP

// func dot2Q4KQ8NEON(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, acc *[8]float32, next *byte, nstep int)
//
// Rows a and b a super-block at a time, each exactly as dotQ4KQ8NEON (the
// block's activations read again from L1 for b), prefetching the record
// to come (next, advanced nstep a super-block).
TEXT ·dot2Q4KQ8NEON(SB), NOSPLIT, $0-72
	MOVD a+0(FP), R0
	MOVD b+8(FP), R10
	MOVD xq+16(FP), R1
	MOVD xd+24(FP), R2
	MOVD xs+32(FP), R3
	MOVD nsb+40(FP), R4
	MOVD acc+48(FP), R5
	MOVD next+56(FP), R6
	MOVD nstep+64(FP), R7
	VMOVI $15, V30.B16
	VZERO(0)
	VZERO(1)
k42loop:
	PREF7(R6)
	ADD  R7, R6
	K4ROW(R0, 0)
	SUB  $256, R1
	SUB  $32, R2
	SUB  $32, R3
	K4ROW(R10, 1)
	ADD  $144, R0
	ADD  $144, R10
	SUBS $1, R4
	BNE  k42loop
	VST1 [V0.S4, V1.S4], (R5)
	RET

// K4RUN4(p0, p1, p2, p3): the next 32 quant bytes at R9 against the next
// two activation blocks of each of the four tokens (R1-R4): token t's
// pair sums into Vp_t.
#define K4RUN4(p0, p1, p2, p3) \
	K4NIB(R9); \
	K4TOK(R1, p0); \
	K4TOK(R2, p1); \
	K4TOK(R3, p2); \
	K4TOK(R4, p3)

// K4TOKFLOAT(rd, rs, ilo, ihi, acc): one token's float step (its scales
// at rd, sums at rs, both advanced).
#define K4TOKFLOAT(rd, rs, ilo, ihi, acc) \
	VLD1.P 32(rd), [V4.S4, V5.S4]; \
	VLD1.P 32(rs), [V6.S4, V7.S4]; \
	K4FLOAT(ilo, ihi, acc)

// func dot4Q4KQ8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, xs *[4]*int32, nsb int, acc *[16]float32)
//
// One row against four tokens, each quant run unpacked once for the four:
// token t's pair sums in V8+4t..V11+4t, its accumulator V(t).
TEXT ·dot4Q4KQ8NEON(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R9
	MOVD 0(R9), R1
	MOVD 8(R9), R2
	MOVD 16(R9), R3
	MOVD 24(R9), R4
	MOVD xd+16(FP), R9
	MOVD 0(R9), R5
	MOVD 8(R9), R6
	MOVD 16(R9), R7
	MOVD 24(R9), R8
	MOVD xs+24(FP), R9
	MOVD 0(R9), R10
	MOVD 8(R9), R11
	MOVD 16(R9), R12
	MOVD 24(R9), R13
	MOVD nsb+32(FP), R14
	MOVD acc+40(FP), R15
	VMOVI $15, V30.B16
	VZERO(0)
	VZERO(1)
	VZERO(2)
	VZERO(3)
k44loop:
	ADD $16, R0, R9
	K4RUN4(8, 12, 16, 20)
	K4RUN4(9, 13, 17, 21)
	K4RUN4(10, 14, 18, 22)
	K4RUN4(11, 15, 19, 23)
	ADDP4S(8, 8, 9)
	ADDP4S(10, 10, 11)
	ADDP4S(12, 12, 13)
	ADDP4S(14, 14, 15)
	ADDP4S(16, 16, 17)
	ADDP4S(18, 18, 19)
	ADDP4S(20, 20, 21)
	ADDP4S(22, 22, 23)
	K4HEAD(R0)
	K4TOKFLOAT(R5, R10, 8, 10, 0)
	K4TOKFLOAT(R6, R11, 12, 14, 1)
	K4TOKFLOAT(R7, R12, 16, 18, 2)
	K4TOKFLOAT(R8, R13, 20, 22, 3)
	ADD  $144, R0
	SUBS $1, R14
	BNE  k44loop
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R15)
	RET

// A4Q(s, m, a): y (V8-V11) += a·(s·q − m) over the 16 unsigned bytes in
// V1, AXW16's arithmetic (V2-V7 scratch).
#define A4Q(s, m, a) \
	UXTL8H(1, 2); \
	UXTL28H(1, 3); \
	UXTL4S(2, 4); \
	UXTL24S(2, 5); \
	UXTL4S(3, 6); \
	UXTL24S(3, 7); \
	UCVTF4S(4, 4); \
	UCVTF4S(5, 5); \
	UCVTF4S(6, 6); \
	UCVTF4S(7, 7); \
	FMUL4S(4, 4, s); \
	FMUL4S(5, 5, s); \
	FMUL4S(6, 6, s); \
	FMUL4S(7, 7, s); \
	FSUB4S(4, 4, m); \
	FSUB4S(5, 5, m); \
	FSUB4S(6, 6, m); \
	FSUB4S(7, 7, m); \
	FMLA4S(8, 4, a); \
	FMLA4S(9, 5, a); \
	FMLA4S(10, 6, a); \
	FMLA4S(11, 7, a)

// AXW16(q, dv, mv): y (R0, advanced) += a·(d1·q − m1) over the 16 unsigned
// bytes of Vq, d1 and m1 in every lane of Vdv, Vmv, a in V31 (A4Q's
// arithmetic; V1-V11 scratch). d1·q is exact (d1 = d·sc has 17
// significant bits, q four), so x̂ rounds once, as the reference's.
#define AXW16(q, dv, mv) \
	VLD1 (R0), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	VMOVQ(q, 1); \
	A4Q(dv, mv, 31); \
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0)

// AXSUB(q0, q1, dl, ml): one sub-block of 32 (its quants in Vq0, Vq1),
// d1 and m1 from lanes dl, ml.
#define AXSUB(q0, q1, dl, ml) \
	VDUP dl, V20.S4; \
	VDUP ml, V21.S4; \
	AXW16(q0, 20, 21); \
	AXW16(q1, 20, 21)

// func axpyQ4KNEON(y *float32, a float32, w *byte, nsb int)
//
// y[i] += a·x̂_i, x̂ = (d·sc_j)·q − dmin·m_j as dequantQ4KBlock computes it.
TEXT ·axpyQ4KNEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F31
	MOVD  w+16(FP), R2
	MOVD  nsb+24(FP), R3
	VDUP  V31.S[0], V31.S4
	VMOVI $15, V30.B16
ak4loop:
	K4HEAD(R2)
	UCVTF4S(26, 26)
	UCVTF4S(27, 27)
	UCVTF4S(28, 28)
	UCVTF4S(29, 29)
	FMUL4S(26, 26, 24)
	FMUL4S(27, 27, 24)
	FMUL4S(28, 28, 25)
	FMUL4S(29, 29, 25)
	ADD $16, R2, R9
	VLD1.P 32(R9), [V16.B16, V17.B16]
	VAND  V30.B16, V16.B16, V18.B16
	VAND  V30.B16, V17.B16, V19.B16
	VUSHR $4, V16.B16, V16.B16
	VUSHR $4, V17.B16, V17.B16
	AXSUB(18, 19, V26.S[0], V28.S[0])
	AXSUB(16, 17, V26.S[1], V28.S[1])
	VLD1.P 32(R9), [V16.B16, V17.B16]
	VAND  V30.B16, V16.B16, V18.B16
	VAND  V30.B16, V17.B16, V19.B16
	VUSHR $4, V16.B16, V16.B16
	VUSHR $4, V17.B16, V17.B16
	AXSUB(18, 19, V26.S[2], V28.S[2])
	AXSUB(16, 17, V26.S[3], V28.S[3])
	VLD1.P 32(R9), [V16.B16, V17.B16]
	VAND  V30.B16, V16.B16, V18.B16
	VAND  V30.B16, V17.B16, V19.B16
	VUSHR $4, V16.B16, V16.B16
	VUSHR $4, V17.B16, V17.B16
	AXSUB(18, 19, V27.S[0], V29.S[0])
	AXSUB(16, 17, V27.S[1], V29.S[1])
	VLD1.P 32(R9), [V16.B16, V17.B16]
	VAND  V30.B16, V16.B16, V18.B16
	VAND  V30.B16, V17.B16, V19.B16
	VUSHR $4, V16.B16, V16.B16
	VUSHR $4, V17.B16, V17.B16
	AXSUB(18, 19, V27.S[2], V29.S[2])
	AXSUB(16, 17, V27.S[3], V29.S[3])
	ADD  $144, R2
	SUBS $1, R3
	BNE  ak4loop
	RET

// Four rows into one y. A4ROWSC(rw, r): row r's super-block at rw, its
// eight d·sc then eight dmin·m (the products axpyQ4KNEON forms) to
// sc[16r..] (R7; R9 scratch).
#define A4ROWSC(rw, r) \
	K4HEAD(rw); \
	UCVTF4S(26, 26); \
	UCVTF4S(27, 27); \
	UCVTF4S(28, 28); \
	UCVTF4S(29, 29); \
	FMUL4S(26, 26, 24); \
	FMUL4S(27, 27, 24); \
	FMUL4S(28, 28, 25); \
	FMUL4S(29, 29, 25); \
	ADD  $(64*r), R7, R9; \
	VST1 [V26.S4, V27.S4, V28.S4, V29.S4], (R9)

// A4SUB(j): sub-block j's d·sc of rows 0-3 in every lane of V12-V15, its
// dmin·m in V16-V19.
#define A4SUB(j) \
	ADD $(4*(j)), R7, R9; \
	VLD1R (R9), [V12.S4]; \
	ADD $(64+4*(j)), R7, R9; \
	VLD1R (R9), [V13.S4]; \
	ADD $(128+4*(j)), R7, R9; \
	VLD1R (R9), [V14.S4]; \
	ADD $(192+4*(j)), R7, R9; \
	VLD1R (R9), [V15.S4]; \
	ADD $(32+4*(j)), R7, R9; \
	VLD1R (R9), [V16.S4]; \
	ADD $(96+4*(j)), R7, R9; \
	VLD1R (R9), [V17.S4]; \
	ADD $(160+4*(j)), R7, R9; \
	VLD1R (R9), [V18.S4]; \
	ADD $(224+4*(j)), R7, R9; \
	VLD1R (R9), [V19.S4]

// A4LO(rw, off, s, m, a), A4HI: the low (high) nibbles of the 16 bytes at
// off(rw) through A4Q (V30 = 0x0f).
#define A4LO(rw, off, s, m, a) \
	ADD  $(off), rw, R9; \
	VLD1 (R9), [V0.B16]; \
	VAND V30.B16, V0.B16, V1.B16; \
	A4Q(s, m, a)

#define A4HI(rw, off, s, m, a) \
	ADD   $(off), rw, R9; \
	VLD1  (R9), [V0.B16]; \
	VUSHR $4, V0.B16, V1.B16; \
	A4Q(s, m, a)

// A4CHUNKLO(p, c), A4CHUNKHI: elements 64p+16c.. (sub-block 2p, low
// nibbles) or 64p+32+16c.. (2p+1, high) of the four rows into y, loaded
// and stored once, rows added in order (R10 scratch).
#define A4CHUNKLO(p, c) \
	ADD  $(4*(64*p+16*c)), R0, R10; \
	VLD1 (R10), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	A4LO(R2, 16+32*p+16*c, 12, 16, 20); \
	A4LO(R3, 16+32*p+16*c, 13, 17, 21); \
	A4LO(R4, 16+32*p+16*c, 14, 18, 22); \
	A4LO(R5, 16+32*p+16*c, 15, 19, 23); \
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R10)

#define A4CHUNKHI(p, c) \
	ADD  $(4*(64*p+32+16*c)), R0, R10; \
	VLD1 (R10), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	A4HI(R2, 16+32*p+16*c, 12, 16, 20); \
	A4HI(R3, 16+32*p+16*c, 13, 17, 21); \
	A4HI(R4, 16+32*p+16*c, 14, 18, 22); \
	A4HI(R5, 16+32*p+16*c, 15, 19, 23); \
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R10)

#define A4PAIR(p) \
	A4SUB(2*p); \
	A4CHUNKLO(p, 0); \
	A4CHUNKLO(p, 1); \
	A4SUB(2*p+1); \
	A4CHUNKHI(p, 0); \
	A4CHUNKHI(p, 1)

// func axpy4Q4KNEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int, sc *[64]float32)
//
// Four Q4_K rows into one y, y[i] += a[r]·x̂_r[i] for r = 0..3 in turn,
// each element's arithmetic axpyQ4KNEON's (so four row axpys' bits), y
// loaded and stored once per four rows; sc holds a super-block's scales.
TEXT ·axpy4Q4KNEON(SB), NOSPLIT, $0-64
	MOVD y+0(FP), R0
	MOVD a+8(FP), R1
	MOVD w0+16(FP), R2
	MOVD w1+24(FP), R3
	MOVD w2+32(FP), R4
	MOVD w3+40(FP), R5
	MOVD nsb+48(FP), R6
	MOVD sc+56(FP), R7
	VLD1 (R1), [V20.S4]
	VDUP V20.S[3], V23.S4
	VDUP V20.S[2], V22.S4
	VDUP V20.S[1], V21.S4
	VDUP V20.S[0], V20.S4
	VMOVI $15, V30.B16
a4k4loop:
	A4ROWSC(R2, 0)
	A4ROWSC(R3, 1)
	A4ROWSC(R4, 2)
	A4ROWSC(R5, 3)
	A4PAIR(0)
	A4PAIR(1)
	A4PAIR(2)
	A4PAIR(3)
	ADD  $144, R2
	ADD  $144, R3
	ADD  $144, R4
	ADD  $144, R5
	ADD  $1024, R0
	SUBS $1, R6
	BNE  a4k4loop
	RET

// ---- Q6_K ----
//
// Every Q6_K dot form, per row, token and super-block: P_s = Σ (q−32)·qx
// over sub-block s of 16 (SDOT, exact), B_b = sc_2b·P_2b + sc_2b+1·P_2b+1
// (integers, below 2^24), lanes l < 4:
//
//	acc_l += d·(float(B_l)·dx_l + float(B_l+4)·dx_l+4)   (one fused add)
//
// the wrapper adding the four lanes, whatever the form.

// Q6RAW(rs, h): half h of the super-block at rs: ql[64h..64h+63] in
// V16-V19, qh[32h..32h+31] in V20, V21 (R9 scratch).
#define Q6RAW(rs, h) \
	ADD  $(64*h), rs, R9; \
	VLD1 (R9), [V16.B16, V17.B16, V18.B16, V19.B16]; \
	ADD  $(128+32*h), rs, R9; \
	VLD1 (R9), [V20.B16, V21.B16]

// Q6K0-Q6K3: activation block 4h+k's 32 values q−32 as signed bytes in
// V2, V3 from Q6RAW's registers: the low four bits nibble k/2 of ql's
// bytes 32(k%2)..; the top two bits 2k, 2k+1 of qh, moved to bits 4, 5
// (V30 = 0x0f, V31 = 0x30, V29 = 32 in every byte; V22, V23 scratch).
#define Q6FIN \
	VAND V31.B16, V22.B16, V22.B16; \
	VAND V31.B16, V23.B16, V23.B16; \
	VORR V22.B16, V2.B16, V2.B16; \
	VORR V23.B16, V3.B16, V3.B16; \
	VSUB V29.B16, V2.B16, V2.B16; \
	VSUB V29.B16, V3.B16, V3.B16
#define Q6K0 \
	VAND V30.B16, V16.B16, V2.B16; \
	VAND V30.B16, V17.B16, V3.B16; \
	VSHL $4, V20.B16, V22.B16; \
	VSHL $4, V21.B16, V23.B16; \
	Q6FIN
#define Q6K1 \
	VAND V30.B16, V18.B16, V2.B16; \
	VAND V30.B16, V19.B16, V3.B16; \
	VSHL $2, V20.B16, V22.B16; \
	VSHL $2, V21.B16, V23.B16; \
	Q6FIN
#define Q6K2 \
	VUSHR $4, V16.B16, V2.B16; \
	VUSHR $4, V17.B16, V3.B16; \
	VORR V20.B16, V20.B16, V22.B16; \
	VORR V21.B16, V21.B16, V23.B16; \
	Q6FIN
#define Q6K3 \
	VUSHR $4, V18.B16, V2.B16; \
	VUSHR $4, V19.B16, V3.B16; \
	VUSHR $2, V20.B16, V22.B16; \
	VUSHR $2, V21.B16, V23.B16; \
	Q6FIN

// Q6BLK(rx, p): V2, V3 against the next activation block at rx (advanced
// 32): Vp = [P_2b lanes 0+1, 2+3, P_2b+1's] (V4-V7 scratch).
#define Q6BLK(rx, p) \
	VLD1.P 32(rx), [V4.B16, V5.B16]; \
	VZERO(6); \
	VZERO(7); \
	SDOT4S(6, 2, 4); \
	SDOT4S(7, 3, 5); \
	ADDP4S(p, 6, 7)

// Q6INT(rs, rx): the super-block at rs against 256 activations at rx
// (advanced): P_0..3 in V8, P_4..7 in V10, P_8..11 in V12, P_12..15 in V14.
#define Q6INT(rs, rx) \
	Q6RAW(rs, 0); \
	Q6K0; \
	Q6BLK(rx, 8); \
	Q6K1; \
	Q6BLK(rx, 9); \
	Q6K2; \
	Q6BLK(rx, 10); \
	Q6K3; \
	Q6BLK(rx, 11); \
	Q6RAW(rs, 1); \
	Q6K0; \
	Q6BLK(rx, 12); \
	Q6K1; \
	Q6BLK(rx, 13); \
	Q6K2; \
	Q6BLK(rx, 14); \
	Q6K3; \
	Q6BLK(rx, 15); \
	ADDP4S(8, 8, 9); \
	ADDP4S(10, 10, 11); \
	ADDP4S(12, 12, 13); \
	ADDP4S(14, 14, 15)

// Q6SCALES(rs): the 16 int8 scales at rs+192 as int32 in V19-V22, the
// fp16 d in every lane of V24 (R9, R19, V16-V18 scratch).
#define Q6SCALES(rs) \
	ADD  $192, rs, R9; \
	VLD1 (R9), [V16.B16]; \
	SXTL8H(16, 17); \
	SXTL28H(16, 18); \
	SXTL4S(17, 19); \
	SXTL24S(17, 20); \
	SXTL4S(18, 21); \
	SXTL24S(18, 22); \
	MOVHU 208(rs), R19; \
	FMOVS R19, F24; \
	FCVTHS F24, F24; \
	VDUP V24.S[0], V24.S4

// Q6FLOAT(p0, p1, p2, p3, acc): the float step for sums in Vp0..Vp3
// (Q6SCALES's V19-V22, V24; dx in V4, V5; the sums clobbered).
#define Q6FLOAT(p0, p1, p2, p3, acc) \
	MUL4S(p0, p0, 19); \
	MUL4S(p1, p1, 20); \
	MUL4S(p2, p2, 21); \
	MUL4S(p3, p3, 22); \
	ADDP4S(p0, p0, p1); \
	ADDP4S(p2, p2, p3); \
	SCVTF4S(p0, p0); \
	SCVTF4S(p2, p2); \
	FMUL4S(p0, p0, 4); \
	FMUL4S(p2, p2, 5); \
	FADD4S(p0, p0, p2); \
	FMLA4S(acc, p0, 24)

// Q6ROW(rs, acc): the super-block at rs against the activations at R1
// (quants) and R2 (scales), both advanced.
#define Q6ROW(rs, acc) \
	Q6INT(rs, R1); \
	Q6SCALES(rs); \
	VLD1.P 32(R2), [V4.S4, V5.S4]; \
	Q6FLOAT(8, 10, 12, 14, acc)

#define Q6CONSTS \
	VMOVI $15, V30.B16; \
	VMOVI $48, V31.B16; \
	VMOVI $32, V29.B16

// func dotQ6KQ8NEON(w *byte, xq *int8, xd *float32, nsb int, acc *[4]float32)
TEXT ·dotQ6KQ8NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nsb+24(FP), R4
	MOVD acc+32(FP), R5
	Q6CONSTS
	VZERO(0)
k6loop:
	Q6ROW(R0, 0)
	ADD  $210, R0
	SUBS $1, R4
	BNE  k6loop
	VST1 [V0.S4], (R5)
	RET

// PREF10(r): prefetch into L2 the 640 bytes at r (a super-block's share of
// the record to come, 3·210 bytes).
#define PREF10(r) \
	PREF7(r); \
	PRFM 448(r), PLDL2KEEP; \
	PRFM 512(r), PLDL2KEEP; \
	PRFM 576(r), PLDL2KEEP

// func dot2Q6KQ8NEON(a, b *byte, xq *int8, xd *float32, nsb int, acc *[8]float32, next *byte, nstep int)
TEXT ·dot2Q6KQ8NEON(SB), NOSPLIT, $0-64
	MOVD a+0(FP), R0
	MOVD b+8(FP), R10
	MOVD xq+16(FP), R1
	MOVD xd+24(FP), R2
	MOVD nsb+32(FP), R4
	MOVD acc+40(FP), R5
	MOVD next+48(FP), R6
	MOVD nstep+56(FP), R7
	Q6CONSTS
	VZERO(0)
	VZERO(1)
k62loop:
	PREF10(R6)
	ADD  R7, R6
	Q6ROW(R0, 0)
	SUB  $256, R1
	SUB  $32, R2
	Q6ROW(R10, 1)
	ADD  $210, R0
	ADD  $210, R10
	SUBS $1, R4
	BNE  k62loop
	VST1 [V0.S4, V1.S4], (R5)
	RET

// AXS16(q, dl): y (R0, advanced) += a·(ds·q) over the 16 signed bytes of
// Vq, ds from lane dl, a in V1 (V4-V13, V22, V23 scratch); ds·q is exact
// (ds = d·sc: 19 significant bits; q six).
#define AXS16(q, dl) \
	VDUP dl, V12.S4; \
	SXTL8H(q, 22); \
	SXTL28H(q, 23); \
	SXTL4S(22, 4); \
	SXTL24S(22, 5); \
	SXTL4S(23, 6); \
	SXTL24S(23, 7); \
	SCVTF4S(4, 4); \
	SCVTF4S(5, 5); \
	SCVTF4S(6, 6); \
	SCVTF4S(7, 7); \
	FMUL4S(4, 4, 12); \
	FMUL4S(5, 5, 12); \
	FMUL4S(6, 6, 12); \
	FMUL4S(7, 7, 12); \
	VLD1 (R0), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	FMLA4S(8, 4, 1); \
	FMLA4S(9, 5, 1); \
	FMLA4S(10, 6, 1); \
	FMLA4S(11, 7, 1); \
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0)

// func axpyQ6KNEON(y *float32, a float32, w *byte, nsb int)
//
// y[i] += a·x̂_i, x̂ = (d·sc)·(q − 32) as dequantQ6KBlock computes it:
// the sixteen d·sc in V25-V28.
TEXT ·axpyQ6KNEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F1
	MOVD  w+16(FP), R2
	MOVD  nsb+24(FP), R3
	VDUP  V1.S[0], V1.S4
	Q6CONSTS
ak6loop:
	Q6SCALES(R2)
	SCVTF4S(19, 25)
	SCVTF4S(20, 26)
	SCVTF4S(21, 27)
	SCVTF4S(22, 28)
	FMUL4S(25, 25, 24)
	FMUL4S(26, 26, 24)
	FMUL4S(27, 27, 24)
	FMUL4S(28, 28, 24)
	Q6RAW(R2, 0)
	Q6K0
	AXS16(2, V25.S[0])
	AXS16(3, V25.S[1])
	Q6K1
	AXS16(2, V25.S[2])
	AXS16(3, V25.S[3])
	Q6K2
	AXS16(2, V26.S[0])
	AXS16(3, V26.S[1])
	Q6K3
	AXS16(2, V26.S[2])
	AXS16(3, V26.S[3])
	Q6RAW(R2, 1)
	Q6K0
	AXS16(2, V27.S[0])
	AXS16(3, V27.S[1])
	Q6K1
	AXS16(2, V27.S[2])
	AXS16(3, V27.S[3])
	Q6K2
	AXS16(2, V28.S[0])
	AXS16(3, V28.S[1])
	Q6K3
	AXS16(2, V28.S[2])
	AXS16(3, V28.S[3])
	ADD  $210, R2
	SUBS $1, R3
	BNE  ak6loop
	RET
