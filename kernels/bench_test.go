package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sipack/sipack/format"
)

// Kernel benchmarks report the weight bytes streamed per second (b.SetBytes),
// for the chosen path and the reference in one run:
//
//	go test -bench . -run ^$ ./kernels
func benchMatVec(b *testing.B, dt format.DType, rows, cols, threads int, generic bool) {
	if generic {
		defer Use(&Generic)()
	}
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, dt, rows*cols)
	w := &Weight{Data: wb, DType: dt, Rows: rows, Cols: cols}
	x := randVec(rng, cols)
	out := make([]float32, rows)
	p := NewPool(threads)
	defer p.Close()
	b.SetBytes(int64(len(wb)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		MatMul(p, out, w, x)
	}
}

// 2048 × 8192 BF16 is 32 MiB, larger than the caches: a memory-bound matvec.
func BenchmarkMatVecBF16(b *testing.B)        { benchMatVec(b, format.BF16, 8192, 2048, 1, false) }
func BenchmarkMatVecBF16Generic(b *testing.B) { benchMatVec(b, format.BF16, 8192, 2048, 1, true) }
func BenchmarkMatVecBF16x2(b *testing.B)      { benchMatVec(b, format.BF16, 8192, 2048, 2, false) }
func BenchmarkMatVecF16(b *testing.B)         { benchMatVec(b, format.F16, 8192, 2048, 1, false) }
func BenchmarkMatVecF16Generic(b *testing.B)  { benchMatVec(b, format.F16, 8192, 2048, 1, true) }
func BenchmarkMatVecF32(b *testing.B)         { benchMatVec(b, format.F32, 4096, 2048, 1, false) }
func BenchmarkMatVecQ4_0(b *testing.B)        { benchMatVec(b, format.Q4_0, 8192, 2048, 1, false) }
func BenchmarkMatVecQ4_0Generic(b *testing.B) { benchMatVec(b, format.Q4_0, 8192, 2048, 1, true) }
func BenchmarkMatVecQ8_0(b *testing.B)        { benchMatVec(b, format.Q8_0, 8192, 2048, 1, false) }
func BenchmarkMatVecQ8_0Generic(b *testing.B) { benchMatVec(b, format.Q8_0, 8192, 2048, 1, true) }

// 131072 × 2048 Q4_0 is 151 MB, beyond even a 105 MB L3: the memory-bound case.
func BenchmarkMatVecQ4_0Big(b *testing.B)   { benchMatVec(b, format.Q4_0, 131072, 2048, 1, false) }
func BenchmarkMatVecQ4_0Bigx2(b *testing.B) { benchMatVec(b, format.Q4_0, 131072, 2048, 2, false) }

// A cache-resident matvec (256 KiB) shows the compute side.
func BenchmarkMatVecBF16Cached(b *testing.B)        { benchMatVec(b, format.BF16, 64, 2048, 1, false) }
func BenchmarkMatVecBF16CachedGeneric(b *testing.B) { benchMatVec(b, format.BF16, 64, 2048, 1, true) }
func BenchmarkMatVecQ4_0Cached(b *testing.B)        { benchMatVec(b, format.Q4_0, 64, 2048, 1, false) }
func BenchmarkMatVecQ8_0Cached(b *testing.B)        { benchMatVec(b, format.Q8_0, 64, 2048, 1, false) }

func benchFFN(b *testing.B, records, threads int, generic bool) {
	benchFFNType(b, format.BF16, records, threads, generic)
}

