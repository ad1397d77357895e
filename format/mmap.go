package format

// Read-only file mappings. A mapping must never extend past the end of the
// file (touching such a page raises SIGBUS), so callers pass a length already
// checked against the file size; MapFile checks it once more.

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MapFile maps [0, length) of f read-only and asks the kernel to read it ahead.
// A zero length gives an empty, unmapped slice.
func MapFile(f *os.File, length int64) ([]byte, error) {
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

// Unmap releases a mapping made by MapFile.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Munmap(b)
}
