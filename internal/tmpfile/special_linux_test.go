package tmpfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// special is a file that is not a regular file, made for a test.
type special struct {
	path, kind string
	mode       os.FileMode // its type bits, which must survive the test
}

// check fails the test unless the special file is still what it was.
func (s special) check(t *testing.T) {
	t.Helper()
	st, err := os.Lstat(s.path)
	if err != nil || st.Mode().Type() != s.mode {
		t.Fatalf("%s is no longer %s: %v %v", s.path, s.kind, st, err)
	}
}

// specialFiles makes a named pipe and, where the process may (root), a
// character device with /dev/null's numbers in dir.
func specialFiles(t *testing.T, dir string) []special {
	t.Helper()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	out := []special{{fifo, "a named pipe", os.ModeNamedPipe}}
	dev := filepath.Join(dir, "null")
	err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3)
	switch {
	case err == nil:
		out = append(out, special{dev, "a character device", os.ModeDevice | os.ModeCharDevice})
	case errors.Is(err, syscall.EPERM):
		t.Log("not allowed to make a device node: the character device case is skipped")
	default:
		t.Fatal(err)
	}
	return out
}

func timeout() <-chan time.Time { return time.After(10 * time.Second) }
