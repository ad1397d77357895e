#include "textflag.h"
#include "amd64_macros.h"
#include "avx512_scales.h"

// AVX-512 float kernels (needs AVX-512F and AVX-512BW, plus F16C): the
// BF16 dot and axpy, and the Q4_0/Q8_0 dots, axpys and four-row axpys
// that widen blocks to float32 (16 lanes a register).
// Comments here say what and why; the timings behind the choices are in
// docs/performance.md.

// AVX-512F variants of the BF16 dot and axpy (16 lanes per register); n is
// a multiple of 16.
#define LOADBF16Z(off, r) VPMOVZXWD off(SI), r; VPSLLD $16, r, r

// func dotBF16AVX512(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX512(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
z64:
	CMPQ CX, $64
	JL   z16
	LOADBF16Z(0, Z4)
	LOADBF16Z(32, Z5)
	LOADBF16Z(64, Z6)
	LOADBF16Z(96, Z7)
	VFMADD231PS 0(DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ $128, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  z64
z16:
	CMPQ CX, $16
	JL   zdone
	LOADBF16Z(0, Z4)
	VFMADD231PS 0(DI), Z4, Z0
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  z16
zdone:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyBF16AVX512(y *float32, a float32, w *uint16, n int)
TEXT ·axpyBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), CX
za64:
	CMPQ CX, $64
	JL   za16
	LOADBF16Z(0, Z4)
	LOADBF16Z(32, Z5)
	LOADBF16Z(64, Z6)
	LOADBF16Z(96, Z7)
	VMOVUPS 0(DI), Z8
	VMOVUPS 64(DI), Z9
	VMOVUPS 128(DI), Z10
	VMOVUPS 192(DI), Z11
	VFMADD231PS Z4, Z15, Z8
	VFMADD231PS Z5, Z15, Z9
	VFMADD231PS Z6, Z15, Z10
	VFMADD231PS Z7, Z15, Z11
	VMOVUPS Z8, 0(DI)
	VMOVUPS Z9, 64(DI)
	VMOVUPS Z10, 128(DI)
	VMOVUPS Z11, 192(DI)
	ADDQ $128, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  za64
