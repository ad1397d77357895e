//go:build linux

package format

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps [0, length) of f shared and read-only. With populate the
// kernel maps every page up front (MAP_POPULATE, reading what the page
// cache lacks): a 256-token prompt of a 1B bf16 pack in a fresh process
// spent 0.35-0.4 s of system time faulting the mapping in (docs/bench.md,
// thirteenth session). Without it MADV_WILLNEED starts the read-ahead
// (advice only: its error is ignored).
func mapFile(f *os.File, length int, populate bool) ([]byte, error) {
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, length, unix.PROT_READ, flags)
	if err != nil {
		return nil, err
	}
	if !populate {
		_ = unix.Madvise(b, unix.MADV_WILLNEED)
	}
	return b, nil
}

func unmap(b []byte) error { return unix.Munmap(b) }

// allocAnon is private anonymous memory of length bytes, advised for
// transparent huge pages (advice only: with THP off it is plain pages).
func allocAnon(length int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, nil
}

func freeAnon(b []byte) error { return unix.Munmap(b) }

func lockMemory(b []byte) error { return unix.Mlock(b) }
