package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

// funcName is the symbol of a table entry, "nil" for none (a closure is
// named after the function that built it).
func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.IsNil() {
		return "nil"
	}
	return runtime.FuncForPC(v.Pointer()).Name()
}

// TestKQuantNEONPath logs which K-quant kernels each arm64 table runs and
// requires the NEON wiring: the float axpys on every table but generic,
// the SDOT dots (integer path on) on neon-dotprod, present wherever the
// CPU has the dot-product instructions (qemu's default CPU has them).
func TestKQuantNEONPath(t *testing.T) {
	sawDP := false
	for _, tb := range Tables() {
		for _, dt := range kquants {
			o := tb.Ops(dt)
			dot, axpy := funcName(o.DotAct), funcName(o.Axpy)
			t.Logf("kernel path: %s %v: ActDot %v, DotAct %s, Dot2Act %v, Dot4Act %v, Axpy %s",
				tb.Name, dt, o.ActDot, dot, o.Dot2Act != nil, o.Dot4Act != nil, axpy)
			if tb.Name == "generic" {
				continue
			}
			if !strings.Contains(axpy, "kquantNEON") {
				t.Errorf("%s %v: Axpy is %s, not the NEON kernel", tb.Name, dt, axpy)
			}
			if tb.Name == "neon-dotprod" {
				sawDP = true
				if !o.ActDot || !strings.Contains(dot, "kquantSDOT") || o.Dot2Act == nil {
					t.Errorf("%s %v: integer path %v, DotAct %s, Dot2Act %v: want the SDOT kernels", tb.Name, dt, o.ActDot, dot, o.Dot2Act != nil)
				}
			}
		}
	}
	if cpu.ARM64.HasASIMDDP && !sawDP {
		t.Errorf("CPU has the dot-product instructions but no neon-dotprod table")
	}
	t.Logf("kernel path: active table %s (ASIMDDP %v)", Active().Name, cpu.ARM64.HasASIMDDP)
}

// kExtremeRow is nsb super-blocks of dtype dt at the limits: scales and
// mins near their largest, no two alike (Q4_K 63 − 2j and 63 − 3j; Q6_K
// from −128 and 127 by sub-block parity), every q at its largest or
// smallest by super-block parity (every third super-block's random), the
// f16 factors d (and dmin) the bits dbits, and sub-block 3 (Q4_K) or 6
// and 7 (Q6_K) of zero scale and min.
func kExtremeRow(rng *rand.Rand, dt format.DType, nsb int, dbits uint16) []byte {
	bb := dt.BlockBytes()
	w := make([]byte, nsb*bb)
	for i := 0; i < nsb; i++ {
		b := w[i*bb : (i+1)*bb]
		q := byte(0xff)
		if i%2 == 1 {
			q = 0
		}
		if i%3 == 2 {
			q = byte(rng.Uint32())
		}
		if dt == format.Q4_K {
			binary.LittleEndian.PutUint16(b, dbits)
			binary.LittleEndian.PutUint16(b[2:], dbits)
			for j := 0; j < 8; j++ {
				if j != 3 {
					kPutScaleMin(j, b[4:16], uint8(63-2*j), uint8(63-3*j))
				}
			}
			for l := 16; l < q4KBytes; l++ {
				b[l] = q
				if i%3 == 2 {
					b[l] = byte(rng.Uint32())
				}
			}
			continue
		}
		for l := 0; l < 192; l++ {
			b[l] = q
			if i%3 == 2 {
				b[l] = byte(rng.Uint32())
			}
		}
		for j := 0; j < 16; j++ {
			sc := int8(-128 + j)
			if j%2 == 1 {
				sc = int8(127 - j)
			}
			if j == 6 || j == 7 {
				sc = 0
			}
			b[192+j] = byte(sc)
		}
		binary.LittleEndian.PutUint16(b[208:], dbits)
	}
	return w
}

