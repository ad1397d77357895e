//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package format

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps [0, length) of f shared and read-only; MADV_WILLNEED starts
// the read-ahead of the whole prefix (advice only: its error is ignored).
// These systems have no MAP_POPULATE: populate is the read-ahead.
func mapFile(f *os.File, length int, _ bool) ([]byte, error) {
	b, err := unix.Mmap(int(f.Fd()), 0, length, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(b, unix.MADV_WILLNEED)
	return b, nil
}

func unmap(b []byte) error { return unix.Munmap(b) }

// allocAnon is private anonymous memory of length bytes.
func allocAnon(length int) ([]byte, error) {
	return unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
}

func freeAnon(b []byte) error { return unix.Munmap(b) }

func lockMemory(b []byte) error { return unix.Mlock(b) }
