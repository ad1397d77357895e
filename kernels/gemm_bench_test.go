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
	for _, dt := range []format.DType{format.BF16, format.Q4_0, format.Q4_K} {
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

// BenchmarkFFNPrefill: FFNRecords over 2048 records of H = 2048 (a quarter
// of a 1B layer) for a 256-token prompt, one thread: the prefill FFN's
// gate/up GEMM, SiLU and down projection together, in GFLOP/s (2 per
// weight per token).
func BenchmarkFFNPrefill(b *testing.B) {
	for _, dt := range []format.DType{format.BF16, format.F16, format.Q4_0} {
		b.Run(dt.String(), func(b *testing.B) {
			const H, records, T = 2048, 2048, 256
			rng := rand.New(rand.NewPCG(2, 2))
			wb, _ := randRow(rng, dt, records*3*H)
			x := randVec(rng, T*H)
			y := make([]float32, T*H)
			p := NewPool(1)
			defer p.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				FFNRecords(p, y, recordBlocks(dt, H, format.Interleaved, wb), dt, H, x, nil)
			}
			b.ReportMetric(2*3*float64(H*records*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
