//go:build cudaemu && !cuda

package cuda

/*
#cgo CXXFLAGS: -std=c++17 -O2 -Wno-unknown-pragmas
#cgo LDFLAGS: -lstdc++
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
int emu_launch(const char* name, int gx, int gy, int gz, int bx, int by, int bz, const uint64_t* vals, int n);
static uint64_t emu_alloc(size_t n) { return (uint64_t)(uintptr_t)calloc(n ? n : 1, 1); }
static void* emu_ptr(uint64_t p) { return (void*)(uintptr_t)p; }
static void emu_free(uint64_t p) { free((void*)(uintptr_t)p); }
static void emu_memset0(uint64_t p, size_t n) { memset((void*)(uintptr_t)p, 0, n); }
static void emu_htod(uint64_t dst, const void* src, size_t n) { memcpy((void*)(uintptr_t)dst, src, n); }
static void emu_dtoh(void* dst, uint64_t src, size_t n) { memcpy(dst, (const void*)(uintptr_t)src, n); }
static void emu_dtod(uint64_t dst, uint64_t src, size_t n) { memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n); }
*/
import "C"

import (
	_ "embed"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/sipack/sipack/backend/cudaplan"
)

// emuDriver runs kernels/sipack.cu on the CPU (emu_kernels.cpp): device
// memory is host memory from the C allocator, a device address is the host
// address, and launches run block by block with the block's threads as
// fibers. It is slow and exists to rehearse the backend without a GPU: the
// host code, the launch shapes and parameters and the kernels' logic.
type emuDriver struct{ refuseRegister bool }

// emuGraphs are the captured decode steps: replay launches them again.
var (
	emuGraphs = map[uint64][]queued{}
	emuNext   uint64
)

// kernelSource is the source emu_kernels.cpp includes. Embedding it makes
// it part of the package's build: without this the go command would not
// notice an edit of the .cu file and would keep the cached kernels.
//
//go:embed kernels/sipack.cu
var kernelSource string

// emuMu serialises launches: the scheduler's state is global.
var emuMu sync.Mutex

func openDriver(ordinal int) (driver, devInfo, error) {
	// Four "multiprocessors": splits stay few, as on a small GPU.
	info := devInfo{name: "CPU emulator", sms: 4, mapHost: true, readOnlyRegister: true}
	if kernelSource == "" {
		return nil, info, fmt.Errorf("cuda emulator: kernel source missing")
	}
	if ordinal != 0 {
		return nil, info, fmt.Errorf("cuda emulator: no device %d (1 found)", ordinal)
	}
	d := &emuDriver{}
	switch v := os.Getenv(EmuDeviceEnv); v {
	case "":
	case "integrated":
		info.integrated = true
	case "integrated-refuse":
		info.integrated, d.refuseRegister = true, true
	case "integrated-noreg":
		info.integrated, info.readOnlyRegister = true, false
	default:
		return nil, info, fmt.Errorf("cuda emulator: %s=%q: want integrated, integrated-refuse or integrated-noreg", EmuDeviceEnv, v)
	}
	if info.integrated {
		info.name = "CPU emulator as an integrated GPU"
	}
	return d, info, nil
}

func (emuDriver) enter() func() { return func() {} }

func (emuDriver) alloc(n int) (uint64, error) {
	p := uint64(C.emu_alloc(C.size_t(n)))
	if p == 0 {
		return 0, fmt.Errorf("out of memory allocating %d bytes", n)
	}
	return p, nil
}

func (emuDriver) free(p uint64) { C.emu_free(C.uint64_t(p)) }

func (emuDriver) memset0(p uint64, n int) error {
	C.emu_memset0(C.uint64_t(p), C.size_t(n))
	return nil
}

func (emuDriver) htod(dst uint64, src unsafe.Pointer, n int) error {
	C.emu_htod(C.uint64_t(dst), src, C.size_t(n))
	return nil
}

func (emuDriver) dtoh(dst unsafe.Pointer, src uint64, n int) error {
	C.emu_dtoh(dst, C.uint64_t(src), C.size_t(n))
	return nil
}

func (emuDriver) dtod(dst, src uint64, n int) error {
	C.emu_dtod(C.uint64_t(dst), C.uint64_t(src), C.size_t(n))
	return nil
}

func (emuDriver) launch(l cudaplan.Launch, a *cudaplan.Args) error {
	vals, err := a.Values()
	if err != nil {
		return err
	}
	emuMu.Lock()
	defer emuMu.Unlock()
	return emuLaunch(l, vals)
}

