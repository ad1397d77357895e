#include "textflag.h"

// The tiled down projection (Ops.AxpyTiles; amd64's tiles_amd64.s says
// why) for Q8_0 with NEON: a chunk of 64 outputs in V0-V15 while every
// record adds its piece (two blocks, 68 bytes), in record order, with the
// single-row axpy's arithmetic (the block's fp16 d widened, times h[q] in
// a scalar multiply, one FMLA per value), so the sums are its to the bit.

// SSHLL #0 (sign extension) and SCVTF, WORD-encoded as in dot_arm64.s.
#define TSXTL8H(n, d) WORD $(0x0F08A400 | (n<<5) | d)
#define TSXTL28H(n, d) WORD $(0x4F08A400 | (n<<5) | d)
#define TSXTL4S(n, d) WORD $(0x0F10A400 | (n<<5) | d)
#define TSXTL24S(n, d) WORD $(0x4F10A400 | (n<<5) | d)
#define TSCVTF4S(n, d) WORD $(0x4E21D800 | (n<<5) | d)

// TWIDEN(v): the 16 signed bytes of Vv as float32 in V20-V23 (V16, V17
// scratch).
#define TWIDEN(v) TSXTL8H(v, 16); TSXTL28H(v, 17); TSXTL4S(16, 20); TSXTL24S(16, 21); TSXTL4S(17, 22); TSXTL24S(17, 23); TSCVTF4S(20, 20); TSCVTF4S(21, 21); TSCVTF4S(22, 22); TSCVTF4S(23, 23)

// TFMA4(a0, a1, a2, a3): V20-V23 times the scale (V26) into four accumulators.
#define TFMA4(a0, a1, a2, a3) VFMLA V20.S4, V26.S4, a0; VFMLA V21.S4, V26.S4, a1; VFMLA V22.S4, V26.S4, a2; VFMLA V23.S4, V26.S4, a3

// TBLOCK(a0..a7): one block of the piece at R11 (advanced) into eight
// accumulators: its scale d·h (h in F27) in every lane of V26, then its
// 32 values.
#define TBLOCK(a0, a1, a2, a3, a4, a5, a6, a7) MOVHU.P 2(R11), R4; FMOVS R4, F26; FCVTHS F26, F26; FMULS F27, F26, F26; VDUP V26.S[0], V26.S4; VLD1.P 32(R11), [V24.B16, V25.B16]; TWIDEN(24); TFMA4(a0, a1, a2, a3); TWIDEN(25); TFMA4(a4, a5, a6, a7)

// Q4_0 the same: a block's 16 bytes split into low and high nibbles less
// 8 (values 0-15 and 16-31), as the single-row axpy does. V30 = 15 and
// V31 = 8 in every byte.
#define TBLOCKQ4(a0, a1, a2, a3, a4, a5, a6, a7) MOVHU.P 2(R11), R4; FMOVS R4, F26; FCVTHS F26, F26; FMULS F27, F26, F26; VDUP V26.S[0], V26.S4; VLD1.P 16(R11), [V24.B16]; VAND V30.B16, V24.B16, V25.B16; VUSHR $4, V24.B16, V24.B16; VSUB V31.B16, V25.B16, V25.B16; VSUB V31.B16, V24.B16, V24.B16; TWIDEN(25); TFMA4(a0, a1, a2, a3); TWIDEN(24); TFMA4(a4, a5, a6, a7)


// TILESN(BLOCK, ADDR): the chunk loop of every kernel here (R0 = y, R8 =
// h, R1 = w, R2 = n, R3 = chunks, R9 = cstride): a chunk of y in V0-V15,
// every record's piece added by BLOCK (which advances R11 past it), stored
// back. ADDR places R11 at a record's piece: the next one (SEQN).
#define SEQN MOVD R11, R11
#define TILESN(BLOCK, ADDR) \
	tnchunk:; \
	MOVD R0, R5; \
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]; \
	VLD1.P 64(R5), [V8.S4, V9.S4, V10.S4, V11.S4]; \
	VLD1 (R5), [V12.S4, V13.S4, V14.S4, V15.S4]; \
	MOVD R1, R11; \
	MOVD R8, R12; \
	MOVD R2, R13; \
	tnrec:; \
	ADDR; \
	FMOVS.P 4(R12), F27; \
	BLOCK(V0.S4, V1.S4, V2.S4, V3.S4, V4.S4, V5.S4, V6.S4, V7.S4); \
	BLOCK(V8.S4, V9.S4, V10.S4, V11.S4, V12.S4, V13.S4, V14.S4, V15.S4); \
	SUB  $1, R13, R13; \
	CBNZ R13, tnrec; \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0); \
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R0); \
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R0); \
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R0); \
	ADD  R9, R1, R1; \
	SUB  $1, R3, R3; \
	CBNZ R3, tnchunk; \
	RET

#define ARGSN MOVD y+0(FP), R0; MOVD h+8(FP), R8; MOVD w+16(FP), R1; MOVD n+24(FP), R2; MOVD chunks+32(FP), R3; MOVD cstride+40(FP), R9
#define Q4CONSTN VMOVI $15, V30.B16; VMOVI $8, V31.B16

// func axpyTilesQ80NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ80NEON(SB), NOSPLIT, $0-48
	ARGSN
	TILESN(TBLOCK, SEQN)

// func axpyTilesQ40NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ40NEON(SB), NOSPLIT, $0-48
	ARGSN
	Q4CONSTN
	TILESN(TBLOCKQ4, SEQN)

// F16 the same (pieces of 64 halves, 128 bytes): FCVTL/FCVTL2 (half to
// single, WORD-encoded) and one FMLA a value with h[q], as the row axpy.
#define TFCVTL(n, d) WORD $(0x0E217800 | (n<<5) | d)
#define TFCVTL2(n, d) WORD $(0x4E217800 | (n<<5) | d)
#define TF16HALF(a0, a1, a2, a3) VLD1.P 32(R11), [V24.H8, V25.H8]; TFCVTL(24, 20); TFCVTL2(24, 21); TFCVTL(25, 22); TFCVTL2(25, 23); TFMA4(a0, a1, a2, a3)
#define TF16(a0, a1, a2, a3, a4, a5, a6, a7) VDUP V27.S[0], V26.S4; TF16HALF(a0, a1, a2, a3); TF16HALF(a4, a5, a6, a7)

// func axpyTilesF16NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesF16NEON(SB), NOSPLIT, $0-48
	ARGSN
	TILESN(TF16, SEQN)

// BF16 the same: each half zero-extended to a word (UXTL/UXTL2) and shifted
// into its high half, one FMLA a value with h[q], as the row axpy.
#define TBF16HALF(a0, a1, a2, a3) VLD1.P 32(R11), [V24.H8, V25.H8]; VUXTL V24.H4, V20.S4; VUXTL2 V24.H8, V21.S4; VUXTL V25.H4, V22.S4; VUXTL2 V25.H8, V23.S4; VSHL $16, V20.S4, V20.S4; VSHL $16, V21.S4, V21.S4; VSHL $16, V22.S4, V22.S4; VSHL $16, V23.S4, V23.S4; TFMA4(a0, a1, a2, a3)
#define TBF16(a0, a1, a2, a3, a4, a5, a6, a7) VDUP V27.S[0], V26.S4; TBF16HALF(a0, a1, a2, a3); TBF16HALF(a4, a5, a6, a7)

// func axpyTilesBF16NEON(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesBF16NEON(SB), NOSPLIT, $0-48
	ARGSN
	TILESN(TBF16, SEQN)

