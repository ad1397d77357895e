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

func BenchmarkMicroQ40Q8AVX2(b *testing.B) {
	var a Q8Act
	microDot(b, format.Q4_0, func(w []byte, x []float32) float32 {
		if len(a.D) == 0 {
			quantizeAct(&a, x, false)
		}
		return dotQ40Q8AVX2(&w[0], &a.Q[0], &a.D[0], &a.S[0], microN/32)
	})
}
func BenchmarkMicroQ80Q8AVX2(b *testing.B) {
	var a Q8Act
	microDot(b, format.Q8_0, func(w []byte, x []float32) float32 {
		if len(a.D) == 0 {
			quantizeAct(&a, x, false)
		}
		return dotQ80Q8AVX2(&w[0], &a.Q[0], &a.D[0], microN/32)
	})
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

// The BF16 prefill tiles from cache, in GFLOP/s (64 per VDPBF16PS): the
// gate/up panel tile (four rows × six tokens, dot form, 2048 columns) and
// the down tile (six tokens × 64 columns over 256 record pairs).
func BenchmarkMicroBF16PanelTile(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512BF16, "AVX512_BF16")
	rng := rand.New(rand.NewPCG(1, 1))
	panel := make([]uint16, 4*microN)
	xs := make([]uint16, 6*microN)
	for i := range panel {
		panel[i] = F32ToBF16(rng.Float32())
	}
	for i := range xs {
		xs[i] = F32ToBF16(rng.Float32())
	}
	var xp [6]*uint16
	for j := range xp {
		xp[j] = &xs[j*microN]
	}
	var out [24]float32
	for i := 0; i < b.N; i++ {
		gemm4x6BF16DPPanel(&panel[0], &xp, microN, &out)
	}
	b.ReportMetric(float64(b.N)*24*2*microN/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMicroBF16DownTile(b *testing.B) {
	needCPU(b, cpu.X86.HasAVX512BF16, "AVX512_BF16")
	const P = 256
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]uint16, P*128)
	h := make([]uint32, P*6)
	for i := range w {
		w[i] = F32ToBF16(rng.Float32())
	}
	for i := range h {
		h[i] = uint32(F32ToBF16(rng.Float32())) | uint32(F32ToBF16(rng.Float32()))<<16
	}
	acc := make([]float32, 6*64)
	for i := 0; i < b.N; i++ {
		gemmDown6BF16DP(&acc[0], 64, &h[0], &w[0], 128, P, 64)
	}
	b.ReportMetric(float64(b.N)*6*64*2*2*P/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
