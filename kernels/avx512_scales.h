// The block-scale gathers shared by the AVX-512 float kernels
// (avx512_amd64.s) and the AVX-512 VNNI kernels (vnni_amd64.s): index
// tables and the macros that use them (AVX-512F + AVX-512BW: VPERMT2W,
// VPERMW, VMOVDQU16). The tables are file-local (<>), so each file that
// includes this gets its own 448-byte copy.

// The 16 fp16 scales of a chunk of 16 Q4_0 blocks (18 bytes each, so the
// scale of block k is word 9k of the chunk) are picked out of the chunk
// with word permutes: blocks 0-7 from its first 128 bytes, 8-14 from the
// next 128, 15 from the last 32: faster than a VPGATHERDD or sixteen
// scalar moves through the stack. q4scaleidx holds the three index vectors
// (32 words each): for the first pair of vectors, the second, and the last
// 32 bytes.
DATA q4scaleidx<>+0(SB)/2, $0
DATA q4scaleidx<>+2(SB)/2, $9
DATA q4scaleidx<>+4(SB)/2, $18
DATA q4scaleidx<>+6(SB)/2, $27
DATA q4scaleidx<>+8(SB)/2, $36
DATA q4scaleidx<>+10(SB)/2, $45
DATA q4scaleidx<>+12(SB)/2, $54
DATA q4scaleidx<>+14(SB)/2, $63
DATA q4scaleidx<>+80(SB)/2, $8
DATA q4scaleidx<>+82(SB)/2, $17
DATA q4scaleidx<>+84(SB)/2, $26
DATA q4scaleidx<>+86(SB)/2, $35
DATA q4scaleidx<>+88(SB)/2, $44
DATA q4scaleidx<>+90(SB)/2, $53
DATA q4scaleidx<>+92(SB)/2, $62
DATA q4scaleidx<>+158(SB)/2, $7
// (The words not listed are 0: a GLOBL symbol is zero-filled.)
GLOBL q4scaleidx<>(SB), RODATA|NOPTR, $192

// Q4SCALESETUP loads the index vectors (Z27-Z29) and the merge masks (K2:
// lanes 8-14, K3: lane 15) that SCALES16Q4 needs.
#define Q4SCALESETUP VMOVDQU16 q4scaleidx<>+0(SB), Z27; VMOVDQU16 q4scaleidx<>+64(SB), Z28; VMOVDQU16 q4scaleidx<>+128(SB), Z29; MOVL $0x7f00, AX; KMOVW AX, K2; MOVL $0x8000, AX; KMOVW AX, K3

// SCALES16Q4(base, z): the chunk's 16 scales at base, widened to float32
// in z (Z26, Z30 and Z31 are scratch).
#define SCALES16Q4(base, z) VMOVDQU16 0(base), Z30; VPERMT2W 64(base), Z27, Z30; VMOVDQU16 128(base), Z26; VPERMT2W 192(base), Z28, Z26; VMOVDQU16 Z26, K2, Z30; VMOVDQU16 256(base), Y31; VPERMW Z31, Z29, K3, Z30; VCVTPH2PS Y30, z

// The 16 scales of a chunk of 16 Q8_0 blocks (34 bytes each: block k's
// scale is word 17k) by word permutes, as for Q4_0: four blocks from each
// 128 bytes. q8scaleidx holds the four index vectors.
DATA q8scaleidx<>+0(SB)/2, $0
DATA q8scaleidx<>+2(SB)/2, $17
DATA q8scaleidx<>+4(SB)/2, $34
DATA q8scaleidx<>+6(SB)/2, $51
DATA q8scaleidx<>+72(SB)/2, $4
DATA q8scaleidx<>+74(SB)/2, $21
DATA q8scaleidx<>+76(SB)/2, $38
DATA q8scaleidx<>+78(SB)/2, $55
DATA q8scaleidx<>+144(SB)/2, $8
DATA q8scaleidx<>+146(SB)/2, $25
DATA q8scaleidx<>+148(SB)/2, $42
DATA q8scaleidx<>+150(SB)/2, $59
DATA q8scaleidx<>+216(SB)/2, $12
DATA q8scaleidx<>+218(SB)/2, $29
DATA q8scaleidx<>+220(SB)/2, $46
DATA q8scaleidx<>+222(SB)/2, $63
// (The words not listed are 0: a GLOBL symbol is zero-filled.)
GLOBL q8scaleidx<>(SB), RODATA|NOPTR, $256

// Q8SCALESETUP loads SCALES16Q8's index vectors (Z24, Z25, Z27, Z28) and
// merge masks (K4-K6: lanes 4-7, 8-11, 12-15).
#define Q8SCALESETUP VMOVDQU16 q8scaleidx<>+0(SB), Z24; VMOVDQU16 q8scaleidx<>+64(SB), Z25; VMOVDQU16 q8scaleidx<>+128(SB), Z27; VMOVDQU16 q8scaleidx<>+192(SB), Z28; MOVL $0xf0, AX; KMOVW AX, K4; MOVL $0xf00, AX; KMOVW AX, K5; MOVL $0xf000, AX; KMOVW AX, K6

// SCALES16Q8(base, z): the chunk's 16 scales at base, widened to float32
// in z (Z26 and Z30 are scratch).
#define SCALES16Q8(base, z) VMOVDQU16 0(base), Z30; VPERMT2W 64(base), Z24, Z30; VMOVDQU16 128(base), Z26; VPERMT2W 192(base), Z25, Z26; VMOVDQU16 Z26, K4, Z30; VMOVDQU16 256(base), Z26; VPERMT2W 320(base), Z27, Z26; VMOVDQU16 Z26, K5, Z30; VMOVDQU16 384(base), Z26; VPERMT2W 448(base), Z28, Z26; VMOVDQU16 Z26, K6, Z30; VCVTPH2PS Y30, z
