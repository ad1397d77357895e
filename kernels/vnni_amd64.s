#include "textflag.h"
#include "amd64_macros.h"
#include "avx512_scales.h"

// AVX-512 VNNI integer kernels (needs AVX-512F, AVX-512BW and
// AVX512_VNNI): the Q4_0 and Q8_0 dots against Q8-quantised activations
// by VPDPBUSD, one row or two rows (gate and up) sharing the activations.
// Comments here say what and why; the timings behind the choices are in
// docs/performance.md.

// Q4QUADW(off, base, xw, zw, zh): the quants of the four Q4_0 blocks at
// off(base) side by side in zw (xw is its low 128 bits), split into their
// low (zw) and high (zh) nibbles as unsigned bytes. Needs Z2 = 0x0f bytes.
#define Q4QUADW(off, base, xw, zw, zh) VMOVDQU off+2(base), xw; VINSERTI32X4 $1, off+20(base), zw, zw; VINSERTI32X4 $2, off+38(base), zw, zw; VINSERTI32X4 $3, off+56(base), zw, zw; VPSRLW $4, zw, zh; VPANDD Z2, zw, zw; VPANDD Z2, zh, zh

// Q8PAIRW(off, base, yw, zw): the quants of the two Q8_0 blocks at
// off(base) side by side in zw (yw is its low 256 bits), sign bits flipped
// to unsigned (w + 128). Needs Z2 = 0x80 bytes.
#define Q8PAIRW(off, base, yw, zw) VMOVDQU off+2(base), yw; VINSERTI64X4 $1, off+36(base), zw, zw; VPXORD Z2, zw, zw

// SCALEDSUM(sums, sc, idx, tmp, acc): acc += float(sums) · (the block
// scales sc picked per dword by idx).
#define SCALEDSUM(sums, sc, idx, tmp, acc) VCVTDQ2PS sums, sums; VPERMPS sc, idx, tmp; VFMADD231PS sums, tmp, acc

// One group of each kernel below: a quad of Q4_0 blocks (row, or rows a
// and b sharing the activation loads), a pair of Q8_0 blocks likewise.
#define ROWQ4QUAD(wq, xq, idx, acc) Q4QUADW(wq, SI, X4, Z4, Z5); VMOVDQU32 xq+128(DI), Z6; VPDPBUSD xq(DI), Z4, Z6; VPDPBUSD xq+64(DI), Z5, Z6; SCALEDSUM(Z6, Z3, idx, Z7, acc)
#define DOT2Q4QUAD(wq, xq, idx, acca, accb) VMOVDQU32 xq(DI), Z24; VMOVDQU32 xq+64(DI), Z25; VMOVDQU32 xq+128(DI), Z6; VMOVDQA32 Z6, Z8; Q4QUADW(wq, SI, X4, Z4, Z5); VPDPBUSD Z24, Z4, Z6; VPDPBUSD Z25, Z5, Z6; SCALEDSUM(Z6, Z3, idx, Z7, acca); Q4QUADW(wq, BX, X14, Z14, Z15); VPDPBUSD Z24, Z14, Z8; VPDPBUSD Z25, Z15, Z8; SCALEDSUM(Z8, Z13, idx, Z9, accb)
#define ROWQ8PAIR(wp, xp, idx, acc) Q8PAIRW(wp, SI, Y4, Z4); VPXORD Z6, Z6, Z6; VPDPBUSD xp(DI), Z4, Z6; SCALEDSUM(Z6, Z3, idx, Z4, acc)
#define DOT2Q8PAIR(wp, xp, idx, acca, accb) ROWQ8PAIR(wp, xp, idx, acca); Q8PAIRW(wp, BX, Y5, Z5); VPXORD Z7, Z7, Z7; VPDPBUSD xp(DI), Z5, Z7; SCALEDSUM(Z7, Z14, idx, Z5, accb)

