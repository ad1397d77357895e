package tmpfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a[1].sip")
	// A process that has exited: its pid is dead (reuse within the test is unlikely).
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := path + ".tmp-" + strconv.Itoa(cmd.Process.Pid)
	mine := Name(path)
	legacy := path + ".tmp"
	other := path + ".tmpl" // not ours
	for _, f := range []string{dead, mine, legacy, other} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := RemoveStale(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("removed %v, want the dead process's and the legacy file", got)
	}
	for _, f := range []string{dead, legacy} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s not removed", f)
		}
	}
	for _, f := range []string{mine, other} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s removed: %v", f, err)
		}
	}
}
