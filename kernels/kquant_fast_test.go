package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// randKRow is nsb super-blocks of dtype dt of random bytes — every 4- and
// 6-bit value, every 6-bit Q4_K scale and min and int8 Q6_K scale — with
// the f16 factors d (and dmin) drawn around mag, so the fast kernels meet
// the extremes the quantiser seldom writes (q = 0 and 63, sc = −128).
func randKRow(rng *rand.Rand, dt format.DType, nsb int, mag float64) []byte {
	bb := dt.BlockBytes()
	w := make([]byte, nsb*bb)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	f16 := func() uint16 { return F32ToF16(float32(mag * (0.5 + rng.Float64()))) }
	for i := 0; i < nsb; i++ {
		b := w[i*bb:]
		if dt == format.Q4_K {
			binary.LittleEndian.PutUint16(b, f16())
			binary.LittleEndian.PutUint16(b[2:], f16())
		} else {
			binary.LittleEndian.PutUint16(b[208:], f16())
		}
	}
	return w
}

// TestKQuantAxpy4IsFourAxpys: on every table, the K-quants' four-row axpy
// gives four row axpys' bits, rows added in order (a record's down row
// must add the same whether its group has four records or fewer), on
// rows of 1 to 17 super-blocks of random bytes at factors 1e-4 to 1e4 and
// coefficients of either sign and zero, and none zero (a zero one hides
// its row's place in the order). (Planted: rows 1 and 2 swapped in the
// AVX2 kernel's high nibbles fails it.)
func TestKQuantAxpy4IsFourAxpys(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, dt := range kquants {
			ops := tb.Ops(dt)
			if ops.Axpy4 == nil {
				continue
			}
			for _, nsb := range []int{1, 2, 3, 5, 8, 17} {
				for _, mag := range []float64{1e-4, 1, 1e4} {
					n := nsb * format.QKK
					var ws [4][]byte
					for r := range ws {
						ws[r] = randKRow(rng, dt, nsb, mag)
					}
					for _, coef := range [][4]float32{{0.37, -1.25, 0, 3e-3}, {1.5, -0.7, 2.25, -3.1}} {
						y := randVec(rng, n)
						want := append([]float32(nil), y...)
						ops.Axpy4(y, &coef, &ws)
						for r := range ws {
							ops.Axpy(want, coef[r], ws[r])
						}
						for i := range y {
							if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%v %d super-blocks, d ~ %g, a %v: Axpy4 [%d] %g, four Axpys %g", dt, nsb, mag, coef, i, y[i], want[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestKQuantDotActExtremes: on every table, DotAct of K-quant rows of
// random bytes (every value and scale, factors 1e-4 to 1e4) against
// activations of every int8 value and scales 1e-3 to 1e3 is within
// 2e-6 of the terms' magnitude of the reference (dotQ4KQ8Ref,
// dotQ6KQ8Ref: the integer sums are exact, only the float steps differ
// in order), and Dot4Act (and Dot2Act) give each row and token DotAct's
// bits, on rows of 1 to 17 super-blocks. (Planted: Q6_K's qh shift for
// k = 1 of 2 made 4, or the fourth token's activations stepped wrongly,
// fails it.)
func TestKQuantDotActExtremes(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(23, 24))
		ref := map[format.DType]func([]byte, *Q8Act) float32{format.Q4_K: dotQ4KQ8Ref, format.Q6_K: dotQ6KQ8Ref}
		for _, dt := range kquants {
			ops := tb.Ops(dt)
			if ops.DotAct == nil {
				continue
			}
			for _, nsb := range []int{1, 2, 3, 5, 8, 17} {
				for _, mag := range []float64{1e-4, 1, 1e4} {
					n := nsb * format.QKK
					w := randKRow(rng, dt, nsb, mag)
					var acts [4]Q8Act
					for q := range acts {
						x := randVec(rng, n)
						for i := range x {
							// Blocks at scales 1e-3 to 1e3, some all at ±max.
							x[i] *= float32(math.Pow(10, float64((i/32)%7-3)))
							if (i/32)%5 == 4 {
								x[i] = float32(1 - 2*(i%2))
							}
						}
						convertAct(&acts[q], x, ops)
					}
					a := &acts[0]
					got, want := ops.DotAct(w, a), ref[dt](w, a)
					mg := kMag(dt, w, actValues(a))
					if d := math.Abs(float64(got - want)); d > 2e-6*mg+1e-30 {
						t.Errorf("%v %d super-blocks, d ~ %g: DotAct %g, reference %g (|Δ| %g, magnitude %g)", dt, nsb, mag, got, want, d, mg)
					}
					if ops.Dot4Act != nil {
						o := ops.Dot4Act(w, &acts[0], &acts[1], &acts[2], &acts[3])
						for q := range acts {
							if v := ops.DotAct(w, &acts[q]); math.Float32bits(o[q]) != math.Float32bits(v) {
								t.Errorf("%v %d super-blocks, d ~ %g: Dot4Act token %d %g, DotAct %g", dt, nsb, mag, q, o[q], v)
							}
						}
					}
					if ops.Dot2Act != nil {
						b := randKRow(rng, dt, nsb, mag)
						var o [2]float32
						ops.Dot2Act(w, b, a, &o, nil)
						if math.Float32bits(o[0]) != math.Float32bits(got) || math.Float32bits(o[1]) != math.Float32bits(ops.DotAct(b, a)) {
							t.Errorf("%v %d super-blocks, d ~ %g: Dot2Act %v, DotAct %g %g", dt, nsb, mag, o, got, ops.DotAct(b, a))
						}
					}
				}
			}
		}
	})
}

// TestKQuantWidenIsDequant: on every table where the K-quants have a Widen,
// it gives DequantizeRow's bits (dequantQ4KBlock's roundings), on rows of
// 1 to 17 super-blocks of random bytes at factors 1e-4 to 1e4. (Planted:
// the odd sub-blocks widened with the even ones' scale and min fails it.)
func TestKQuantWidenIsDequant(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(27, 28))
		for _, dt := range kquants {
			if tb.Ops(dt).Widen == nil {
				continue
			}
			for _, nsb := range []int{1, 2, 3, 5, 17} {
				for _, mag := range []float64{1e-4, 1, 1e4} {
					n := nsb * format.QKK
					w := randKRow(rng, dt, nsb, mag)
					got, want := make([]float32, n), make([]float32, n)
					tb.Ops(dt).Widen(got, w)
					dequantKRow(want, w, dt)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%v %d super-blocks, d ~ %g: Widen [%d] %g, dequantised %g", dt, nsb, mag, i, got[i], want[i])
						}
					}
				}
			}
		}
	})
}
