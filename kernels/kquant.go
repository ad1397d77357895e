package kernels

import (
	"encoding/binary"
	"math"

	"github.com/sipack/sipack/format"
)

// K-quants as GGUF defines Q4_K and Q6_K, in super-blocks of 256 weights
// along a row (format SPEC §6 states the bytes).
//
// Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales sc_j and mins
// m_j of the 8 sub-blocks of 32 (j < 4: the low six bits of bytes j and
// j+4; j ≥ 4: the nibbles of byte j+4, scale low and min high, with the
// top two bits of bytes j−4 and j), then 128 bytes of 4-bit q: sub-block
// 2r in the low nibbles of bytes [32r, 32r+32), 2r+1 in their high ones;
// x = (d·sc_j)·q − dmin·m_j.
//
// Q6_K (210 bytes): 128 bytes ql, 64 bytes qh, 16 int8 scales of
// sub-blocks of 16, f16 d. Element 128h + 32k + l (h < 2, k < 4, l < 32)
// takes nibble k/2 of ql[64h + 32(k%2) + l] as its low four bits and bits
// 2k, 2k+1 of qh[32h + l] as its top two; x = (d·sc)·(q − 32).

const (
	q4KBytes = 144
	q6KBytes = 210
)

// kScaleMin is sub-block j's 6-bit scale and min from a Q4_K super-block's
// 12 scale bytes s.
func kScaleMin(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&15 | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// kPutScaleMin stores sub-block j's 6-bit scale and min (each < 64) into
// the 12 scale bytes s (zeroed first), as kScaleMin reads them.
func kPutScaleMin(j int, s []byte, sc, m uint8) {
	if j < 4 {
		s[j] |= sc
		s[j+4] |= m
		return
	}
	s[j+4] |= sc&15 | (m&15)<<4
	s[j-4] |= (sc >> 4) << 6
	s[j] |= (m >> 4) << 6
}

// dequantQ4KBlock widens one Q4_K super-block, computing as ggml does (each
// product rounded before the next operation).
func dequantQ4KBlock(dst *[format.QKK]float32, b []byte) {
	d := F16ToF32(binary.LittleEndian.Uint16(b))
	dmin := F16ToF32(binary.LittleEndian.Uint16(b[2:]))
	scales, qs := b[4:16], b[16:144]
	for j := 0; j < 8; j++ {
		sc, m := kScaleMin(j, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		run, shift := qs[32*(j/2):32*(j/2)+32], uint(4*(j%2))
		for l := 0; l < 32; l++ {
			q := float32((run[l] >> shift) & 15)
			dst[32*j+l] = d1*q - m1
		}
	}
}

// q6KValue is element e's 6-bit value of a Q6_K super-block (ql, qh its
// first 192 bytes), 0..63.
func q6KValue(b []byte, e int) int {
	h, k, l := e/128, (e%128)/32, e%32
	lo := (b[64*h+32*(k%2)+l] >> uint(4*(k/2))) & 15
	hi := (b[128+32*h+l] >> uint(2*k)) & 3
	return int(lo | hi<<4)
}

// dequantQ6KBlock widens one Q6_K super-block as ggml does.
func dequantQ6KBlock(dst *[format.QKK]float32, b []byte) {
	d := F16ToF32(binary.LittleEndian.Uint16(b[208:]))
	for e := 0; e < format.QKK; e++ {
		ds := d * float32(int8(b[192+e/16]))
		dst[e] = ds * float32(q6KValue(b, e)-32)
	}
}

// dequantKRow widens a K-quant row of len(dst) elements (whole super-blocks).
func dequantKRow(dst []float32, w []byte, dt format.DType) {
	bb := dt.BlockBytes()
	for i := 0; i < len(dst)/format.QKK; i++ {
		out := (*[format.QKK]float32)(dst[i*format.QKK:])
		if dt == format.Q4_K {
			dequantQ4KBlock(out, w[i*bb:])
		} else {
			dequantQ6KBlock(out, w[i*bb:])
		}
	}
}

// dotQ4KRef is Σ_i x̂_i·x_i, x̂ the dequantised weights (dequantQ4KBlock),
// accumulated in order in float32.
func dotQ4KRef(w []byte, x []float32) float32 { return dotKRef(w, x, format.Q4_K) }

// dotQ6KRef is dotQ4KRef for Q6_K rows.
func dotQ6KRef(w []byte, x []float32) float32 { return dotKRef(w, x, format.Q6_K) }

func dotKRef(w []byte, x []float32, dt format.DType) float32 {
	var blk [format.QKK]float32
	var s float32
	for i := 0; i < len(x)/format.QKK; i++ {
		dequantKRow(blk[:], w[i*dt.BlockBytes():(i+1)*dt.BlockBytes()], dt)
		for l, v := range x[i*format.QKK : (i+1)*format.QKK] {
			s += blk[l] * v
		}
	}
	return s
}

// axpyQ4KRef is y[i] += a·x̂_i.
func axpyQ4KRef(y []float32, a float32, w []byte) { axpyKRef(y, a, w, format.Q4_K) }

// axpyQ6KRef is y[i] += a·x̂_i for Q6_K rows.
func axpyQ6KRef(y []float32, a float32, w []byte) { axpyKRef(y, a, w, format.Q6_K) }

func axpyKRef(y []float32, a float32, w []byte, dt format.DType) {
	var blk [format.QKK]float32
	for i := 0; i < len(y)/format.QKK; i++ {
		dequantKRow(blk[:], w[i*dt.BlockBytes():(i+1)*dt.BlockBytes()], dt)
		ys := y[i*format.QKK : (i+1)*format.QKK]
		for l := range ys {
			ys[l] += a * blk[l]
		}
	}
}

// axpy4Q4KRef is four Q4_K axpys into one y, in row order.
func axpy4Q4KRef(y []float32, a *[4]float32, w *[4][]byte) {
	for r := range w {
		axpyQ4KRef(y, a[r], w[r])
	}
}

// axpy4Q6KRef is four Q6_K axpys into one y, in row order.
func axpy4Q6KRef(y []float32, a *[4]float32, w *[4][]byte) {
	for r := range w {
		axpyQ6KRef(y, a[r], w[r])
	}
}

// axpy8Q4KActRef is axpy8Q40ActRef for Q4_K rows: per sub-block j of a
// super-block, the eight rows' coefficients c_r = (a[r]·d_r)·sc_r,j are
// rounded to int8 with one scale s (roundCoefs), the rows' mins go in
// float, M = Σ_r (a[r]·dmin_r)·m_r,j (a fused multiply-add a row, in row
// order), and each of the sub-block's 32 outputs takes
// y ← s·Σ_r q_r·w_r,l + (y − M), the sum in integers. axpy8Q4KActAVX2
// computes exactly this; the error against the exact axpy is at most s/2
// per unit of w per row, as for Q4_0.
func axpy8Q4KActRef(y []float32, a *[8]float32, w *[8][]byte) {
	for i := 0; i < len(y)/format.QKK; i++ {
		var c [8][8]float32 // [j][r]
		var mins [8]float32
		for r := range w {
			blk := w[r][i*q4KBytes:]
			ad := a[r] * F16ToF32(binary.LittleEndian.Uint16(blk))
			am := a[r] * F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
			for j := range c {
				sc, m := kScaleMin(j, blk[4:16])
				c[j][r] = ad * float32(sc)
				mins[j] = fma32(am, float32(m), mins[j])
			}
		}
		for j := range c {
			q, s := roundCoefs(&c[j])
			off, shift := i*q4KBytes+16+32*(j/2), uint(4*(j%2))
			ys := y[i*format.QKK+32*j : i*format.QKK+32*(j+1)]
			for l := range ys {
				var sum int32
				for r := range w {
					sum += q[r] * int32((w[r][off+l]>>shift)&15)
				}
				ys[l] = fma32(float32(sum), s, ys[l]-mins[j])
			}
		}
	}
}

// dotQ4KQ8Ref is the integer dot of a Q4_K row with Q8 activations (blocks
// of 32, one per sub-block): per super-block, with b = 8i + j the
// activation block of sub-block j,
//
//	d·Σ_j dx_b·(sc_j·Σ q·qx) − dmin·Σ_j dx_b·(m_j·S_b)
//
// the inner sums in integers, the rest in float32 in that order.
func dotQ4KQ8Ref(w []byte, a *Q8Act) float32 {
	var s float32
	for i := 0; i < len(a.D)/8; i++ {
		blk := w[i*q4KBytes:]
		d := F16ToF32(binary.LittleEndian.Uint16(blk))
		dmin := F16ToF32(binary.LittleEndian.Uint16(blk[2:]))
		var sd, sm float32
		for j := 0; j < 8; j++ {
			b := 8*i + j
			sc, m := kScaleMin(j, blk[4:16])
			run, shift := blk[16+32*(j/2):], uint(4*(j%2))
			var acc int32
			for l := 0; l < 32; l++ {
				acc += int32((run[l]>>shift)&15) * int32(a.Q[32*b+l])
			}
			sd += a.D[b] * float32(int32(sc)*acc)
			sm += a.D[b] * float32(int32(m)*a.S[b])
		}
		s += d*sd - dmin*sm
	}
	return s
}

// dotQ6KQ8Ref is the integer dot of a Q6_K row with Q8 activations: per
// super-block, activation block b = 8i + j covering sub-blocks 2j, 2j+1,
//
//	d·Σ_j dx_b·(sc_2j·Σ_{first 16} (q−32)·qx + sc_2j+1·Σ_{last 16} (q−32)·qx)
//
// the inner sums in integers, the rest in float32 in that order.
func dotQ6KQ8Ref(w []byte, a *Q8Act) float32 {
	var s float32
	for i := 0; i < len(a.D)/8; i++ {
		blk := w[i*q6KBytes:]
		d := F16ToF32(binary.LittleEndian.Uint16(blk[208:]))
		var sd float32
		for j := 0; j < 8; j++ {
			b := 8*i + j
			var acc int32
			for half := 0; half < 2; half++ {
				var p int32
				for l := 16 * half; l < 16*half+16; l++ {
					p += int32(q6KValue(blk, 32*j+l)-32) * int32(a.Q[32*b+l])
				}
				acc += int32(int8(blk[192+2*j+half])) * p
			}
			sd += a.D[b] * float32(acc)
		}
		s += d * sd
	}
	return s
}

// quantQ4K writes the 256 values x as one Q4_K super-block: each
// sub-block's scale and min by quantKSubBlock (a weighted least-squares
// search), the eight of them rounded to 6 bits against the largest
// (d = max sc/63, dmin = max m/63), then every value rounded against its
// sub-block's rounded scale and min.
func quantQ4K(dst []byte, x []float32) {
	var scales, mins [8]float32
	var l [32]uint8
	var maxScale, maxMin float32
	for j := 0; j < 8; j++ {
		xs := x[32*j : 32*j+32]
		var sum2 float32
		for _, v := range xs {
			sum2 += v * v
		}
		// Weights favour the larger values, the sub-block's rms added so
		// that small values still count.
		av := float32(math.Sqrt(float64(sum2 / 32)))
		var wt [32]float32
		for i, v := range xs {
			wt[i] = av + float32(math.Abs(float64(v)))
		}
		scales[j], mins[j] = quantKSubBlock(xs, wt[:], l[:], 15)
		maxScale, maxMin = max(maxScale, scales[j]), max(maxMin, mins[j])
	}
	clear(dst[:q4KBytes])
	var invS, invM float32
	if maxScale > 0 {
		invS = 63 / maxScale
	}
	if maxMin > 0 {
		invM = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := 0; j < 8; j++ {
		ls[j] = uint8(min(63, roundInt(invS*scales[j])))
		lm[j] = uint8(min(63, roundInt(invM*mins[j])))
		kPutScaleMin(j, dst[4:16], ls[j], lm[j])
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(maxScale/63))
	binary.LittleEndian.PutUint16(dst[2:], F32ToF16(maxMin/63))
	d := F16ToF32(binary.LittleEndian.Uint16(dst))
	dmin := F16ToF32(binary.LittleEndian.Uint16(dst[2:]))
	var q [format.QKK]uint8
	for j := 0; j < 8; j++ {
		ds := d * float32(ls[j])
		if ds == 0 {
			continue
		}
		dm := dmin * float32(lm[j])
		for i := 0; i < 32; i++ {
			q[32*j+i] = uint8(max(0, min(15, roundInt((x[32*j+i]+dm)/ds))))
		}
	}
	qs := dst[16:q4KBytes]
	for r := 0; r < 4; r++ {
		for i := 0; i < 32; i++ {
			qs[32*r+i] = q[64*r+i] | q[64*r+32+i]<<4
		}
	}
}

// roundInt rounds to nearest, halves away from zero; values far outside
// int32 (NaN, infinities) give 0, so a broken input never indexes past a
// clamp.
func roundInt(v float32) int {
	if !(v > -1<<30 && v < 1<<30) {
		return 0
	}
	return int(math.Round(float64(v)))
}

// quantKSubBlock finds the scale s > 0 and min m ≥ 0 that, with x ≈ s·l − m
// and l in [0, nmax], minimise Σ w·(s·l − m − x)²: from the range [min(x, 0),
// max x] it tries 21 scales nmax+δ over the range (δ from −1 to 1 in steps of
// 0.1), rounds with each, refits s and m to the rounded values by weighted
// least squares, and keeps the fit of least error. l receives the best
// rounding.
func quantKSubBlock(x, w []float32, l []uint8, nmax int) (scale, minv float32) {
	lo, hi := x[0], x[0]
	var sumW, sumX float32
	for i, v := range x {
		lo, hi = min(lo, v), max(hi, v)
		sumW += w[i]
		sumX += w[i] * v
	}
	lo = min(lo, 0)
	if hi == lo {
		clear(l)
		return 0, -lo
	}
	fit := func(iscale float32, out []uint8) {
		for i, v := range x {
			// iscale·(v − lo) ≥ 0: adding a half and truncating rounds it
			// (a NaN converts to some int32, clamped like any other).
			out[i] = uint8(max(0, min(int32(nmax), int32(iscale*(v-lo)+0.5))))
		}
	}
	errOf := func(s, m float32, q []uint8) float32 {
		var e float32
		for i, v := range x {
			diff := s*float32(q[i]) + m - v
			e += w[i] * diff * diff
		}
		return e
	}
	iscale := float32(nmax) / (hi - lo)
	fit(iscale, l)
	scale, off := 1/iscale, lo
	best := errOf(scale, off, l)
	var cand [32]uint8
	for step := 0; step <= 20; step++ {
		is := (float32(nmax) - 1 + 0.1*float32(step)) / (hi - lo)
		c := cand[:len(x)]
		fit(is, c)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			q := float32(c[i])
			sumL += w[i] * q
			sumL2 += w[i] * q * q
			sumXL += w[i] * q * v
		}
		det := sumW*sumL2 - sumL*sumL
		if det <= 0 {
			continue
		}
		s := (sumW*sumXL - sumX*sumL) / det
		m := (sumL2*sumX - sumL*sumXL) / det
		if m > 0 { // the offset must be a min ≤ 0: refit the scale alone
			m, s = 0, sumXL/sumL2
		}
		if e := errOf(s, m, c); e < best {
			best, scale, off = e, s, m
			copy(l, c)
		}
	}
	return scale, -off
}

// quantQ6K writes the 256 values x as one Q6_K super-block: each
// sub-block of 16 gets a signed scale from quantQ6Scale, the sixteen
// rounded to int8 against the one of largest magnitude (d = that scale /
// −128), then every value rounded against its sub-block's rounded scale.
func quantQ6K(dst []byte, x []float32) {
	var scales [16]float32
	var maxScale, maxAbs float32
	for j := 0; j < 16; j++ {
		scales[j] = quantQ6Scale(x[16*j : 16*j+16])
		if a := float32(math.Abs(float64(scales[j]))); a > maxAbs {
			maxAbs, maxScale = a, scales[j]
		}
	}
	clear(dst[:q6KBytes])
	var q [format.QKK]int
	if maxAbs != 0 {
		iscale := -128 / maxScale
		binary.LittleEndian.PutUint16(dst[208:], F32ToF16(1/iscale))
		d := F16ToF32(binary.LittleEndian.Uint16(dst[208:]))
		for j := 0; j < 16; j++ {
			sc := int8(max(-128, min(127, roundInt(iscale*scales[j]))))
			dst[192+j] = byte(sc)
			ds := d * float32(sc)
			if ds == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				q[i] = max(-32, min(31, roundInt(x[i]/ds)))
			}
		}
	}
	for i := range q {
		q[i] += 32
	}
	for h := 0; h < 2; h++ {
		ql, qh, v := dst[64*h:], dst[128+32*h:], q[128*h:]
		for l := 0; l < 32; l++ {
			ql[l] = byte(v[l]&15 | (v[l+64]&15)<<4)
			ql[l+32] = byte(v[l+32]&15 | (v[l+96]&15)<<4)
			qh[l] = byte(v[l]>>4 | (v[l+32]>>4)<<2 | (v[l+64]>>4)<<4 | (v[l+96]>>4)<<6)
		}
	}
}

// quantQ6Scale is the signed scale s of 16 values x ≈ s·l, l in [−32, 31],
// minimising Σ x²·(s·l − x)²: l rounded from the scale that maps the value
// of largest magnitude to −32, then from 19 scales around it (−32 ± 0.9 in
// steps of 0.1), each refit by weighted least squares, the best kept.
func quantQ6Scale(x []float32) float32 {
	var amax, vmax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < 1e-30 {
		return 0
	}
	try := func(iscale float32) (sumLX, sumL2 float32) {
		for _, v := range x {
			l := float32(max(-32, min(31, roundInt(iscale*v))))
			w := v * v
			sumLX += w * v * l
			sumL2 += w * l * l
		}
		return sumLX, sumL2
	}
	sumLX, sumL2 := try(-32 / vmax)
	if sumL2 == 0 {
		return 0
	}
	scale := sumLX / sumL2
	best := scale * sumLX
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		lx, l2 := try(-(32 + 0.1*float32(is)) / vmax)
		if l2 > 0 && lx*lx > best*l2 {
			scale = lx / l2
			best = scale * lx
		}
	}
	return scale
}