func benchFFNType(b *testing.B, dt format.DType, records, threads int, generic bool) {
	if generic {
		defer Use(&Generic)()
	}
	const H = 2048
	rng := rand.New(rand.NewPCG(2, 2))
	wb, _ := randRow(rng, dt, records*3*H)
	x := randVec(rng, H)
	y := make([]float32, H)
	p := NewPool(threads)
	defer p.Close()
	b.SetBytes(int64(len(wb)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		FFNRecords(p, y, recordBlocks(dt, H, format.Interleaved, wb), dt, H, x, nil)
	}
}

// 2048 records of H = 2048 (24 MiB): one layer's worth at φ = 0.25 of 8192.
func BenchmarkFFNRecordsBF16(b *testing.B)        { benchFFN(b, 2048, 1, false) }
func BenchmarkFFNRecordsBF16x2(b *testing.B)      { benchFFN(b, 2048, 2, false) }
func BenchmarkFFNRecordsBF16Generic(b *testing.B) { benchFFN(b, 2048, 1, true) }
func BenchmarkFFNRecordsQ4_0(b *testing.B)        { benchFFNType(b, format.Q4_0, 2048, 1, false) }
func BenchmarkFFNRecordsQ4_0Generic(b *testing.B) { benchFFNType(b, format.Q4_0, 2048, 1, true) }
func BenchmarkFFNRecordsQ8_0(b *testing.B)        { benchFFNType(b, format.Q8_0, 2048, 1, false) }

func BenchmarkPrefillGEMMBF16(b *testing.B) {
	const rows, cols, T = 2048, 2048, 256
	rng := rand.New(rand.NewPCG(3, 3))
	wb, _ := randRow(rng, format.BF16, rows*cols)
	w := &Weight{Data: wb, DType: format.BF16, Rows: rows, Cols: cols}
	x := randVec(rng, T*cols)
	out := make([]float32, T*rows)
	p := NewPool(1)
	defer p.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		MatMul(p, out, w, x)
	}
	b.ReportMetric(2*float64(rows*cols*T)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// The matvecs of a decode step read their matrices from memory, where the
// benchmarks above (one matrix, read again and again) are served by a 32
// MiB L3 once warm. BenchmarkMatVecDRAM cycles through 768 MiB of copies
// of one shape (2 threads): q/o-sized (2048 rows) and k/v-sized (512).
// (Rows in pairs through the fused two-row dots measured 1.4-1.6× faster
// above and no faster here: a cache effect, not kept.)
func BenchmarkMatVecDRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, dt := range []format.DType{format.F16, format.BF16, format.Q8_0, format.Q4_0, format.Q4_K, format.Q6_K} {
		for _, rows := range []int{512, 2048} {
			const cols = 2048
			rb, _ := dt.RowBytes(cols)
			n := (768 << 20) / (rows * rb)
			row, _ := randRow(rng, dt, cols)
			ws := make([]*Weight, n)
			for i := range ws {
				d := make([]byte, rows*rb)
				for r := 0; r < rows; r++ {
					copy(d[r*rb:], row)
				}
				ws[i] = &Weight{Data: d, DType: dt, Rows: rows, Cols: cols}
			}
			x := randVec(rng, cols)
			out := make([]float32, rows)
			p := NewPool(2)
			b.Run(fmt.Sprintf("%v-%dx%d", dt, rows, cols), func(b *testing.B) {
				b.SetBytes(int64(rows * rb))
				for i := 0; i < b.N; i++ {
					MatMul(p, out, ws[i%n], x)
				}
			})
			p.Close()
		}
	}
}

// BenchmarkMatVecRowsOverPairs: a one-token integer matvec over a 1 GiB
// matrix from memory (2 threads), its rows a row at a time (DotAct) and
// two at a time through the pair dot prefetching eight rows ahead (what
// matMulInteger does for Q4_0), the two in turn; reports each form's GB/s
// and the median of the per-pair ratios (rows ÷ pairs speed).
func BenchmarkMatVecRowsOverPairs(b *testing.B) {
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
		ops := active.Ops(dt)
		if !ops.ActDot || ops.Dot2Act == nil {
			continue
		}
		b.Run(dt.String(), func(b *testing.B) {
			const cols = 2048
			rng := rand.New(rand.NewPCG(2, 2))
			rb, _ := dt.RowBytes(cols)
			rows := (1 << 30) / rb
			row, _ := randRow(rng, dt, cols)
			wb := make([]byte, rows*rb)
			for r := 0; r < rows; r++ {
				copy(wb[r*rb:], row)
			}
			x := randVec(rng, cols)
			p := NewPool(2)
			defer p.Close()
			out := make([]float32, rows)
			var t [2]time.Duration
			ratios := make([]float64, 0, b.N)
			for i := 0; i < b.N; i++ {
				var d [2]time.Duration
				for o := range 2 {
					form := (i + o) % 2 // 0: pairs, 1: rows
					acts := quantizeTokens(p, ops, x, cols, 1)
					t0 := time.Now()
					p.Run(rows, func(lo, hi, _ int) {
						r := lo
						var o2 [2]float32
						for ; form == 0 && r+2 <= hi; r += 2 {
							var next []byte
							if r+matPairAhead < hi {
								next = wb[(r+matPairAhead)*rb : (r+matPairAhead+1)*rb]
							}
							ops.Dot2Act(wb[r*rb:(r+1)*rb], wb[(r+1)*rb:(r+2)*rb], &acts[0], &o2, next)
							out[r], out[r+1] = o2[0], o2[1]
						}
						for ; r < hi; r++ {
							out[r] = ops.DotAct(wb[r*rb:(r+1)*rb], &acts[0])
						}
					})
					d[form] = time.Since(t0)
				}
				t[0], t[1] = t[0]+d[0], t[1]+d[1]
				ratios = append(ratios, float64(d[0])/float64(d[1]))
			}
			slices.Sort(ratios)
			bytes := float64(len(wb)) * float64(b.N)
			b.ReportMetric(bytes/t[0].Seconds()/1e9, "pairs-GB/s")
			b.ReportMetric(bytes/t[1].Seconds()/1e9, "rows-GB/s")
			b.ReportMetric(ratios[len(ratios)/2], "rows/pairs")
		})
	}
}

// BenchmarkAttentionDecode: one decode token's attention in a layer of a
// 1B-shape model (32 query heads over 8 key/value heads of 64) after n
// cached positions, 2 threads; SetBytes is the layer's cache (keys and
// values, float32), so MB/s says how close it runs to a read of the cache.
// "loop" is the plain loop (a dot and an axpy per key and head) for
// comparison.
func BenchmarkAttentionDecode(b *testing.B) {
	const heads, kv, hd = 32, 8, 64
	rng := rand.New(rand.NewPCG(1, 2))
	p := NewPool(2)
	defer p.Close()
	for _, n := range []int{64, 512, 2048, 4096} {
		keys, vals := randVec(rng, n*kv*hd), randVec(rng, n*kv*hd)
		q, out := randVec(rng, heads*hd), make([]float32, heads*hd)
		for _, loop := range []bool{false, true} {
			name := fmt.Sprintf("n%d", n)
			if loop {
				name += "-loop"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(2 * n * kv * hd * 4))
				for i := 0; i < b.N; i++ {
					if loop {
						attentionLoop(p, out, q, keys, vals, heads, kv, hd, n*hd, hd, n-1, 1, 0.125)
					} else {
						Attention(p, out, q, keys, vals, heads, kv, hd, n*hd, hd, n-1, 1, 0.125)
					}
				}
			})
		}
	}
}
