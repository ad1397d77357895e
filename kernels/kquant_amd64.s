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
