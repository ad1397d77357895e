package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// TestKQuantAxpySameBitsOnAMD64: every amd64 table's Q4_K row axpy gives
// the AVX2 kernel's bits (x̂ = q·(d·sc) − dmin·m rounded twice, then one
// FMA), so a down projection sums the same whichever table or grouping
// took it; on rows of 1 to 17 super-blocks of random bytes. (Planted: the
// AVX-512 row axpy's multiply-add split into a multiply and an add fails
// it.)
func TestKQuantAxpySameBitsOnAMD64(t *testing.T) {
	var avx2 *Table
	for _, tb := range Tables() {
		if tb.Name == "avx2" {
			avx2 = tb
		}
	}
	if avx2 == nil {
		t.Skip("no AVX2 table on this CPU")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	for _, tb := range Tables()[1:] {
		for _, nsb := range []int{1, 2, 3, 5, 17} {
			for _, mag := range []float64{1e-4, 1, 1e4} {
				n := nsb * format.QKK
				w := randKRow(rng, format.Q4_K, nsb, mag)
				y := randVec(rng, n)
				want := append([]float32(nil), y...)
				tb.Ops(format.Q4_K).Axpy(y, -0.73, w)
				avx2.Ops(format.Q4_K).Axpy(want, -0.73, w)
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: %d super-blocks, d ~ %g: Axpy [%d] %g, AVX2 %g", tb.Name, nsb, mag, i, y[i], want[i])
					}
				}
			}
		}
	}
}
