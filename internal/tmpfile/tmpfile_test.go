package tmpfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPID is the id of a process that has exited (reuse within the test
// is unlikely).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestName(t *testing.T) {
	pid := strconv.Itoa(os.Getpid())
	for in, want := range map[string]string{
		"x.sip":        ".x.sip.sipack-tmp-" + pid,
		"/a/b/qa.prof": "/a/b/.qa.prof.sipack-tmp-" + pid,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
		if pidOf(filepath.Base(Name(in))) != os.Getpid() {
			t.Errorf("pidOf(Name(%q)) is not this process", in)
		}
	}
}

// Every stale temporary file of the folder goes, whatever the output it
// was for; the old NAME.tmp-PID form only for the same NAME; live ones stay.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a[1].sip")
	dead := strconv.Itoa(deadPID(t))
	f := func(name string) string { return filepath.Join(dir, name) }
	gone := []string{
		f(".a[1].sip" + Marker + dead),               // this output's
		f(".other.sip" + Marker + dead),              // another output's, same folder
		f("..b.sip" + Marker + dead + Marker + dead), // the temporary of a temporary (convert --route)
		path + ".tmp-" + dead,                        // the old form, this output
		path + ".tmp",                                // the older unnumbered form
	}
	kept := []string{
		Name(path),                     // this process's
		f(".other.sip" + Marker + "1"), // a live process's (init)
		f("other.sip.tmp-" + dead),     // the old form of another output: not recognisable as ours
		f(".x" + Marker + dead + "x"),  // not ours
		f("x" + Marker + dead),         // not hidden: not ours
		path + ".tmpl",                 // not ours
		f(".x" + Marker + "0" + dead),  // not a canonical number
	}
	for _, p := range append(append([]string{}, gone...), kept...) {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := RemoveStale(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(gone) {
		t.Errorf("removed %v, want %d files", got, len(gone))
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s not removed", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if _, err := RemoveStale(filepath.Join(dir, "missing", "x.sip")); err != nil {
		t.Errorf("a missing folder: %v", err)
	}
}

// Probe fails, naming the output, where the temporary file cannot be made,
// and leaves nothing where it can.
func TestProbe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	for _, out := range []string{filepath.Join(dir, "missing", "x.sip"), filepath.Join(file, "x.sip")} {
		err := Probe(out)
		if err == nil || !strings.Contains(err.Error(), "output "+out+" cannot be written") {
			t.Errorf("Probe(%s) = %v", out, err)
		}
	}
	if err := Probe(filepath.Join(dir, "ok.sip")); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("probe left %v", entries)
	}
}

// Rename never replaces a special file, even through a link; it replaces
// a regular file, and a link by the file (not the link's target).
func TestRenameRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	for _, sp := range specialFiles(t, dir) {
		for _, out := range []string{sp.path, sp.path + ".link"} {
			if out != sp.path {
				os.Symlink(sp.path, out)
			}
			tmp := Name(out)
			os.WriteFile(tmp, []byte("data"), 0o644)
			err := Rename(tmp, out)
			if err == nil || !strings.Contains(err.Error(), sp.kind+", not a regular file; refusing to replace it") {
				t.Errorf("Rename onto %s: %v", out, err)
			}
			if _, err := os.Stat(tmp); !os.IsNotExist(err) {
				t.Errorf("refused rename left %s", tmp)
			}
			if err := CheckOutput(out); err == nil {
				t.Errorf("CheckOutput(%s) passed", out)
			}
		}
		sp.check(t)
	}
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	tmp := Name(link)
	os.WriteFile(tmp, []byte("new"), 0o644)
	if err := Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "old" {
		t.Error("the link's target was written")
	}
	if st, _ := os.Lstat(link); !st.Mode().IsRegular() {
		t.Error("the link was not replaced by the file")
	}
}

// CheckRegular and Open refuse a named pipe (or a device) at once instead
// of blocking on it.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	for _, sp := range specialFiles(t, t.TempDir()) {
		done := make(chan error, 1)
		go func() {
			f, err := Open(sp.path)
			if err == nil {
				f.Close()
			}
			_, err2 := ReadFile(sp.path)
			done <- errors.Join(err, err2)
		}()
		select {
		case err := <-done:
			want := sp.path + " is " + sp.kind + ", not a regular file"
			if err == nil || strings.Count(err.Error(), want) != 2 {
				t.Errorf("Open, ReadFile of %s: %v; want %q twice", sp.path, err, want)
			}
		case <-timeout():
			t.Fatalf("opening %s blocks", sp.path)
		}
		sp.check(t)
	}
}

// TestZombieIsDead: a killed child not yet reaped still answers signal 0,
// but its temporary file is stale all the same.
func TestZombieIsDead(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	pid := cmd.Process.Pid
	if !alive(pid) {
		t.Fatal("a running child reported dead")
	}
	cmd.Process.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for !zombie(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		t.Fatal("a killed, unreaped child reported alive")
	}
	cmd.Wait()
}
