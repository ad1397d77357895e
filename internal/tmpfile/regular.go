package tmpfile

import (
	"fmt"
	"io/fs"
	"os"
)

// Kind names the type of a file mode for messages: "a named pipe", "a
// character device", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}

// CheckRegular returns an error naming path unless it is a regular file
// (links followed). Inputs are checked before they are opened: opening a
// named pipe blocks until something writes to it, and a device never ends.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file", path, Kind(st.Mode()))
	}
	return nil
}

// Open opens a regular file for reading (CheckRegular, then os.Open).
func Open(path string) (*os.File, error) {
	if err := CheckRegular(path); err != nil {
		return nil, err
	}
	return os.Open(path)
}

// ReadFile reads a regular file (CheckRegular, then os.ReadFile).
func ReadFile(path string) ([]byte, error) {
	if err := CheckRegular(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
