package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkPrefillMatMul: MatMul of a 2048×2048 weight over T tokens with
// the active table as it is (gemm=true: the prefill GEMM where MatMul takes
// it, from gemmMinT tokens and off the activation-dot path) and with its
// GEMM removed (the Dot4 / integer tiles), one thread: where the GEMM
// pays. Reports tokens per second.
func BenchmarkPrefillMatMul(b *testing.B) {
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		for _, T := range []int{6, 8, 12, 16, 32, 64} {
			for _, gemm := range []bool{true, false} {
				b.Run(fmt.Sprintf("%v/T=%d/gemm=%v", dt, T, gemm), func(b *testing.B) {
					tb := *Active()
					if !gemm {
						tb.Gemm = nil
					}
					defer Use(&tb)()
					rng := rand.New(rand.NewPCG(1, 1))
					wb, _ := randRow(rng, dt, 2048*2048)
					w := &Weight{Data: wb, DType: dt, Rows: 2048, Cols: 2048}
					x := randVec(rng, T*2048)
					out := make([]float32, T*2048)
					p := NewPool(1)
					defer p.Close()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						MatMul(p, out, w, x)
					}
					b.ReportMetric(float64(T*b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}
