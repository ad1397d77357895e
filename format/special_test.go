//go:build linux

package format

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Open refuses a named pipe at once (it used to block in open until a
// writer came) and names it.
func TestOpenRefusesANamedPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.sip")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Open(fifo, OpenOptions{HeaderOnly: true})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe, not a regular file") {
			t.Fatalf("Open of a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Open of a named pipe blocks")
	}
}

// WritePack never renames over a special file: one there before it starts
// is refused at once, and one that appears while it writes is refused at
// the rename; the temporary file goes and the special file stays.
func TestWritePackNeverReplacesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "small.sip")
	mkfifo := func() {
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "output "+path+" is a named pipe, not a regular file; refusing to replace it") {
			t.Errorf("%s: WritePack onto a named pipe: %v", when, err)
		}
		if st, err := os.Lstat(path); err != nil || st.Mode().Type() != os.ModeNamedPipe {
			t.Fatalf("%s: the named pipe was replaced: %v %v", when, st, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s: left %v", when, entries)
		}
	}
	mkfifo()
	_, err := writeSmallWith(dir, nil, 16, nil)
	check("before", err)
	os.Remove(path)

	// The pipe appears once the write has started: a test-only hook in
	// the one tensor source that runs during the write.
	c := smallConfig()
	idx := &Index{Config: c, ConfigJSON: []byte(`{}`), TokenizerJSON: []byte(`{"model":{}}`), RecordDType: BF16, BandNeurons: 16}
	sparse := map[int]bool{}
	for l := 0; l < c.NumLayers; l++ {
		sparse[l] = true
		perm := make([]uint32, c.IntermediateSize)
		for i := range perm {
			perm[i] = uint32(i)
		}
		idx.SparseLayers = append(idx.SparseLayers, SparseLayer{Layer: l, Perm: perm})
	}
	made := false
	spec := denseSpec(idx, sparse, func(w io.Writer, n int) error {
		if !made {
			made = true
			mkfifo()
		}
		_, err := w.Write(make([]byte, n))
		return err
	})
	spec.Records = func(l int, neurons []uint32, dst []byte) error { return nil }
	err = WritePack(context.Background(), path, spec)
	if !made {
		t.Fatal("the pipe was not made during the write")
	}
	check("during", err)
}
