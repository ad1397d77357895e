#include "textflag.h"
#include "amd64_macros.h"

// Integer dots of K-quant rows (Q4_K, Q6_K) against Q8 activations (blocks
// of 32: one per Q4_K sub-block, two Q6_K sub-blocks each), AVX2. The
// arithmetic is dotQ4KQ8Ref's and dotQ6KQ8Ref's: per super-block the
// eight blocks' integer sums in one vector (lane j: block j), then, in
// float, acc += d·(dx ⊙ sc ⊙ isum) (− dmin·(dx ⊙ m ⊙ S) for Q4_K), the
// accumulator's eight lanes summed at the end (HSUM). Every form (one row,
// two rows, four tokens) does this sequence per row and token, so a row's
// value does not depend on the form that took it.

// K4SCALES(w): the super-block at w's eight 6-bit scales as float32 into
// Y8 and its eight mins into Y9 (bytes 4-15: j < 4 in the low six bits of
// bytes j and j+4; j ≥ 4 the nibbles of byte j+4 with the top two bits of
// bytes j−4 and j), four bytes at a time in AX, DX, R14, R15.
#define K4SCALES(w) \
	MOVL 4(w), AX; \
	MOVL 12(w), R14; \
	MOVL R14, R15; \
	ANDL $0x0f0f0f0f, R15; \
	SHRL $4, R14; \
	ANDL $0x0f0f0f0f, R14; \
	MOVL AX, DX; \
	SHRL $6, DX; \
	ANDL $0x03030303, DX; \
	SHLL $4, DX; \
	ORL  DX, R15; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R15; \
	ORQ  R15, AX; \
	VMOVQ AX, X8; \
	MOVL 8(w), AX; \
	MOVL AX, DX; \
	SHRL $6, DX; \
	ANDL $0x03030303, DX; \
	SHLL $4, DX; \
	ORL  DX, R14; \
	ANDL $0x3f3f3f3f, AX; \
	SHLQ $32, R14; \
	ORQ  R14, AX; \
	VMOVQ AX, X9; \
	VPMOVZXBD X8, Y8; \
	VCVTDQ2PS Y8, Y8; \
	VPMOVZXBD X9, Y9; \
	VCVTDQ2PS Y9, Y9; \
	VPBROADCASTW 0(w), X10; \
	VCVTPH2PS X10, Y10; \
	VPBROADCASTW 2(w), X11; \
	VCVTPH2PS X11, Y11

// K4PAIR(r, w, x, lo, hi): sub-blocks 2r (low nibbles of bytes 16+32r..)
// and 2r+1 (high nibbles) against activation blocks 2r and 2r+1 at x:
// their Σ q·qx as eight int32 partial sums each in lo and hi (Y15: 0x0f
// bytes, Y14: int16 ones; Y1, Y2 scratch).
#define K4PAIR(r, w, x, lo, hi) \
	VMOVDQU (16+32*r)(w), Y1; \
	VPSRLW $4, Y1, Y2; \
	VPAND Y15, Y1, Y1; \
	VPAND Y15, Y2, Y2; \
	VPMADDUBSW (64*r)(x), Y1, lo; \
	VPMADDUBSW (64*r+32)(x), Y2, hi; \
	VPMADDWD Y14, lo, lo; \
	VPMADDWD Y14, hi, hi

// K4SUMS(w, x): the super-block at w against the 256 activations at x:
// lane j of Y5 = Σ q·qx over sub-block j (Y1-Y6 scratch).
#define K4SUMS(w, x) \
	K4PAIR(0, w, x, Y3, Y4); \
	VPHADDD Y4, Y3, Y5; \
	K4PAIR(1, w, x, Y3, Y4); \
	VPHADDD Y4, Y3, Y6; \
	VPHADDD Y6, Y5, Y5; \
	K4PAIR(2, w, x, Y3, Y4); \
	VPHADDD Y4, Y3, Y6; \
	K4PAIR(3, w, x, Y3, Y4); \
	VPHADDD Y4, Y3, Y3; \
	VPHADDD Y3, Y6, Y6; \
	KFOLDLANES

// KFOLDLANES: Y5 holds blocks 0-3's sums in each 128-bit lane and Y6
// blocks 4-7's; Y5 becomes their eight totals, block j in lane j.
#define KFOLDLANES \
	VPERM2I128 $0x20, Y6, Y5, Y3; \
	VPERM2I128 $0x31, Y6, Y5, Y4; \
	VPADDD Y4, Y3, Y5

// K4FLOAT(xd, xs, acc): acc += d·(dx ⊙ (sc ⊙ isum)) − dmin·(dx ⊙ (m ⊙ S))
// for the super-block whose sums are in Y5 (Y8-Y11 from K4SCALES), dx and
// S the eight blocks' activation scales and sums at xd and xs (Y1 scratch).
#define K4FLOAT(xd, xs, acc) \
	VCVTDQ2PS Y5, Y5; \
	VMULPS Y8, Y5, Y5; \
	VMULPS (xd), Y5, Y5; \
	VFMADD231PS Y5, Y10, acc; \
	VCVTDQ2PS (xs), Y1; \
	VMULPS Y9, Y1, Y1; \
	VMULPS (xd), Y1, Y1; \
	VFNMADD231PS Y1, Y11, acc

// KCONSTS: Y15 = 0x0f bytes, Y14 = int16 ones.
#define KCONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14

// func dotQ4KQ8AVX2(w *byte, xq *int8, xd *float32, xs *int32, nsb int) float32
TEXT ·dotQ4KQ8AVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nsb+32(FP), CX
	KCONSTS
	VXORPS Y0, Y0, Y0
