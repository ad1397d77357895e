package kernels

// Single-row micro-benchmarks of the amd64 kernels themselves (one 2048-wide
// row, cache-resident, no dispatch or pool), to compare paths on the same
// CPU in one run: go test -bench Micro -run ^$ ./kernels

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

const microN = 2048

// microDot times kernel over one random row of dt, reporting weight bytes.
func microDot(b *testing.B, dt format.DType, kernel func(w []byte, x []float32) float32) {
	rng := rand.New(rand.NewPCG(1, 1))
	wb, _ := randRow(rng, dt, microN)
	x := randVec(rng, microN)
	b.SetBytes(int64(len(wb)))
	var s float32
	for i := 0; i < b.N; i++ {
		s += kernel(wb, x)
	}
	_ = s
}

// needCPU skips a benchmark whose kernel this CPU cannot run.
func needCPU(b *testing.B, has bool, what string) {
	if !has {
		b.Skipf("CPU without %s", what)
	}
}

func u16(w []byte) *uint16 { return (*uint16)(unsafe.Pointer(&w[0])) }

func BenchmarkMicroQ40AVX2(b *testing.B) {
	microDot(b, format.Q4_0, func(w []byte, x []float32) float32 { return dotQ40AVX2(&w[0], &x[0], microN/32) })
}
func BenchmarkMicroQ40AVX512(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512F, "AVX512F")
	microDot(b, format.Q4_0, func(w []byte, x []float32) float32 { return dotQ40AVX512(&w[0], &x[0], microN/32) })
}
func BenchmarkMicroQ80AVX512(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512F, "AVX512F")
	microDot(b, format.Q8_0, func(w []byte, x []float32) float32 { return dotQ80AVX512(&w[0], &x[0], microN/32) })
}
func BenchmarkMicroBF16AVX2(b *testing.B) {
	microDot(b, format.BF16, func(w []byte, x []float32) float32 { return dotBF16AVX2(u16(w), &x[0], microN) })
}
func BenchmarkMicroBF16AVX512(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512F, "AVX512F")
	microDot(b, format.BF16, func(w []byte, x []float32) float32 { return dotBF16AVX512(u16(w), &x[0], microN) })
}

func BenchmarkMicroQ40VNNI(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512VNNI, "AVX512VNNI")
	var a Q8Act
	microDot(b, format.Q4_0, func(w []byte, x []float32) float32 {
		if len(a.Quad) == 0 {
			quantizeAct(&a, x, true)
		}
		return dotQ40Q8VNNI(&w[0], (*int8)(unsafe.Pointer(&a.Quad[0])), &a.D[0], microN/32)
	})
}

func BenchmarkMicroAxpyQ40AVX512(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512F, "AVX512F")
	y := make([]float32, microN)
	microDot(b, format.Q4_0, func(w []byte, _ []float32) float32 {
		axpyQ40AVX512(&y[0], 1e-9, &w[0], microN/32)
		return 0
	})
}

// Reported per four rows (bytes of all four).
func BenchmarkMicroAxpy4Q40AVX512(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512F, "AVX512F")
	rng := rand.New(rand.NewPCG(1, 1))
	var w [4][]byte
	for r := range w {
		w[r], _ = randRow(rng, format.Q4_0, microN)
	}
	y := make([]float32, microN)
	a := [4]float32{1e-9, 1e-9, 1e-9, 1e-9}
	b.SetBytes(4 * int64(len(w[0])))
	for i := 0; i < b.N; i++ {
		axpy4Q40AVX512(&y[0], &a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], microN/32)
	}
}

func BenchmarkMicroFMAPeak(b *testing.B) {
	for i := 0; i < b.N; i++ {
		fmaPeakAVX2(1000)
	}
	b.ReportMetric(float64(b.N)*1000*10*16/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMicroFMAPeakAVX512(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("no AVX-512")
	}
	for i := 0; i < b.N; i++ {
		fmaPeakAVX512(1000)
	}
	b.ReportMetric(float64(b.N)*1000*10*32/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
