#include "textflag.h"

// The decode attention's weighted sum of values for four query heads that
// share a key/value head (grouped-query attention): every value row is
// read once for the four. out[h·64 + d] = Σ_{i<n} p_h[i] · v[i·vstride + d]
// for h < 4 and d < 64 (a 64-wide slice of the head dimension): sixteen
// accumulators, one 512-bit load of each quarter of the row and four
// broadcast weights a position.

// func attnValues4AVX512(out *float32, p *[4]*float32, v *float32, vstride int, n int)
TEXT ·attnValues4AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ p+8(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ v+16(FP), SI
	MOVQ vstride+24(FP), DX
	SHLQ $2, DX
	MOVQ n+32(FP), CX
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
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ CX, CX
	JZ    av4done
av4loop:
	VMOVUPS 0(SI), Z16
	VMOVUPS 64(SI), Z17
	VMOVUPS 128(SI), Z18
	VMOVUPS 192(SI), Z19
	VBROADCASTSS 0(R8), Z20
	VBROADCASTSS 0(R9), Z21
	VBROADCASTSS 0(R10), Z22
	VBROADCASTSS 0(R11), Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z20, Z1
	VFMADD231PS Z18, Z20, Z2
	VFMADD231PS Z19, Z20, Z3
	VFMADD231PS Z16, Z21, Z4
	VFMADD231PS Z17, Z21, Z5
	VFMADD231PS Z18, Z21, Z6
	VFMADD231PS Z19, Z21, Z7
	VFMADD231PS Z16, Z22, Z8
	VFMADD231PS Z17, Z22, Z9
	VFMADD231PS Z18, Z22, Z10
	VFMADD231PS Z19, Z22, Z11
	VFMADD231PS Z16, Z23, Z12
	VFMADD231PS Z17, Z23, Z13
	VFMADD231PS Z18, Z23, Z14
	VFMADD231PS Z19, Z23, Z15
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ DX, SI
	DECQ CX
	JNZ  av4loop
av4done:
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, 256(DI)
	VMOVUPS Z5, 320(DI)
	VMOVUPS Z6, 384(DI)
	VMOVUPS Z7, 448(DI)
	VMOVUPS Z8, 512(DI)
	VMOVUPS Z9, 576(DI)
	VMOVUPS Z10, 640(DI)
	VMOVUPS Z11, 704(DI)
	VMOVUPS Z12, 768(DI)
	VMOVUPS Z13, 832(DI)
	VMOVUPS Z14, 896(DI)
	VMOVUPS Z15, 960(DI)
	VZEROUPPER
	RET

// The decode attention's scores for four query heads sharing a key/value
// head: sc_h[i] = scale · Σ_{d<hd} q[h·hd + d] · k[i·kstride + d] for h < 4,
// i < n, hd a multiple of 64. Each key row is loaded once for the four
// heads (the queries are read from L1 by the multiply-adds); per key the
// four 16-lane sums are reduced together (two halves added, three
// horizontal adds, one more add) and stored as four scalars.

// func attnScores4AVX512(sc *[4]*float32, q *float32, k *float32, kstride, hd, n int, scale float32)
TEXT ·attnScores4AVX512(SB), NOSPLIT, $0-52
	MOVQ sc+0(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ q+8(FP), DI
	MOVQ k+16(FP), SI
	MOVQ kstride+24(FP), DX
	SHLQ $2, DX
	MOVQ hd+32(FP), R13
	MOVQ R13, AX
	SHRQ $6, AX // 64-wide chunks
	SHLQ $2, R13 // a head's queries, in bytes
	LEAQ (R13)(R13*2), BX
	MOVQ n+40(FP), CX
	VBROADCASTSS scale+48(FP), X15
	TESTQ CX, CX
	JZ    as4done
as4key:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R15
	MOVQ DI, R12
	MOVQ AX, R14
as4chunk:
	VMOVUPS 0(R15), Z4
	VMOVUPS 64(R15), Z5
	VMOVUPS 128(R15), Z6
	VMOVUPS 192(R15), Z7
	VFMADD231PS 0(R12), Z4, Z0
	VFMADD231PS 0(R12)(R13*1), Z4, Z1
	VFMADD231PS 0(R12)(R13*2), Z4, Z2
	VFMADD231PS 0(R12)(BX*1), Z4, Z3
	VFMADD231PS 64(R12), Z5, Z0
	VFMADD231PS 64(R12)(R13*1), Z5, Z1
	VFMADD231PS 64(R12)(R13*2), Z5, Z2
	VFMADD231PS 64(R12)(BX*1), Z5, Z3
	VFMADD231PS 128(R12), Z6, Z0
	VFMADD231PS 128(R12)(R13*1), Z6, Z1
	VFMADD231PS 128(R12)(R13*2), Z6, Z2
	VFMADD231PS 128(R12)(BX*1), Z6, Z3
	VFMADD231PS 192(R12), Z7, Z0
	VFMADD231PS 192(R12)(R13*1), Z7, Z1
	VFMADD231PS 192(R12)(R13*2), Z7, Z2
	VFMADD231PS 192(R12)(BX*1), Z7, Z3
	ADDQ $256, R15
	ADDQ $256, R12
	DECQ R14
	JNZ  as4chunk
	VEXTRACTF64X4 $1, Z0, Y4
	VADDPS Y4, Y0, Y0
	VEXTRACTF64X4 $1, Z1, Y5
	VADDPS Y5, Y1, Y1
	VEXTRACTF64X4 $1, Z2, Y6
	VADDPS Y6, Y2, Y2
	VEXTRACTF64X4 $1, Z3, Y7
	VADDPS Y7, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X15, X0, X0
	VMOVSS X0, 0(R8)
	VEXTRACTPS $1, X0, 0(R9)
	VEXTRACTPS $2, X0, 0(R10)
	VEXTRACTPS $3, X0, 0(R11)
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ DX, SI
	DECQ CX
	JNZ  as4key
as4done:
	VZEROUPPER
	RET
