#include "textflag.h"

// The down projection of a layout Tiled block (format.Tiled, version 4
// packs) for Q8_0: y[64c : 64c+64] += Σ_q h[q]·(piece q of chunk c), the n
// records' pieces of chunk c back to back (two blocks, 68 bytes, each)
// from w + c·cstride. A chunk of y stays in registers while every record
// adds its piece, in record order, with the single-row axpy's arithmetic
// (block scale d widened, times h[q], one multiply-add per value), so the
// sums are its to the bit; y is loaded and stored once a chunk instead of
// once a record, and the pieces are read as one ascending stream. One
// thread, a Q8_0 down run from memory: 28.5 GB/s against the single-row
// axpy's 20.2 and the row dots' 27.6 (docs/bench.md, sixteenth session).

// TILEQ8AVX512(k, za, zb): block k of the piece at R11 into za (values
// 0-15) and zb (16-31), with h[q] broadcast in Z16.
#define TILEQ8AVX512(k, za, zb) VPBROADCASTW k*34(R11), Y20; VCVTPH2PS Y20, Z20; VMULPS Z16, Z20, Z20; VPMOVSXBD k*34+2(R11), Z17; VPMOVSXBD k*34+18(R11), Z18; VCVTDQ2PS Z17, Z17; VCVTDQ2PS Z18, Z18; VFMADD231PS Z20, Z17, za; VFMADD231PS Z20, Z18, zb

// func axpyTilesQ80AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ80AVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), R10
	MOVQ chunks+32(FP), CX
	MOVQ cstride+40(FP), R9
tq8zchunk:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	MOVQ SI, R11
	MOVQ R8, R12
	MOVQ R10, R13
tq8zrec:
	VBROADCASTSS (R12), Z16
	TILEQ8AVX512(0, Z0, Z1)
	TILEQ8AVX512(1, Z2, Z3)
	ADDQ $68, R11
	ADDQ $4, R12
	DECQ R13
	JNZ  tq8zrec
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  tq8zchunk
	VZEROUPPER
	RET

// The same with AVX2 (F16C for the scale): a chunk of y in eight Y
// registers, eight values a VPMOVSXBD.
#define TILEQ8AVX2(k, y0, y1, y2, y3) VPBROADCASTW k*34(R11), X12; VCVTPH2PS X12, Y12; VMULPS Y13, Y12, Y12; VPMOVSXBD k*34+2(R11), Y8; VPMOVSXBD k*34+10(R11), Y9; VPMOVSXBD k*34+18(R11), Y10; VPMOVSXBD k*34+26(R11), Y11; VCVTDQ2PS Y8, Y8; VCVTDQ2PS Y9, Y9; VCVTDQ2PS Y10, Y10; VCVTDQ2PS Y11, Y11; VFMADD231PS Y12, Y8, y0; VFMADD231PS Y12, Y9, y1; VFMADD231PS Y12, Y10, y2; VFMADD231PS Y12, Y11, y3

// func axpyTilesQ80AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ80AVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), R10
	MOVQ chunks+32(FP), CX
	MOVQ cstride+40(FP), R9
tq8ychunk:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ SI, R11
	MOVQ R8, R12
	MOVQ R10, R13
tq8yrec:
	VBROADCASTSS (R12), Y13
	TILEQ8AVX2(0, Y0, Y1, Y2, Y3)
	TILEQ8AVX2(1, Y4, Y5, Y6, Y7)
	ADDQ $68, R11
	ADDQ $4, R12
	DECQ R13
	JNZ  tq8yrec
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  tq8ychunk
	VZEROUPPER
	RET

// Q4_0 the same (pieces of two 18-byte blocks, 36 bytes): a block's 16
// bytes widened to dwords, the high nibbles by a shift, both mapped to
// float(nibble − 8) through tileq4values by VPERMPS (which reads an
// index's low four bits), as the single-row axpy does.
DATA tileq4values<>+0(SB)/4, $0xc1000000
DATA tileq4values<>+4(SB)/4, $0xc0e00000
DATA tileq4values<>+8(SB)/4, $0xc0c00000
DATA tileq4values<>+12(SB)/4, $0xc0a00000
DATA tileq4values<>+16(SB)/4, $0xc0800000
DATA tileq4values<>+20(SB)/4, $0xc0400000
DATA tileq4values<>+24(SB)/4, $0xc0000000
DATA tileq4values<>+28(SB)/4, $0xbf800000
DATA tileq4values<>+32(SB)/4, $0x00000000
DATA tileq4values<>+36(SB)/4, $0x3f800000
DATA tileq4values<>+40(SB)/4, $0x40000000
DATA tileq4values<>+44(SB)/4, $0x40400000
DATA tileq4values<>+48(SB)/4, $0x40800000
DATA tileq4values<>+52(SB)/4, $0x40a00000
DATA tileq4values<>+56(SB)/4, $0x40c00000
DATA tileq4values<>+60(SB)/4, $0x40e00000
GLOBL tileq4values<>(SB), RODATA|NOPTR, $64

