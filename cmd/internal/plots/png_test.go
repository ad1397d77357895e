//go:build linux

package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A plot is never renamed over a named pipe (or a device): the special
// file stays and no temporary file is left.
func TestWriteToRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err := writeTo(fifo, bytes.NewBufferString("png"))
	if err == nil || !strings.Contains(err.Error(), "output "+fifo+" is a named pipe, not a regular file; refusing to replace it") {
		t.Errorf("writeTo a named pipe: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the named pipe was replaced: %v %v", st, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("writeTo left %v", entries)
	}
	ok := filepath.Join(dir, "ok.png")
	if err := writeTo(ok, bytes.NewBufferString("png")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(ok); string(b) != "png" {
		t.Errorf("wrote %q", b)
	}
}
