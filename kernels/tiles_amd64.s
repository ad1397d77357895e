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
// axpy's 20.2 and the row dots' 27.6.

// TILEQ8AVX512(k, za, zb): block k of the piece at R11 into za (values
// 0-15) and zb (16-31), with h[q] broadcast in Z16.
#define TILEQ8AVX512(k, za, zb) VPBROADCASTW k*34(R11), Y20; VCVTPH2PS Y20, Z20; VMULPS Z16, Z20, Z20; VPMOVSXBD k*34+2(R11), Z17; VPMOVSXBD k*34+18(R11), Z18; VCVTDQ2PS Z17, Z17; VCVTDQ2PS Z18, Z18; VFMADD231PS Z20, Z17, za; VFMADD231PS Z20, Z18, zb

// The same with AVX2 (F16C for the scale): a chunk of y in eight Y
// registers, eight values a VPMOVSXBD.
#define TILEQ8AVX2(k, y0, y1, y2, y3) VPBROADCASTW k*34(R11), X12; VCVTPH2PS X12, Y12; VMULPS Y13, Y12, Y12; VPMOVSXBD k*34+2(R11), Y8; VPMOVSXBD k*34+10(R11), Y9; VPMOVSXBD k*34+18(R11), Y10; VPMOVSXBD k*34+26(R11), Y11; VCVTDQ2PS Y8, Y8; VCVTDQ2PS Y9, Y9; VCVTDQ2PS Y10, Y10; VCVTDQ2PS Y11, Y11; VFMADD231PS Y12, Y8, y0; VFMADD231PS Y12, Y9, y1; VFMADD231PS Y12, Y10, y2; VFMADD231PS Y12, Y11, y3

// Q4_0 the same (pieces of two 18-byte blocks, 36 bytes): a block's 16
// bytes widened to dwords, the high nibbles by a shift, both mapped to
// float(nibble − 8) through q4values (q4values.h) by VPERMPS (which reads an
// index's low four bits), as the single-row axpy does.
#include "q4values.h"

// TILEQ4AVX512(k, za, zb): block k of the piece at R11 into za (values
// 0-15, the low nibbles) and zb (16-31, the high), h[q] in Z16, the value
// table in Z21.
#define TILEQ4AVX512(k, za, zb) VPBROADCASTW k*18(R11), Y20; VCVTPH2PS Y20, Z20; VMULPS Z16, Z20, Z20; VPMOVZXBD k*18+2(R11), Z17; VPSRLD $4, Z17, Z18; VPERMPS Z21, Z17, Z17; VPERMPS Z21, Z18, Z18; VFMADD231PS Z20, Z17, za; VFMADD231PS Z20, Z18, zb

// TILEQ4AVX2(k, y0, y1, y2, y3): block k into y0, y1 (values 0-15, the
// low nibbles) and y2, y3 (16-31), h[q] in Y13, 15 in Y14 and 8 in Y15
// as dwords.
#define TILEQ4AVX2(k, y0, y1, y2, y3) VPBROADCASTW k*18(R11), X12; VCVTPH2PS X12, Y12; VMULPS Y13, Y12, Y12; VPMOVZXBD k*18+2(R11), Y8; VPMOVZXBD k*18+10(R11), Y9; VPSRLD $4, Y8, Y10; VPSRLD $4, Y9, Y11; VPAND Y14, Y8, Y8; VPAND Y14, Y9, Y9; VPSUBD Y15, Y8, Y8; VPSUBD Y15, Y9, Y9; VPSUBD Y15, Y10, Y10; VPSUBD Y15, Y11, Y11; VCVTDQ2PS Y8, Y8; VCVTDQ2PS Y9, Y9; VCVTDQ2PS Y10, Y10; VCVTDQ2PS Y11, Y11; VFMADD231PS Y12, Y8, y0; VFMADD231PS Y12, Y9, y1; VFMADD231PS Y12, Y10, y2; VFMADD231PS Y12, Y11, y3


