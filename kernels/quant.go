package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// Block quantisation as GGUF defines Q8_0 and Q4_0, in blocks of 32 weights
// along a row. Q8_0: fp16 scale d = max|x|/127, then 32 int8 q = round(x/d);
// x̂ = d·q (34 bytes). Q4_0: d = m/−8 where m is the element of largest
// magnitude (sign kept), q = min(15, ⌊x/d + 8.5⌋) as 4-bit values, byte j
// holding q[j] in its low and q[j+16] in its high nibble; x̂ = d·(q − 8)
// (18 bytes).

// QuantizeRow writes src (a multiple of dt.BlockElems() elements) as dt into dst.
func QuantizeRow(dst []byte, dt format.DType, src []float32) {
	switch dt {
	case format.Q8_0:
		for b := 0; b < len(src)/format.QK; b++ {
			quantQ80(dst[b*34:(b+1)*34], src[b*format.QK:(b+1)*format.QK])
		}
	case format.Q4_0:
		for b := 0; b < len(src)/format.QK; b++ {
			quantQ40(dst[b*18:(b+1)*18], src[b*format.QK:(b+1)*format.QK])
		}
	case format.Q4_K:
		for b := 0; b < len(src)/format.QKK; b++ {
			quantQ4K(dst[b*q4KBytes:(b+1)*q4KBytes], src[b*format.QKK:(b+1)*format.QKK])
		}
	case format.Q6_K:
		for b := 0; b < len(src)/format.QKK; b++ {
			quantQ6K(dst[b*q6KBytes:(b+1)*q6KBytes], src[b*format.QKK:(b+1)*format.QKK])
		}
	}
}

// absMax is max_i |x_i|.
func absMax(x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	return amax
}

func quantQ80(dst []byte, x []float32) {
	d := absMax(x) / 127
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	for i, v := range x {
		dst[2+i] = byte(int8(math.Round(float64(v * id))))
	}
}

func quantQ40(dst []byte, x []float32) {
	var amax, m float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, m = a, v
		}
	}
	d := m / -8
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(dst, F32ToF16(d))
	q := func(v float32) byte { return byte(min(15, int(int8(v*id+8.5)))) }
	for j := 0; j < format.QK/2; j++ {
		dst[2+j] = q(x[j]) | q(x[j+format.QK/2])<<4
	}
}

