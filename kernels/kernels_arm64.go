package kernels

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/sipack/sipack/format"
)

//go:noescape
func dotBF16NEON(w *uint16, x *float32, n int, acc *[16]float32)

//go:noescape
func axpyBF16NEON(y *float32, a float32, w *uint16, n int)

//go:noescape
func dotF16NEON(w *uint16, x *float32, n int, acc *[16]float32)

//go:noescape
func axpyF16NEON(y *float32, a float32, w *uint16, n int)

//go:noescape
func dotQ40Q8NEON(w *byte, xq *int8, xd *float32, nb int) float32

//go:noescape
func dotQ80Q8NEON(w *byte, xq *int8, xd *float32, nb int) float32

// NEON is part of every arm64 CPU (ASIMD, with its half-precision
// conversions, is mandatory in ARMv8-A), so the BF16 and F16 kernels need
// no feature check.
func init() {
	defer applyQDotEnv()
	if os.Getenv("SIPACK_KERNELS") == "generic" {
		return
	}
	Path = "neon"
	dotBF16, axpyBF16 = neonDot(dotBF16NEON, dotBF16Ref), neonAxpy(axpyBF16NEON, axpyBF16Ref)
	dotF16, axpyF16 = neonDot(dotF16NEON, dotF16Ref), neonAxpy(axpyF16NEON, axpyF16Ref)
	// Q4_0 and Q8_0 through integer dots where the CPU has the dot-product
	// instructions (the float path has no NEON kernel: it runs the Go
	// reference, which the integer one outruns by construction).
	if cpu.ARM64.HasASIMDDP {
		Path += "+dotprod"
		IntegerDot[format.Q4_0], IntegerDot[format.Q8_0] = true, true
		dotQ80Q8, dotQ40Q8 = q8ActDot(dotQ80Q8NEON), q8ActDot(dotQ40Q8NEON)
	}
}

// neonDot adapts a 16-bit NEON dot over a multiple of 16 elements (four
// partial sums of four lanes), finishing the tail with the reference.
func neonDot(k func(w *uint16, x *float32, n int, acc *[16]float32), ref func([]byte, []float32) float32) func([]byte, []float32) float32 {
	return func(w []byte, x []float32) float32 {
		n := len(x) &^ 15
		var s float32
		if n > 0 {
			var acc [16]float32
			k((*uint16)(unsafe.Pointer(&w[0])), &x[0], n, &acc)
			for _, v := range acc {
				s += v
			}
		}
		return s + ref(w[2*n:], x[n:])
	}
}

// neonAxpy adapts a 16-bit NEON axpy over a multiple of 16 elements.
func neonAxpy(k func(y *float32, a float32, w *uint16, n int), ref func([]float32, float32, []byte)) func([]float32, float32, []byte) {
	return func(y []float32, a float32, w []byte) {
		n := len(y) &^ 15
		if n > 0 {
			k(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		ref(y[n:], a, w[2*n:])
	}
}
