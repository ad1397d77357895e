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
