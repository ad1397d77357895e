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

func unregisterHost(b []byte) error {
	if r := C.sip_unregister(unsafe.Pointer(&b[0])); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemHostUnregister: %s", C.GoString(C.sip_error_name(r)))
	}
	return nil
}
