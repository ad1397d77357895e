#include "textflag.h"

// Instructions Go's assembler has no mnemonic for, WORD-encoded (register
// numbers n, d, m): SSHLL #0 (sign extension) from 8B/16B to 8H and from
// 4H/8H to 4S, and SCVTF on 4S (int32 to float32 per lane).
#define SXTL8H(n, d) WORD $(0x0F08A400 | (n<<5) | d)
#define SXTL28H(n, d) WORD $(0x4F08A400 | (n<<5) | d)
#define SXTL4S(n, d) WORD $(0x0F10A400 | (n<<5) | d)
#define SXTL24S(n, d) WORD $(0x4F10A400 | (n<<5) | d)
#define SCVTF4S(n, d) WORD $(0x4E21D800 | (n<<5) | d)

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

// The integer dots against Q8 activations with the ARMv8.2 dot-product
// instructions (Cortex-A55/A76/A78 and later; FEAT_DotProd): per block, two
// SDOTs (WORD-encoded: Go's assembler has no mnemonic for them) of the
// weights as signed bytes (Q4_0: the nibbles minus 8) against the block's
// 32 activations leave four int32 lanes; they are converted (SCVTF) and
// multiplied into a float32 vector by the block's d_w·d_x, so no lane sum
// or scalar chain is on the way from one block to the next: the wrappers
// add the four lanes once.
#define SDOT4S(d, n, m) WORD $(0x4E809400 | (m<<16) | (n<<5) | d)

// XSCALE(rx, f): Ff = the activations' next block scale (rx advanced).
#define XSCALE(rx, f) FMOVS.P 4(rx), f

// WSCALE(rw, rt, f, v): Vv = Ff·(the fp16 scale at rw, advanced) in every
// lane (rt scratch; Ff the activations' scale, F4 scratch).
#define WSCALE(rw, rt, f, v) MOVHU.P 2(rw), rt; FMOVS rt, F4; FCVTHS F4, F4; FMULS f, F4, F4; VDUP V4.S[0], v

// Q4BYTES(rw): the next Q4_0 block's quants (rw advanced) as signed bytes,
// elements 0-15 in V5 and 16-31 in V6 (V30 = 0x0f, V31 = 8 in every byte).
#define Q4BYTES(rw) VLD1.P 16(rw), [V6.B16]; VAND V30.B16, V6.B16, V5.B16; VUSHR $4, V6.B16, V6.B16; VSUB V31.B16, V5.B16, V5.B16; VSUB V31.B16, V6.B16, V6.B16

// Q8BYTES(rw): the next Q8_0 block's 32 values (rw advanced) in V5, V6.
#define Q8BYTES(rw) VLD1.P 32(rw), [V5.B16, V6.B16]

// BLOCKACC(s, acc): Vacc += Vs · float(Σ V5·V7 + V6·V8) per lane (V9 scratch).
#define BLOCKACC(s, acc) VEOR V9.B16, V9.B16, V9.B16; SDOT4S(9, 5, 7); SDOT4S(9, 6, 8); SCVTF4S(9, 9); VFMLA V9.S4, s, acc

// DOTQ(BYTES): R0 = w, R1 = xq, R2 = xd, R3 = nb, R4 = acc (four lanes).
#define DOTQ(BYTES) \
	VEOR V0.B16, V0.B16, V0.B16; \
	qloop:; \
	CBZ  R3, qdone; \
	XSCALE(R2, F3); \
	WSCALE(R0, R5, F3, V1.S4); \
	BYTES(R0); \
	VLD1.P 32(R1), [V7.B16, V8.B16]; \
	BLOCKACC(V1.S4, V0.S4); \
	SUB  $1, R3, R3; \
	B    qloop; \
	qdone:; \
	VST1 [V0.S4], (R4); \
	RET

// func dotQ40Q8NEON(w *byte, xq *int8, xd *float32, nb int, acc *[4]float32)
TEXT ·dotQ40Q8NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD acc+32(FP), R4
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	DOTQ(Q4BYTES)