// DequantizeRow widens a quantised row of len(dst) elements.
func DequantizeRow(dst []float32, w []byte, dt format.DType) {
	switch dt {
	case format.Q8_0:
		for b := 0; b < len(dst)/format.QK; b++ {
			blk := w[b*34:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for i := 0; i < format.QK; i++ {
				dst[b*format.QK+i] = d * float32(int8(blk[2+i]))
			}
		}
	case format.Q4_0:
		for b := 0; b < len(dst)/format.QK; b++ {
			blk := w[b*18:]
			d := F16ToF32(binary.LittleEndian.Uint16(blk))
			for j := 0; j < format.QK/2; j++ {
				dst[b*format.QK+j] = d * float32(int(blk[2+j]&15)-8)
				dst[b*format.QK+j+format.QK/2] = d * float32(int(blk[2+j]>>4)-8)
			}
		}
	case format.Q4_K, format.Q6_K:
		dequantKRow(dst, w, dt)
	}
}

// dotQ80Ref is Σ_blocks d_b · Σ_i q_i·x_i.
func dotQ80Ref(w []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/format.QK; b++ {
		blk := w[b*34:]
		var bs float32
		xs := x[b*format.QK : (b+1)*format.QK]
		for i, v := range xs {
			bs += float32(int8(blk[2+i])) * v
		}
		s += F16ToF32(binary.LittleEndian.Uint16(blk)) * bs
	}
	return s
}

// dotQ40Ref is Σ_blocks d_b · Σ_i (q_i − 8)·x_i.
func dotQ40Ref(w []byte, x []float32) float32 {
	var s float32
	for b := 0; b < len(x)/format.QK; b++ {
		blk := w[b*18:]
		xs := x[b*format.QK : (b+1)*format.QK]
		var bs float32
		for j := 0; j < format.QK/2; j++ {
			bs += float32(int(blk[2+j]&15)-8)*xs[j] + float32(int(blk[2+j]>>4)-8)*xs[j+format.QK/2]
		}
		s += F16ToF32(binary.LittleEndian.Uint16(blk)) * bs
	}
	return s
}

// axpyQ80Ref is y[i] += a·d_b·q_i.
func axpyQ80Ref(y []float32, a float32, w []byte) {
	for b := 0; b < len(y)/format.QK; b++ {
		blk := w[b*34:]
		s := a * F16ToF32(binary.LittleEndian.Uint16(blk))
		ys := y[b*format.QK : (b+1)*format.QK]
		for i := range ys {
			ys[i] += s * float32(int8(blk[2+i]))
		}
	}
}

// axpyQ40Ref is y[i] += a·d_b·(q_i − 8).
func axpyQ40Ref(y []float32, a float32, w []byte) {
	for b := 0; b < len(y)/format.QK; b++ {
		blk := w[b*18:]
		s := a * F16ToF32(binary.LittleEndian.Uint16(blk))
		ys := y[b*format.QK : (b+1)*format.QK]
		for j := 0; j < format.QK/2; j++ {
			ys[j] += s * float32(int(blk[2+j]&15)-8)
			ys[j+format.QK/2] += s * float32(int(blk[2+j]>>4)-8)
		}
	}
}

// axpy4Q40Ref is y += Σ_r a[r]·w[r] over four Q4_0 rows, as four axpys.
func axpy4Q40Ref(y []float32, a *[4]float32, w *[4][]byte) {
	for r := range w {
		axpyQ40Ref(y, a[r], w[r])
	}
}

// axpy4Q80Ref is four Q8_0 axpys into one y, one row at a time.
func axpy4Q80Ref(y []float32, a *[4]float32, w *[4][]byte) {
	for r := range w {
		axpyQ80Ref(y, a[r], w[r])
	}
}

// axpy8Q40ActRef is the decode FFN's down projection of eight Q4_0 rows
// on the integer path, y += Σ_r a[r]·w[r], with the products rounded as
// llama.cpp rounds the down projection's input to Q8: per block k, the
// eight coefficients c_r = a[r]·d_{r,k} share one scale s = m/127 (m the
// largest |c_r|, at least the smallest normal float32), each is rounded to
// q_r = round(c_r·127/m) (ties to even), and the block's 32 outputs take
// s·Σ_r q_r·(w_{r,i} − 8), the sum in integers. Float32 throughout, as
// axpy8Q40ActVNNI computes it; the error against the exact axpy is at most
// s/2 per unit of |w − 8| per row.
func axpy8Q40ActRef(y []float32, a *[8]float32, w *[8][]byte) {
	for b := 0; b < len(y)/format.QK; b++ {
		q, s := int8Coefs(a, w, b*18)
		off := int32(0)
		for r := range q {
			off -= 8 * q[r]
		}
		ys := y[b*format.QK : (b+1)*format.QK]
		for j := 0; j < format.QK/2; j++ {
			lo, hi := off, off
			for r := range w {
				v := w[r][b*18+2+j]
				lo += q[r] * int32(v&15)
				hi += q[r] * int32(v>>4)
			}
			ys[j] = fma32(float32(lo), s, ys[j])
			ys[j+format.QK/2] = fma32(float32(hi), s, ys[j+format.QK/2])
		}
	}
}

// int8Coefs is the int8 down projections' rounding of one block (its
// bytes at off in every row, the F16 scale first): the coefficients c_r =
// a[r]·d_r rounded by roundCoefs.
func int8Coefs(a *[8]float32, w *[8][]byte, off int) (q [8]int32, s float32) {
	var c [8]float32
	for r := range w {
		c[r] = F16ToF32(binary.LittleEndian.Uint16(w[r][off:])) * a[r]
	}
	return roundCoefs(&c)
}

// roundCoefs rounds eight coefficients to int8 with one scale: s = m/127
// (m the largest |c_r|, at least the smallest normal float32) and q_r =
// round(c_r·127/m), ties to even.
func roundCoefs(c *[8]float32) (q [8]int32, s float32) {
	const smallest = 0x1p-126
	m := float32(smallest)
	for _, v := range c {
		m = max(m, float32(math.Abs(float64(v))))
	}
	inv := 127 / m
	for r, v := range c {
		q[r] = int32(math.RoundToEven(float64(v * inv)))
	}
	return q, m / 127
}

// axpy8Q80ActRef is axpy8Q40ActRef for Q8_0 rows: the same int8
// coefficients q_r and scale s per block, and the block's 32 outputs take
// s·Σ_r q_r·w_{r,i} (w the signed quants), the sum in integers, as
// axpy8Q80ActVNNI computes it.
func axpy8Q80ActRef(y []float32, a *[8]float32, w *[8][]byte) {
	for b := 0; b < len(y)/format.QK; b++ {
		q, s := int8Coefs(a, w, b*34)
		ys := y[b*format.QK : (b+1)*format.QK]
		for j := range ys {
			var sum int32
			for r := range w {
				sum += q[r] * int32(int8(w[r][b*34+2+j]))
			}
			ys[j] = fma32(float32(sum), s, ys[j])
		}
	}
}

// axpy8ActRef is the dtype's int8 down projection reference (nil for the
// dtypes without one).
func axpy8ActRef(dt format.DType) func([]float32, *[8]float32, *[8][]byte) {
	switch dt {
	case format.Q4_0:
		return axpy8Q40ActRef
	case format.Q8_0:
		return axpy8Q80ActRef
	case format.Q4_K:
		return axpy8Q4KActRef
	}
	return nil
}

// fma32 is x·y + z as VFMADD231PS computes it, up to double rounding: the
// product of two float32 is exact in float64, the sum is rounded to float64
// and then to float32, which can differ from one rounding in the last bit
// (rarely; the tests allow it).
func fma32(x, y, z float32) float32 { return float32(float64(x)*float64(y) + float64(z)) }

// Q8Act is an activation vector quantised to Q8 per block of 32, for the
// integer dot products against quantised weights.
type Q8Act struct {
	Q []int8    // 32 per block
	D []float32 // scale per block
	S []int32   // Σ Q per block (for Q4_0's −8 offset, and Q8_0's +128 on VNNI)
	// Quad is Q laid out for the AVX-512 VNNI Q4_0 kernels, built only
	// where they are in use: per four blocks 4q..4q+3, 192 bytes: their
	// x[0:16] side by side, their x[16:32] side by side (the order of the
	// weights' low and high nibbles once four blocks are split), then 16
	// little-endian int32 c_i = −8 · (the sum of the four bytes of dword i
	// of each of the two halves).
	Quad []byte
	// B is the activations rounded to BF16 (to nearest, ties to even),
	// for the VDPBF16PS dots of BF16 weights; then Q, D, S are empty.
	B []uint16
}

// QuantizeAct quantises x (a multiple of 32) into a (reusing its storage)
// for the integer dots of the active table against weights of dtype dt
// (with the Quad layout where those read it).
func QuantizeAct(a *Q8Act, x []float32, dt format.DType) { convertAct(a, x, active.Ops(dt)) }

// convertAct converts x as ops' activation dots read it: BF16, or Q8
// blocks (with the Quad layout where ops reads it).
func convertAct(a *Q8Act, x []float32, ops *Ops) {
	if !ops.ActBF16 {
		a.B = a.B[:0]
		quantizeAct(a, x, ops.Quad)
		return
	}
	if cap(a.B) < len(x) {
		a.B = make([]uint16, len(x))
	}
	a.B = a.B[:len(x)]
	for i, v := range x {
		a.B[i] = F32ToBF16(v)
	}
	a.Q, a.D, a.S, a.Quad = a.Q[:0], a.D[:0], a.S[:0], a.Quad[:0]
}

// quantizeAct is QuantizeAct, building the Quad layout only if quad is set
// (only the Q4_0 kernels read it); the blocks through the table's Quantize.
func quantizeAct(a *Q8Act, x []float32, quad bool) {
	nb := len(x) / format.QK
	if cap(a.Q) < len(x) || cap(a.D) < nb {
		a.Q, a.D, a.S = make([]int8, len(x)), make([]float32, nb), make([]int32, nb)
	}
	a.Q, a.D, a.S = a.Q[:len(x)], a.D[:nb], a.S[:nb]
	active.Quantize(a.Q, a.D, a.S, x[:nb*format.QK])
	a.Quad = a.Quad[:0]
	if quad {
		a.Quad = quadLayout(a.Quad, a.Q)
	}
}

// quantizeBlocksRef quantises whole blocks of x: per block b of 32 values,
// d[b] = max|x|/127, q = x·(1/d) rounded half away from zero (0 where d
// is 0) and s[b] = Σq. Rounding as math.Round does: t + ±0.5 is exact in
// float64 for |t| ≤ 127, so truncating it rounds.
func quantizeBlocksRef(q []int8, d []float32, s []int32, x []float32) {
	for b := range d {
		xs := x[b*format.QK : (b+1)*format.QK]
		qs := q[b*format.QK : (b+1)*format.QK]
		db := absMax(xs) / 127
		id := float32(0)
		if db != 0 {
			id = 1 / db
		}
		var sum int32
		for i, v := range xs {
			t := float64(v * id)
			r := int32(t + math.Copysign(0.5, t))
			qs[i] = int8(r)
			sum += r
		}
		d[b], s[b] = db, sum
	}
}

// quadLayout writes the Quad layout of q (whole groups of four blocks)
// into dst's storage, 192 bytes a group.
func quadLayout(dst []byte, q []int8) []byte {
	const half = format.QK / 2
	quads := len(q) / (4 * format.QK)
	if cap(dst) < 192*quads {
		dst = make([]byte, 192*quads)
	}
	dst = dst[:192*quads]
	qb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
	for g := 0; g < quads; g++ {
		out := (*[192]byte)(dst[192*g:])
		in := (*[4 * format.QK]byte)(qb[4*format.QK*g:])
		for k := 0; k < 4; k++ {
			copy(out[half*k:half*(k+1)], in[format.QK*k:format.QK*k+half])
			copy(out[64+half*k:64+half*(k+1)], in[format.QK*k+half:format.QK*(k+1)])
		}
		for i := 0; i < 16; i++ {
			lo, hi := out[4*i:4*i+4], out[64+4*i:64+4*i+4]
			s := int32(int8(lo[0])) + int32(int8(lo[1])) + int32(int8(lo[2])) + int32(int8(lo[3])) +
				int32(int8(hi[0])) + int32(int8(hi[1])) + int32(int8(hi[2])) + int32(int8(hi[3]))
			binary.LittleEndian.PutUint32(out[128+4*i:], uint32(-8*s))
		}
	}
	return dst
}

// dotQ80Q8Ref is Σ_b d_w·d_x·Σ_i qw_i·qx_i.
func dotQ80Q8Ref(w []byte, a *Q8Act) float32 {
	var s float32
	for b := range a.D {
		blk := w[b*34:]
		var acc int32
		for i := 0; i < format.QK; i++ {
			acc += int32(int8(blk[2+i])) * int32(a.Q[b*format.QK+i])
		}
		s += F16ToF32(binary.LittleEndian.Uint16(blk)) * a.D[b] * float32(acc)
	}
	return s
}

// dotQ40Q8Ref is Σ_b d_w·d_x·Σ_i (q_i − 8)·qx_i.
func dotQ40Q8Ref(w []byte, a *Q8Act) float32 {
	var s float32
	for b := range a.D {
		blk := w[b*18:]
		var acc int32
		for j := 0; j < format.QK/2; j++ {
			acc += (int32(blk[2+j]&15) - 8) * int32(a.Q[b*format.QK+j])
			acc += (int32(blk[2+j]>>4) - 8) * int32(a.Q[b*format.QK+j+format.QK/2])
		}
		s += F16ToF32(binary.LittleEndian.Uint16(blk)) * a.D[b] * float32(acc)
	}
	return s
}
