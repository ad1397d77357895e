package kernels

// Single-row micro-benchmarks of the amd64 kernels themselves (one 2048-wide
// row, cache-resident, no dispatch or pool), to compare paths on the same
// CPU in one run: go test -bench Micro -run ^$ ./kernels

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/format"
)

func BenchmarkMicroQ40AVX512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.Q4_0, 2048)
	x := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotQ40AVX512(&wb[0], &x[0], 64)
	}
	_ = s
}
func BenchmarkMicroQ40AVX2(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.Q4_0, 2048)
	x := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotQ40AVX2(&wb[0], &x[0], 64)
	}
	_ = s
}
func BenchmarkMicroBF16AVX2(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.BF16, 2048)
	x := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotBF16AVX2((*uint16)(unsafe.Pointer(&wb[0])), &x[0], 2048)
	}
	_ = s
}
func BenchmarkMicroFMAPeak(b *testing.B) {
	for i := 0; i < b.N; i++ {
		fmaPeakAVX2(1000)
	}
	b.ReportMetric(float64(b.N)*1000*10*16/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
func BenchmarkMicroBF16AVX512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.BF16, 2048)
	x := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotBF16AVX512((*uint16)(unsafe.Pointer(&wb[0])), &x[0], 2048)
	}
	_ = s
}
func BenchmarkMicroQ80AVX512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.Q8_0, 2048)
	x := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotQ80AVX512(&wb[0], &x[0], 64)
	}
	_ = s
}
func BenchmarkMicroAxpyQ40AVX512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.Q4_0, 2048)
	y := randVec(rng, 2048)
	b.SetBytes(int64(len(wb)))
	for i := 0; i < b.N; i++ {
		axpyQ40AVX512(&y[0], 1e-9, &wb[0], 64)
	}
}
func BenchmarkMicroQ40VNNI(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, format.Q4_0, 2048)
	x := randVec(rng, 2048)
	var a Q8Act
	QuantizeAct(&a, x)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += dotQ40Q8VNNI(&wb[0], (*int8)(unsafe.Pointer(&a.Paired[0])), &a.D[0], 64)
	}
	_ = s
}
func BenchmarkMicroAxpy4Q40AVX512(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var w [4][]byte
	for r := range w {
		w[r], _ = randRow(rng, format.Q4_0, 2048)
	}
	y := randVec(rng, 2048)
	a := [4]float32{1e-9, 1e-9, 1e-9, 1e-9}
	b.SetBytes(4 * int64(len(w[0])))
	for i := 0; i < b.N; i++ {
		axpy4Q40AVX512(&y[0], &a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], 64)
	}
}