// TILEQ4AVX512(k, za, zb): block k of the piece at R11 into za (values
// 0-15, the low nibbles) and zb (16-31, the high), h[q] in Z16, the value
// table in Z21.
#define TILEQ4AVX512(k, za, zb) VPBROADCASTW k*18(R11), Y20; VCVTPH2PS Y20, Z20; VMULPS Z16, Z20, Z20; VPMOVZXBD k*18+2(R11), Z17; VPSRLD $4, Z17, Z18; VPERMPS Z21, Z17, Z17; VPERMPS Z21, Z18, Z18; VFMADD231PS Z20, Z17, za; VFMADD231PS Z20, Z18, zb

// func axpyTilesQ40AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ40AVX512(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), R10
	MOVQ chunks+32(FP), CX
	MOVQ cstride+40(FP), R9
	VMOVUPS tileq4values<>(SB), Z21
tq4zchunk:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	MOVQ SI, R11
	MOVQ R8, R12
	MOVQ R10, R13
tq4zrec:
	VBROADCASTSS (R12), Z16
	TILEQ4AVX512(0, Z0, Z1)
	TILEQ4AVX512(1, Z2, Z3)
	ADDQ $36, R11
	ADDQ $4, R12
	DECQ R13
	JNZ  tq4zrec
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  tq4zchunk
	VZEROUPPER
	RET

// TILEQ4AVX2(k, y0, y1, y2, y3): block k into y0, y1 (values 0-15, the
// low nibbles) and y2, y3 (16-31), h[q] in Y13, 15 in Y14 and 8 in Y15
// as dwords.
#define TILEQ4AVX2(k, y0, y1, y2, y3) VPBROADCASTW k*18(R11), X12; VCVTPH2PS X12, Y12; VMULPS Y13, Y12, Y12; VPMOVZXBD k*18+2(R11), Y8; VPMOVZXBD k*18+10(R11), Y9; VPSRLD $4, Y8, Y10; VPSRLD $4, Y9, Y11; VPAND Y14, Y8, Y8; VPAND Y14, Y9, Y9; VPSUBD Y15, Y8, Y8; VPSUBD Y15, Y9, Y9; VPSUBD Y15, Y10, Y10; VPSUBD Y15, Y11, Y11; VCVTDQ2PS Y8, Y8; VCVTDQ2PS Y9, Y9; VCVTDQ2PS Y10, Y10; VCVTDQ2PS Y11, Y11; VFMADD231PS Y12, Y8, y0; VFMADD231PS Y12, Y9, y1; VFMADD231PS Y12, Y10, y2; VFMADD231PS Y12, Y11, y3

// func axpyTilesQ40AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ40AVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ n+24(FP), R10
	MOVQ chunks+32(FP), CX
	MOVQ cstride+40(FP), R9
	MOVL $15, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $8, AX
	VMOVQ AX, X15
	VPBROADCASTD X15, Y15
tq4ychunk:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ SI, R11
	MOVQ R8, R12
	MOVQ R10, R13
tq4yrec:
	VBROADCASTSS (R12), Y13
	TILEQ4AVX2(0, Y0, Y1, Y2, Y3)
	TILEQ4AVX2(1, Y4, Y5, Y6, Y7)
	ADDQ $36, R11
	ADDQ $4, R12
	DECQ R13
	JNZ  tq4yrec
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  tq4ychunk
	VZEROUPPER
	RET

// The same kernels over chosen records of a run (the gated methods' up |
// down pass): record q's piece of chunk c at w + c·cstride + idx[q]·piece,
// idx ascending, so each chunk's region is read in one ascending sweep.

