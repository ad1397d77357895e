package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

// TestAVX512MatchesReference runs the opt-in AVX-512F kernels directly
// (they are not the default path) wherever the CPU has them.
func TestAVX512MatchesReference(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Log("CPU without AVX-512F: the opt-in kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{16, 48, 64, 80, 2048} {
		wb, wf := randRow(rng, format.BF16, n)
		x := randVec(rng, n)
		got := dotBF16AVX512((*uint16)(unsafe.Pointer(&wb[0])), &x[0], n)
		if d := math.Abs(float64(got - dotBF16Ref(wb, x))); d > tol(wf, x) {
			t.Errorf("dot n=%d: %g vs %g", n, got, dotBF16Ref(wb, x))
		}
		y1 := randVec(rng, n)
		y2 := append([]float32(nil), y1...)
		axpyBF16AVX512(&y1[0], 0.3, (*uint16)(unsafe.Pointer(&wb[0])), n)
		axpyBF16Ref(y2, 0.3, wb)
		for i := range y1 {
			if d := math.Abs(float64(y1[i] - y2[i])); d > 2.4e-7*math.Abs(float64(y2[i]))+1e-7 {
				t.Fatalf("axpy n=%d [%d]: %g vs %g", n, i, y1[i], y2[i])
			}
		}
	}
}

// TestAVX512QuantMatchesReference runs the AVX-512F Q4_0/Q8_0 kernels
// directly on every block count from 1 to 70 (odd counts reach the loops'
// single-block tail) against the pure-Go references.
func TestAVX512QuantMatchesReference(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Log("CPU without AVX-512F: these kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(13, 14))
	type kernels struct {
		dt   format.DType
		dot  func(w *byte, x *float32, nb int) float32
		axpy func(y *float32, a float32, w *byte, nb int)
		ref  func(w []byte, x []float32) float32
		aref func(y []float32, a float32, w []byte)
	}
	for _, k := range []kernels{
		{format.Q4_0, dotQ40AVX512, axpyQ40AVX512, dotQ40Ref, axpyQ40Ref},
		{format.Q8_0, dotQ80AVX512, axpyQ80AVX512, dotQ80Ref, axpyQ80Ref},
	} {
		for nb := 1; nb <= 70; nb++ {
			n := nb * format.QK
			wb, wf := randRow(rng, k.dt, n)
			x := randVec(rng, n)
			got, want := k.dot(&wb[0], &x[0], nb), k.ref(wb, x)
			if d := math.Abs(float64(got - want)); d > tol(wf, x) {
				t.Errorf("%v dot nb=%d: %g vs reference %g", k.dt, nb, got, want)
			}
			y1 := randVec(rng, n)
			y2 := append([]float32(nil), y1...)
			k.axpy(&y1[0], -0.7, &wb[0], nb)
			k.aref(y2, -0.7, wb)
			for i := range y1 {
				if d := math.Abs(float64(y1[i] - y2[i])); d > 1e-6*(1+math.Abs(float64(y2[i]))) {
					t.Fatalf("%v axpy nb=%d [%d]: %g vs reference %g", k.dt, nb, i, y1[i], y2[i])
				}
			}
		}
	}
}

// TestVNNIQ4DotMatchesReference: the VNNI Q4_0 × Q8 dot against the
// integer reference (exact integer sums; only the float accumulation of
// the per-block products differs in order).
func TestVNNIQ4DotMatchesReference(t *testing.T) {
	if !cpu.X86.HasAVX512VNNI {
		t.Log("CPU without AVX-512 VNNI: this kernel cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(15, 16))
	for _, nb := range []int{16, 32, 64, 256} {
		n := nb * format.QK
		wb, _ := randRow(rng, format.Q4_0, n)
		x := randVec(rng, n)
		var a Q8Act
		quantizeAct(&a, x, true)
		if len(a.Quad) != n*3/2 {
			t.Fatalf("nb=%d: quad activations %d bytes, want %d", nb, len(a.Quad), n*3/2)
		}
		got := dotQ40Q8VNNI(&wb[0], (*int8)(unsafe.Pointer(&a.Quad[0])), &a.D[0], nb)
		want := dotQ40Q8Ref(wb, &a)
		var mag float64
		for b := range a.D {
			mag += math.Abs(float64(F16ToF32(uint16(wb[b*18])|uint16(wb[b*18+1])<<8) * a.D[b] * 8 * 127 * 32))
		}
		if d := math.Abs(float64(got - want)); d > 1e-6*mag {
			t.Errorf("nb=%d: VNNI %g vs reference %g", nb, got, want)
		}
	}
}

// TestAxpy4MatchesReference: four Q4_0 or Q8_0 rows into one y at once
// equals four single-row reference axpys.
func TestAxpy4MatchesReference(t *testing.T) {
	if !cpu.X86.HasAVX512F {
		t.Log("CPU without AVX-512F: these kernels cannot run here")
		return
	}
	rng := rand.New(rand.NewPCG(19, 20))
	for _, c := range []struct {
		dt     format.DType
		kernel func(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int)
		ref    func([]float32, float32, []byte)
	}{{format.Q4_0, axpy4Q40AVX512, axpyQ40Ref}, {format.Q8_0, axpy4Q80AVX512, axpyQ80Ref}} {
		for _, nb := range []int{16, 64, 256} {
			n := nb * format.QK
			var w [4][]byte
			for r := range w {
				w[r], _ = randRow(rng, c.dt, n)
			}
			a := [4]float32{0.5, -1.25, 3, -0.01}
			y1 := randVec(rng, n)
			y2 := append([]float32(nil), y1...)
			c.kernel(&y1[0], &a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], nb)
			for r := range w {
				c.ref(y2, a[r], w[r])
			}
			for i := range y1 {
				if d := math.Abs(float64(y1[i] - y2[i])); d > 1e-5*(1+math.Abs(float64(y2[i]))) {
					t.Fatalf("%v nb=%d [%d]: %g vs reference %g", c.dt, nb, i, y1[i], y2[i])
				}
			}
		}
	}
}
