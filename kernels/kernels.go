// Package kernels holds the numeric operations of the forward pass. Each has
// a pure-Go reference whose doc comment states the math; fast paths (later,
// per architecture) must agree with these references within a stated
// tolerance. Weights are little-endian bytes in their stored dtype; all
// arithmetic and accumulation is float32.
package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// Weight is a row-major [Rows, Cols] matrix in its stored dtype.
type Weight struct {
	Data       []byte
	DType      format.DType
	Rows, Cols int
}

// Row returns the bytes of row r.
func (w *Weight) Row(r int) []byte {
	n := w.Cols * w.DType.Size()
	return w.Data[r*n : (r+1)*n]
}

// Dot returns Σ_i w[i]·x[i] for a row w of len(x) elements of dtype dt.
func Dot(w []byte, dt format.DType, x []float32) float32 {
	var s float32
	switch dt {
	case format.F32:
		ws := F32s(w)[:len(x)]
		for i, v := range ws {
			s += v * x[i]
		}
	case format.BF16:
		for i := range x {
			s += BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
		}
	case format.F16:
		for i := range x {
			s += F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
		}
	}
	return s
}

// Axpy does y[i] += a·w[i] for a row w of len(y) elements of dtype dt.
func Axpy(y []float32, a float32, w []byte, dt format.DType) {
	switch dt {
	case format.F32:
		ws := F32s(w)[:len(y)]
		for i, v := range ws {
			y[i] += a * v
		}
	case format.BF16:
		for i := range y {
			y[i] += a * BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	case format.F16:
		for i := range y {
			y[i] += a * F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	}
}

// ToF32 widens n elements of dtype dt into dst.
func ToF32(dst []float32, w []byte, dt format.DType) {
	switch dt {
	case format.F32:
		copy(dst, F32s(w))
	case format.BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	case format.F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	}
}

// F32s views little-endian float32 bytes as []float32 without copying. The
// pack format aligns every tensor to 64 bytes, and every supported target is
// little-endian.
func F32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// MatMul computes out[t, r] = Σ_c W[r, c] · x[t, c] for T = len(x)/W.Cols
// tokens (T = 1 is a matrix-vector product), splitting rows over the pool.
// Each weight row is read once for all T tokens.
func MatMul(p *Pool, out []float32, w *Weight, x []float32) {
	T := len(x) / w.Cols
	p.Run(w.Rows, func(lo, hi, _ int) {
		for r := lo; r < hi; r++ {
			row := w.Row(r)
			for t := 0; t < T; t++ {
				out[t*w.Rows+r] = Dot(row, w.DType, x[t*w.Cols:(t+1)*w.Cols])
			}
		}
	})
}

// RMSNorm computes out = x / sqrt(mean(x²) + eps) ⊙ weight.
func RMSNorm(out, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		out[i] = v * scale * weight[i]
	}
}

// SiLU is x·σ(x) = x / (1 + e^-x).
func SiLU(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// Softmax replaces x with exp(x - max x) / Σ exp(x - max x).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	inv := 1 / sum
	for i := range x {
		x[i] *= inv
	}
}

// RoPE rotates one head vector v (length 2·len(cos)) in the HF "rotate_half"
// convention: the pair (v[i], v[i+d/2]) is rotated by angle θ_i = pos·invFreq[i],
// given as cos[i] = cos θ_i and sin[i] = sin θ_i:
//
//	v[i]     ← v[i]·cos θ_i − v[i+d/2]·sin θ_i
//	v[i+d/2] ← v[i+d/2]·cos θ_i + v[i]·sin θ_i
func RoPE(v, cos, sin []float32) {
	half := len(cos)
	for i := 0; i < half; i++ {
		a, b := v[i], v[i+half]
		v[i] = a*cos[i] - b*sin[i]
		v[i+half] = b*cos[i] + a*sin[i]
	}
}