// The integer Q4_0 dot with AVX-512 VNNI, four blocks per 512-bit vector:
// the 16 bytes of blocks 4q..4q+3 are placed side by side (three inserts)
// and split into their low and high nibbles, two vectors of 64 unsigned
// bytes; the activations were laid out to match (Q8Act.Quad: the four
// blocks' x[0:16], their x[16:32], then 16 int32 offsets), so two VPDPBUSD
// into one accumulator leave 16 int32 sums of eight products, four dwords
// a block. The accumulator starts at −8·Σ of the same eight activations
// (the nibbles' offset), so nothing is corrected afterwards. A VPERMPS
// picks each dword's block scale d_w·d_x for the final FMA. Fourteen
// instructions per four blocks. nb must be a multiple of 16.
// QUADIDX(b): dwords 4b..4b+3 of q4quadidx hold b.
#define QUADIDX(b) DATA q4quadidx<>+b*16(SB)/4, $b; DATA q4quadidx<>+b*16+4(SB)/4, $b; DATA q4quadidx<>+b*16+8(SB)/4, $b; DATA q4quadidx<>+b*16+12(SB)/4, $b
QUADIDX(0)
QUADIDX(1)
QUADIDX(2)
QUADIDX(3)
QUADIDX(4)
QUADIDX(5)
QUADIDX(6)
QUADIDX(7)
QUADIDX(8)
QUADIDX(9)
QUADIDX(10)
QUADIDX(11)
QUADIDX(12)
QUADIDX(13)
QUADIDX(14)
QUADIDX(15)
GLOBL q4quadidx<>(SB), RODATA|NOPTR, $256

// Q4IDXLD loads the four q4quadidx vectors into Z16-Z19.
#define Q4IDXLD VMOVDQU32 q4quadidx<>+0(SB), Z16; VMOVDQU32 q4quadidx<>+64(SB), Z17; VMOVDQU32 q4quadidx<>+128(SB), Z18; VMOVDQU32 q4quadidx<>+192(SB), Z19

