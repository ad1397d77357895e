// Package mmap maps read-only file ranges. A mapping must never extend past
// the end of the file (touching such a page raises SIGBUS), so callers pass a
// length already checked against the file size; Map checks it once more.
package mmap

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps [0, length) of f read-only and asks the kernel to read it ahead.
// A zero length gives an empty, unmapped slice.
func Map(f *os.File, length int64) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if length < 0 || length > st.Size() {
		return nil, fmt.Errorf("mmap %s: length %d outside file of %d bytes", f.Name(), length, st.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	_ = unix.Madvise(b, unix.MADV_WILLNEED)
	return b, nil
}

// Unmap releases a mapping made by Map.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Munmap(b)
}
