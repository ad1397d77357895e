//go:build cuda || cudaemu

package cuda

import (
	"time"
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
	// hostAlloc returns n bytes of page-locked host memory mapped for the
	// device, and its device address; hostFree frees it.
	hostAlloc(n int) ([]byte, uint64, error)
	hostFree(b []byte) error
	// event returns a new event; record marks it on the stream after the
	// work queued so far; elapsed waits for end and returns the time from
	// start to it; dropEvent frees one. Kernel timing (TimeKernels).
	event() (uint64, error)
	record(ev uint64) error
	elapsed(start, end uint64) (time.Duration, error)
	dropEvent(ev uint64)
	close() error
}

// devInfo is what openDriver learns of the device.
type devInfo struct {
	name string
	sms  int
	// integrated: the GPU shares the host's memory (CU_DEVICE_ATTRIBUTE_INTEGRATED).
	integrated bool
	// readOnlyRegister: cuMemHostRegister takes CU_MEMHOSTREGISTER_READ_ONLY,
	// which a read-only file mapping (the pack) needs
	// (CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED and
	// CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED).
	readOnlyRegister bool
	// mapHost: page-locked host memory can be mapped into the device's
	// address space (CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY).
	mapHost bool
}

// EmuDeviceEnv names the environment variable that makes the emulated
// device integrated, as a Jetson is, for the integrated-memory paths
// (read only by the emulator build, when a device is opened):
//
//	integrated          read-only host registration supported and granted
//	integrated-refuse   supported, but every registration is refused
//	integrated-noreg    the device reports no read-only host registration
//
// Unset or empty: a discrete GPU.
const EmuDeviceEnv = "SIPACK_CUDA_EMU_DEVICE"
