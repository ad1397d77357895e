//go:build linux

package format

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rssFile is the process's resident file-backed memory (RssFile in
// /proc/self/status), in bytes.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "RssFile:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no RssFile line")
	return 0
}

// TestMapFilePopulated: a populated mapping is resident as soon as it is
// made (the pages mapped without a touch), a plain one is not, and both
// hold the file's bytes.
func TestMapFilePopulated(t *testing.T) {
	const size = 32 << 20
	path := filepath.Join(t.TempDir(), "f")
	want := bytes.Repeat([]byte("sipack\n"), size/7+1)[:size]
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, populate := range []bool{false, true} {
		before := rssFile(t)
		b, err := mapChecked(f, size, populate)
		if err != nil {
			t.Fatal(err)
		}
		grew := rssFile(t) - before
		if populate && grew < size*3/4 || !populate && grew > size/4 {
			t.Errorf("populate %v: resident file memory grew by %d bytes on mapping %d", populate, grew, size)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("populate %v: the mapping differs from the file", populate)
		}
		if err := Unmap(b); err != nil {
			t.Fatal(err)
		}
	}
}
