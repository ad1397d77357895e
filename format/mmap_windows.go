//go:build windows

package format

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mapFile maps [0, length) of f read-only with a file mapping object and a
// view of it. The mapping handle is closed at once: the view keeps the
// mapping alive until UnmapViewOfFile. Windows has no read-ahead advice
// for a view (PrefetchVirtualMemory is Windows 8+ and optional); pages are
// read on first touch.
func mapFile(f *os.File, length int, _ bool) ([]byte, error) {
	size := uint64(length)
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READONLY, uint32(size>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	defer windows.CloseHandle(h)
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_READ, 0, 0, uintptr(length))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	// The view is memory the Go heap does not own, so the address is
	// reinterpreted in place rather than converted (which vet flags).
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), length), nil
}

func unmap(b []byte) error {
	return os.NewSyscallError("UnmapViewOfFile", windows.UnmapViewOfFile(uintptr(unsafe.Pointer(&b[0]))))
}

// allocAnon is Go heap memory: the collector frees it once the pack drops it.
func allocAnon(length int) ([]byte, error) { return make([]byte, length), nil }

func freeAnon([]byte) error { return nil }

func lockMemory(b []byte) error {
	return os.NewSyscallError("VirtualLock", windows.VirtualLock(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))))
}