// func dotQ80Q8NEON(w *byte, xq *int8, xd *float32, nb int, acc *[4]float32)
TEXT ·dotQ80Q8NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R1
	MOVD xd+16(FP), R2
	MOVD nb+24(FP), R3
	MOVD acc+32(FP), R4
	DOTQ(Q8BYTES)

// DOT2Q(BYTES, recbytes): the decode FFN's gate and up rows of one record
// (R0 = a, R1 = b) against one token's activations (R2 = xq, R3 = xd,
// loaded once for both), R4 = nb, R5 = acc (a's four lanes, then b's), and
// a prefetch into L2 of the record to come (R6), recbytes (its three rows'
// bytes per block) a block, as the amd64 fused dots do.
#define DOT2Q(BYTES, recbytes) \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	q2loop:; \
	CBZ  R4, q2done; \
	PRFM (R6), PLDL2KEEP; \
	ADD  $recbytes, R6, R6; \
	XSCALE(R3, F3); \
	VLD1.P 32(R2), [V7.B16, V8.B16]; \
	WSCALE(R0, R7, F3, V2.S4); \
	BYTES(R0); \
	BLOCKACC(V2.S4, V0.S4); \
	WSCALE(R1, R7, F3, V2.S4); \
	BYTES(R1); \
	BLOCKACC(V2.S4, V1.S4); \
	SUB  $1, R4, R4; \
	B    q2loop; \
	q2done:; \
	VST1 [V0.S4, V1.S4], (R5); \
	RET

// func dot2Q40Q8NEON(a, b *byte, xq *int8, xd *float32, nb int, acc *[8]float32, next *byte)
TEXT ·dot2Q40Q8NEON(SB), NOSPLIT, $0-56
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD xq+16(FP), R2
	MOVD xd+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD acc+40(FP), R5
	MOVD next+48(FP), R6
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	DOT2Q(Q4BYTES, 54)

// func dot2Q80Q8NEON(a, b *byte, xq *int8, xd *float32, nb int, acc *[8]float32, next *byte)
TEXT ·dot2Q80Q8NEON(SB), NOSPLIT, $0-56
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD xq+16(FP), R2
	MOVD xd+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD acc+40(FP), R5
	MOVD next+48(FP), R6
	DOT2Q(Q8BYTES, 102)

// The decode FFN's fused 16-bit kernels, as on amd64: the gate and up rows
// of one record against one x (x loaded once for both), prefetching the
// record to come, and the down projection four records at a time (y loaded
// and stored once per four rows). n is a multiple of 16.

// DOT2_16: R0 = row a, R1 = row b, R2 = x, R3 = n, R4 = acc (a's four
// partial-sum vectors, then b's), R5 = the next record (three rows: 96
// bytes per 16 elements of a and b).
#define DOT2_16(WIDEN) \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	d2loop:; \
	CMP  $16, R3; \
	BLT  d2done; \
	PRFM (R5), PLDL1KEEP; \
	PRFM 64(R5), PLDL1KEEP; \
	ADD  $96, R5, R5; \
	VLD1.P 64(R2), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	VLD1.P 32(R0), [V4.H8, V5.H8]; \
	WIDEN; \
	VFMLA V10.S4, V6.S4, V0.S4; \
	VFMLA V11.S4, V7.S4, V1.S4; \
	VFMLA V12.S4, V8.S4, V2.S4; \
	VFMLA V13.S4, V9.S4, V3.S4; \
	VLD1.P 32(R1), [V4.H8, V5.H8]; \
	WIDEN; \
	VFMLA V10.S4, V6.S4, V16.S4; \
	VFMLA V11.S4, V7.S4, V17.S4; \
	VFMLA V12.S4, V8.S4, V18.S4; \
	VFMLA V13.S4, V9.S4, V19.S4; \
	SUB  $16, R3, R3; \
	B    d2loop; \
	d2done:; \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R4); \
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R4); \
	RET

// func dot2BF16NEON(a, b *uint16, x *float32, n int, acc *[32]float32, next *byte)
TEXT ·dot2BF16NEON(SB), NOSPLIT, $0-48
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD x+16(FP), R2
	MOVD n+24(FP), R3
	MOVD acc+32(FP), R4
	MOVD next+40(FP), R5
	DOT2_16(WIDEN16)

