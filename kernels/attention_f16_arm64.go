package kernels

// attnValues4F16NEON is attnValues4F16Ref for d < 16 (out keeps its
// 64-float head stride; vstride in halves).
//
//go:noescape
func attnValues4F16NEON(out *float32, p *[4]*float32, v *uint16, vstride, n int)

// f32ToF16NEON is f32ToF16sRef over n values, n a multiple of 8.
//
//go:noescape
func f32ToF16NEON(dst *uint16, src *float32, n int)

var attnF16NEON = attnF16{
	values: attnValues4F16Of(attnValues4F16NEON, 16),
	round:  roundF16Of(f32ToF16NEON),
}

// attnF16Of is t's f16 cache kernels: NEON's conversions (FCVTL, FCVTN:
// every arm64 CPU has them) where t has the float32 decode kernels; the
// scores, as there, through the GEMM.
func attnF16Of(t *Table) attnF16 {
	if t.AttnValues == nil {
		return attnF16{}
	}
	return attnF16NEON
}
