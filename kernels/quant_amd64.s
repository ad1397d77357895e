#include "textflag.h"

// Q8 quantisation of activations with AVX-512F (quantizeBlocksRef's math,
// value for value): per block of 32, d = max|x|/127, id = 1/d (0 when d
// is 0), q = x·id rounded half away from zero — truncated, then one added
// away from zero where the dropped fraction is at least one half (exact:
// a float32 x·id + 0.5 is not, at 0.49999997), and the block's Σq.

DATA q8absmask<>+0(SB)/4, $0x7fffffff
GLOBL q8absmask<>(SB), RODATA|NOPTR, $4
DATA q8signmask<>+0(SB)/4, $0x80000000
GLOBL q8signmask<>(SB), RODATA|NOPTR, $4
DATA q8one<>+0(SB)/4, $0x3f800000
GLOBL q8one<>(SB), RODATA|NOPTR, $4
DATA q8half<>+0(SB)/4, $0x3f000000
GLOBL q8half<>(SB), RODATA|NOPTR, $4
DATA q8max<>+0(SB)/4, $0x42fe0000
GLOBL q8max<>(SB), RODATA|NOPTR, $4

// Q8ROUND(t, r): r = t rounded half away from zero, as int32 (K2, Z7,
// Z8 scratch; Z24-Z27 the constants).
#define Q8ROUND(t, r) \
	VRNDSCALEPS $0x0b, t, r; \
	VSUBPS r, t, Z7; \
	VANDPS Z24, Z7, Z7; \
	VCMPPS $0x1d, Z27, Z7, K2; \
	VMOVAPS t, Z8; \
	VPTERNLOGD $0xea, Z26, Z25, Z8; \
	VADDPS Z8, r, K2, r; \
	VCVTPS2DQ r, r

// func quantizeBlocksAVX512(x *float32, q *int8, d *float32, s *int32, nb int)
TEXT ·quantizeBlocksAVX512(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ d+16(FP), R8
	MOVQ s+24(FP), R9
	MOVQ nb+32(FP), CX
	VPBROADCASTD q8absmask<>(SB), Z24
	VPBROADCASTD q8signmask<>(SB), Z25
	VPBROADCASTD q8one<>(SB), Z26
	VPBROADCASTD q8half<>(SB), Z27
	VMOVSS q8max<>(SB), X28
	VMOVSS q8one<>(SB), X29
	VXORPS X30, X30, X30
q8blk:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	// amax in every lane of X2
	VANDPS Z24, Z0, Z2
	VANDPS Z24, Z1, Z3
	VMAXPS Z3, Z2, Z2
	VEXTRACTF64X4 $1, Z2, Y3
	VMAXPS Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0x4e, X2, X3
	VMAXPS X3, X2, X2
	VPERMILPS $0xb1, X2, X3
	VMAXPS X3, X2, X2
	// d = amax/127, id = 1/d or 0
	VDIVSS X28, X2, X4
	VMOVSS X4, 0(R8)
	VDIVSS X4, X29, X5
	VCMPSS $4, X30, X4, K1
	VMOVSS.Z X5, X5, K1, X5
	VBROADCASTSS X5, Z5
	VMULPS Z5, Z0, Z0
	VMULPS Z5, Z1, Z1
	Q8ROUND(Z0, Z10)
	Q8ROUND(Z1, Z11)
	VPMOVDB Z10, 0(DI)
	VPMOVDB Z11, 16(DI)
	// Σq
	VPADDD Z11, Z10, Z10
	VEXTRACTI64X4 $1, Z10, Y11
	VPADDD Y11, Y10, Y10
	VEXTRACTI128 $1, Y10, X11
	VPADDD X11, X10, X10
	VPSHUFD $0x4e, X10, X11
	VPADDD X11, X10, X10
	VPSHUFD $0xb1, X10, X11
	VPADDD X11, X10, X10
	VMOVD X10, 0(R9)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNZ  q8blk
	VZEROUPPER
	RET