// func dot2F16NEON(a, b *uint16, x *float32, n int, acc *[32]float32, next *byte)
TEXT ·dot2F16NEON(SB), NOSPLIT, $0-48
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD x+16(FP), R2
	MOVD n+24(FP), R3
	MOVD acc+32(FP), R4
	MOVD next+40(FP), R5
	DOT2_16(WIDENF16)

// ROW16(WIDEN, row, f): V10-V13 += f · the next 16 weights of row.
#define ROW16(WIDEN, row, f) \
	VLD1.P 32(row), [V4.H8, V5.H8]; \
	WIDEN; \
	VFMLA V6.S4, f, V10.S4; \
	VFMLA V7.S4, f, V11.S4; \
	VFMLA V8.S4, f, V12.S4; \
	VFMLA V9.S4, f, V13.S4

// AXPY4_16: R0 = y, R1-R4 = the rows, R5 = n, V20-V23 = the four factors
// in every lane.
#define AXPY4_16(WIDEN) \
	a4loop:; \
	CMP  $16, R5; \
	BLT  a4done; \
	VLD1 (R0), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	ROW16(WIDEN, R1, V20.S4); \
	ROW16(WIDEN, R2, V21.S4); \
	ROW16(WIDEN, R3, V22.S4); \
	ROW16(WIDEN, R4, V23.S4); \
	VST1.P [V10.S4, V11.S4, V12.S4, V13.S4], 64(R0); \
	SUB  $16, R5, R5; \
	B    a4loop; \
	a4done:; \
	RET

// FACTORS loads a[0..3] (R6) into V20-V23, each in every lane.
#define FACTORS \
	FMOVS 0(R6), F20; \
	VDUP  V20.S[0], V20.S4; \
	FMOVS 4(R6), F21; \
	VDUP  V21.S[0], V21.S4; \
	FMOVS 8(R6), F22; \
	VDUP  V22.S[0], V22.S4; \
	FMOVS 12(R6), F23; \
	VDUP  V23.S[0], V23.S4

// func axpy4BF16NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4BF16NEON(SB), NOSPLIT, $0-56
	MOVD y+0(FP), R0
	MOVD a+8(FP), R6
	MOVD w0+16(FP), R1
	MOVD w1+24(FP), R2
	MOVD w2+32(FP), R3
	MOVD w3+40(FP), R4
	MOVD n+48(FP), R5
	FACTORS
	AXPY4_16(WIDEN16)

// func axpy4F16NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *uint16, n int)
TEXT ·axpy4F16NEON(SB), NOSPLIT, $0-56
	MOVD y+0(FP), R0
	MOVD a+8(FP), R6
	MOVD w0+16(FP), R1
	MOVD w1+24(FP), R2
	MOVD w2+32(FP), R3
	MOVD w3+40(FP), R4
	MOVD n+48(FP), R5
	FACTORS
	AXPY4_16(WIDENF16)

// The block types' float axpy, y[i] += a·d·q[i] a block of 32 at a time
// (the decode FFN's down projection and the prefill's per-record adds on
// the float path, which ran the Go reference before): the signed values
// widened 8 → 16 → 32 bits and converted (SXTL*, SCVTF4S at the top), then
// four multiply-adds per 16 outputs with the block's a·d in every lane.

// WIDEN16I8(v): the 16 signed bytes of Vv as float32 in V20-V23
// (V16, V17 scratch).
#define WIDEN16I8(v) SXTL8H(v, 16); SXTL28H(v, 17); SXTL4S(16, 20); SXTL24S(16, 21); SXTL4S(17, 22); SXTL24S(17, 23); SCVTF4S(20, 20); SCVTF4S(21, 21); SCVTF4S(22, 22); SCVTF4S(23, 23)

// AXPY16I8(v): y (R0, advanced) += V1 · the 16 signed bytes of Vv.
#define AXPY16I8(v) WIDEN16I8(v); VLD1 (R0), [V10.S4, V11.S4, V12.S4, V13.S4]; VFMLA V20.S4, V1.S4, V10.S4; VFMLA V21.S4, V1.S4, V11.S4; VFMLA V22.S4, V1.S4, V12.S4; VFMLA V23.S4, V1.S4, V13.S4; VST1.P [V10.S4, V11.S4, V12.S4, V13.S4], 64(R0)

