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