za16:
	CMPQ CX, $16
	JL   zadone
	LOADBF16Z(0, Z4)
	VMOVUPS 0(DI), Z8
	VFMADD231PS Z4, Z15, Z8
	VMOVUPS Z8, 0(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  za16
zadone:
	VZEROUPPER
	RET

// AVX-512F block-quantised kernels (16 lanes). A Q4_0 block's nibbles are
// widened to dwords once; VPERMPS then looks each nibble (its low four bits
// are the index) up in a register holding the floats −8…7, so a block
// becomes two float vectors in four instructions (AVX2 needs fourteen).
// Q8_0 widens with VPMOVSXBD and converts. The block scale is broadcast
// as a half and widened with VCVTPH2PS.
#include "q4values.h"

// Q4ZW/Q8ZW(off, base, lo, hi): the block at off(base) widened to
// float32, elements 0-15 in lo and 16-31 in hi (Q4ZW needs the table in
// Z2); Q4Z and Q8Z the same from SI.
#define Q4ZW(off, base, lo, hi) VPMOVZXBD off+2(base), lo; VPSRLD $4, lo, hi; VPERMPS Z2, lo, lo; VPERMPS Z2, hi, hi
#define Q8ZW(off, base, lo, hi) VPMOVSXBD off+2(base), lo; VPMOVSXBD off+18(base), hi; VCVTDQ2PS lo, lo; VCVTDQ2PS hi, hi
#define Q4Z(off, lo, hi) Q4ZW(off, SI, lo, hi)
#define Q8Z(off, lo, hi) Q8ZW(off, SI, lo, hi)
#define SCALEZ(off, y, z) VPBROADCASTW off(SI), y; VCVTPH2PS y, z

// One block's dot: Z4/Z5 widened weights, Z6 scale, into accumulator acc.
#define DOTBLKZ(xoff, lo, hi, sc, acc) VMULPS xoff(DI), lo, lo; VFMADD231PS xoff+64(DI), hi, lo; VFMADD231PS lo, sc, acc

// Block k of a chunk of 16 (bs bytes a block, WIDEN its Q4ZW or Q8ZW) in
// the chunk loops below, its scale (times a, for the axpys) the float at
// 4k(SP): DOTBLKZS adds its dot with x at 128k(DI) to acc; AXPYBLKZS adds
// it into y at 128k(DI).
#define DOTBLKZS(WIDEN, bs, k, acc) WIDEN(k*bs, SI, Z4, Z5); VMULPS k*128(DI), Z4, Z4; VFMADD231PS k*128+64(DI), Z5, Z4; VFMADD231PS.BCST k*4(SP), Z4, acc
#define AXPYBLKZS(WIDEN, bs, k) WIDEN(k*bs, SI, Z4, Z5); VMOVUPS k*128(DI), Z8; VMOVUPS k*128+64(DI), Z9; VFMADD231PS.BCST k*4(SP), Z4, Z8; VFMADD231PS.BCST k*4(SP), Z5, Z9; VMOVUPS Z8, k*128(DI); VMOVUPS Z9, k*128+64(DI)

// The kernels take chunks of 16 blocks: the 16 half scales are gathered
// by SCALES16Q4/SCALES16Q8 (word permutes), widened by one VCVTPH2PS and
// stored to a contiguous array on the stack, and each block's scale is
// then an embedded broadcast from memory (.BCST), which costs no
// shuffle. On AVX-512 only ports 0 and 5 run vector ALU work, and port 5
// is also the one every widening and VPERMPS needs; broadcasting scales
// with VPBROADCASTW would add two more shuffles per block. A tail of
// fewer than 16 blocks goes one block at a time. Four accumulators hide
// the FMA latency.
// func dotQ40AVX512(w *byte, x *float32, nb int) float32
TEXT ·dotQ40AVX512(SB), NOSPLIT, $96-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VMOVUPS q4values<>(SB), Z2
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Q4SCALESETUP
q4zchunk:
	CMPQ CX, $16
	JL   q4ztail
	SCALES16Q4(SI, Z3)
	VMOVUPS Z3, 0(SP)
	DOTBLKZS(Q4ZW, 18, 0, Z0)
	DOTBLKZS(Q4ZW, 18, 1, Z1)
	DOTBLKZS(Q4ZW, 18, 2, Z12)
	DOTBLKZS(Q4ZW, 18, 3, Z13)
	DOTBLKZS(Q4ZW, 18, 4, Z0)
	DOTBLKZS(Q4ZW, 18, 5, Z1)
	DOTBLKZS(Q4ZW, 18, 6, Z12)
	DOTBLKZS(Q4ZW, 18, 7, Z13)
	DOTBLKZS(Q4ZW, 18, 8, Z0)
	DOTBLKZS(Q4ZW, 18, 9, Z1)
	DOTBLKZS(Q4ZW, 18, 10, Z12)
	DOTBLKZS(Q4ZW, 18, 11, Z13)
	DOTBLKZS(Q4ZW, 18, 12, Z0)
	DOTBLKZS(Q4ZW, 18, 13, Z1)
	DOTBLKZS(Q4ZW, 18, 14, Z12)
	DOTBLKZS(Q4ZW, 18, 15, Z13)
	ADDQ $288, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  q4zchunk
q4ztail:
	TESTQ CX, CX
	JE    q4zdone
	Q4Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	DOTBLKZ(0, Z4, Z5, Z6, Z0)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q4ztail
q4zdone:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dotQ80AVX512(w *byte, x *float32, nb int) float32
TEXT ·dotQ80AVX512(SB), NOSPLIT, $96-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	Q8SCALESETUP
q8zchunk:
	CMPQ CX, $16
	JL   q8ztail
	SCALES16Q8(SI, Z3)
	VMOVUPS Z3, 0(SP)
	DOTBLKZS(Q8ZW, 34, 0, Z0)
	DOTBLKZS(Q8ZW, 34, 1, Z1)
	DOTBLKZS(Q8ZW, 34, 2, Z12)
	DOTBLKZS(Q8ZW, 34, 3, Z13)
	DOTBLKZS(Q8ZW, 34, 4, Z0)
	DOTBLKZS(Q8ZW, 34, 5, Z1)
	DOTBLKZS(Q8ZW, 34, 6, Z12)
	DOTBLKZS(Q8ZW, 34, 7, Z13)
	DOTBLKZS(Q8ZW, 34, 8, Z0)
	DOTBLKZS(Q8ZW, 34, 9, Z1)
	DOTBLKZS(Q8ZW, 34, 10, Z12)
	DOTBLKZS(Q8ZW, 34, 11, Z13)
	DOTBLKZS(Q8ZW, 34, 12, Z0)
	DOTBLKZS(Q8ZW, 34, 13, Z1)
	DOTBLKZS(Q8ZW, 34, 14, Z12)
	DOTBLKZS(Q8ZW, 34, 15, Z13)
	ADDQ $544, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  q8zchunk
q8ztail:
	TESTQ CX, CX
	JE    q8zdone
	Q8Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	DOTBLKZ(0, Z4, Z5, Z6, Z0)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  q8ztail
q8zdone:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// y[i] += a·d·w[i] for one block: sc = a·d, lo/hi the widened weights.
#define AXPYBLKZ(lo, hi, sc) VFMADD213PS 0(DI), sc, lo; VFMADD213PS 64(DI), sc, hi; VMOVUPS lo, 0(DI); VMOVUPS hi, 64(DI)

// func axpyQ40AVX512(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ40AVX512(SB), NOSPLIT, $96-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
	VMOVUPS q4values<>(SB), Z2
	Q4SCALESETUP
aq4zchunk:
	CMPQ CX, $16
	JL   aq4ztail
	SCALES16Q4(SI, Z3)
	VMULPS Z15, Z3, Z3
	VMOVUPS Z3, 0(SP)
	AXPYBLKZS(Q4ZW, 18, 0)
	AXPYBLKZS(Q4ZW, 18, 1)
	AXPYBLKZS(Q4ZW, 18, 2)
	AXPYBLKZS(Q4ZW, 18, 3)
	AXPYBLKZS(Q4ZW, 18, 4)
	AXPYBLKZS(Q4ZW, 18, 5)
	AXPYBLKZS(Q4ZW, 18, 6)
	AXPYBLKZS(Q4ZW, 18, 7)
	AXPYBLKZS(Q4ZW, 18, 8)
	AXPYBLKZS(Q4ZW, 18, 9)
	AXPYBLKZS(Q4ZW, 18, 10)
	AXPYBLKZS(Q4ZW, 18, 11)
	AXPYBLKZS(Q4ZW, 18, 12)
	AXPYBLKZS(Q4ZW, 18, 13)
	AXPYBLKZS(Q4ZW, 18, 14)
	AXPYBLKZS(Q4ZW, 18, 15)
	ADDQ $288, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  aq4zchunk
aq4ztail:
	TESTQ CX, CX
	JE    aq4zdone
	Q4Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	VMULPS Z15, Z6, Z6
	AXPYBLKZ(Z4, Z5, Z6)
	ADDQ $18, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq4ztail
aq4zdone:
	VZEROUPPER
	RET

// func axpyQ80AVX512(y *float32, a float32, w *byte, nb int)
TEXT ·axpyQ80AVX512(SB), NOSPLIT, $96-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z15
	MOVQ w+16(FP), SI
	MOVQ nb+24(FP), CX
	Q8SCALESETUP
aq8zchunk:
	CMPQ CX, $16
	JL   aq8ztail
	SCALES16Q8(SI, Z3)
	VMULPS Z15, Z3, Z3
	VMOVUPS Z3, 0(SP)
	AXPYBLKZS(Q8ZW, 34, 0)
	AXPYBLKZS(Q8ZW, 34, 1)
	AXPYBLKZS(Q8ZW, 34, 2)
	AXPYBLKZS(Q8ZW, 34, 3)
	AXPYBLKZS(Q8ZW, 34, 4)
	AXPYBLKZS(Q8ZW, 34, 5)
	AXPYBLKZS(Q8ZW, 34, 6)
	AXPYBLKZS(Q8ZW, 34, 7)
	AXPYBLKZS(Q8ZW, 34, 8)
	AXPYBLKZS(Q8ZW, 34, 9)
	AXPYBLKZS(Q8ZW, 34, 10)
	AXPYBLKZS(Q8ZW, 34, 11)
	AXPYBLKZS(Q8ZW, 34, 12)
	AXPYBLKZS(Q8ZW, 34, 13)
	AXPYBLKZS(Q8ZW, 34, 14)
	AXPYBLKZS(Q8ZW, 34, 15)
	ADDQ $544, SI
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  aq8zchunk
aq8ztail:
	TESTQ CX, CX
	JE    aq8zdone
	Q8Z(0, Z4, Z5)
	SCALEZ(0, Y6, Z6)
	VMULPS Z15, Z6, Z6
	AXPYBLKZ(Z4, Z5, Z6)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JMP  aq8ztail
aq8zdone:
	VZEROUPPER
	RET

// The four-row axpys' chunk loops. ROWSCALEZ(SCALES, base, r): row r's 16
// block scales (at base) times its factor a[r] (at 4r(R9)), to 64r(SP).
// AXPY4BLKZ(WIDEN, bs, k): block k (bs bytes a block) of each row R10-R13
// into y at 128k(DI), loaded and stored once for the four; row r's scale
// is the float at 4k+64r(SP).
#define ROWSCALEZ(SCALES, base, r) SCALES(base, Z3); VBROADCASTSS r*4(R9), Z6; VMULPS Z6, Z3, Z3; VMOVUPS Z3, r*64(SP)
#define ROWFMAZ(WIDEN, bs, k, base, r) WIDEN(k*bs, base, Z4, Z5); VFMADD231PS.BCST k*4+r*64(SP), Z4, Z8; VFMADD231PS.BCST k*4+r*64(SP), Z5, Z9
#define AXPY4BLKZ(WIDEN, bs, k) \
	VMOVUPS k*128(DI), Z8; \
	VMOVUPS k*128+64(DI), Z9; \
	ROWFMAZ(WIDEN, bs, k, R10, 0); \
	ROWFMAZ(WIDEN, bs, k, R11, 1); \
	ROWFMAZ(WIDEN, bs, k, R12, 2); \
	ROWFMAZ(WIDEN, bs, k, R13, 3); \
	VMOVUPS Z8, k*128(DI); \
	VMOVUPS Z9, k*128+64(DI)

// Four Q4_0 rows into one y: y[i] += Σ_r a[r]·w_r[i], the decode FFN's down
// projection four records at a time, so y is loaded and stored once per
// four rows instead of once per row. nb must be a multiple of 16.
// func axpy4Q40AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q40AVX512(SB), NOSPLIT, $384-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nb+48(FP), CX
	VMOVUPS q4values<>(SB), Z2
	Q4SCALESETUP
a4q4chunk:
	CMPQ CX, $16
	JL   a4q4done
	ROWSCALEZ(SCALES16Q4, R10, 0)
	ROWSCALEZ(SCALES16Q4, R11, 1)
	ROWSCALEZ(SCALES16Q4, R12, 2)
	ROWSCALEZ(SCALES16Q4, R13, 3)
	AXPY4BLKZ(Q4ZW, 18, 0)
	AXPY4BLKZ(Q4ZW, 18, 1)
	AXPY4BLKZ(Q4ZW, 18, 2)
	AXPY4BLKZ(Q4ZW, 18, 3)
	AXPY4BLKZ(Q4ZW, 18, 4)
	AXPY4BLKZ(Q4ZW, 18, 5)
	AXPY4BLKZ(Q4ZW, 18, 6)
	AXPY4BLKZ(Q4ZW, 18, 7)
	AXPY4BLKZ(Q4ZW, 18, 8)
	AXPY4BLKZ(Q4ZW, 18, 9)
	AXPY4BLKZ(Q4ZW, 18, 10)
	AXPY4BLKZ(Q4ZW, 18, 11)
	AXPY4BLKZ(Q4ZW, 18, 12)
	AXPY4BLKZ(Q4ZW, 18, 13)
	AXPY4BLKZ(Q4ZW, 18, 14)
	AXPY4BLKZ(Q4ZW, 18, 15)
	ADDQ $288, R10
	ADDQ $288, R11
	ADDQ $288, R12
	ADDQ $288, R13
	ADDQ $2048, DI
	SUBQ $16, CX
	JMP  a4q4chunk
a4q4done:
	VZEROUPPER
	RET

// Four Q8_0 rows into one y, y[i] += Σ_r a[r]·w_r[i] (the decode FFN's
// down projection four records at a time, y loaded and stored once per
// four rows). Each row's 16 scales of a chunk are gathered, multiplied by
// its factor and kept on the stack for embedded broadcasts. nb must be a
// multiple of 16.
// func axpy4Q80AVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
TEXT ·axpy4Q80AVX512(SB), NOSPLIT, $256-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nb+48(FP), CX
	Q8SCALESETUP
a4q8chunk:
	ROWSCALEZ(SCALES16Q8, R10, 0)
	ROWSCALEZ(SCALES16Q8, R11, 1)
	ROWSCALEZ(SCALES16Q8, R12, 2)
	ROWSCALEZ(SCALES16Q8, R13, 3)
	AXPY4BLKZ(Q8ZW, 34, 0)
	AXPY4BLKZ(Q8ZW, 34, 1)
	AXPY4BLKZ(Q8ZW, 34, 2)
	AXPY4BLKZ(Q8ZW, 34, 3)
	AXPY4BLKZ(Q8ZW, 34, 4)
	AXPY4BLKZ(Q8ZW, 34, 5)
	AXPY4BLKZ(Q8ZW, 34, 6)
	AXPY4BLKZ(Q8ZW, 34, 7)
	AXPY4BLKZ(Q8ZW, 34, 8)
	AXPY4BLKZ(Q8ZW, 34, 9)
	AXPY4BLKZ(Q8ZW, 34, 10)
	AXPY4BLKZ(Q8ZW, 34, 11)
	AXPY4BLKZ(Q8ZW, 34, 12)
	AXPY4BLKZ(Q8ZW, 34, 13)
	AXPY4BLKZ(Q8ZW, 34, 14)
	AXPY4BLKZ(Q8ZW, 34, 15)
	ADDQ $544, R10
	ADDQ $544, R11
	ADDQ $544, R12
	ADDQ $544, R13
	ADDQ $2048, DI
	SUBQ $16, CX
	JNZ  a4q8chunk
	VZEROUPPER
	RET

// The prefill FFN's h = silu(g)·u over records whose g and u sit in pairs
// (gu[2i], gu[2i+1]), 16 records a step: the pairs split by VPERMT2PS,
// e^−g as SiLU's scalar expf computes it (x = n·ln2 + r, Taylor to r⁷)
// with VSCALEFPS for the 2^n (which saturates to 0 and +Inf by itself),
// then g / (1 + e^−g) · u. n is a multiple of 16.
DATA silueven<>+0(SB)/4, $0
DATA silueven<>+4(SB)/4, $2
DATA silueven<>+8(SB)/4, $4
DATA silueven<>+12(SB)/4, $6
DATA silueven<>+16(SB)/4, $8
DATA silueven<>+20(SB)/4, $10
DATA silueven<>+24(SB)/4, $12
DATA silueven<>+28(SB)/4, $14
DATA silueven<>+32(SB)/4, $16
DATA silueven<>+36(SB)/4, $18
DATA silueven<>+40(SB)/4, $20
DATA silueven<>+44(SB)/4, $22
DATA silueven<>+48(SB)/4, $24
DATA silueven<>+52(SB)/4, $26
DATA silueven<>+56(SB)/4, $28
DATA silueven<>+60(SB)/4, $30
GLOBL silueven<>(SB), RODATA|NOPTR, $64

#define BCASTF(imm, z) MOVL imm, AX; VPBROADCASTD AX, z

// EXPCONSTS loads the constants of EXPZ4 into Z22-Z31 (log2 e, ln 2 in two
// parts, 1, then the Taylor coefficients 1/2 … 1/5040); EXPZ4 sets Z7 =
// e^Z4 as expf computes it (n = round(Z4·log2 e), r = Z4 − n·ln 2, Taylor
// to r⁷) with VSCALEFPS for the 2^n (saturating to 0 and +Inf by itself);
// Z5 and Z6 are scratch.
#define EXPCONSTS BCASTF($0x3fb8aa3b, Z22); BCASTF($0x3f318000, Z23); BCASTF($0xb95e8083, Z24); BCASTF($0x3f800000, Z25); BCASTF($0x3f000000, Z26); BCASTF($0x3e2aaaab, Z27); BCASTF($0x3d2aaaab, Z28); BCASTF($0x3c088889, Z29); BCASTF($0x3ab60b61, Z30); BCASTF($0x39500d01, Z31)
#define EXPZ4 VMULPS Z22, Z4, Z5; VRNDSCALEPS $0, Z5, Z5; VMOVAPS Z4, Z6; VFNMADD231PS Z23, Z5, Z6; VFNMADD231PS Z24, Z5, Z6; VMOVAPS Z31, Z7; VFMADD213PS Z30, Z6, Z7; VFMADD213PS Z29, Z6, Z7; VFMADD213PS Z28, Z6, Z7; VFMADD213PS Z27, Z6, Z7; VFMADD213PS Z26, Z6, Z7; VFMADD213PS Z25, Z6, Z7; VFMADD213PS Z25, Z6, Z7; VSCALEFPS Z5, Z7, Z7

// func siluMulAVX512(h *float32, gu *float32, n int)
TEXT ·siluMulAVX512(SB), NOSPLIT, $0-24
	MOVQ h+0(FP), DI
	MOVQ gu+8(FP), SI
	MOVQ n+16(FP), CX
	VMOVDQU32 silueven<>(SB), Z20
	MOVL $1, AX
	VPBROADCASTD AX, Z21
	VPADDD Z21, Z20, Z21
	EXPCONSTS
silu16:
	CMPQ CX, $16
	JL   siludone
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVAPS Z0, Z2
	VPERMT2PS Z1, Z20, Z2
	VMOVAPS Z0, Z3
	VPERMT2PS Z1, Z21, Z3
	VXORPS Z4, Z4, Z4
	VSUBPS Z2, Z4, Z4
	EXPZ4
	VADDPS Z25, Z7, Z7
	VDIVPS Z7, Z2, Z2
	VMULPS Z3, Z2, Z2
	VMOVUPS Z2, 0(DI)
	ADDQ $128, SI
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  silu16
siludone:
	VZEROUPPER
	RET

// The softmax's exponentials: x[i] = e^(x[i] − m) for i < n (a multiple of
// 16), returning their sum (EXPZ4, as siluMulAVX512).
// func expSubSumAVX512(x *float32, n int, m float32) float32
TEXT ·expSubSumAVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Z20
	EXPCONSTS
	VXORPS Z0, Z0, Z0
exps16:
	VMOVUPS 0(DI), Z4
	VSUBPS Z20, Z4, Z4
	EXPZ4
	VMOVUPS Z7, 0(DI)
	VADDPS Z7, Z0, Z0
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  exps16
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VADDPS X1, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// The softmax's other two passes: the largest of x[0:n) and x[i] *= s,
// n a multiple of 16 (four accumulators for the maximum).
// func maxAVX512(x *float32, n int) float32
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VMOVUPS 0(DI), Z0
	VMOVAPS Z0, Z1
	VMOVAPS Z0, Z2
	VMOVAPS Z0, Z3
max64:
	CMPQ CX, $64
	JL   max16
	VMAXPS 0(DI), Z0, Z0
	VMAXPS 64(DI), Z1, Z1
	VMAXPS 128(DI), Z2, Z2
	VMAXPS 192(DI), Z3, Z3
	ADDQ $256, DI
	SUBQ $64, CX
	JMP  max64
max16:
	TESTQ CX, CX
	JZ    maxdone
	VMAXPS 0(DI), Z0, Z0
	ADDQ $64, DI
	SUBQ $16, CX
	JMP  max16
maxdone:
	VMAXPS Z1, Z0, Z0
	VMAXPS Z3, Z2, Z2
	VMAXPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleAVX512(x *float32, n int, s float32)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Z1
scale16:
	VMULPS 0(DI), Z1, Z0
	VMOVUPS Z0, 0(DI)
	ADDQ $64, DI
	SUBQ $16, CX
	JNZ  scale16
	VZEROUPPER
	RET

// The FMA ceiling with 512-bit registers: as fmaPeakAVX2, sixteen lanes a
// chain. On the AMD EPYC this project measures on, 512-bit FMAs issue at
// twice the float rate of 256-bit ones (228 against 110 GFLOP/s a thread,
// BenchmarkMicroFMAPeakAVX512 against BenchmarkMicroFMAPeak), so the AVX2
// loop would understate the peak the AVX-512 kernels run against by half.
// func fmaPeakAVX512(iters int) float32
TEXT ·fmaPeakAVX512(SB), NOSPLIT, $0-12
	MOVQ iters+0(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPTERNLOGD $0xff, Z14, Z14, Z14
	VPSRLD $10, Z14, Z14 // a small positive float pattern, never denormal
	VMOVAPS Z14, Z15
fma512peak:
	VFMADD231PS Z14, Z15, Z0
	VFMADD231PS Z14, Z15, Z1
	VFMADD231PS Z14, Z15, Z2
	VFMADD231PS Z14, Z15, Z3
	VFMADD231PS Z14, Z15, Z4
	VFMADD231PS Z14, Z15, Z5
	VFMADD231PS Z14, Z15, Z6
	VFMADD231PS Z14, Z15, Z7
	VFMADD231PS Z14, Z15, Z8
	VFMADD231PS Z14, Z15, Z9
	DECQ CX
	JNZ  fma512peak
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	HSUM
	VZEROUPPER
	MOVSS X0, ret+8(FP)
	RET
