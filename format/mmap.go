package format

// Read-only file mappings. A mapping must never extend past the end of the
// file (touching such a page raises SIGBUS), so callers pass a length already
// checked against the file size; MapFile checks it once more. The mapping
// itself is per OS: mmap with MADV_WILLNEED on unix (mmap_unix.go; on
// Linux advised for huge pages and, where asked, populated by
// MADV_POPULATE_READ, mmap_linux.go),
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
// can (Linux: MADV_POPULATE_READ, or MAP_POPULATE as llama.cpp maps a
// model before 5.14): for a pack's loaded
// prefix, which the first prompt touches whole anyway, one pass in the
// kernel instead of a fault every few pages.
func MapFilePopulated(f *os.File, length int64) ([]byte, error) { return mapChecked(f, length, true) }

// checkLength checks that [0, length) of f lies in the file and fits
// this platform's address space; op names the caller in errors.
func checkLength(op string, f *os.File, length int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if length < 0 || length > st.Size() {
		return fmt.Errorf("%s %s: length %d outside file of %d bytes", op, f.Name(), length, st.Size())
	}
	if int64(int(length)) != length {
		return fmt.Errorf("%s %s: length %d does not fit this platform's address space", op, f.Name(), length)
	}
	return nil
}

func mapChecked(f *os.File, length int64, populate bool) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	if err := checkLength("mmap", f, length); err != nil {
		return nil, err
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

// ReadFileAnon reads [0, length) of f into anonymous memory of its own
// (llama.cpp's --no-mmap): the pages are the process's, not the page
// cache's, so they cannot be evicted and re-read under memory pressure as
// a mapping's can, and the load reads every byte before it returns. On
// Linux the memory is advised for transparent huge pages. Which decodes
// faster, this or a mapping, depends on the machine's memory state: a
// mapping is in huge pages only where the page cache holds the file in
// 2 MiB folios (HugeMapped); see docs/performance.md, "Loading". Release
// it with FreeAnon.
func ReadFileAnon(f *os.File, length int64) ([]byte, error) {
	if length == 0 {
		return []byte{}, nil
	}
	if err := checkLength("read", f, length); err != nil {
		return nil, err
	}
	b, err := allocAnon(int(length))
	if err != nil {
		return nil, fmt.Errorf("read %s: allocating %d bytes: %w", f.Name(), length, err)
	}
	// In pieces, so that a huge read is never one syscall the kernel may
	// cut short at an awkward place, and the loop below handles short reads.
	const piece = 64 << 20
	for off := 0; off < len(b); {
		n, err := f.ReadAt(b[off:min(len(b), off+piece)], int64(off))
		off += n
		if err != nil && off < len(b) {
			_ = freeAnon(b)
			return nil, fmt.Errorf("read %s at byte %d: %w", f.Name(), off, err)
		}
	}
	return b, nil
}

// FreeAnon releases memory from ReadFileAnon.
func FreeAnon(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return freeAnon(b)
}

// Lock keeps b's pages in memory (mlock, llama.cpp's --mlock): mapped
// weights are never evicted, so a long idle time costs no re-read.
func Lock(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return lockMemory(b)
}
