//go:build linux

package convert

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe called *.gguf is refused at once, naming it: opening one
// blocks until a writer comes.
func TestGGUFNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		m, err := OpenModel(fifo)
		if err == nil {
			m.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe, not a regular file") {
			t.Errorf("a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenModel blocks on a named pipe")
	}
}
