package format

// Read-only file mappings. A mapping must never extend past the end of the
// file (touching such a page raises SIGBUS), so callers pass a length already
// checked against the file size; MapFile checks it once more. The mapping
// itself is per OS: mmap with MADV_WILLNEED on unix (mmap_unix.go; on
// Linux MAP_POPULATE where asked, mmap_linux.go),
// MapViewOfFile on windows (mmap_windows.go), and on any other OS a plain
// read into memory (mmap_other.go), which is correct but loads the prefix
// up front.

import (
	"fmt"
	"os"
)

// MapFile maps [0, length) of f read-only and asks the kernel to read it ahead
// where the OS has a way to ask. A zero length gives an empty, unmapped slice.
func MapFile(f *os.File, length int64) ([]byte, error) { return mapChecked(f, length, false) }

// MapFilePopulated is MapFile with every page mapped up front where the OS
// can (Linux: MAP_POPULATE, as llama.cpp maps a model): for a pack's loaded
// prefix, which the first prompt touches whole anyway, one pass in the
// kernel instead of a fault every few pages.
func MapFilePopulated(f *os.File, length int64) ([]byte, error) { return mapChecked(f, length, true) }

func mapChecked(f *os.File, length int64, populate bool) ([]byte, error) {
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
	if int64(int(length)) != length {
		return nil, fmt.Errorf("mmap %s: length %d does not fit this platform's address space", f.Name(), length)
	}
	b, err := mapFile(f, int(length), populate)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", f.Name(), err)
	}
	return b, nil
}

// Unmap releases a mapping made by MapFile.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unmap(b)
}