// extremeAct is activations of n values as Q8 blocks at the limits: ±127
// throughout (a block's sign by parity), or random, at block scales from
// 1e-3 to 1e3.
func extremeAct(rng *rand.Rand, n int) *Q8Act {
	a := &Q8Act{Q: make([]int8, n), D: make([]float32, n/format.QK), S: make([]int32, n/format.QK)}
	for b := range a.D {
		a.D[b] = float32(math.Pow(10, float64(b%7-3)))
		for l := 0; l < format.QK; l++ {
			v := int8(127)
			switch b % 4 {
			case 1:
				v = -127
			case 2:
				v = int8(rng.IntN(255) - 127)
			case 3:
				v = int8(127 * (1 - 2*(l%2)))
			}
			a.Q[b*format.QK+l] = v
			a.S[b] += int32(v)
		}
	}
	return a
}

// TestKQuantNEONExtremes: on the arm64 tables, the K-quants' dots against
// Q8 activations on rows at the limits of every field (kExtremeRow: the
// largest integer sums a block can hold, zero sub-blocks, d from the
// smallest f16 subnormal to the largest finite f16) and 1 to 9
// super-blocks agree with the reference within 2e-6 of the terms'
// magnitude (the integer sums are exact; the float steps run in another
// order); the pair form gives both rows' DotAct bits, with and without a
// record to prefetch, and the four-token form each token's. The axpys
// give the reference's bits: each x̂ is exact before its one rounding, and
// y += a·x̂ is one fused multiply-add in both (gc fuses it on arm64).
func TestKQuantNEONExtremes(t *testing.T) {
	refDot := map[format.DType]func([]byte, *Q8Act) float32{format.Q4_K: dotQ4KQ8Ref, format.Q6_K: dotQ6KQ8Ref}
	refAxpy := map[format.DType]func([]float32, float32, []byte){format.Q4_K: axpyQ4KRef, format.Q6_K: axpyQ6KRef}
	for _, tb := range Tables()[1:] {
		t.Run(tb.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 32))
			for _, dt := range kquants {
				ops := tb.Ops(dt)
				for nsb := 1; nsb <= 9; nsb++ {
					for _, dbits := range []uint16{0x0001, 0x1400, 0x3c00, 0x7bff} {
						n := nsb * format.QKK
						w := kExtremeRow(rng, dt, nsb, dbits)
						y := randVec(rng, n)
						want := append([]float32(nil), y...)
						ops.Axpy(y, -0.37, w)
						refAxpy[dt](want, -0.37, w)
						for i := range y {
							if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%v %d super-blocks, d %#04x: Axpy [%d] %g, reference %g", dt, nsb, dbits, i, y[i], want[i])
							}
						}
						if !ops.ActDot {
							continue
						}
						a := extremeAct(rng, n)
						got, ref := ops.DotAct(w, a), refDot[dt](w, a)
						mg := kMag(dt, w, actValues(a))
						if d := math.Abs(float64(got - ref)); !(d <= 2e-6*mg+1e-37) {
							t.Errorf("%v %d super-blocks, d %#04x: DotAct %g, reference %g (|Δ| %g, magnitude %g)", dt, nsb, dbits, got, ref, d, mg)
						}
						if ops.Dot2Act != nil {
							b := kExtremeRow(rng, dt, nsb, dbits^0x0400)
							gb := ops.DotAct(b, a)
							for _, next := range [][]byte{nil, kExtremeRow(rng, dt, 3*nsb, dbits)} {
								var o [2]float32
								ops.Dot2Act(w, b, a, &o, next)
								if math.Float32bits(o[0]) != math.Float32bits(got) || math.Float32bits(o[1]) != math.Float32bits(gb) {
									t.Errorf("%v %d super-blocks, d %#04x, next %d bytes: Dot2Act %v, DotAct %g %g", dt, nsb, dbits, len(next), o, got, gb)
								}
							}
						}
						if ops.Dot4Act != nil {
							acts := [4]*Q8Act{a, extremeAct(rng, n), extremeAct(rng, n), extremeAct(rng, n)}
							o := ops.Dot4Act(w, acts[0], acts[1], acts[2], acts[3])
							for q, aq := range acts {
								if v := ops.DotAct(w, aq); math.Float32bits(o[q]) != math.Float32bits(v) {
									t.Errorf("%v %d super-blocks, d %#04x: Dot4Act token %d %g, DotAct %g", dt, nsb, dbits, q, o[q], v)
								}
							}
						}
					}
				}
			}
		})
	}
}