// emuLaunch runs one launch (emuMu held).
func emuLaunch(l cudaplan.Launch, vals []uint64) error {
	name := C.CString(l.Kernel)
	defer C.free(unsafe.Pointer(name))
	cv := (*C.uint64_t)(C.malloc(C.size_t(8 * max(1, len(vals)))))
	defer C.free(unsafe.Pointer(cv))
	copy(unsafe.Slice((*uint64)(unsafe.Pointer(cv)), len(vals)), vals)
	if r := C.emu_launch(name, C.int(l.Grid[0]), C.int(l.Grid[1]), C.int(l.Grid[2]), C.int(l.Block[0]), C.int(l.Block[1]), C.int(l.Block[2]), cv, C.int(len(vals))); r != 0 {
		return fmt.Errorf("emulator refused %v (code %d)", l, r)
	}
	return nil
}

func (d emuDriver) launchValues(l cudaplan.Launch, vals []uint64) error {
	emuMu.Lock()
	defer emuMu.Unlock()
	return emuLaunch(l, vals)
}

func (emuDriver) capture(steps []queued) (uint64, error) {
	emuMu.Lock()
	defer emuMu.Unlock()
	emuNext++
	emuGraphs[emuNext] = append([]queued(nil), steps...)
	return emuNext, nil
}

func (d emuDriver) replay(g uint64) error {
	emuMu.Lock()
	steps, ok := emuGraphs[g]
	emuMu.Unlock()
	if !ok {
		return fmt.Errorf("no graph %d", g)
	}
	for _, q := range steps {
		if err := d.launchValues(q.l, q.vals); err != nil {
			return err
		}
	}
	return nil
}

func (emuDriver) dropGraph(g uint64) {
	emuMu.Lock()
	delete(emuGraphs, g)
	emuMu.Unlock()
}

func (emuDriver) sync() error { return nil }

func (emuDriver) memInfo() (int64, int64, error) {
	return 0, 0, fmt.Errorf("emulator: no device memory")
}

// registerHost: the emulator reads host memory where it is, unless it
// plays a device that refuses registration.
func (d emuDriver) registerHost(b []byte) (uint64, error) {
	if d.refuseRegister {
		return 0, fmt.Errorf("cuMemHostRegister of %d bytes: CUDA_ERROR_NOT_SUPPORTED (emulated refusal)", len(b))
	}
	return uint64(uintptr(unsafe.Pointer(&b[0]))), nil
}

func (emuDriver) unregisterHost([]byte) error { return nil }

// hostAlloc: pinned host memory is C memory, its device address its host one.
func (emuDriver) hostAlloc(n int) ([]byte, uint64, error) {
	p := uint64(C.emu_alloc(C.size_t(n)))
	if p == 0 {
		return nil, 0, fmt.Errorf("out of memory allocating %d pinned bytes", n)
	}
	return unsafe.Slice((*byte)(C.emu_ptr(C.uint64_t(p))), n), p, nil
}

func (emuDriver) hostFree(b []byte) error {
	C.emu_free(C.uint64_t(uintptr(unsafe.Pointer(&b[0]))))
	return nil
}

// The emulator runs a kernel when it is launched, so an event is the host
// clock when it is recorded.
var emuEvents = struct {
	sync.Mutex
	next uint64
	at   map[uint64]time.Time
}{at: map[uint64]time.Time{}}

func (emuDriver) event() (uint64, error) {
	emuEvents.Lock()
	defer emuEvents.Unlock()
	emuEvents.next++
	emuEvents.at[emuEvents.next] = time.Time{}
	return emuEvents.next, nil
}

func (emuDriver) record(ev uint64) error {
	emuEvents.Lock()
	defer emuEvents.Unlock()
	if _, ok := emuEvents.at[ev]; !ok {
		return fmt.Errorf("no event %d", ev)
	}
	emuEvents.at[ev] = time.Now()
	return nil
}

func (emuDriver) elapsed(start, end uint64) (time.Duration, error) {
	emuEvents.Lock()
	defer emuEvents.Unlock()
	a, b := emuEvents.at[start], emuEvents.at[end]
	if a.IsZero() || b.IsZero() {
		return 0, fmt.Errorf("events %d and %d not both recorded", start, end)
	}
	return b.Sub(a), nil
}

func (emuDriver) dropEvent(ev uint64) {
	emuEvents.Lock()
	delete(emuEvents.at, ev)
	emuEvents.Unlock()
}

func (emuDriver) close() error { return nil }

// Emulated reports that kernels run in the CPU emulator (tests run shorter lists).
const Emulated = true