// The kernels below are one loop, TILES, over the chunks of y (a chunk
// loaded into registers, every record's piece added, stored back), with
// what differs as macro arguments: the registers (Z for AVX-512, Y for
// AVX2), the dtype's block macro, and where a record's piece lies: the
// next one (ADDQ the piece's bytes to R11).
#define LOADZ VMOVUPS 0(DI), Z0; VMOVUPS 64(DI), Z1; VMOVUPS 128(DI), Z2; VMOVUPS 192(DI), Z3
#define STOREZ VMOVUPS Z0, 0(DI); VMOVUPS Z1, 64(DI); VMOVUPS Z2, 128(DI); VMOVUPS Z3, 192(DI)
#define LOADY VMOVUPS 0(DI), Y0; VMOVUPS 32(DI), Y1; VMOVUPS 64(DI), Y2; VMOVUPS 96(DI), Y3; VMOVUPS 128(DI), Y4; VMOVUPS 160(DI), Y5; VMOVUPS 192(DI), Y6; VMOVUPS 224(DI), Y7
#define STOREY VMOVUPS Y0, 0(DI); VMOVUPS Y1, 32(DI); VMOVUPS Y2, 64(DI); VMOVUPS Y3, 96(DI); VMOVUPS Y4, 128(DI); VMOVUPS Y5, 160(DI); VMOVUPS Y6, 192(DI); VMOVUPS Y7, 224(DI)
#define HZ VBROADCASTSS (R12), Z16
#define HY VBROADCASTSS (R12), Y13
#define Q8Z TILEQ8AVX512(0, Z0, Z1); TILEQ8AVX512(1, Z2, Z3)
#define Q4Z TILEQ4AVX512(0, Z0, Z1); TILEQ4AVX512(1, Z2, Z3)
#define Q8Y TILEQ8AVX2(0, Y0, Y1, Y2, Y3); TILEQ8AVX2(1, Y4, Y5, Y6, Y7)
#define Q4Y TILEQ4AVX2(0, Y0, Y1, Y2, Y3); TILEQ4AVX2(1, Y4, Y5, Y6, Y7)
#define SEQ MOVQ R11, R11
#define NEXT68 ADDQ $68, R11
#define NEXT36 ADDQ $36, R11
// The Gap kernels' NEXT: the record's piece of the next chunk (R9 bytes on)
// prefetched as this one is added, for runs whose chunks lie apart.
#define GAP68 PREFETCHT0 (R11)(R9*1); PREFETCHT0 64(R11)(R9*1); ADDQ $68, R11
#define GAP36 PREFETCHT0 (R11)(R9*1); ADDQ $36, R11
#define Q4ZCONST VMOVUPS q4values<>(SB), Z21
#define Q4YCONST MOVL $15, AX; VMOVQ AX, X14; VPBROADCASTD X14, Y14; MOVL $8, AX; VMOVQ AX, X15; VPBROADCASTD X15, Y15
#define ARGS MOVQ y+0(FP), DI; MOVQ h+8(FP), R8; MOVQ w+16(FP), SI; MOVQ n+24(FP), R10; MOVQ chunks+32(FP), CX; MOVQ cstride+40(FP), R9

// TILES(LOAD, STORE, H, BLOCKS, ADDR, NEXT): DI = y, R8 = h, SI = w
// (chunk 0's first piece), R10 = n, CX = chunks, R9 = cstride.
#define TILES(LOAD, STORE, H, BLOCKS, ADDR, NEXT) \
	tchunk:; \
	LOAD; \
	MOVQ SI, R11; \
	MOVQ R8, R12; \
	MOVQ R10, R13; \
	trec:; \
	ADDR; \
	H; \
	BLOCKS; \
	NEXT; \
	ADDQ $4, R12; \
	DECQ R13; \
	JNZ  trec; \
	STORE; \
	ADDQ $256, DI; \
	ADDQ R9, SI; \
	DECQ CX; \
	JNZ  tchunk; \
	VZEROUPPER; \
	RET

// func axpyTilesQ80AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ80AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, Q8Z, SEQ, NEXT68)

// func axpyTilesQ40AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ40AVX512(SB), NOSPLIT, $0-48
	ARGS
	Q4ZCONST
	TILES(LOADZ, STOREZ, HZ, Q4Z, SEQ, NEXT36)

// func axpyTilesQ80AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ80AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, Q8Y, SEQ, NEXT68)

// func axpyTilesQ40AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesQ40AVX2(SB), NOSPLIT, $0-48
	ARGS
	Q4YCONST
	TILES(LOADY, STOREY, HY, Q4Y, SEQ, NEXT36)

