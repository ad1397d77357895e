package gguf

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenNamedPipe: a named pipe is refused without being opened (opening
// one blocks until something writes to it).
func TestOpenNamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.gguf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a named pipe") {
			t.Errorf("named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open blocked on a named pipe")
	}
}
