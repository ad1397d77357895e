package kernels

import (
	"testing"

	"github.com/sipack/sipack/format"
)

func zzMicro(b *testing.B, dt format.DType, rows int, pair bool) {
	ops := Active().Ops(dt)
	var a Q8Act
	var w []byte
	x := make([]float32, microN)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	a = quantizeTokens(nil, ops, x, microN, 1)[0]
	R, _ := dt.RowBytes(microN)
	wb := make([]byte, rows*R)
	for i := range wb {
		wb[i] = byte(i * 7)
	}
	for r := 0; r < rows; r++ {
		wb[r*R] = 0
		wb[r*R+1] = 0x3c
	}
	w = wb
	b.SetBytes(int64(len(w)))
	var s float32
	var o [2]float32
	for i := 0; i < b.N; i++ {
		for r := 0; r < rows; r += 2 {
			if pair {
				ops.Dot2Act(w[r*R:(r+1)*R], w[(r+1)*R:(r+2)*R], &a, &o, nil)
				s += o[0] + o[1]
			} else {
				s += ops.DotAct(w[r*R:(r+1)*R], &a) + ops.DotAct(w[(r+1)*R:(r+2)*R], &a)
			}
		}
	}
	_ = s
}

func BenchmarkZZQ80Dot(b *testing.B)  { zzMicro(b, format.Q8_0, 64, false) }
func BenchmarkZZQ80Dot2(b *testing.B) { zzMicro(b, format.Q8_0, 64, true) }
func BenchmarkZZQ40Dot(b *testing.B)  { zzMicro(b, format.Q4_0, 64, false) }
func BenchmarkZZQ40Dot2(b *testing.B) { zzMicro(b, format.Q4_0, 64, true) }

func BenchmarkZZQ80DRAM(b *testing.B) {
	dt := format.Q8_0
	ops := Active().Ops(dt)
	x := make([]float32, microN)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	a := quantizeTokens(nil, ops, x, microN, 1)[0]
	R, _ := dt.RowBytes(microN)
	rows := (1 << 30) / R
	wb := make([]byte, rows*R)
	for i := range wb {
		wb[i] = byte(i * 7)
	}
	for r := 0; r < rows; r++ {
		wb[r*R] = 0
		wb[r*R+1] = 0x3c
	}
	p := NewPool(2)
	defer p.Close()
	kern := []func(w *byte, xq *int8, xd *float32, xs *int32, nb int) float32{dotQ80Q8VNNI, zzQ80T2, zzQ80Far, zzQ80None}
	names := []string{"t0", "t2", "far", "none", "matmul"}
	t := make([]float64, len(kern)+1)
	wt := &Weight{Data: wb, DType: dt, Rows: rows, Cols: microN}
	out := make([]float32, rows)
	for i := 0; i < b.N; i++ {
		t0 := nowNano()
		MatMul(p, out, wt, x)
		t[len(kern)] += float64(nowNano() - t0)
		for o := range kern {
			k := (i + o) % len(kern)
			f := kern[k]
			t0 := nowNano()
			p.Run(rows, func(lo, hi, _ int) {
				for r := lo; r < hi; r++ {
					out[r] = f(&wb[r*R], &a.Q[0], &a.D[0], &a.S[0], 64)
				}
			})
			t[k] += float64(nowNano() - t0)
		}
	}
	for k, n := range names {
		b.ReportMetric(float64(len(wb))*float64(b.N)/t[k], n+"-GB/s")
	}
}

func BenchmarkZZMatVecForms(b *testing.B) {
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
		b.Run(dt.String(), func(b *testing.B) {
			ops := Active().Ops(dt)
			x := make([]float32, microN)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			R, _ := dt.RowBytes(microN)
			rows := (1 << 30) / R
			wb := make([]byte, rows*R)
			for i := range wb {
				wb[i] = byte(i * 7)
			}
			for r := 0; r < rows; r++ {
				wb[r*R] = 0
				wb[r*R+1] = 0x3c
			}
			p := NewPool(2)
			defer p.Close()
			wt := &Weight{Data: wb, DType: dt, Rows: rows, Cols: microN}
			out := make([]float32, rows)
			var tp, ts float64
			var ratios []float64
			for i := 0; i < b.N; i++ {
				var d [2]float64
				for o := 0; o < 2; o++ {
					k := (i + o) % 2
					t0 := nowNano()
					if k == 0 {
						MatMul(p, out, wt, x)
					} else {
						acts := quantizeTokens(p, ops, x, microN, 1)
						p.Run(rows, func(lo, hi, _ int) {
							for r := lo; r < hi; r++ {
								out[r] = ops.DotAct(wb[r*R:(r+1)*R], &acts[0])
							}
						})
					}
					d[k] = float64(nowNano() - t0)
				}
				tp, ts = tp+d[0], ts+d[1]
				ratios = append(ratios, d[0]/d[1])
			}
			b.ReportMetric(float64(len(wb))*float64(b.N)/tp, "pairs-GB/s")
			b.ReportMetric(float64(len(wb))*float64(b.N)/ts, "single-GB/s")
		})
	}
}