// V1 = a·d in every lane: the block's fp16 scale (R1, advanced) times a (F15).
#define AXPYSCALE MOVHU.P 2(R1), R4; FMOVS R4, F1; FCVTHS F1, F1; FMULS F15, F1, F1; VDUP V1.S[0], V1.S4

// func axpyQ40NEON(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ40NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F15
	MOVD  w+16(FP), R1
	MOVD  nb+24(FP), R2
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
aq4loop:
	CBZ  R2, aq4done
	AXPYSCALE
	VLD1.P 16(R1), [V4.B16]
	VAND V30.B16, V4.B16, V5.B16
	VUSHR $4, V4.B16, V6.B16
	VSUB V31.B16, V5.B16, V5.B16
	VSUB V31.B16, V6.B16, V6.B16
	AXPY16I8(5)
	AXPY16I8(6)
	SUB  $1, R2, R2
	B    aq4loop
aq4done:
	RET

// func axpyQ80NEON(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ80NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS a+8(FP), F15
	MOVD  w+16(FP), R1
	MOVD  nb+24(FP), R2
aq8loop:
	CBZ  R2, aq8done
	AXPYSCALE
	VLD1.P 32(R1), [V5.B16, V6.B16]
	AXPY16I8(5)
	AXPY16I8(6)
	SUB  $1, R2, R2
	B    aq8loop
aq8done:
	RET

// The prefill's four-token forms: one row against four tokens, the row
// loaded and widened (16-bit types) or unpacked (block types) once for
// the four, as amd64's Dot4/Dot4Act tiles do. n (16-bit) is a multiple of
// 16; the wrappers add each token's partial sums.

// DOT4_16(WIDEN): R0 = w, R1-R4 = the four tokens' x, R5 = n, R6 = acc
// (token t's two partial-sum vectors at 32t bytes: V16+2t, V17+2t).
#define TOKFMA(r, a0, a1) VLD1.P 64(r), [V10.S4, V11.S4, V12.S4, V13.S4]; VFMLA V10.S4, V6.S4, a0; VFMLA V11.S4, V7.S4, a1; VFMLA V12.S4, V8.S4, a0; VFMLA V13.S4, V9.S4, a1
#define DOT4_16(WIDEN) \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; \
	VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; \
	VEOR V23.B16, V23.B16, V23.B16; \
	d4loop:; \
	CMP  $16, R5; \
	BLT  d4done; \
	VLD1.P 32(R0), [V4.H8, V5.H8]; \
	WIDEN; \
	TOKFMA(R1, V16.S4, V17.S4); \
	TOKFMA(R2, V18.S4, V19.S4); \
	TOKFMA(R3, V20.S4, V21.S4); \
	TOKFMA(R4, V22.S4, V23.S4); \
	SUB  $16, R5, R5; \
	B    d4loop; \
	d4done:; \
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R6); \
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R6); \
	RET

// LOADX4(base): the four pointers at base into R1-R4.
#define LOADX4(base) MOVD 0(base), R1; MOVD 8(base), R2; MOVD 16(base), R3; MOVD 24(base), R4

// func dot4BF16NEON(w *uint16, x *[4]*float32, n int, acc *[32]float32)
TEXT ·dot4BF16NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R7
	LOADX4(R7)
	MOVD n+16(FP), R5
	MOVD acc+24(FP), R6
	DOT4_16(WIDEN16)

// func dot4F16NEON(w *uint16, x *[4]*float32, n int, acc *[32]float32)
TEXT ·dot4F16NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R7
	LOADX4(R7)
	MOVD n+16(FP), R5
	MOVD acc+24(FP), R6
	DOT4_16(WIDENF16)

// TOKQ(rq, rd, acc): one token's block: its scale (rd, advanced) times the
// weights' (F20) in V2, its 32 activations (rq, advanced) against V5, V6.
#define TOKQ(rq, rd, acc) FMOVS.P 4(rd), F3; FMULS F20, F3, F3; VDUP V3.S[0], V2.S4; VLD1.P 32(rq), [V7.B16, V8.B16]; BLOCKACC(V2.S4, acc)

