package cliutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An output that is a special file, or a link to one, is refused and left
// as it is; so is a named pipe given as an input.
func TestCheckOutputRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{fifo: "a named pipe", fifo + ".link": "a named pipe"}
	os.Symlink(fifo, fifo+".link")
	dev := filepath.Join(dir, "null")
	switch err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); {
	case err == nil:
		outs[dev] = "a character device"
	case errors.Is(err, syscall.EPERM):
		t.Log("not allowed to make a device node: the character device case is skipped")
	default:
		t.Fatal(err)
	}
	for out, kind := range outs {
		err := CheckOutput(out, true)
		if err == nil || err.Error() != "output "+out+" is "+kind+", not a regular file; refusing to replace it" {
			t.Errorf("CheckOutput(%s) = %v", out, err)
		}
	}
	if err := CheckInputs("", "qa", fifo); err == nil || err.Error() != fifo+" is a named pipe, not a regular file" {
		t.Errorf("CheckInputs of a named pipe: %v", err)
	}
	if err := CheckInputs(dir, filepath.Join(dir, "missing")); err != nil {
		t.Errorf("CheckInputs of a directory and a missing file: %v", err)
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the named pipe changed: %v %v", st, err)
	}
	if st, err := os.Lstat(dev); err == nil && st.Mode().Type() != os.ModeDevice|os.ModeCharDevice {
		t.Fatalf("the device node changed: %v", st)
	}
}

// A folder on a read-only file system fails the probe (root included),
// where the process may mount one.
func TestCheckOutputOnAReadOnlyMount(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=64k"); err != nil {
		t.Skipf("cannot mount a read-only tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	out := filepath.Join(dir, "p.prof")
	err := CheckOutput(out, false)
	if err == nil || !strings.Contains(err.Error(), "output "+out+" cannot be written: folder "+dir+": read-only file system") {
		t.Errorf("CheckOutput on a read-only mount: %v", err)
	}
}
