//go:build linux

package profile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe given as a profile is refused at once (reading it used to
// block until a writer came), and Write never renames over one.
func TestProfileFilesAreRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.prof")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	want := fifo + " is a named pipe, not a regular file"
	done := make(chan error, 1)
	go func() {
		_, err := Read(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reading a named pipe: %v; want %q", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a named pipe blocks")
	}
	p := &Profile{Format: FileFormat, Version: 1, Task: "qa", Prompts: 2, Tokens: 10, GenTokens: 3,
		Layers: 2, Neurons: 3, Sums: [][]float64{{1, 2, 3}, {0, 0.5, 7}}}
	err := Write(fifo, p)
	if err == nil || !strings.Contains(err.Error(), "output "+want+"; refusing to replace it") {
		t.Errorf("Write onto a named pipe: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the named pipe was replaced: %v %v", st, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(fifo)); len(entries) != 1 {
		t.Errorf("Write left %v", entries)
	}
}