// DOT4Q(BYTES): R0 = w, R1-R4 = the tokens' quantised activations, R7-R10
// their block scales, R5 = nb, R6 = acc (token t's four lanes at 16t).
#define DOT4Q(BYTES) \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	q4loop:; \
	CBZ  R5, q4done; \
	MOVHU.P 2(R0), R11; \
	FMOVS R11, F20; \
	FCVTHS F20, F20; \
	BYTES(R0); \
	TOKQ(R1, R7, V16.S4); \
	TOKQ(R2, R8, V17.S4); \
	TOKQ(R3, R9, V18.S4); \
	TOKQ(R4, R10, V19.S4); \
	SUB  $1, R5, R5; \
	B    q4loop; \
	q4done:; \
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R6); \
	RET

// LOADQD(q, d): the four activation pointers at q into R1-R4, the four
// scale pointers at d into R7-R10.
#define LOADQD(q, d) LOADX4(q); MOVD 0(d), R7; MOVD 8(d), R8; MOVD 16(d), R9; MOVD 24(d), R10

// func dot4Q40Q8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, nb int, acc *[16]float32)
TEXT ·dot4Q40Q8NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R11
	MOVD xd+16(FP), R12
	LOADQD(R11, R12)
	MOVD nb+24(FP), R5
	MOVD acc+32(FP), R6
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	DOT4Q(Q4BYTES)

// func dot4Q80Q8NEON(w *byte, xq *[4]*int8, xd *[4]*float32, nb int, acc *[16]float32)
TEXT ·dot4Q80Q8NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD xq+8(FP), R11
	MOVD xd+16(FP), R12
	LOADQD(R11, R12)
	MOVD nb+24(FP), R5
	MOVD acc+32(FP), R6
	DOT4Q(Q8BYTES)

// The prefill GEMM's micro-kernels (Table.Gemm), as amd64's: a 4-row × 6-token
// tile over float32 rows and the FFN's down projection for six tokens. NEON
// holds four lanes, so the tile keeps acc[t·4 + r]'s lanes 0-3 (the caller
// clears acc; Fold sums all 16 lanes).

// FMLA by element, Vd.4S += Vn.4S · Vm.S[i] (WORD-encoded: no mnemonic).
#define FMLAE(d, n, m, i) WORD $(0x4F801000 | ((i&1)<<21) | ((m>>4)<<20) | ((m&15)<<16) | ((i>>1)<<11) | (n<<5) | d)

// TILEROW(rx, t): token t's next four values (rx, advanced) against the
// four rows' (V24-V27) into V(4t)..V(4t+3).
#define TILEROW(rx, a0, a1, a2, a3) VLD1.P 16(rx), [V28.S4]; VFMLA V24.S4, V28.S4, a0; VFMLA V25.S4, V28.S4, a1; VFMLA V26.S4, V28.S4, a2; VFMLA V27.S4, V28.S4, a3

// ACCIO(OP): acc[i][0:4] to or from V0-V23 (R11 = acc).
#define ACCIO(OP) \
	OP(0, F0); OP(64, F1); OP(128, F2); OP(192, F3); OP(256, F4); OP(320, F5); \
	OP(384, F6); OP(448, F7); OP(512, F8); OP(576, F9); OP(640, F10); OP(704, F11); \
	OP(768, F12); OP(832, F13); OP(896, F14); OP(960, F15); OP(1024, F16); OP(1088, F17); \
	OP(1152, F18); OP(1216, F19); OP(1280, F20); OP(1344, F21); OP(1408, F22); OP(1472, F23)
#define LDQ(off, f) FMOVQ off(R11), f
#define STQ(off, f) FMOVQ f, off(R11)

// LOADX6(r): the six token pointers of the array at r into R4-R9.
#define LOADX6(r) MOVD 0(r), R4; MOVD 8(r), R5; MOVD 16(r), R6; MOVD 24(r), R7; MOVD 32(r), R8; MOVD 40(r), R9