// F16 the same (pieces of 64 halves, 128 bytes): each 16 widened by
// VCVTPH2PS (8 for AVX2) and multiplied-added with h[q], as the row axpy.
#define F16Z VCVTPH2PS 0(R11), Z17; VFMADD231PS Z16, Z17, Z0; VCVTPH2PS 32(R11), Z18; VFMADD231PS Z16, Z18, Z1; VCVTPH2PS 64(R11), Z17; VFMADD231PS Z16, Z17, Z2; VCVTPH2PS 96(R11), Z18; VFMADD231PS Z16, Z18, Z3
#define F16Y VCVTPH2PS 0(R11), Y8; VFMADD231PS Y13, Y8, Y0; VCVTPH2PS 16(R11), Y9; VFMADD231PS Y13, Y9, Y1; VCVTPH2PS 32(R11), Y10; VFMADD231PS Y13, Y10, Y2; VCVTPH2PS 48(R11), Y11; VFMADD231PS Y13, Y11, Y3; VCVTPH2PS 64(R11), Y8; VFMADD231PS Y13, Y8, Y4; VCVTPH2PS 80(R11), Y9; VFMADD231PS Y13, Y9, Y5; VCVTPH2PS 96(R11), Y10; VFMADD231PS Y13, Y10, Y6; VCVTPH2PS 112(R11), Y11; VFMADD231PS Y13, Y11, Y7
#define NEXT128 ADDQ $128, R11
#define GAP128 PREFETCHT0 (R11)(R9*1); PREFETCHT0 64(R11)(R9*1); ADDQ $128, R11

// func axpyTilesF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesF16AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, F16Z, SEQ, NEXT128)

// func axpyTilesF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesF16AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, F16Y, SEQ, NEXT128)

// BF16 the same (pieces of 64 values, 128 bytes): each 16 zero-extended to
// dwords and shifted into the high half (8 for AVX2), multiplied-added with
// h[q], as the row axpy.
#define BF16W(off, r) VPMOVZXWD off(R11), r; VPSLLD $16, r, r
#define BF16Z BF16W(0, Z17); VFMADD231PS Z16, Z17, Z0; BF16W(32, Z18); VFMADD231PS Z16, Z18, Z1; BF16W(64, Z17); VFMADD231PS Z16, Z17, Z2; BF16W(96, Z18); VFMADD231PS Z16, Z18, Z3
#define BF16Y BF16W(0, Y8); VFMADD231PS Y13, Y8, Y0; BF16W(16, Y9); VFMADD231PS Y13, Y9, Y1; BF16W(32, Y10); VFMADD231PS Y13, Y10, Y2; BF16W(48, Y11); VFMADD231PS Y13, Y11, Y3; BF16W(64, Y8); VFMADD231PS Y13, Y8, Y4; BF16W(80, Y9); VFMADD231PS Y13, Y9, Y5; BF16W(96, Y10); VFMADD231PS Y13, Y10, Y6; BF16W(112, Y11); VFMADD231PS Y13, Y11, Y7

// func axpyTilesBF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesBF16AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, BF16Z, SEQ, NEXT128)

// func axpyTilesBF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesBF16AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, BF16Y, SEQ, NEXT128)

// The Gap kernels are the kernels above for a run of fewer records than
// its block holds (a routed group's sub-block: format.RecordBlock.Sub), whose
// chunks lie cstride apart with a gap between them: each record's piece of
// the next chunk is prefetched as its piece of this one is added, so the
// next chunk's short run is in flight before the loop reaches it (a 1B
// layer's routed FFN, bf16 groups of 32 from memory: 1.12× the paper's
// contiguous set against 1.35× without, go test -bench RoutedOverPaper).
// Whole blocks keep the kernels above: there the chunks follow one another
// and the prefetches only took L1 from the stream (dense bf16 decode 0.91×).

// func axpyTilesGapQ80AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapQ80AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, Q8Z, SEQ, GAP68)

// func axpyTilesGapQ40AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapQ40AVX512(SB), NOSPLIT, $0-48
	ARGS
	Q4ZCONST
	TILES(LOADZ, STOREZ, HZ, Q4Z, SEQ, GAP36)

// func axpyTilesGapQ80AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapQ80AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, Q8Y, SEQ, GAP68)

// func axpyTilesGapQ40AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapQ40AVX2(SB), NOSPLIT, $0-48
	ARGS
	Q4YCONST
	TILES(LOADY, STOREY, HY, Q4Y, SEQ, GAP36)

// func axpyTilesGapF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapF16AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, F16Z, SEQ, GAP128)

// func axpyTilesGapF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapF16AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, F16Y, SEQ, GAP128)

// func axpyTilesGapBF16AVX512(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapBF16AVX512(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADZ, STOREZ, HZ, BF16Z, SEQ, GAP128)

// func axpyTilesGapBF16AVX2(y *float32, h *float32, w *byte, n, chunks, cstride int)
TEXT ·axpyTilesGapBF16AVX2(SB), NOSPLIT, $0-48
	ARGS
	TILES(LOADY, STOREY, HY, BF16Y, SEQ, GAP128)
