//go:build cuda || cudaemu

package cuda

import (
	"unsafe"

	"github.com/sipack/sipack/backend/cudaplan"
)

// driver is what the backend asks of a GPU: memory, copies, launches by
// kernel name. The CUDA driver API implements it (driver_cu.go, build tag
// cuda); an emulator that runs the same kernel source on the CPU
// implements it for rehearsals without a GPU (driver_emu.go, build tag
// cudaemu). Addresses are device addresses as integers.
type driver interface {
	// enter makes the driver usable from the calling goroutine until the
	// returned function runs (CUDA: the context current on a locked thread).
	enter() func()
	alloc(n int) (uint64, error) // zeroed
	free(p uint64)
	memset0(p uint64, n int) error
	htod(dst uint64, src unsafe.Pointer, n int) error
	dtoh(dst unsafe.Pointer, src uint64, n int) error
	dtod(dst, src uint64, n int) error
	launch(l cudaplan.Launch, a *cudaplan.Args) error
	launchValues(l cudaplan.Launch, vals []uint64) error
	// capture makes a graph of the launches (not run yet); replay runs it.
	capture(steps []queued) (uint64, error)
	replay(g uint64) error
	dropGraph(g uint64)
	sync() error
	memInfo() (free, total int64, err error)
	// registerHost maps host memory for the device, read-only.
	registerHost(b []byte) (uint64, error)
	unregisterHost(b []byte) error
	close() error
}