// func dotQ40Q8VNNI(w *byte, xq *int8, xd *float32, nb int) float32
TEXT ·dotQ40Q8VNNI(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z2
	Q4SCALESETUP
	Q4IDXLD
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
vq4chunk:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI)
	SCALES16Q4(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	ROWQ4QUAD(0, 0, Z16, Z0)
	ROWQ4QUAD(72, 192, Z17, Z1)
	ROWQ4QUAD(144, 384, Z18, Z0)
	ROWQ4QUAD(216, 576, Z19, Z1)
	ADDQ $288, SI
	ADDQ $768, DI
	ADDQ $64, R8
	SUBQ $16, CX
	JNZ  vq4chunk
	HSUMZ
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// The gate and up dots of one Q4_0 record against the same Q8 activations
// (the VNNI kernel above, two rows at a time: the activations and their
// offsets are loaded once for both rows), prefetching the next record
// (next: 14 cache lines per chunk of 16 blocks, enough for three rows)
// into L2: PREFETCHT2, not T0. With T0 the decode FFN streamed records at
// half the rate of the same kernels reading all three rows as dots: the
// down axpys between the dots issue no loads of the records to come, and
// prefetches into L1 hold its few miss buffers; into L2 the stream keeps
// going (BenchmarkGateRowsDRAM compares the pair kernel with and without
// it). The row dots above keep T0: a matrix's rows are read in order, and
// T2 measured slower there.
// nb must be a multiple of 16.
// func dot2Q40Q8VNNI(a, b *byte, xq *int8, xd *float32, nb int, out *[2]float32, next *byte)
TEXT ·dot2Q40Q8VNNI(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ nb+32(FP), CX
	MOVQ out+40(FP), DX
	MOVQ next+48(FP), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z2
	Q4SCALESETUP
	Q4IDXLD
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
v2q4chunk:
	PFL2x6(R12, 0)
	PFL2x6(R12, 384)
	PFL2x2(R12, 768)
	SCALES16Q4(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	SCALES16Q4(BX, Z13)
	VMULPS 0(R8), Z13, Z13
	DOT2Q4QUAD(0, 0, Z16, Z0, Z10)
	DOT2Q4QUAD(72, 192, Z17, Z1, Z11)
	DOT2Q4QUAD(144, 384, Z18, Z0, Z10)
	DOT2Q4QUAD(216, 576, Z19, Z1, Z11)
	ADDQ $288, SI
	ADDQ $288, BX
	ADDQ $768, DI
	ADDQ $64, R8
	ADDQ $896, R12
	SUBQ $16, CX
	JNZ  v2q4chunk
	VADDPS Z1, Z0, Z0
	VADDPS Z11, Z10, Z10
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF64X4 $1, Z10, Y11
	VADDPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VHADDPS X10, X0, X0
	VHADDPS X0, X0, X0
	VMOVQ X0, 0(DX)
	VZEROUPPER
	RET

// Q8_0 integer dots with AVX-512 VNNI. VPDPBUSD multiplies unsigned by
// signed bytes, so the weights go in with their sign bit flipped (w + 128,
// one XOR) and the excess 128·Σx of each block is taken off after the
// block's scale: Σ_b d_b·(Σ (w+128)·x − 128·S_b), S_b the activation block
// sums the Q8 activations carry. Two blocks per 512-bit register (lanes
// 0-7 block 2p, 8-15 block 2p+1), q8pairidx picks each lane's d_w·d_x.

// PAIRIDX(b): dwords 8b..8b+7 of q8pairidx hold b.
#define PAIRIDX(b) DATA q8pairidx<>+b*32(SB)/4, $b; DATA q8pairidx<>+b*32+4(SB)/4, $b; DATA q8pairidx<>+b*32+8(SB)/4, $b; DATA q8pairidx<>+b*32+12(SB)/4, $b; DATA q8pairidx<>+b*32+16(SB)/4, $b; DATA q8pairidx<>+b*32+20(SB)/4, $b; DATA q8pairidx<>+b*32+24(SB)/4, $b; DATA q8pairidx<>+b*32+28(SB)/4, $b
PAIRIDX(0)
PAIRIDX(1)
PAIRIDX(2)
PAIRIDX(3)
PAIRIDX(4)
PAIRIDX(5)
PAIRIDX(6)
PAIRIDX(7)
PAIRIDX(8)
PAIRIDX(9)
PAIRIDX(10)
PAIRIDX(11)
PAIRIDX(12)
PAIRIDX(13)
PAIRIDX(14)
PAIRIDX(15)
GLOBL q8pairidx<>(SB), RODATA|NOPTR, $512

// Q8IDXLD loads the eight q8pairidx vectors into Z16-Z23.
#define Q8IDXLD VMOVDQU32 q8pairidx<>+0(SB), Z16; VMOVDQU32 q8pairidx<>+64(SB), Z17; VMOVDQU32 q8pairidx<>+128(SB), Z18; VMOVDQU32 q8pairidx<>+192(SB), Z19; VMOVDQU32 q8pairidx<>+256(SB), Z20; VMOVDQU32 q8pairidx<>+320(SB), Z21; VMOVDQU32 q8pairidx<>+384(SB), Z22; VMOVDQU32 q8pairidx<>+448(SB), Z23

// func dotQ80Q8VNNI(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32
TEXT ·dotQ80Q8VNNI(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xd+16(FP), R8
	MOVQ xs+24(FP), R9
	MOVQ nb+32(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z2
	Q8SCALESETUP
	Q8IDXLD
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
vq8chunk:
	PREFETCHT0 4352(SI)
	PREFETCHT0 4416(SI)
	PREFETCHT0 4480(SI)
	PREFETCHT0 4544(SI)
	PREFETCHT0 4608(SI)
	PREFETCHT0 4672(SI)
	PREFETCHT0 4736(SI)
	PREFETCHT0 4800(SI)
	PREFETCHT0 4864(SI)
	SCALES16Q8(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	VCVTDQ2PS 0(R9), Z8
	VFMADD231PS Z8, Z3, Z10
	ROWQ8PAIR(0, 0, Z16, Z0)
	ROWQ8PAIR(68, 64, Z17, Z1)
	ROWQ8PAIR(136, 128, Z18, Z0)
	ROWQ8PAIR(204, 192, Z19, Z1)
	ROWQ8PAIR(272, 256, Z20, Z0)
	ROWQ8PAIR(340, 320, Z21, Z1)
	ROWQ8PAIR(408, 384, Z22, Z0)
	ROWQ8PAIR(476, 448, Z23, Z1)
	ADDQ $544, SI
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	SUBQ $16, CX
	JNZ  vq8chunk
	// dot2Q80Q8VNNI's fold for one row (the two accumulators added, then
	// the 128·S correction, then halves and pairs), so a row's dot is the
	// same to the bit alone or in a pair.
	MOVL $0x43000000, AX
	VPBROADCASTD AX, Z11
	VADDPS Z1, Z0, Z0
	VFNMADD231PS Z11, Z10, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VZEROUPPER
	MOVSS X0, ret+40(FP)
	RET

// The gate and up dots of one Q8_0 record (two rows sharing each
// activation load), prefetching the next record into L2 (PREFETCHT2, as
// dot2Q40Q8VNNI): 26 cache lines a chunk, three rows of 16 blocks.
// func dot2Q80Q8VNNI(a, b *byte, xq *int8, xd *float32, xs *int32, nb int, out *[2]float32, next *byte)
TEXT ·dot2Q80Q8VNNI(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), BX
	MOVQ xq+16(FP), DI
	MOVQ xd+24(FP), R8
	MOVQ xs+32(FP), R9
	MOVQ nb+40(FP), CX
	MOVQ out+48(FP), DX
	MOVQ next+56(FP), R12
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z2
	Q8SCALESETUP
	Q8IDXLD
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
v2q8chunk:
	PFL2x6(R12, 0)
	PFL2x6(R12, 384)
	PFL2x6(R12, 768)
	PFL2x6(R12, 1152)
	PFL2x2(R12, 1536)
	SCALES16Q8(SI, Z3)
	VMULPS 0(R8), Z3, Z3
	SCALES16Q8(BX, Z14)
	VMULPS 0(R8), Z14, Z14
	VCVTDQ2PS 0(R9), Z8
	VFMADD231PS Z8, Z3, Z12
	VFMADD231PS Z8, Z14, Z13
	DOT2Q8PAIR(0, 0, Z16, Z0, Z10)
	DOT2Q8PAIR(68, 64, Z17, Z1, Z11)
	DOT2Q8PAIR(136, 128, Z18, Z0, Z10)
	DOT2Q8PAIR(204, 192, Z19, Z1, Z11)
	DOT2Q8PAIR(272, 256, Z20, Z0, Z10)
	DOT2Q8PAIR(340, 320, Z21, Z1, Z11)
	DOT2Q8PAIR(408, 384, Z22, Z0, Z10)
	DOT2Q8PAIR(476, 448, Z23, Z1, Z11)
	ADDQ $544, SI
	ADDQ $544, BX
	ADDQ $512, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $1664, R12
	SUBQ $16, CX
	JNZ  v2q8chunk
	MOVL $0x43000000, AX
	VPBROADCASTD AX, Z15
	VADDPS Z1, Z0, Z0
	VFNMADD231PS Z15, Z12, Z0
	VADDPS Z11, Z10, Z10
	VFNMADD231PS Z15, Z13, Z10
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF64X4 $1, Z10, Y11
	VADDPS Y11, Y10, Y10
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VEXTRACTF128 $1, Y10, X11
	VADDPS X11, X10, X10
	VHADDPS X10, X0, X0
	VHADDPS X0, X0, X0
	VMOVQ X0, 0(DX)
	VZEROUPPER
	RET

// The Q4_0 dot of one row against four tokens' activations (prefill): the
// row's quads are loaded and split into nibbles once for the four, the
// unpacking being half of the single-token kernel's work. nb must be a
// multiple of 16.

// DOT4Q4TOK(xq, q, sc, idx, acc): token q's part of one quad (Z4/Z5 the
// row's nibbles): its two VPDPBUSD from xq(q), the dwords scaled by sc.
#define DOT4Q4TOK(xq, q, sc, idx, acc) VMOVDQU32 xq+128(q), Z6; VPDPBUSD xq(q), Z4, Z6; VPDPBUSD xq+64(q), Z5, Z6; SCALEDSUM(Z6, sc, idx, Z7, acc)
#define DOT4Q4QUAD(wq, xq, idx) Q4QUADW(wq, SI, X4, Z4, Z5); DOT4Q4TOK(xq, DI, Z20, idx, Z8); DOT4Q4TOK(xq, BX, Z21, idx, Z9); DOT4Q4TOK(xq, R9, Z22, idx, Z10); DOT4Q4TOK(xq, R10, Z23, idx, Z11)

// func dot4Q40Q8VNNI(w *byte, x *[4]*int8, d *[4]*float32, nb int, out *[4]float32)
TEXT ·dot4Q40Q8VNNI(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), AX
	LOAD4P(AX, DI, BX, R9, R10)
	MOVQ d+16(FP), AX
	LOAD4P(AX, R11, R12, R13, R14)
	MOVQ nb+24(FP), CX
	MOVQ out+32(FP), DX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z2
	Q4SCALESETUP
	Q4IDXLD
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
d4q4chunk:
	SCALES16Q4(SI, Z3)
	VMULPS 0(R11), Z3, Z20
	VMULPS 0(R12), Z3, Z21
	VMULPS 0(R13), Z3, Z22
	VMULPS 0(R14), Z3, Z23
	DOT4Q4QUAD(0, 0, Z16)
	DOT4Q4QUAD(72, 192, Z17)
	DOT4Q4QUAD(144, 384, Z18)
	DOT4Q4QUAD(216, 576, Z19)
	ADDQ $288, SI
	ADDQ $768, DI
	ADDQ $768, BX
	ADDQ $768, R9
	ADDQ $768, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	SUBQ $16, CX
	JNZ  d4q4chunk
	HSUM4Z(Z8, Y8, Z9, Y9, Z10, Y10, Z11, Y11)
	VMOVUPS X14, 0(DX)
	VZEROUPPER
	RET

// The Q8_0 dot of one row against four tokens' activations (prefill), as
// dot4Q40Q8VNNI: the row's pairs of blocks loaded and sign-flipped once
// for the four. Each token's excess 128·Σ_b d_b·S_b is taken off per chunk
// (S·128 is exact in float32). nb must be a multiple of 16.
#define DOT4Q8TOK(xp, q, sc, idx, acc) VPXORD Z6, Z6, Z6; VPDPBUSD xp(q), Z4, Z6; SCALEDSUM(Z6, sc, idx, Z7, acc)
#define DOT4Q8PAIR(wp, xp, idx) Q8PAIRW(wp, SI, Y4, Z4); DOT4Q8TOK(xp, DI, Z10, idx, Z0); DOT4Q8TOK(xp, BX, Z11, idx, Z1); DOT4Q8TOK(xp, R9, Z12, idx, Z8); DOT4Q8TOK(xp, R10, Z13, idx, Z9)
// DOT4Q8S(k, sc, acc): token k's correction, its sums at s[k] + R8 (DX
// holds s).
#define DOT4Q8S(k, sc, acc) MOVQ k*8(DX), AX; VMOVDQU32 (AX)(R8*1), Z14; VPSLLD $7, Z14, Z14; VCVTDQ2PS Z14, Z14; VFNMADD231PS Z14, sc, acc

// func dot4Q80Q8VNNI(w *byte, x *[4]*int8, d *[4]*float32, s *[4]*int32, nb int, out *[4]float32)
TEXT ·dot4Q80Q8VNNI(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), AX
	LOAD4P(AX, DI, BX, R9, R10)
	MOVQ d+16(FP), AX
	LOAD4P(AX, R11, R12, R13, R14)
	MOVQ nb+32(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z2
	Q8SCALESETUP
	Q8IDXLD
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	XORQ R8, R8
	MOVQ s+24(FP), DX
d4q8chunk:
	SCALES16Q8(SI, Z3)
	VMULPS 0(R11), Z3, Z10
	VMULPS 0(R12), Z3, Z11
	VMULPS 0(R13), Z3, Z12
	VMULPS 0(R14), Z3, Z13
	DOT4Q8S(0, Z10, Z0)
	DOT4Q8S(1, Z11, Z1)
	DOT4Q8S(2, Z12, Z8)
	DOT4Q8S(3, Z13, Z9)
	DOT4Q8PAIR(0, 0, Z16)
	DOT4Q8PAIR(68, 64, Z17)
	DOT4Q8PAIR(136, 128, Z18)
	DOT4Q8PAIR(204, 192, Z19)
	DOT4Q8PAIR(272, 256, Z20)
	DOT4Q8PAIR(340, 320, Z21)
	DOT4Q8PAIR(408, 384, Z22)
	DOT4Q8PAIR(476, 448, Z23)
	ADDQ $544, SI
	ADDQ $512, DI
	ADDQ $512, BX
	ADDQ $512, R9
	ADDQ $512, R10
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, R8
	SUBQ $16, CX
	JNZ  d4q8chunk
	HSUM4Z(Z0, Y0, Z1, Y1, Z8, Y8, Z9, Y9)
	MOVQ out+40(FP), DX
	VMOVUPS X14, 0(DX)
	VZEROUPPER
	RET
