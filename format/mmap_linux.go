//go:build linux

package format

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps [0, length) of f shared and read-only, advised for
// transparent huge pages (MADV_HUGEPAGE: what the kernel reads into the
// page cache for this mapping it reads in 2 MiB folios, which it maps with
// huge pages). With populate the kernel maps every page up front
// (MADV_POPULATE_READ, reading what the page cache lacks, its errors
// returned; kernels before 5.14 lack it — EINVAL — and map again with
// MAP_POPULATE), so a prompt does not pay the faults (0.35-0.4 s of system
// time in a 256-token prompt of a 1B bf16 pack in a fresh process) and a
// cold pack lies in huge pages (a 1B q4_0 pack 99.7 %, by MAP_POPULATE
// alone 93.7 %). Without populate MADV_WILLNEED starts the read-ahead.
// The advice is advice only: its errors are ignored.
func mapFile(f *os.File, length int, populate bool) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, length, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	if !populate {
		_ = unix.Madvise(b, unix.MADV_WILLNEED)
		return b, nil
	}
	err = unix.Madvise(b, unix.MADV_POPULATE_READ)
	if err == nil {
		return b, nil
	}
	_ = unix.Munmap(b)
	if err != unix.EINVAL {
		// EFAULT (the file shrank under the mapping), EIO, ENOMEM: what
		// a later access would have died of.
		return nil, fmt.Errorf("reading the mapping in: %w", err)
	}
	b, err = unix.Mmap(int(f.Fd()), 0, length, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err == nil {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
	return b, err
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
