//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// sip_register page-locks [p, p+n) read-only, mapped for the device, and
// returns its device address.
static CUresult sip_register(void* p, size_t n, unsigned long long* dptr) {
	CUresult r = cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY);
	if (r != CUDA_SUCCESS) return r;
	CUdeviceptr d;
	r = cuMemHostGetDevicePointer(&d, p, 0);
	if (r != CUDA_SUCCESS) {
		cuMemHostUnregister(p);
		return r;
	}
	*dptr = (unsigned long long)d;
	return CUDA_SUCCESS;
}

static CUresult sip_unregister(void* p) { return cuMemHostUnregister(p); }

// sip_host_alloc allocates n bytes of page-locked host memory mapped for
// the device and returns both addresses.
static CUresult sip_host_alloc(size_t n, void** p, unsigned long long* dptr) {
	CUresult r = cuMemHostAlloc(p, n, CU_MEMHOSTALLOC_DEVICEMAP);
	if (r != CUDA_SUCCESS) return r;
	CUdeviceptr d;
	r = cuMemHostGetDevicePointer(&d, *p, 0);
	if (r != CUDA_SUCCESS) {
		cuMemFreeHost(*p);
		return r;
	}
	*dptr = (unsigned long long)d;
	return CUDA_SUCCESS;
}

static CUresult sip_host_free(void* p) { return cuMemFreeHost(p); }

// sip_host_caps reads the device's host-memory attributes: can it map host
// memory, register host memory, register it read-only.
static CUresult sip_host_caps(int dev, int* mapHost, int* reg, int* readOnly) {
	CUresult r = cuDeviceGetAttribute(mapHost, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev);
	if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(reg, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, dev);
	if (r == CUDA_SUCCESS) r = cuDeviceGetAttribute(readOnly, CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, dev);
	return r;
}

// CUDA graphs of a decode step: capture the launches made on stream s,
// instantiate, replay.
static CUresult sip_capture_begin(void* s) { return cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_RELAXED); }

static CUresult sip_capture_end(void* s, unsigned long long* exec) {
	CUgraph g;
	CUresult r = cuStreamEndCapture((CUstream)s, &g);
	if (r != CUDA_SUCCESS) return r;
	CUgraphExec e;
	r = cuGraphInstantiateWithFlags(&e, g, 0);
	cuGraphDestroy(g);
	if (r != CUDA_SUCCESS) return r;
	*exec = (unsigned long long)(uintptr_t)e;
	return CUDA_SUCCESS;
}

static CUresult sip_graph_launch(unsigned long long e, void* s) { return cuGraphLaunch((CUgraphExec)(uintptr_t)e, (CUstream)s); }

static CUresult sip_graph_drop(unsigned long long e) { return cuGraphExecDestroy((CUgraphExec)(uintptr_t)e); }

static const char* sip_error_name(CUresult r) {
	const char* s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "unknown CUDA error";
	return s;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// registerHost maps host memory b for the device (read-only) and returns
// its device address.
func registerHost(b []byte) (uint64, error) {
	var d C.ulonglong
	if r := C.sip_register(unsafe.Pointer(&b[0]), C.size_t(len(b)), &d); r != C.CUDA_SUCCESS {
		return 0, fmt.Errorf("cuMemHostRegister of %d bytes: %s", len(b), C.GoString(C.sip_error_name(r)))
	}
	return uint64(d), nil
}

// hostAlloc allocates n bytes of page-locked host memory the device maps.
func hostAlloc(n int) ([]byte, uint64, error) {
	var p unsafe.Pointer
	var d C.ulonglong
	if r := C.sip_host_alloc(C.size_t(n), &p, &d); r != C.CUDA_SUCCESS {
		return nil, 0, fmt.Errorf("cuMemHostAlloc of %d bytes: %s", n, C.GoString(C.sip_error_name(r)))
	}
	return unsafe.Slice((*byte)(p), n), uint64(d), nil
}

func hostFree(b []byte) error {
	return cuErr("cuMemFreeHost", C.sip_host_free(unsafe.Pointer(&b[0])))
}

// hostCaps reads device dev's host-memory attributes into info.
func hostCaps(dev int, info *devInfo) error {
	var mapHost, reg, readOnly C.int
	if err := cuErr("cuDeviceGetAttribute", C.sip_host_caps(C.int(dev), &mapHost, &reg, &readOnly)); err != nil {
		return err
	}
	info.mapHost = mapHost != 0
	info.readOnlyRegister = reg != 0 && readOnly != 0
	return nil
}

func cuErr(what string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %s", what, C.GoString(C.sip_error_name(r)))
}

func captureBegin(stream unsafe.Pointer) error {
	return cuErr("cuStreamBeginCapture", C.sip_capture_begin(stream))
}

func captureEnd(stream unsafe.Pointer) (uint64, error) {
	var e C.ulonglong
	if err := cuErr("cuStreamEndCapture/cuGraphInstantiate", C.sip_capture_end(stream, &e)); err != nil {
		return 0, err
	}
	return uint64(e), nil
}

func graphLaunch(g uint64, stream unsafe.Pointer) error {
	return cuErr("cuGraphLaunch", C.sip_graph_launch(C.ulonglong(g), stream))
}

func graphDrop(g uint64) { C.sip_graph_drop(C.ulonglong(g)) }

func unregisterHost(b []byte) error {
	if r := C.sip_unregister(unsafe.Pointer(&b[0])); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemHostUnregister: %s", C.GoString(C.sip_error_name(r)))
	}
	return nil
}
