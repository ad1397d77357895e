package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkKQuantOps times the decode's K-quant operations beside Q4_0's
// on 2048-wide rows, 64 rows in turn (in cache: the kernels' compute, not
// memory, which a decode needs to exceed), bytes of weights a second, on
// every fast table.
func BenchmarkKQuantOps(b *testing.B) {
	for _, tb := range Tables()[1:] {
		b.Run(tb.Name, func(b *testing.B) {
			defer Use(tb)()
			benchKQuantOps(b)
		})
	}
}

func benchKQuantOps(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, rows = 2048, 64
	for _, dt := range []format.DType{format.Q4_0, format.Q4_K, format.Q6_K} {
		ops := Active().Ops(dt)
		rb, _ := dt.RowBytes(n)
		w := make([]byte, rows*rb)
		for r := 0; r < rows; r++ {
			QuantizeRow(w[r*rb:(r+1)*rb], dt, randVec(rng, n))
		}
		row := func(r int) []byte { return w[(r%rows)*rb : (r%rows+1)*rb] }
		var a Q8Act
		convertAct(&a, randVec(rng, n), ops)
		b.Run(dt.String()+"/DotAct", func(b *testing.B) {
			b.SetBytes(int64(rb))
			for i := range b.N {
				_ = ops.DotAct(row(i), &a)
			}
		})
		if ops.Dot2Act != nil {
			b.Run(dt.String()+"/Dot2Act", func(b *testing.B) {
				b.SetBytes(int64(2 * rb))
				var o [2]float32
				for i := range b.N {
					ops.Dot2Act(row(2*i), row(2*i+1), &a, &o, row(2*i+2))
				}
			})
		}
		y := randVec(rng, n)
		if dt == format.Q6_K || ops.Axpy4 == nil {
			continue
		}
		b.Run(dt.String()+"/Axpy4", func(b *testing.B) {
			b.SetBytes(int64(4 * rb))
			c := [4]float32{0.1, -0.2, 0.3, 0.01}
			for i := range b.N {
				ws := [4][]byte{row(4 * i), row(4*i + 1), row(4*i + 2), row(4*i + 3)}
				ops.Axpy4(y, &c, &ws)
			}
		})
		if ops.Axpy8Act != nil {
			b.Run(dt.String()+"/Axpy8Act", func(b *testing.B) {
				b.SetBytes(int64(8 * rb))
				c := [8]float32{0.1, -0.2, 0.3, 0.01, 0.5, -0.6, 0.7, 0.8}
				for i := range b.N {
					var ws [8][]byte
					for r := range ws {
						ws[r] = row(8*i + r)
					}
					ops.Axpy8Act(y, &c, &ws)
				}
			})
		}
	}
}