// func gemm4x6NEON(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)
TEXT ·gemm4x6NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R12
	MOVD 0(R12), R0
	MOVD 8(R12), R1
	MOVD 16(R12), R2
	MOVD 24(R12), R3
	MOVD x+8(FP), R12
	LOADX6(R12)
	MOVD n+16(FP), R10
	MOVD acc+24(FP), R11
	ACCIO(LDQ)
g4loop:
	CBZ  R10, g4done
	VLD1.P 16(R0), [V24.S4]
	VLD1.P 16(R1), [V25.S4]
	VLD1.P 16(R2), [V26.S4]
	VLD1.P 16(R3), [V27.S4]
	TILEROW(R4, V0.S4, V1.S4, V2.S4, V3.S4)
	TILEROW(R5, V4.S4, V5.S4, V6.S4, V7.S4)
	TILEROW(R6, V8.S4, V9.S4, V10.S4, V11.S4)
	TILEROW(R7, V12.S4, V13.S4, V14.S4, V15.S4)
	TILEROW(R8, V16.S4, V17.S4, V18.S4, V19.S4)
	TILEROW(R9, V20.S4, V21.S4, V22.S4, V23.S4)
	SUB  $4, R10, R10
	B    g4loop
g4done:
	ACCIO(STQ)
	RET

// PSTEP(o): the tile's step over columns 4s..4s+3 of a 16-column chunk of
// a packed panel (R0: row i's 16 columns at 64·i, so this step's at o +
// 64·i, o = 16·s), against the six tokens' next four values.
#define PSTEP(o) \
	FMOVQ o(R0), F24; FMOVQ o+64(R0), F25; FMOVQ o+128(R0), F26; FMOVQ o+192(R0), F27; \
	TILEROW(R4, V0.S4, V1.S4, V2.S4, V3.S4); \
	TILEROW(R5, V4.S4, V5.S4, V6.S4, V7.S4); \
	TILEROW(R6, V8.S4, V9.S4, V10.S4, V11.S4); \
	TILEROW(R7, V12.S4, V13.S4, V14.S4, V15.S4); \
	TILEROW(R8, V16.S4, V17.S4, V18.S4, V19.S4); \
	TILEROW(R9, V20.S4, V21.S4, V22.S4, V23.S4)

