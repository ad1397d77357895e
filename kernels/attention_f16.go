package kernels

// attnF16 is a table's kernels for a cache of IEEE halves (attnF16Of): the
// decode attention's scores and weighted values of four query heads, as
// Table.AttnScores and AttnValues over f16 rows (attnScores4F16Ref,
// attnValues4F16Ref), and the rounding of new keys and values
// (f32ToF16sRef). A nil entry is taken by the reference path: scores
// through the GEMM, values by the plain loop, rounding in Go.
type attnF16 struct {
	scores func(sc *[4][]float32, q []float32, k []uint16, kstride, hd, n int, scale float32)
	values func(out []float32, p *[4][]float32, v []uint16, vstride, n int)
	round  func(dst []uint16, src []float32)
}

// F32ToF16s sets dst[i] to src[i] rounded to the nearest IEEE half, ties
// to even (F32ToF16), for i < len(src): how keys and values enter an f16
// cache.
func F32ToF16s(dst []uint16, src []float32) {
	if r := attnF16Of(active).round; r != nil {
		r(dst, src)
		return
	}
	f32ToF16sRef(dst, src)
}

// f32ToF16sRef is F32ToF16s' reference.
func f32ToF16sRef(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = F32ToF16(x)
	}
}

// attnScores4F16Ref is attnScores4Ref over keys of halves: sc[h][i] =
// scale·Σ_{d<hd} q[h·hd + d]·k[i·kstride + d] for h < 4, i < n.
func attnScores4F16Ref(sc *[4][]float32, q []float32, k []uint16, kstride, hd, n int, scale float32) {
	for i := 0; i < n; i++ {
		row := k[i*kstride : i*kstride+hd]
		for h := 0; h < 4; h++ {
			var s float32
			for d, x := range row {
				s += q[h*hd+d] * F16ToF32(x)
			}
			sc[h][i] = s * scale
		}
	}
}

// attnValues4F16Ref is attnValues4Ref over values of halves: out[h·64 + d]
// = Σ_{i<n} p[h][i]·v[i·vstride + d] for h < 4, d < 64.
func attnValues4F16Ref(out []float32, p *[4][]float32, v []uint16, vstride, n int) {
	clear(out[:4*64])
	for i := 0; i < n; i++ {
		row := v[i*vstride : i*vstride+64]
		for h := 0; h < 4; h++ {
			o := out[h*64 : (h+1)*64]
			for d, x := range row {
				o[d] += p[h][i] * F16ToF32(x)
			}
		}
	}
}

// attnScores4F16Of adapts an f16 decode scores kernel (kstride in halves,
// hd a multiple of 64) to attnF16.scores.
func attnScores4F16Of(k func(sc *[4]*float32, q *float32, keys *uint16, kstride, hd, n int, scale float32)) func(*[4][]float32, []float32, []uint16, int, int, int, float32) {
	return func(sc *[4][]float32, q []float32, keys []uint16, kstride, hd, n int, scale float32) {
		if n == 0 {
			return
		}
		_ = q[4*hd-1]
		_ = keys[(n-1)*kstride+hd-1]
		ps := [4]*float32{&sc[0][:n][0], &sc[1][:n][0], &sc[2][:n][0], &sc[3][:n][0]}
		k(&ps, &q[0], &keys[0], kstride, hd, n, scale)
	}
}

// attnValues4F16Of adapts an f16 decode values kernel that covers width
// of a head's 64 outputs a call (out keeps its 64-float head stride; the
// adapter steps v and out by width) to attnF16.values.
func attnValues4F16Of(k func(out *float32, p *[4]*float32, v *uint16, vstride, n int), width int) func([]float32, *[4][]float32, []uint16, int, int) {
	return func(out []float32, p *[4][]float32, v []uint16, vstride, n int) {
		if n == 0 {
			clear(out[:4*64])
			return
		}
		_ = out[4*64-1]
		_ = v[(n-1)*vstride+63]
		ps := [4]*float32{&p[0][:n][0], &p[1][:n][0], &p[2][:n][0], &p[3][:n][0]}
		for d0 := 0; d0 < 64; d0 += width {
			k(&out[d0], &ps, &v[d0], vstride, n)
		}
	}
}

// roundF16Of adapts a rounding kernel over a multiple of 8 values to
// attnF16.round, the rest by the reference.
func roundF16Of(k func(dst *uint16, src *float32, n int)) func([]uint16, []float32) {
	return func(dst []uint16, src []float32) {
		n := len(src) &^ 7
		if n > 0 {
			_ = dst[n-1]
			k(&dst[0], &src[0], n)
		}
		f32ToF16sRef(dst[n:], src[n:])
	}
}
