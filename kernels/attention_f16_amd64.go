package kernels

import "golang.org/x/sys/cpu"

// attnScores4F16AVX2 is attnScores4F16Ref (kstride in halves, hd a
// multiple of 64).
//
//go:noescape
func attnScores4F16AVX2(sc *[4]*float32, q *float32, k *uint16, kstride, hd, n int, scale float32)

// attnValues4F16AVX2 is attnValues4F16Ref for d < 16 (out keeps its
// 64-float head stride; vstride in halves).
//
//go:noescape
func attnValues4F16AVX2(out *float32, p *[4]*float32, v *uint16, vstride, n int)

// f32ToF16AVX2 is f32ToF16sRef over n values, n a multiple of 8.
//
//go:noescape
func f32ToF16AVX2(dst *uint16, src *float32, n int)

var attnF16AVX2 = attnF16{
	scores: attnScores4F16Of(attnScores4F16AVX2),
	values: attnValues4F16Of(attnValues4F16AVX2, 16),
	round:  roundF16Of(f32ToF16AVX2),
}

// attnF16Of is t's f16 cache kernels: F16C's conversions in the shape of
// t's float32 decode kernels (the AVX2 ones on the AVX-512 table too),
// none on the reference table or without F16C.
func attnF16Of(t *Table) attnF16 {
	if t.AttnValues == nil || !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return attnF16{}
	}
	k := attnF16AVX2
	if t.AttnScores == nil {
		k.scores = nil // as the table's float32 decode: scores through its GEMM
	}
	return k
}