q4kloop:
	K4SCALES(SI)
	K4SUMS(SI, DI)
	K4FLOAT(R8, R9, Y0)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q4kloop
	HSUM
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dot2Q4KQ8AVX2(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, out *[2]float32, next *byte)
//
// Rows a and b, each as dotQ4KQ8AVX2 takes it (a into Y0, b into Y12),
// prefetching 448 bytes of next a super-block into L2: the record to come,
// three rows of 144-byte super-blocks.
TEXT ·dot2Q4KQ8AVX2(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R9
	MOVQ nsb+40(FP), CX
	MOVQ next+56(FP), R12
	KCONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y12, Y12, Y12
q4k2loop:
	PREFETCHT2 0(R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	PREFETCHT2 256(R12)
	PREFETCHT2 320(R12)
	PREFETCHT2 384(R12)
	K4SCALES(SI)
	K4SUMS(SI, DI)
	K4FLOAT(R8, R9, Y0)
	K4SCALES(BX)
	K4SUMS(BX, DI)
	K4FLOAT(R8, R9, Y12)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $432, R12
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q4k2loop
	MOVQ out+48(FP), DX
	HSUM
	VMOVSS X0, 0(DX)
	VMOVAPS Y12, Y0
	HSUM
	VMOVSS X0, 4(DX)
	VZEROUPPER
	RET

// func dot4Q4KQ8AVX2(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nsb int, out *[4]float32)
//
// One row against four tokens' activations, each as dotQ4KQ8AVX2 takes
// it (tokens 0-3 into Y0, Y7, Y12, Y13); R11 and R13 step through the
// tokens' quants and scales.
#define K4TOK(t, acc) \
	MOVQ (t*8)(R8), BX; \
	ADDQ R11, BX; \
	K4SUMS(SI, BX); \
	MOVQ (t*8)(R9), BX; \
	ADDQ R13, BX; \
	MOVQ (t*8)(R10), DX; \
	ADDQ R13, DX; \
	K4FLOAT(BX, DX, acc)

TEXT ·dot4Q4KQ8AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R8
	MOVQ d+16(FP), R9
	MOVQ s+24(FP), R10
	MOVQ nsb+32(FP), CX
	XORQ R11, R11
	XORQ R13, R13
	KCONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
q4k4loop:
	K4SCALES(SI)
	K4TOK(0, Y0)
	K4TOK(1, Y7)
	K4TOK(2, Y12)
	K4TOK(3, Y13)
	ADDQ $144, SI
	ADDQ $256, R11
	ADDQ $32, R13
	DECQ CX
	JNZ  q4k4loop
	MOVQ out+40(FP), DX
	HSUM
	VMOVSS X0, 0(DX)
	VMOVAPS Y7, Y0
	HSUM
	VMOVSS X0, 4(DX)
	VMOVAPS Y12, Y0
	HSUM
	VMOVSS X0, 8(DX)
	VMOVAPS Y13, Y0
	HSUM
	VMOVSS X0, 12(DX)
	VZEROUPPER
	RET

// Q6_K. K6CONSTS: Y15 = 0x0f bytes, Y14 = 32 bytes (the values' offset),
// Y13 = 0x03 bytes.
#define K6CONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x20202020, AX; \
	VMOVD AX, X14; \
	VPBROADCASTD X14, Y14; \
	MOVL $0x03030303, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// K6SCALES(w): the super-block's sixteen int8 scales as int16, sub-blocks
// 0-7 in both lanes of Y10 and 8-15 in both lanes of Y11; d in Y9.
#define K6SCALES(w) \
	VPMOVSXBW 192(w), Y2; \
	VPERMQ $0x44, Y2, Y10; \
	VPERMQ $0xee, Y2, Y11; \
	VPBROADCASTW 208(w), X9; \
	VCVTPH2PS X9, Y9

// K6BLK(h, k, w, x, scales, p): activation block 4h+k against elements
// 128h+32k.. of the super-block at w: q = the nibble k/2 of ql bytes
// 64h+32(k%2).. | bits 2k, 2k+1 of qh bytes 128+32h.. << 4, then
// Σ sc·(q − 32)·qx per sub-block of 16 as eight int32 in p (the low lane
// sub-block 8h+2k's, the high lane 8h+2k+1's; Y1, Y2 scratch).
#define K6BLK(h, k, w, x, scales, p) \
	VMOVDQU (64*h+32*(k%2))(w), Y1; \
	VPSRLW $(4*(k/2)), Y1, Y1; \
	VPAND Y15, Y1, Y1; \
	VMOVDQU (128+32*h)(w), Y2; \
	VPSRLW $(2*k), Y2, Y2; \
	VPAND Y13, Y2, Y2; \
	VPSLLW $4, Y2, Y2; \
	VPOR Y2, Y1, Y1; \
	VPMADDUBSW (128*h+32*k)(x), Y1, Y1; \
	VPMADDUBSW (128*h+32*k)(x), Y14, Y2; \
	VPSUBW Y2, Y1, Y1; \
	VPSHUFB k6shuf<>+(32*k)(SB), scales, Y2; \
	VPMADDWD Y2, Y1, p

// K6SUMS(w, x): lane j of Y5 = Σ_l sc·(q − 32)·qx over activation block j.
#define K6SUMS(w, x) \
	K6BLK(0, 0, w, x, Y10, Y3); \
	K6BLK(0, 1, w, x, Y10, Y4); \
	VPHADDD Y4, Y3, Y5; \
	K6BLK(0, 2, w, x, Y10, Y3); \
	K6BLK(0, 3, w, x, Y10, Y4); \
	VPHADDD Y4, Y3, Y6; \
	VPHADDD Y6, Y5, Y5; \
	K6BLK(1, 0, w, x, Y11, Y3); \
	K6BLK(1, 1, w, x, Y11, Y4); \
	VPHADDD Y4, Y3, Y6; \
	K6BLK(1, 2, w, x, Y11, Y3); \
	K6BLK(1, 3, w, x, Y11, Y4); \
	VPHADDD Y4, Y3, Y3; \
	VPHADDD Y3, Y6, Y6; \
	KFOLDLANES

// K6FLOAT(xd, acc): acc += d·(dx ⊙ isum).
#define K6FLOAT(xd, acc) \
	VCVTDQ2PS Y5, Y5; \
	VMULPS (xd), Y5, Y5; \
	VFMADD231PS Y5, Y9, acc

// func dotQ6KQ8AVX2(w *byte, xq *int8, xd *float32, nsb int) float32
TEXT ·dotQ6KQ8AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nsb+24(FP), CX
	K6CONSTS
	VXORPS Y0, Y0, Y0
q6kloop:
	K6SCALES(SI)
	K6SUMS(SI, DI)
	K6FLOAT(R8, Y0)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	DECQ CX
	JNZ  q6kloop
	HSUM
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dot4Q6KQ8AVX2(w *byte, x *[4]*int8, d *[4]*float32, nsb int, out *[4]float32)
#define K6TOK(t, acc) \
	MOVQ (t*8)(R8), BX; \
	ADDQ R11, BX; \
	K6SUMS(SI, BX); \
	MOVQ (t*8)(R9), BX; \
	ADDQ R13, BX; \
	K6FLOAT(BX, acc)

TEXT ·dot4Q6KQ8AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R8
	MOVQ d+16(FP), R9
	MOVQ nsb+24(FP), CX
	XORQ R11, R11
	XORQ R13, R13
	K6CONSTS
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y12, Y12, Y12
q6k4loop:
	K6SCALES(SI)
	K6TOK(0, Y0)
	K6TOK(1, Y7)
	K6TOK(2, Y8)
	K6TOK(3, Y12)
	ADDQ $210, SI
	ADDQ $256, R11
	ADDQ $32, R13
	DECQ CX
	JNZ  q6k4loop
	MOVQ out+32(FP), DX
	HSUM
	VMOVSS X0, 0(DX)
	VMOVAPS Y7, Y0
	HSUM
	VMOVSS X0, 4(DX)
	VMOVAPS Y8, Y0
	HSUM
	VMOVSS X0, 8(DX)
	VMOVAPS Y12, Y0
	HSUM
	VMOVSS X0, 12(DX)
	VZEROUPPER
	RET

// k6shuf: VPSHUFB controls that spread int16 scale 2k of a lane's eight
// over the low lane and scale 2k+1 over the high lane (k = 0..3).
DATA k6shuf<>+0(SB)/8, $0x0100010001000100
DATA k6shuf<>+8(SB)/8, $0x0100010001000100
DATA k6shuf<>+16(SB)/8, $0x0302030203020302
DATA k6shuf<>+24(SB)/8, $0x0302030203020302
DATA k6shuf<>+32(SB)/8, $0x0504050405040504
DATA k6shuf<>+40(SB)/8, $0x0504050405040504
DATA k6shuf<>+48(SB)/8, $0x0706070607060706
DATA k6shuf<>+56(SB)/8, $0x0706070607060706
DATA k6shuf<>+64(SB)/8, $0x0908090809080908
DATA k6shuf<>+72(SB)/8, $0x0908090809080908
DATA k6shuf<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k6shuf<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA k6shuf<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k6shuf<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA k6shuf<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA k6shuf<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL k6shuf<>(SB), RODATA|NOPTR, $128

// AXPYK8(off, s, m): y[off..off+8) (DI) += a·x̂ for the staged quants at
// off(SP), x̂ = s·q − m (s, m: the sub-block's d·sc and dmin·m in every
// lane; Y12 = a; Y5, Y6 scratch).
#define AXPYK8(off, s, m) \
	VPMOVZXBD off(SP), Y5; \
	VCVTDQ2PS Y5, Y5; \
	VMULPS s, Y5, Y5; \
	VSUBPS m, Y5, Y5; \
	VMOVUPS ((off)*4)(DI), Y6; \
	VFMADD231PS Y5, Y12, Y6; \
	VMOVUPS Y6, ((off)*4)(DI)

// AXPYKSUB(base, s, m): the 32 staged quants from base(SP) of one sub-block.
#define AXPYKSUB(base, s, m) \
	AXPYK8(base, s, m); \
	AXPYK8(base+8, s, m); \
	AXPYK8(base+16, s, m); \
	AXPYK8(base+24, s, m)

// func axpyQ4KAVX2(y *float32, a float32, w *byte, nsb int)
//
// y[i] += a·x̂_i, x̂ = (d·sc)·q − dmin·m rounded as dequantQ4KBlock rounds
// it (a product, then a difference), then one FMA. A pair of sub-blocks'
// nibbles is split into a 64-byte stack copy and widened eight at a time;
// Y13 holds the sub-block's index in every lane (VPERMPS broadcasts its
// scale and min), Y7 int32 ones to step it.
TEXT ·axpyQ4KAVX2(SB), NOSPLIT, $64-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y12
	MOVQ w+16(FP), SI
	MOVQ nsb+24(FP), CX
	KCONSTS
	MOVL $1, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
q4kaxpy:
	K4SCALES(SI)
	VMULPS Y10, Y8, Y8
	VMULPS Y11, Y9, Y9
	VPXOR Y13, Y13, Y13
	XORQ BX, BX
q4kaxpypair:
	VMOVDQU 16(SI)(BX*1), Y1
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y1, Y1
	VPAND Y15, Y2, Y2
	VMOVDQU Y1, 0(SP)
	VMOVDQU Y2, 32(SP)
	VPERMPS Y8, Y13, Y3
	VPERMPS Y9, Y13, Y4
	VPADDD Y7, Y13, Y13
	AXPYKSUB(0, Y3, Y4)
	VPERMPS Y8, Y13, Y3
	VPERMPS Y9, Y13, Y4
	VPADDD Y7, Y13, Y13
	AXPYKSUB(32, Y3, Y4)
	ADDQ $256, DI
	ADDQ $32, BX
	CMPQ BX, $128
	JB   q4kaxpypair
	ADDQ $144, SI
	DECQ CX
	JNZ  q4kaxpy
	VZEROUPPER
	RET

// AVX-512 forms. K4ROWSCALES(w, r): row r's eight d·sc to r·64(SP) and
// eight dmin·m to r·64+32(SP) (the products axpyQ4KAVX2 forms).
#define K4ROWSCALES(w, r) \
	K4SCALES(w); \
	VMULPS Y10, Y8, Y8; \
	VMULPS Y11, Y9, Y9; \
	VMOVUPS Y8, (r*64)(SP); \
	VMOVUPS Y9, (r*64+32)(SP)

// K4TABLES(p, r, lo, hi): row r's x̂ of every 4-bit q for sub-blocks 2p
// (into lo) and 2p+1 (hi), q·(d·sc) − dmin·m rounded as axpyQ4KAVX2
// rounds it (Z14: the floats 0..15), so a VPERMPS by nibble gives x̂.
#define K4TABLES(p, r, lo, hi) \
	VMULPS.BCST (r*64+8*p)(SP), Z14, lo; \
	VSUBPS.BCST (r*64+32+8*p)(SP), lo, lo; \
	VMULPS.BCST (r*64+8*p+4)(SP), Z14, hi; \
	VSUBPS.BCST (r*64+32+8*p+4)(SP), hi, hi

// K4AXROW(p, k, w, lo, hi, a): row w (factor a in every lane) into Z0
// (elements 64p+16k..: sub-block 2p, low nibbles) and Z1 (64p+32+16k..:
// sub-block 2p+1, high nibbles), one FMA each (VPERMPS reads an index's
// low four bits: the low nibble needs no mask; Z2, Z3 scratch).
#define K4AXROW(p, k, w, lo, hi, a) \
	VPMOVZXBD (16+32*p+16*k)(w), Z2; \
	VPSRLD $4, Z2, Z3; \
	VPERMPS lo, Z2, Z2; \
	VPERMPS hi, Z3, Z3; \
	VFMADD231PS Z2, a, Z0; \
	VFMADD231PS Z3, a, Z1

// AXPY4K16(p, k): the four rows' 32 elements of K4AXROW(p, k) into y,
// loaded and stored once, rows added in order (tables in Z24-Z31).
#define AXPY4K16(p, k) \
	VMOVUPS (4*(64*p+16*k))(DI), Z0; \
	VMOVUPS (4*(64*p+32+16*k))(DI), Z1; \
	K4AXROW(p, k, R10, Z24, Z25, Z20); \
	K4AXROW(p, k, R11, Z26, Z27, Z21); \
	K4AXROW(p, k, R12, Z28, Z29, Z22); \
	K4AXROW(p, k, R13, Z30, Z31, Z23); \
	VMOVUPS Z0, (4*(64*p+16*k))(DI); \
	VMOVUPS Z1, (4*(64*p+32+16*k))(DI)

// AXPY4KPAIR(p): sub-blocks 2p and 2p+1 of the four rows.
#define AXPY4KPAIR(p) \
	K4TABLES(p, 0, Z24, Z25); \
	K4TABLES(p, 1, Z26, Z27); \
	K4TABLES(p, 2, Z28, Z29); \
	K4TABLES(p, 3, Z30, Z31); \
	AXPY4K16(p, 0); \
	AXPY4K16(p, 1)

// func axpy4Q4KAVX512(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int)
//
// Four Q4_K rows into one y, y[i] += a[r]·x̂_r[i] for r = 0..3 in turn,
// each element's arithmetic axpyQ4KAVX2's (so the same bits as four row
// axpys), y loaded and stored once per four rows.
TEXT ·axpy4Q4KAVX512(SB), NOSPLIT, $256-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nsb+48(FP), CX
	VBROADCASTSS 0(R9), Z20
	VBROADCASTSS 4(R9), Z21
	VBROADCASTSS 8(R9), Z22
	VBROADCASTSS 12(R9), Z23
	VMOVUPS k4zq<>(SB), Z14
a4q4kloop:
	K4ROWSCALES(R10, 0)
	K4ROWSCALES(R11, 1)
	K4ROWSCALES(R12, 2)
	K4ROWSCALES(R13, 3)
	AXPY4KPAIR(0)
	AXPY4KPAIR(1)
	AXPY4KPAIR(2)
	AXPY4KPAIR(3)
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $144, R13
	ADDQ $1024, DI
	DECQ CX
	JNZ  a4q4kloop
	VZEROUPPER
	RET

// AVX2 four-row form. A4SUB(j): sub-block j's d·sc of rows 0-3 (from
// K4ROWSCALES' stack copies) in every lane of Y2-Y5, its dmin·m in Y6-Y9.
#define A4SUB(j) \
	VBROADCASTSS (0*64+4*(j))(SP), Y2; \
	VBROADCASTSS (1*64+4*(j))(SP), Y3; \
	VBROADCASTSS (2*64+4*(j))(SP), Y4; \
	VBROADCASTSS (3*64+4*(j))(SP), Y5; \
	VBROADCASTSS (0*64+32+4*(j))(SP), Y6; \
	VBROADCASTSS (1*64+32+4*(j))(SP), Y7; \
	VBROADCASTSS (2*64+32+4*(j))(SP), Y8; \
	VBROADCASTSS (3*64+32+4*(j))(SP), Y9

// A4LO(w, off, s, m, a) and A4HI: Y0 += a·x̂ for the eight low (high)
// nibbles of the bytes at off(w), x̂ = s·q − m: AXPYK8's arithmetic
// (Y15: 0x0f bytes; Y1 scratch).
#define A4LO(w, off, s, m, a) \
	VPMOVZXBD off(w), Y1; \
	VPAND Y15, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VMULPS s, Y1, Y1; \
	VSUBPS m, Y1, Y1; \
	VFMADD231PS Y1, a, Y0

#define A4HI(w, off, s, m, a) \
	VPMOVZXBD off(w), Y1; \
	VPSRLD $4, Y1, Y1; \
	VCVTDQ2PS Y1, Y1; \
	VMULPS s, Y1, Y1; \
	VSUBPS m, Y1, Y1; \
	VFMADD231PS Y1, a, Y0

// A4CHUNK(p, k): elements 64p+8k.. (sub-block 2p, low nibbles; LO) or
// 64p+32+8k.. (sub-block 2p+1, high nibbles; HI) of the four rows into y,
// loaded and stored once, rows added in order.
#define A4CHUNKLO(p, k) \
	VMOVUPS (4*(64*p+8*k))(DI), Y0; \
	A4LO(R10, 16+32*p+8*k, Y2, Y6, Y10); \
	A4LO(R11, 16+32*p+8*k, Y3, Y7, Y11); \
	A4LO(R12, 16+32*p+8*k, Y4, Y8, Y12); \
	A4LO(R13, 16+32*p+8*k, Y5, Y9, Y13); \
	VMOVUPS Y0, (4*(64*p+8*k))(DI)

#define A4CHUNKHI(p, k) \
	VMOVUPS (4*(64*p+32+8*k))(DI), Y0; \
	A4HI(R10, 16+32*p+8*k, Y2, Y6, Y10); \
	A4HI(R11, 16+32*p+8*k, Y3, Y7, Y11); \
	A4HI(R12, 16+32*p+8*k, Y4, Y8, Y12); \
	A4HI(R13, 16+32*p+8*k, Y5, Y9, Y13); \
	VMOVUPS Y0, (4*(64*p+32+8*k))(DI)

// A4PAIR(p): sub-blocks 2p and 2p+1 of the four rows.
#define A4PAIR(p) \
	A4SUB(2*p); \
	A4CHUNKLO(p, 0); \
	A4CHUNKLO(p, 1); \
	A4CHUNKLO(p, 2); \
	A4CHUNKLO(p, 3); \
	A4SUB(2*p+1); \
	A4CHUNKHI(p, 0); \
	A4CHUNKHI(p, 1); \
	A4CHUNKHI(p, 2); \
	A4CHUNKHI(p, 3)

// func axpy4Q4KAVX2(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nsb int)
//
// Four Q4_K rows into one y, y[i] += a[r]·x̂_r[i] for r = 0..3 in turn,
// each element's arithmetic axpyQ4KAVX2's (so four row axpys' bits), y
// loaded and stored once per four rows and the nibbles widened straight
// from the rows.
TEXT ·axpy4Q4KAVX2(SB), NOSPLIT, $256-56
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), R9
	MOVQ w0+16(FP), R10
	MOVQ w1+24(FP), R11
	MOVQ w2+32(FP), R12
	MOVQ w3+40(FP), R13
	MOVQ nsb+48(FP), CX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
a4q4kavx2:
	K4ROWSCALES(R10, 0)
	K4ROWSCALES(R11, 1)
	K4ROWSCALES(R12, 2)
	K4ROWSCALES(R13, 3)
	VBROADCASTSS 0(R9), Y10
	VBROADCASTSS 4(R9), Y11
	VBROADCASTSS 8(R9), Y12
	VBROADCASTSS 12(R9), Y13
	A4PAIR(0)
	A4PAIR(1)
	A4PAIR(2)
	A4PAIR(3)
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $144, R13
	ADDQ $1024, DI
	DECQ CX
	JNZ  a4q4kavx2
	VZEROUPPER
	RET

// Q6_K on AVX-512 VNNI. K6ZCONSTS: Z15 = 0x0f bytes, Z14 = 0x30 bytes,
// Z13 = 0x20 bytes, Z12/Z11 the word shifts that bring qh's bits 2k, 2k+1
// to bits 4-5 (left 4 | left 2 for k = 0, 1; right 0 | right 2 for k = 2,
// 3), Z16-Z19 the permutes that spread sub-block scales over a vector's
// lanes, Z10 the one that spreads eight block scales over sixteen.
#define K6ZCONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z15; \
	MOVL $0x30303030, AX; \
	VPBROADCASTD AX, Z14; \
	MOVL $0x20202020, AX; \
	VPBROADCASTD AX, Z13; \
	VMOVDQU64 k6zshl<>(SB), Z12; \
	VMOVDQU64 k6zshr<>(SB), Z11; \
	VMOVDQU64 k6zidx<>+0(SB), Z16; \
	VMOVDQU64 k6zidx<>+64(SB), Z17; \
	VMOVDQU64 k6zidx<>+128(SB), Z18; \
	VMOVDQU64 k6zidx<>+192(SB), Z19; \
	VMOVDQU64 k6zdx<>(SB), Z10

// K6ZQ(w): the super-block at w's 256 six-bit values as bytes, elements
// 0-63 in Z24, 64-127 in Z25, 128-191 in Z26, 192-255 in Z27 (each the
// nibbles of ql with qh's two bits at 4-5), and d·sc of its sixteen
// sub-blocks in Z28 (Z0-Z3 scratch).
#define K6ZQ(w) \
	VMOVDQU64 0(w), Z0; \
	VBROADCASTI64X4 128(w), Z1; \
	VPANDD Z15, Z0, Z24; \
	VPSLLVW Z12, Z1, Z2; \
	VPANDD Z14, Z2, Z2; \
	VPORD Z2, Z24, Z24; \
	VPSRLW $4, Z0, Z25; \
	VPANDD Z15, Z25, Z25; \
	VPSRLVW Z11, Z1, Z2; \
	VPANDD Z14, Z2, Z2; \
	VPORD Z2, Z25, Z25; \
	VMOVDQU64 64(w), Z0; \
	VBROADCASTI64X4 160(w), Z1; \
	VPANDD Z15, Z0, Z26; \
	VPSLLVW Z12, Z1, Z2; \
	VPANDD Z14, Z2, Z2; \
	VPORD Z2, Z26, Z26; \
	VPSRLW $4, Z0, Z27; \
	VPANDD Z15, Z27, Z27; \
	VPSRLVW Z11, Z1, Z2; \
	VPANDD Z14, Z2, Z2; \
	VPORD Z2, Z27, Z27; \
	VPMOVSXBD 192(w), Z28; \
	VCVTDQ2PS Z28, Z28; \
	VPBROADCASTW 208(w), Y3; \
	VCVTPH2PS Y3, Z3; \
	VMULPS Z3, Z28, Z28

// K6ZPART(q, off, idx, x, acc): Σ (q − 32)·qx per four elements of the 64
// values q against the activations at off(x), times d·sc·dx of their
// sub-block (Z4's lanes, spread by idx), added to acc (Z5-Z7 scratch).
#define K6ZPART(q, off, idx, x, acc) \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPDPBUSD off(x), q, Z5; \
	VPDPBUSD off(x), Z13, Z6; \
	VPSUBD Z6, Z5, Z5; \
	VCVTDQ2PS Z5, Z5; \
	VPERMPS Z4, idx, Z7; \
	VFMADD231PS Z7, Z5, acc

// K6ZTOK(x, xd, acc, acc2): the super-block unpacked by K6ZQ against one
// token's 256 activations at x and eight block scales at xd, into the
// lanes of acc (elements 0-127) and acc2 (128-255): two chains.
#define K6ZTOK(x, xd, acc, acc2) \
	VMOVUPS (xd), Y4; \
	VPERMPS Z4, Z10, Z4; \
	VMULPS Z28, Z4, Z4; \
	K6ZPART(Z24, 0, Z16, x, acc); \
	K6ZPART(Z25, 64, Z17, x, acc); \
	K6ZPART(Z26, 128, Z18, x, acc2); \
	K6ZPART(Z27, 192, Z19, x, acc2)

// K6ZSUM(acc, acc2): acc's and acc2's lanes summed into X0 (Y1 scratch).
#define K6ZSUM(acc, acc2) \
	VADDPS acc2, acc, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	HSUM

// func dotQ6KQ8VNNI(w *byte, xq *int8, xd *float32, nsb int) float32
//
// A Q6_K row against Q8 activations: per four elements the integer
// Σ (q − 32)·qx (VPDPBUSD, the 32s subtracted by a second), then in float
// acc += isum·(d·sc·dx) lane by lane, the lanes summed at the end. The
// four-token form does the same per token, so each gives this one's bits.
TEXT ·dotQ6KQ8VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nsb+24(FP), CX
	K6ZCONSTS
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
q6kzloop:
	K6ZQ(SI)
	K6ZTOK(DI, R8, Z8, Z9)
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, R8
	DECQ CX
	JNZ  q6kzloop
	K6ZSUM(Z8, Z9)
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dot4Q6KQ8VNNI(w *byte, x *[4]*int8, d *[4]*float32, nsb int, out *[4]float32)
#define K6ZTOK4(t, acc, acc2) \
	MOVQ (t*8)(R9), BX; \
	ADDQ R11, BX; \
	MOVQ (t*8)(R10), DX; \
	ADDQ R13, DX; \
	K6ZTOK(BX, DX, acc, acc2)

TEXT ·dot4Q6KQ8VNNI(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R9
	MOVQ d+16(FP), R10
	MOVQ nsb+24(FP), CX
	XORQ R11, R11
	XORQ R13, R13
	K6ZCONSTS
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
q6kz4loop:
	K6ZQ(SI)
	K6ZTOK4(0, Z8, Z9)
	K6ZTOK4(1, Z20, Z21)
	K6ZTOK4(2, Z22, Z23)
	K6ZTOK4(3, Z29, Z30)
	ADDQ $210, SI
	ADDQ $256, R11
	ADDQ $32, R13
	DECQ CX
	JNZ  q6kz4loop
	MOVQ out+32(FP), DX
	K6ZSUM(Z8, Z9)
	VMOVSS X0, 0(DX)
	K6ZSUM(Z20, Z21)
	VMOVSS X0, 4(DX)
	K6ZSUM(Z22, Z23)
	VMOVSS X0, 8(DX)
	K6ZSUM(Z29, Z30)
	VMOVSS X0, 12(DX)
	VZEROUPPER
	RET

// k6zshl, k6zshr: word shift counts, 4 | 2 and 0 | 2 by 256-bit half.
DATA k6zshl<>+0(SB)/8, $0x0004000400040004
DATA k6zshl<>+8(SB)/8, $0x0004000400040004
DATA k6zshl<>+16(SB)/8, $0x0004000400040004
DATA k6zshl<>+24(SB)/8, $0x0004000400040004
DATA k6zshl<>+32(SB)/8, $0x0002000200020002
DATA k6zshl<>+40(SB)/8, $0x0002000200020002
DATA k6zshl<>+48(SB)/8, $0x0002000200020002
DATA k6zshl<>+56(SB)/8, $0x0002000200020002
GLOBL k6zshl<>(SB), RODATA|NOPTR, $64
DATA k6zshr<>+0(SB)/8, $0
DATA k6zshr<>+8(SB)/8, $0
DATA k6zshr<>+16(SB)/8, $0
DATA k6zshr<>+24(SB)/8, $0
DATA k6zshr<>+32(SB)/8, $0x0002000200020002
DATA k6zshr<>+40(SB)/8, $0x0002000200020002
DATA k6zshr<>+48(SB)/8, $0x0002000200020002
DATA k6zshr<>+56(SB)/8, $0x0002000200020002
GLOBL k6zshr<>(SB), RODATA|NOPTR, $64

// k6zidx: for the vector of elements 64v.. (v = 0..3), lane i's sub-block
// of sixteen, 4v + i/4, as int32 pairs.
DATA k6zidx<>+0(SB)/8, $0x0000000000000000
DATA k6zidx<>+8(SB)/8, $0x0000000000000000
DATA k6zidx<>+16(SB)/8, $0x0000000100000001
DATA k6zidx<>+24(SB)/8, $0x0000000100000001
DATA k6zidx<>+32(SB)/8, $0x0000000200000002
DATA k6zidx<>+40(SB)/8, $0x0000000200000002
DATA k6zidx<>+48(SB)/8, $0x0000000300000003
DATA k6zidx<>+56(SB)/8, $0x0000000300000003
DATA k6zidx<>+64(SB)/8, $0x0000000400000004
DATA k6zidx<>+72(SB)/8, $0x0000000400000004
DATA k6zidx<>+80(SB)/8, $0x0000000500000005
DATA k6zidx<>+88(SB)/8, $0x0000000500000005
DATA k6zidx<>+96(SB)/8, $0x0000000600000006
DATA k6zidx<>+104(SB)/8, $0x0000000600000006
DATA k6zidx<>+112(SB)/8, $0x0000000700000007
DATA k6zidx<>+120(SB)/8, $0x0000000700000007
DATA k6zidx<>+128(SB)/8, $0x0000000800000008
DATA k6zidx<>+136(SB)/8, $0x0000000800000008
DATA k6zidx<>+144(SB)/8, $0x0000000900000009
DATA k6zidx<>+152(SB)/8, $0x0000000900000009
DATA k6zidx<>+160(SB)/8, $0x0000000a0000000a
DATA k6zidx<>+168(SB)/8, $0x0000000a0000000a
DATA k6zidx<>+176(SB)/8, $0x0000000b0000000b
DATA k6zidx<>+184(SB)/8, $0x0000000b0000000b
DATA k6zidx<>+192(SB)/8, $0x0000000c0000000c
DATA k6zidx<>+200(SB)/8, $0x0000000c0000000c
DATA k6zidx<>+208(SB)/8, $0x0000000d0000000d
DATA k6zidx<>+216(SB)/8, $0x0000000d0000000d
DATA k6zidx<>+224(SB)/8, $0x0000000e0000000e
DATA k6zidx<>+232(SB)/8, $0x0000000e0000000e
DATA k6zidx<>+240(SB)/8, $0x0000000f0000000f
DATA k6zidx<>+248(SB)/8, $0x0000000f0000000f
GLOBL k6zidx<>(SB), RODATA|NOPTR, $256

// k6zdx: lane s takes block scale s/2 (two sub-blocks of 16 a block).
DATA k6zdx<>+0(SB)/8, $0x0000000000000000
DATA k6zdx<>+8(SB)/8, $0x0000000100000001
DATA k6zdx<>+16(SB)/8, $0x0000000200000002
DATA k6zdx<>+24(SB)/8, $0x0000000300000003
DATA k6zdx<>+32(SB)/8, $0x0000000400000004
DATA k6zdx<>+40(SB)/8, $0x0000000500000005
DATA k6zdx<>+48(SB)/8, $0x0000000600000006
DATA k6zdx<>+56(SB)/8, $0x0000000700000007
GLOBL k6zdx<>(SB), RODATA|NOPTR, $64

// k4zq: the floats 0..15.
DATA k4zq<>+0(SB)/8, $0x3f80000000000000
DATA k4zq<>+8(SB)/8, $0x4040000040000000
DATA k4zq<>+16(SB)/8, $0x40a0000040800000
DATA k4zq<>+24(SB)/8, $0x40e0000040c00000
DATA k4zq<>+32(SB)/8, $0x4110000041000000
DATA k4zq<>+40(SB)/8, $0x4130000041200000
DATA k4zq<>+48(SB)/8, $0x4150000041400000
DATA k4zq<>+56(SB)/8, $0x4170000041600000
GLOBL k4zq<>(SB), RODATA|NOPTR, $64

// Q4_K on AVX-512 VNNI. K4ZCONSTS: Z15 = 0x0f bytes, Z16-Z19 the
// permutes that spread sub-block factors over vector v's lanes (0-7:
// sub-block 2v, 8-15: 2v+1).
#define K4ZCONSTS \
	MOVL $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z15; \
	VMOVDQU64 k4zidx<>+0(SB), Z16; \
	VMOVDQU64 k4zidx<>+64(SB), Z17; \
	VMOVDQU64 k4zidx<>+128(SB), Z18; \
	VMOVDQU64 k4zidx<>+192(SB), Z19

// K4ZW(w): the super-block at w's nibbles as bytes in element order,
// sub-blocks 2v and 2v+1 in Z24+v (the low nibbles of a 64-byte half hold
// sub-blocks 0 and 2, the high ones 1 and 3: VSHUFI64X2 pairs them), d·sc
// in Y28 and dmin·m in Y29 (Z0-Z3 scratch).
#define K4ZW(w) \
	VMOVDQU64 16(w), Z0; \
	VPSRLW $4, Z0, Z1; \
	VPANDD Z15, Z0, Z0; \
	VPANDD Z15, Z1, Z1; \
	VSHUFI64X2 $0x44, Z1, Z0, Z24; \
	VSHUFI64X2 $0xee, Z1, Z0, Z25; \
	VMOVDQU64 80(w), Z2; \
	VPSRLW $4, Z2, Z3; \
	VPANDD Z15, Z2, Z2; \
	VPANDD Z15, Z3, Z3; \
	VSHUFI64X2 $0x44, Z3, Z2, Z26; \
	VSHUFI64X2 $0xee, Z3, Z2, Z27; \
	K4ZSCALES(w)

// K4ZSCALES(w): d·sc of the super-block's eight sub-blocks in Y28 and
// dmin·m in Y29, the 6-bit fields gathered by byte shuffles (k4zs: A puts
// bytes j, j+4 or j+4 where the low bits are, B bytes j−4 or j where the
// top two are; then A & 63 or & 15, A >> 4, | (B >> 6) << 4), all sixteen
// widened at once (Z0-Z3 scratch).
#define K4ZSCALES(w) \
	VMOVDQU 4(w), X0; \
	VPSHUFB k4zs<>+0(SB), X0, X1; \
	VPSHUFB k4zs<>+16(SB), X0, X2; \
	VPSRLW $4, X1, X3; \
	VPAND k4zs<>+32(SB), X1, X1; \
	VPAND k4zs<>+48(SB), X3, X3; \
	VPOR X3, X1, X1; \
	VPSRLW $2, X2, X2; \
	VPAND k4zs<>+64(SB), X2, X2; \
	VPOR X2, X1, X1; \
	VPMOVZXBD X1, Z1; \
	VCVTDQ2PS Z1, Z1; \
	VPBROADCASTW 0(w), X2; \
	VPBROADCASTW 2(w), X3; \
	VINSERTI128 $1, X3, Y2, Y2; \
	VCVTPH2PS Y2, Z2; \
	VMULPS Z2, Z1, Z28; \
	VEXTRACTF64X4 $1, Z28, Y29

// K4ZPART(q, off, idx, x, acc): Σ q·qx per four elements of the 64 values
// q against the activations at off(x), times d·sc·dx of their sub-block
// (Y5's lanes, spread by idx), added to acc (Z6, Z7 scratch).
#define K4ZPART(q, off, idx, x, acc) \
	VPXORD Z6, Z6, Z6; \
	VPDPBUSD off(x), q, Z6; \
	VCVTDQ2PS Z6, Z6; \
	VPERMPS Z5, idx, Z7; \
	VFMADD231PS Z7, Z6, acc

// K4ZTOK(x, xd, xs, acc, acc2, accm): the super-block unpacked by K4ZW
// against one token's 256 activations at x, block scales at xd and sums
// at xs: the lanes of acc (sub-blocks 0-3) and acc2 (4-7) += isum·(d·sc·dx),
// accm's += dx·(dmin·m·S) (two chains of multiply-adds: one would wait on
// four latencies a super-block; Y4-Y7 scratch).
#define K4ZTOK(x, xd, xs, acc, acc2, accm) \
	VMOVUPS (xd), Y4; \
	VMULPS Y28, Y4, Y5; \
	VCVTDQ2PS (xs), Y6; \
	VMULPS Y29, Y6, Y6; \
	VFMADD231PS Y6, Y4, accm; \
	K4ZPART(Z24, 0, Z16, x, acc); \
	K4ZPART(Z25, 64, Z17, x, acc); \
	K4ZPART(Z26, 128, Z18, x, acc2); \
	K4ZPART(Z27, 192, Z19, x, acc2)

// K4ZSUM(acc, acc2, accm): acc's and acc2's lanes less accm's, summed, in X0.
#define K4ZSUM(acc, acc2, accm) \
	VADDPS acc2, acc, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	VSUBPS accm, Y0, Y0; \
	HSUM

// func dotQ4KQ8VNNI(w *byte, xq *int8, xd *float32, xs *int32, nsb int) float32
//
// A Q4_K row against Q8 activations: per four elements the integer
// Σ q·qx (VPDPBUSD), then in float acc += isum·(d·sc·dx) lane by lane and
// the mins' dx·(dmin·m·S) per block, summed at the end. The pair and
// four-token forms do the same per row and token: each gives this one's bits.
TEXT ·dotQ4KQ8VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nsb+32(FP), CX
	K4ZCONSTS
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z12, Z12, Z12
q4kzloop:
	K4ZW(SI)
	K4ZTOK(DI, R8, R9, Z20, Z21, Y12)
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q4kzloop
	K4ZSUM(Z20, Z21, Y12)
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// func dot2Q4KQ8VNNI(a, b *byte, xq *int8, xd *float32, xs *int32, nsb int, out *[2]float32, next *byte)
//
// Rows a and b as dotQ4KQ8VNNI takes each, prefetching 432 bytes of next
// a super-block into L2 (the record to come: three rows' super-blocks).
TEXT ·dot2Q4KQ8VNNI(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R9
	MOVQ nsb+40(FP), CX
	MOVQ next+56(FP), R12
	K4ZCONSTS
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
q4kz2loop:
	PREFETCHT2 0(R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	PREFETCHT2 256(R12)
	PREFETCHT2 320(R12)
	PREFETCHT2 384(R12)
	K4ZW(SI)
	K4ZTOK(DI, R8, R9, Z20, Z21, Y12)
	K4ZW(BX)
	K4ZTOK(DI, R8, R9, Z22, Z23, Y13)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $432, R12
	ADDQ $256, DI
	ADDQ $32, R8
	ADDQ $32, R9
	DECQ CX
	JNZ  q4kz2loop
	MOVQ out+48(FP), DX
	K4ZSUM(Z20, Z21, Y12)
	VMOVSS X0, 0(DX)
	K4ZSUM(Z22, Z23, Y13)
	VMOVSS X0, 4(DX)
	VZEROUPPER
	RET

// func dot4Q4KQ8VNNI(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nsb int, out *[4]float32)
#define K4ZTOK4(t, acc, acc2, accm) \
	MOVQ (t*8)(R8), BX; \
	ADDQ R11, BX; \
	MOVQ (t*8)(R9), DI; \
	ADDQ R13, DI; \
	MOVQ (t*8)(R10), R12; \
	ADDQ R13, R12; \
	K4ZTOK(BX, DI, R12, acc, acc2, accm)

TEXT ·dot4Q4KQ8VNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R8
	MOVQ d+16(FP), R9
	MOVQ s+24(FP), R10
	MOVQ nsb+32(FP), CX
	XORQ R11, R11
	XORQ R13, R13
	K4ZCONSTS
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
q4kz4loop:
	K4ZW(SI)
	K4ZTOK4(0, Z20, Z21, Y12)
	K4ZTOK4(1, Z22, Z23, Y13)
	K4ZTOK4(2, Z8, Z9, Y30)
	K4ZTOK4(3, Z10, Z11, Y31)
	ADDQ $144, SI
	ADDQ $256, R11
	ADDQ $32, R13
	DECQ CX
	JNZ  q4kz4loop
	MOVQ out+40(FP), DX
	K4ZSUM(Z20, Z21, Y12)
	VMOVSS X0, 0(DX)
	K4ZSUM(Z22, Z23, Y13)
	VMOVSS X0, 4(DX)
	K4ZSUM(Z8, Z9, Y30)
	VMOVSS X0, 8(DX)
	K4ZSUM(Z10, Z11, Y31)
	VMOVSS X0, 12(DX)
	VZEROUPPER
	RET

// k4zidx: vector v's lanes 0-7 take sub-block 2v's factor, 8-15 2v+1's.
DATA k4zidx<>+0(SB)/8, $0
DATA k4zidx<>+8(SB)/8, $0
DATA k4zidx<>+16(SB)/8, $0
DATA k4zidx<>+24(SB)/8, $0
DATA k4zidx<>+32(SB)/8, $0x0000000100000001
DATA k4zidx<>+40(SB)/8, $0x0000000100000001
DATA k4zidx<>+48(SB)/8, $0x0000000100000001
DATA k4zidx<>+56(SB)/8, $0x0000000100000001
DATA k4zidx<>+64(SB)/8, $0x0000000200000002
DATA k4zidx<>+72(SB)/8, $0x0000000200000002
DATA k4zidx<>+80(SB)/8, $0x0000000200000002
DATA k4zidx<>+88(SB)/8, $0x0000000200000002
DATA k4zidx<>+96(SB)/8, $0x0000000300000003
DATA k4zidx<>+104(SB)/8, $0x0000000300000003
DATA k4zidx<>+112(SB)/8, $0x0000000300000003
DATA k4zidx<>+120(SB)/8, $0x0000000300000003
DATA k4zidx<>+128(SB)/8, $0x0000000400000004
DATA k4zidx<>+136(SB)/8, $0x0000000400000004
DATA k4zidx<>+144(SB)/8, $0x0000000400000004
DATA k4zidx<>+152(SB)/8, $0x0000000400000004
DATA k4zidx<>+160(SB)/8, $0x0000000500000005
DATA k4zidx<>+168(SB)/8, $0x0000000500000005
DATA k4zidx<>+176(SB)/8, $0x0000000500000005
DATA k4zidx<>+184(SB)/8, $0x0000000500000005
DATA k4zidx<>+192(SB)/8, $0x0000000600000006
DATA k4zidx<>+200(SB)/8, $0x0000000600000006
DATA k4zidx<>+208(SB)/8, $0x0000000600000006
DATA k4zidx<>+216(SB)/8, $0x0000000600000006
DATA k4zidx<>+224(SB)/8, $0x0000000700000007
DATA k4zidx<>+232(SB)/8, $0x0000000700000007
DATA k4zidx<>+240(SB)/8, $0x0000000700000007
DATA k4zidx<>+248(SB)/8, $0x0000000700000007
GLOBL k4zidx<>(SB), RODATA|NOPTR, $256

// k4zs: K4ZSCALES's shuffles (A, B; 0x80 gives zero) and masks (A's low
// bits, A >> 4's, B >> 2's top two at bits 4-5).
DATA k4zs<>+0(SB)/8, $0x0b0a090803020100
DATA k4zs<>+8(SB)/8, $0x0b0a090807060504
DATA k4zs<>+16(SB)/8, $0x0302010080808080
DATA k4zs<>+24(SB)/8, $0x0706050480808080
DATA k4zs<>+32(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA k4zs<>+40(SB)/8, $0x000000003f3f3f3f
DATA k4zs<>+48(SB)/8, $0
DATA k4zs<>+56(SB)/8, $0x0f0f0f0f00000000
DATA k4zs<>+64(SB)/8, $0x3030303030303030
DATA k4zs<>+72(SB)/8, $0x3030303030303030
GLOBL k4zs<>(SB), RODATA|NOPTR, $80

// AXPY1K16(p, k): K4AXROW(p, k) of the one row at SI into y.
#define AXPY1K16(p, k) \
	VMOVUPS (4*(64*p+16*k))(DI), Z0; \
	VMOVUPS (4*(64*p+32+16*k))(DI), Z1; \
	K4AXROW(p, k, SI, Z24, Z25, Z20); \
	VMOVUPS Z0, (4*(64*p+16*k))(DI); \
	VMOVUPS Z1, (4*(64*p+32+16*k))(DI)

#define AXPY1KPAIR(p) \
	K4TABLES(p, 0, Z24, Z25); \
	AXPY1K16(p, 0); \
	AXPY1K16(p, 1)

// func axpyQ4KAVX512(y *float32, a float32, w *byte, nsb int)
//
// y[i] += a·x̂_i for one Q4_K row, each element's arithmetic
// axpyQ4KAVX2's (and axpy4Q4KAVX512's): the same bits.
TEXT ·axpyQ4KAVX512(SB), NOSPLIT, $64-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Z20
	MOVQ w+16(FP), SI
	MOVQ nsb+24(FP), CX
	VMOVUPS k4zq<>(SB), Z14
a1q4kloop:
	K4ROWSCALES(SI, 0)
	AXPY1KPAIR(0)
	AXPY1KPAIR(1)
	AXPY1KPAIR(2)
	AXPY1KPAIR(3)
	ADDQ $144, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ  a1q4kloop
	VZEROUPPER
	RET

// WIDEN1K16(p, k): the 32 elements of K4AXROW(p, k) of the row at SI,
// x̂ itself, to dst (DI).
#define WIDEN1K16(p, k) \
	VPMOVZXBD (16+32*p+16*k)(SI), Z2; \
	VPSRLD $4, Z2, Z3; \
	VPERMPS Z24, Z2, Z2; \
	VPERMPS Z25, Z3, Z3; \
	VMOVUPS Z2, (4*(64*p+16*k))(DI); \
	VMOVUPS Z3, (4*(64*p+32+16*k))(DI)

#define WIDEN1KPAIR(p) \
	K4TABLES(p, 0, Z24, Z25); \
	WIDEN1K16(p, 0); \
	WIDEN1K16(p, 1)

// func widenQ4KAVX512(dst *float32, w *byte, nsb int)
//
// dst[i] = x̂_i of a Q4_K row, q·(d·sc) − dmin·m rounded as
// dequantQ4KBlock rounds it (the same bits).
TEXT ·widenQ4KAVX512(SB), NOSPLIT, $64-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ nsb+16(FP), CX
	VMOVUPS k4zq<>(SB), Z14
w1q4kloop:
	K4ROWSCALES(SI, 0)
	WIDEN1KPAIR(0)
	WIDEN1KPAIR(1)
	WIDEN1KPAIR(2)
	WIDEN1KPAIR(3)
	ADDQ $144, SI
	ADDQ $1024, DI
	DECQ CX
	JNZ  w1q4kloop
	VZEROUPPER
	RET

// The decode FFN's int8 down projection of eight Q4_K rows (AVX2):
// axpy8Q4KActRef's arithmetic exactly. Per super-block, lanes being its
// eight sub-blocks: each row's scales and mins (K4SCALES), c_r =
// (a[r]·d)·sc, M += (a[r]·dmin)·m, the largest |c_r| and from it the
// scale s and the q_r, packed and transposed (INT8PACK8) so each
// sub-block's eight q_r are one qword on the stack, beside s and M. Per
// sub-block pair (the same 32 bytes of every row: low nibbles sub-block
// 2p, high 2p+1): rows 2k and 2k+1's bytes interleaved (VPUNPCK, within
// 128-bit lanes: words 0-7 elements 0-7 and 8-15 elements 16-23 of the
// low unpack, 8-15 and 24-31 of the high), VPMADDUBSW against the pairs
// (q_2k, q_2k+1) of each sub-block, eight rows' sums in int16 (at most
// 8·15·127). Then a widening, a conversion, a subtraction and a
// multiply-add per 8 outputs, where axpy4Q4KAVX2 widens, converts and
// multiplies twice per row.
//
// Stack: 0-31 a, 32-95 the q_r (sub-blocks 0, 1, 4, 5, 2, 3, 6, 7), 96-127
// s, 128-159 M. Rows in SI, BX, R8, R9, R10-R13 (K4SCALES takes AX, DX,
// R14, R15 and Y8-Y11).

// k8const: the abs mask, 127.0, the smallest normal float32, 0x0f bytes
// (32 bytes each).
#define K8C(i, v) DATA k8const<>+32*i(SB)/8, v; DATA k8const<>+32*i+8(SB)/8, v; DATA k8const<>+32*i+16(SB)/8, v; DATA k8const<>+32*i+24(SB)/8, v
K8C(0, $0x7fffffff7fffffff)
K8C(1, $0x42fe000042fe0000)
K8C(2, $0x0080000000800000)
K8C(3, $0x0f0f0f0f0f0f0f0f)
GLOBL k8const<>(SB), RODATA|NOPTR, $128

// K8ROW(w, r, c): row r's c_r into c, its mins into M (Y13), |c_r| into
// the running max (Y14; Y12 scratch).
#define K8ROW(w, r, c) \
	K4SCALES(w); \
	VBROADCASTSS (4*r)(SP), Y12; \
	VMULPS Y12, Y10, Y10; \
	VMULPS Y10, Y8, c; \
	VMULPS Y12, Y11, Y11; \
	VFMADD231PS Y11, Y9, Y13; \
	VANDPS k8const<>+0(SB), c, Y12; \
	VMAXPS Y12, Y14, Y14

// K8RP(off, p, q, c, d): the 32 bytes at off(p) and off(q) interleaved,
// low nibbles times the pair c into Y0 (low unpack) and Y1 (high), high
// nibbles times the pair d into Y2 and Y3 (Y12-Y14 scratch, Y15 0x0f).
#define K8RP(off, p, q, c, d) \
	VMOVDQU off(p), Y12; \
	VMOVDQU off(q), Y13; \
	VPUNPCKLBW Y13, Y12, Y14; \
	VPUNPCKHBW Y13, Y12, Y12; \
	NIBMADD(Y14, Y13, Y15, c, d, Y0, Y2); \
	NIBMADD(Y12, Y13, Y15, c, d, Y1, Y3)

// K8OUT8(x, off): eight int16 sums in x into y at off(DI): y ← s·sum +
// (y − M), s in Y4 and M in Y5 (Y12, Y13 scratch).
#define K8OUT8(x, off) \
	VPMOVSXWD x, Y12; \
	VCVTDQ2PS Y12, Y12; \
	VMOVUPS off(DI), Y13; \
	VSUBPS Y5, Y13, Y13; \
	VFMADD231PS Y4, Y12, Y13; \
	VMOVUPS Y13, off(DI)

// K8OUT(acc, x, lo, hi): acc's words 0-7 (x its low half) to off lo, 8-15
// to off hi.
#define K8OUT(acc, x, lo, hi) K8OUT8(x, lo); VEXTRACTI128 $1, acc, X14; K8OUT8(X14, hi)

// K8SUB(j, qo): sub-block j's four pairs (its q_r at qo(SP)) into base,
// base+1, base+2, base+3.
#define K8PAIRS(qo, c0, c1, c2, c3) \
	VPBROADCASTW qo(SP), c0; \
	VPBROADCASTW qo+2(SP), c1; \
	VPBROADCASTW qo+4(SP), c2; \
	VPBROADCASTW qo+6(SP), c3

// K8PAIR(p, qlo, qhi): sub-blocks 2p (q_r at qlo(SP)) and 2p+1 (qhi) of
// the eight rows into y[64p, 64p+64).
#define K8PAIR(p, qlo, qhi) \
	K8PAIRS(qlo, Y4, Y5, Y6, Y7); \
	K8PAIRS(qhi, Y8, Y9, Y10, Y11); \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	K8RP(16+32*p, SI, BX, Y4, Y8); \
	K8RP(16+32*p, R8, R9, Y5, Y9); \
	K8RP(16+32*p, R10, R11, Y6, Y10); \
	K8RP(16+32*p, R12, R13, Y7, Y11); \
	VBROADCASTSS (96+8*p)(SP), Y4; \
	VBROADCASTSS (128+8*p)(SP), Y5; \
	K8OUT(Y0, X0, 256*p, 256*p+64); \
	K8OUT(Y1, X1, 256*p+32, 256*p+96); \
	VBROADCASTSS (96+8*p+4)(SP), Y4; \
	VBROADCASTSS (128+8*p+4)(SP), Y5; \
	K8OUT(Y2, X2, 256*p+128, 256*p+192); \
	K8OUT(Y3, X3, 256*p+160, 256*p+224)

// func axpy8Q4KActAVX2(y *float32, a *[8]float32, w *[8]*byte, nsb int)
TEXT ·axpy8Q4KActAVX2(SB), NOSPLIT, $160-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), AX
	VMOVUPS 0(AX), Y0
	VMOVUPS Y0, 0(SP)
	MOVQ w+16(FP), AX
	MOVQ 0(AX), SI
	MOVQ 8(AX), BX
	MOVQ 16(AX), R8
	MOVQ 24(AX), R9
	MOVQ 32(AX), R10
	MOVQ 40(AX), R11
	MOVQ 48(AX), R12
	MOVQ 56(AX), R13
	MOVQ nsb+24(FP), CX
a8q4kloop:
	TESTQ CX, CX
	JE    a8q4kdone
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	K8ROW(SI, 0, Y0)
	K8ROW(BX, 1, Y1)
	K8ROW(R8, 2, Y2)
	K8ROW(R9, 3, Y3)
	K8ROW(R10, 4, Y4)
	K8ROW(R11, 5, Y5)
	K8ROW(R12, 6, Y6)
	K8ROW(R13, 7, Y7)
	VMAXPS k8const<>+64(SB), Y14, Y14
	VMOVUPS k8const<>+32(SB), Y12
	VDIVPS Y14, Y12, Y15
	VDIVPS Y12, Y14, Y14
	VMOVUPS Y14, 96(SP)
	VMOVUPS Y13, 128(SP)
	INT8ROUND(Y15, Y0)
	INT8ROUND(Y15, Y1)
	INT8ROUND(Y15, Y2)
	INT8ROUND(Y15, Y3)
	INT8ROUND(Y15, Y4)
	INT8ROUND(Y15, Y5)
	INT8ROUND(Y15, Y6)
	INT8ROUND(Y15, Y7)
	INT8PACK8(·int8T4x4(SB), 32(SP), 64(SP))
	VMOVDQU k8const<>+96(SB), Y15
	K8PAIR(0, 32, 40)
	K8PAIR(1, 64, 72)
	K8PAIR(2, 48, 56)
	K8PAIR(3, 80, 88)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $144, R8
	ADDQ $144, R9
	ADDQ $144, R10
	ADDQ $144, R11
	ADDQ $144, R12
	ADDQ $144, R13
	ADDQ $1024, DI
	DECQ CX
	JMP  a8q4kloop
a8q4kdone:
	VZEROUPPER
	RET