// gemm4x6NEONPanel is gemm4x6NEON over four rows packed into one panel
// (packWidePanel: 16 columns of each row in turn), so the rows are one
// stream (n a multiple of 16).
// func gemm4x6NEONPanel(w *float32, x *[6]*float32, n int, acc *[24][16]float32)
TEXT ·gemm4x6NEONPanel(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R12
	LOADX6(R12)
	MOVD n+16(FP), R10
	MOVD acc+24(FP), R11
	ACCIO(LDQ)
gp4loop:
	CBZ  R10, gp4done
	PSTEP(0)
	PSTEP(16)
	PSTEP(32)
	PSTEP(48)
	ADD  $256, R0
	SUB  $16, R10, R10
	B    gp4loop
gp4done:
	ACCIO(STQ)
	RET

// DOWNTOK(t, a): V(a)..V(a+3) += the four down vectors (V24-V27) · h_t
// (V28 lanes 0-3 hold tokens 0-3, V29 lanes 0-1 tokens 4-5).
#define DOWNTOK(m, i, a) FMLAE(a, 24, m, i); FMLAE(a+1, 25, m, i); FMLAE(a+2, 26, m, i); FMLAE(a+3, 27, m, i)

// func gemmDown6NEON(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)
// acc[t·accStride + c] += Σ_{j<K} h[j·6 + t]·down[j·ldd + c], c < H (a multiple of 16).
TEXT ·gemmDown6NEON(SB), NOSPLIT, $0-56
	MOVD acc+0(FP), R0
	MOVD accStride+8(FP), R1
	LSL  $2, R1, R1
	MOVD h+16(FP), R2
	MOVD down+24(FP), R3
	MOVD ldd+32(FP), R4
	LSL  $2, R4, R4
	MOVD K+40(FP), R5
	MOVD H+48(FP), R6
dcol:
	CBZ  R6, ddone6
	// The six tokens' 16 accumulators of this column block.
	MOVD R0, R7
	VLD1 (R7), [V0.S4, V1.S4, V2.S4, V3.S4]
	ADD  R1, R7, R7
	VLD1 (R7), [V4.S4, V5.S4, V6.S4, V7.S4]
	ADD  R1, R7, R7
	VLD1 (R7), [V8.S4, V9.S4, V10.S4, V11.S4]
	ADD  R1, R7, R7
	VLD1 (R7), [V12.S4, V13.S4, V14.S4, V15.S4]
	ADD  R1, R7, R7
	VLD1 (R7), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD  R1, R7, R7
	VLD1 (R7), [V20.S4, V21.S4, V22.S4, V23.S4]
	MOVD R2, R8
	MOVD R3, R9
	MOVD R5, R10
drec:
	CBZ  R10, drecdone
	VLD1 (R9), [V24.S4, V25.S4, V26.S4, V27.S4]
	ADD  R4, R9, R9
	VLD1.P 16(R8), [V28.S4]
	FMOVD.P 8(R8), F29
	DOWNTOK(28, 0, 0)
	DOWNTOK(28, 1, 4)
	DOWNTOK(28, 2, 8)
	DOWNTOK(28, 3, 12)
	DOWNTOK(29, 0, 16)
	DOWNTOK(29, 1, 20)
	SUB  $1, R10, R10
	B    drec
drecdone:
	MOVD R0, R7
	VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R7)
	ADD  R1, R7, R7
	VST1 [V4.S4, V5.S4, V6.S4, V7.S4], (R7)
	ADD  R1, R7, R7
	VST1 [V8.S4, V9.S4, V10.S4, V11.S4], (R7)
	ADD  R1, R7, R7
	VST1 [V12.S4, V13.S4, V14.S4, V15.S4], (R7)
	ADD  R1, R7, R7
	VST1 [V16.S4, V17.S4, V18.S4, V19.S4], (R7)
	ADD  R1, R7, R7
	VST1 [V20.S4, V21.S4, V22.S4, V23.S4], (R7)
	ADD  $64, R0, R0
	ADD  $64, R3, R3
	SUB  $16, R6, R6
	B    dcol
ddone6:
	RET

// The block types' four-row axpy, y += Σ_r a[r]·w_r (the decode FFN's down
// projection four records at a time, as amd64's axpy4Q40AVX512): a block's
// 32 outputs are loaded and stored once for the four rows.

// ROWSCALE4(rw, r, v): Vv = a[r] (R5 + 4r) · row r's next block scale (rw,
// advanced) in every lane (F28, F29 scratch).
#define ROWSCALE4(rw, r, v) MOVHU.P 2(rw), R6; FMOVS R6, F28; FCVTHS F28, F28; FMOVS r*4(R5), F29; FMULS F29, F28, F28; VDUP V28.S[0], v

// ROWFMA4(s, y0, y1, y2, y3): y0..y3 += Vs · the widened V20-V23.
#define ROWFMA4(s, y0, y1, y2, y3) VFMLA V20.S4, s, y0; VFMLA V21.S4, s, y1; VFMLA V22.S4, s, y2; VFMLA V23.S4, s, y3

// ROW4(s): the row's signed values in V5 (elements 0-15) and V6 (16-31)
// into the block's outputs (V10-V13, V0-V3).
#define ROW4(s) WIDEN16I8(5); ROWFMA4(s, V10.S4, V11.S4, V12.S4, V13.S4); WIDEN16I8(6); ROWFMA4(s, V0.S4, V1.S4, V2.S4, V3.S4)

// Q4ROW(rw): the next Q4_0 block's quants (rw, advanced) as signed bytes in V5, V6.
#define Q4ROW(rw) VLD1.P 16(rw), [V6.B16]; VAND V30.B16, V6.B16, V5.B16; VUSHR $4, V6.B16, V6.B16; VSUB V31.B16, V5.B16, V5.B16; VSUB V31.B16, V6.B16, V6.B16