// func axpyTilesIdxQ80AVX512(y *float32, h *float32, w *byte, idx *int32, n, chunks, cstride int)
TEXT ·axpyTilesIdxQ80AVX512(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ idx+24(FP), BX
	MOVQ n+32(FP), R10
	MOVQ chunks+40(FP), CX
	MOVQ cstride+48(FP), R9
axpyTilesIdxQ80AVX512chunk:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	MOVQ R8, R12
	MOVQ BX, R14
	MOVQ R10, R13
axpyTilesIdxQ80AVX512rec:
	MOVLQZX (R14), AX
	IMULQ $68, AX
	LEAQ (SI)(AX*1), R11
	VBROADCASTSS (R12), Z16
	TILEQ8AVX512(0, Z0, Z1)
	TILEQ8AVX512(1, Z2, Z3)
	ADDQ $4, R14
	ADDQ $4, R12
	DECQ R13
	JNZ  axpyTilesIdxQ80AVX512rec
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  axpyTilesIdxQ80AVX512chunk
	VZEROUPPER
	RET

// func axpyTilesIdxQ40AVX512(y *float32, h *float32, w *byte, idx *int32, n, chunks, cstride int)
TEXT ·axpyTilesIdxQ40AVX512(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ idx+24(FP), BX
	MOVQ n+32(FP), R10
	MOVQ chunks+40(FP), CX
	MOVQ cstride+48(FP), R9
	VMOVUPS tileq4values<>(SB), Z21
axpyTilesIdxQ40AVX512chunk:
	VMOVUPS 0(DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	MOVQ R8, R12
	MOVQ BX, R14
	MOVQ R10, R13
axpyTilesIdxQ40AVX512rec:
	MOVLQZX (R14), AX
	IMULQ $36, AX
	LEAQ (SI)(AX*1), R11
	VBROADCASTSS (R12), Z16
	TILEQ4AVX512(0, Z0, Z1)
	TILEQ4AVX512(1, Z2, Z3)
	ADDQ $4, R14
	ADDQ $4, R12
	DECQ R13
	JNZ  axpyTilesIdxQ40AVX512rec
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  axpyTilesIdxQ40AVX512chunk
	VZEROUPPER
	RET

// func axpyTilesIdxQ80AVX2(y *float32, h *float32, w *byte, idx *int32, n, chunks, cstride int)
TEXT ·axpyTilesIdxQ80AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ idx+24(FP), BX
	MOVQ n+32(FP), R10
	MOVQ chunks+40(FP), CX
	MOVQ cstride+48(FP), R9
axpyTilesIdxQ80AVX2chunk:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ R8, R12
	MOVQ BX, R14
	MOVQ R10, R13
axpyTilesIdxQ80AVX2rec:
	MOVLQZX (R14), AX
	IMULQ $68, AX
	LEAQ (SI)(AX*1), R11
	VBROADCASTSS (R12), Y13
	TILEQ8AVX2(0, Y0, Y1, Y2, Y3)
	TILEQ8AVX2(1, Y4, Y5, Y6, Y7)
	ADDQ $4, R14
	ADDQ $4, R12
	DECQ R13
	JNZ  axpyTilesIdxQ80AVX2rec
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  axpyTilesIdxQ80AVX2chunk
	VZEROUPPER
	RET

// func axpyTilesIdxQ40AVX2(y *float32, h *float32, w *byte, idx *int32, n, chunks, cstride int)
TEXT ·axpyTilesIdxQ40AVX2(SB), NOSPLIT, $0-56
	MOVQ y+0(FP), DI
	MOVQ h+8(FP), R8
	MOVQ w+16(FP), SI
	MOVQ idx+24(FP), BX
	MOVQ n+32(FP), R10
	MOVQ chunks+40(FP), CX
	MOVQ cstride+48(FP), R9
	MOVL $15, AX
	VMOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $8, AX
	VMOVQ AX, X15
	VPBROADCASTD X15, Y15
axpyTilesIdxQ40AVX2chunk:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VMOVUPS 128(DI), Y4
	VMOVUPS 160(DI), Y5
	VMOVUPS 192(DI), Y6
	VMOVUPS 224(DI), Y7
	MOVQ R8, R12
	MOVQ BX, R14
	MOVQ R10, R13
axpyTilesIdxQ40AVX2rec:
	MOVLQZX (R14), AX
	IMULQ $36, AX
	LEAQ (SI)(AX*1), R11
	VBROADCASTSS (R12), Y13
	TILEQ4AVX2(0, Y0, Y1, Y2, Y3)
	TILEQ4AVX2(1, Y4, Y5, Y6, Y7)
	ADDQ $4, R14
	ADDQ $4, R12
	DECQ R13
	JNZ  axpyTilesIdxQ40AVX2rec
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	ADDQ $256, DI
	ADDQ R9, SI
	DECQ CX
	JNZ  axpyTilesIdxQ40AVX2chunk
	VZEROUPPER
	RET
