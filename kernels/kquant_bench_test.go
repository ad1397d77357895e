package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkQuantizeKQuant times the converter's quantisation of 2048-value
// rows (the search per sub-block dominates a K-quant pack's conversion).
func BenchmarkQuantizeKQuant(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	f := randVec(rng, 2048)
	for _, dt := range []format.DType{format.Q4_0, format.Q4_K, format.Q6_K} {
		b.Run(dt.String(), func(b *testing.B) {
			rb, _ := dt.RowBytes(len(f))
			dst := make([]byte, rb)
			b.SetBytes(int64(4 * len(f)))
			for range b.N {
				QuantizeRow(dst, dt, f)
			}
		})
	}
}
