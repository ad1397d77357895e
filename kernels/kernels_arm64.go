package kernels

import (
	"os"
	"unsafe"
)

//go:noescape
func dotBF16NEON(w *uint16, x *float32, n int, acc *[16]float32)

//go:noescape
func axpyBF16NEON(y *float32, a float32, w *uint16, n int)

// NEON is part of every arm64 CPU (ASIMD is mandatory in ARMv8-A), so the
// BF16 kernels need no feature check.
func init() {
	defer applyQDotEnv()
	if os.Getenv("SIPACK_KERNELS") == "generic" {
		return
	}
	Path = "neon"
	dotBF16 = func(w []byte, x []float32) float32 {
		n := len(x) &^ 15
		var s float32
		if n > 0 {
			var acc [16]float32
			dotBF16NEON((*uint16)(unsafe.Pointer(&w[0])), &x[0], n, &acc)
			for _, v := range acc {
				s += v
			}
		}
		return s + dotBF16Ref(w[2*n:], x[n:])
	}
	axpyBF16 = func(y []float32, a float32, w []byte) {
		n := len(y) &^ 15
		if n > 0 {
			axpyBF16NEON(&y[0], a, (*uint16)(unsafe.Pointer(&w[0])), n)
		}
		axpyBF16Ref(y[n:], a, w[2*n:])
	}
}