// AXPY4BLK(ROW): one block of the four rows (R1-R4) into y (R0, advanced).
#define AXPY4BLK(ROW) \
	ROWSCALE4(R1, 0, V24.S4); \
	ROWSCALE4(R2, 1, V25.S4); \
	ROWSCALE4(R3, 2, V26.S4); \
	ROWSCALE4(R4, 3, V27.S4); \
	ADD  $64, R0, R7; \
	VLD1 (R0), [V10.S4, V11.S4, V12.S4, V13.S4]; \
	VLD1 (R7), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	ROW(R1); \
	ROW4(V24.S4); \
	ROW(R2); \
	ROW4(V25.S4); \
	ROW(R3); \
	ROW4(V26.S4); \
	ROW(R4); \
	ROW4(V27.S4); \
	VST1.P [V10.S4, V11.S4, V12.S4, V13.S4], 64(R0); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)

// func axpy4Q40NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q40NEON(SB), NOSPLIT, $0-56
	MOVD y+0(FP), R0
	MOVD a+8(FP), R5
	MOVD w0+16(FP), R1
	MOVD w1+24(FP), R2
	MOVD w2+32(FP), R3
	MOVD w3+40(FP), R4
	MOVD nb+48(FP), R8
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
a4q4n:
	CBZ  R8, a4q4ndone
	AXPY4BLK(Q4ROW)
	SUB  $1, R8, R8
	B    a4q4n
a4q4ndone:
	RET

// func axpy4Q80NEON(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q80NEON(SB), NOSPLIT, $0-56
	MOVD y+0(FP), R0
	MOVD a+8(FP), R5
	MOVD w0+16(FP), R1
	MOVD w1+24(FP), R2
	MOVD w2+32(FP), R3
	MOVD w3+40(FP), R4
	MOVD nb+48(FP), R8
a4q8n:
	CBZ  R8, a4q8ndone
	AXPY4BLK(Q8BYTES)
	SUB  $1, R8, R8
	B    a4q8n
a4q8ndone:
	RET

// The block types' float-path dots (CPUs without the dot-product extension,
// or WithIntegerPath(false)): Σ_i d·q[i]·x[i] a block of 32 at a time — the
// signed values widened to float32 (V20-V23 per 16), four multiply-adds
// per 16 against x into the block's sum (V0-V3), which is scaled by d into
// the total (V4); the wrappers add its four lanes.

// BLOCKX16(v, b0, b1, b2, b3): the 16 signed bytes of Vv times x's next 16
// (R1, advanced) into b0..b3.
#define BLOCKX16(v) WIDEN16I8(v); VLD1.P 64(R1), [V10.S4, V11.S4, V12.S4, V13.S4]; VFMLA V20.S4, V10.S4, V0.S4; VFMLA V21.S4, V11.S4, V1.S4; VFMLA V22.S4, V12.S4, V2.S4; VFMLA V23.S4, V13.S4, V3.S4

// DOTF(BYTES): R0 = w, R1 = x, R2 = nb, R3 = acc (four lanes).
#define DOTF(BYTES) \
	VEOR V4.B16, V4.B16, V4.B16; \
	dfloop:; \
	CBZ  R2, dfdone; \
	MOVHU.P 2(R0), R6; \
	FMOVS R6, F28; \
	FCVTHS F28, F28; \
	VDUP V28.S[0], V28.S4; \
	BYTES(R0); \
	VEOR V0.B16, V0.B16, V0.B16; \
	VEOR V1.B16, V1.B16, V1.B16; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	BLOCKX16(5); \
	BLOCKX16(6); \
	VFMLA V0.S4, V28.S4, V4.S4; \
	VFMLA V1.S4, V28.S4, V4.S4; \
	VFMLA V2.S4, V28.S4, V4.S4; \
	VFMLA V3.S4, V28.S4, V4.S4; \
	SUB  $1, R2, R2; \
	B    dfloop; \
	dfdone:; \
	VST1 [V4.S4], (R3); \
	RET

// func dotQ40NEON(w *byte, x *float32, nb int, acc *[4]float32)
TEXT ·dotQ40NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD acc+24(FP), R3
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	DOTF(Q4ROW)

// func dotQ80NEON(w *byte, x *float32, nb int, acc *[4]float32)
TEXT ·dotQ80NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD nb+16(FP), R2
	MOVD acc+24(FP), R3
	DOTF(Q8BYTES)
