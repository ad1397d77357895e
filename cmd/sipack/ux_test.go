package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The tests of issue 18 ("what a new user hits"), one per item; each failed
// on the release before it (e467e40).

func runEnv(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "panic:") {
		t.Fatalf("sipack %v panicked:\n%s", args, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// Item 1: an output that is an input, links to one, or is read-only is
// refused; convert . is named after the directory.
func TestOutputNeverDestroysInput(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "MyModel")
	copyDir(t, tiny, model)
	st := filepath.Join(model, "model.safetensors")
	before, _ := os.ReadFile(st)
	link := filepath.Join(dir, "link.sip")
	os.Symlink(st, link)
	ro := filepath.Join(dir, "ro.sip")
	os.WriteFile(ro, []byte("keep"), 0o444)
	prof := filepath.Join(dir, "a.prof")
	if _, e, code := run(t, "profile", "-q", "--task", "translate", model, "-o", prof, "--max-prompts", "2", "--gen-tokens", "2"); code != 0 {
		t.Fatal(e)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"convert", "-q", model, "-o", st}, "a file of the input"},
		{[]string{"convert", "-q", model, "-o", link}, "a file of the input"},
		{[]string{"convert", "-q", model, "-o", ro}, "read-only"},
		{[]string{"convert", "-q", model, "--profile", prof, "--secondary", "self", "-o", prof}, "is the input"},
		{[]string{"profile", "-q", "--task", "translate", model, "-o", st, "--max-prompts", "1"}, "a file of the input"},
		{[]string{"profile", "merge", prof, filepath.Join(dir, "b.prof"), "-o", prof}, "is the input"},
		{[]string{"convert", "-q", model, "-o", dir}, "is a directory"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sipack %v: exit %d, stderr %q; want non-zero and %q", c.args, code, errOut, c.want)
		}
	}
	if after, _ := os.ReadFile(st); string(after) != string(before) {
		t.Fatal("the checkpoint was overwritten")
	}
	if b, _ := os.ReadFile(ro); string(b) != "keep" {
		t.Fatal("the read-only output was replaced without --force")
	}
	if fi, _ := os.Stat(ro); fi.Mode().Perm() != 0o444 {
		t.Fatalf("read-only output mode changed to %v", fi.Mode().Perm())
	}
	// Slice refuses its input as output, then --force replaces a read-only file.
	pack := filepath.Join(dir, "p.sip")
	if _, e, code := run(t, "convert", "-q", model, "-o", pack); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "slice", "--gamma", "0.5", pack, "-o", pack); code == 0 || !strings.Contains(e, "is the input") {
		t.Errorf("slice onto its input: %d %s", code, e)
	}
	if _, e, code := run(t, "slice", "--gamma", "0.5", pack, "-o", ro, "--force"); code != 0 {
		t.Errorf("slice --force over a read-only file: %d %s", code, e)
	}
	// convert . names the pack after the directory.
	cmd := exec.Command(bin, "convert", "-q", ".")
	cmd.Dir = model
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("convert .: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(model, "MyModel.sip")); err != nil {
		entries, _ := os.ReadDir(model)
		t.Fatalf("convert . did not write MyModel.sip: %v", entries)
	}
}

// Item 2: inspect, verify and tokenize work on sliced and cut packs and say
// what is absent.
func TestSlicedAndCutPacks(t *testing.T) {
	dir := t.TempDir()
	pack, sliced, cut := filepath.Join(dir, "tr.sip"), filepath.Join(dir, "tr-0.7.sip"), filepath.Join(dir, "cut.sip")
	if _, e, code := run(t, "convert", "-q", tiny, "-o", pack); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "slice", "--gamma", "0.7", pack, "-o", sliced); code != 0 {
		t.Fatal(e)
	}
	b, _ := os.ReadFile(pack)
	os.WriteFile(cut, b[:10_000_000], 0o644)
	for _, p := range []struct{ path, inspect, absent string }{
		{sliced, "holds 537 of 768 ranks", "sliced to 537 ranks"},
		{cut, "cut short", "the file is cut short"},
	} {
		out, e, code := run(t, "inspect", p.path)
		if code != 0 || !strings.Contains(out, p.inspect) {
			t.Errorf("inspect %s (%d): %s%s", p.path, code, out, e)
		}
		out, e, code = run(t, "verify", p.path)
		if code != 0 || !strings.Contains(out, "all hashes match") || !strings.Contains(out, "absent: ranks") || !strings.Contains(out, p.absent) {
			t.Errorf("verify %s (%d): %s%s", p.path, code, out, e)
		}
		out, e, code = run(t, "tokenize", "-t", p.path, "In the beginning")
		if code != 0 || strings.TrimSpace(out) != "[4094,3709,260,3652]" {
			t.Errorf("tokenize -t %s (%d): %s%s", p.path, code, out, e)
		}
	}
}

// Item 6: off a terminal, long work prints progress lines; an on-the-fly
// profile says what it does; merge and plot say what they wrote.
func TestFeedbackOffTerminal(t *testing.T) {
	dir := t.TempDir()
	_, errOut, code := runEnv(t, []string{"SIPACK_PROGRESS_EVERY=1ns"}, "convert", tiny, "-o", filepath.Join(dir, "a.sip"))
	if code != 0 || !strings.Contains(errOut, "convert: ") || !strings.Contains(errOut, "elapsed") {
		t.Errorf("convert off a terminal printed no progress (%d):\n%s", code, errOut)
	}
	_, errOut, code = runEnv(t, []string{"XDG_CACHE_HOME=" + dir, "HOME=" + dir, "SIPACK_PROGRESS_EVERY=1ns"},
		"convert", tiny, "--route", "none", "--profile", "translate", "--secondary", "self", "--max-prompts", "2", "-o", filepath.Join(dir, "b.sip"))
	if code != 0 || !strings.Contains(errOut, "no cached profile of task translate: profiling it now") || !strings.Contains(errOut, "profile translate: ") {
		t.Errorf("on-the-fly profile did not say what it does (%d):\n%s", code, errOut)
	}
	a, b := filepath.Join(dir, "a.prof"), filepath.Join(dir, "b.prof")
	run(t, "profile", "-q", "--task", "translate", tiny, "-o", a, "--max-prompts", "2", "--gen-tokens", "2")
	run(t, "profile", "-q", "--task", "qa", tiny, "-o", b, "--max-prompts", "2", "--gen-tokens", "2")
	_, errOut, code = run(t, "profile", "merge", a, b, "-o", filepath.Join(dir, "ab.prof"))
	if code != 0 || !strings.Contains(errOut, "wrote") {
		t.Errorf("merge (%d) said nothing: %q", code, errOut)
	}
	_, errOut, code = run(t, "profile", "plot", a, b, "-o", filepath.Join(dir, "ab.png"))
	if code != 0 || !strings.Contains(errOut, "wrote") {
		t.Errorf("plot (%d) said nothing: %q", code, errOut)
	}
}

// Item 7: unique temporary names, stale ones removed and reported; a
// profile merged with itself refused; --parallel capped.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.sip")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := out + ".tmp-" + strconv.Itoa(dead.Process.Pid)
	os.WriteFile(stale, make([]byte, 4096), 0o644)
	_, errOut, code := run(t, "convert", "-q", tiny, "-o", out)
	if code != 0 || !strings.Contains(errOut, "removed "+stale) {
		t.Errorf("stale temporary file not reported (%d): %s", code, errOut)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file %s left", stale)
	}
	a, a2 := filepath.Join(dir, "a.prof"), filepath.Join(dir, "a2.prof")
	run(t, "profile", "-q", "--task", "translate", tiny, "-o", a, "--max-prompts", "2", "--gen-tokens", "2")
	raw, _ := os.ReadFile(a)
	os.WriteFile(a2, raw, 0o644)
	for _, args := range [][]string{{a, a}, {a, a2}} {
		_, errOut, code := run(t, append([]string{"profile", "merge", "-o", filepath.Join(dir, "m.prof")}, args...)...)
		if code == 0 || !strings.Contains(errOut, "count twice") {
			t.Errorf("merge %v: exit %d, %q", args, code, errOut)
		}
	}
	_, errOut, code = run(t, "profile", "--task", "translate", tiny, "-o", filepath.Join(dir, "j.prof"), "--parallel", "10000")
	if code == 0 || !strings.Contains(errOut, "--parallel 10000 is more than") {
		t.Errorf("--parallel 10000: exit %d, %q", code, errOut)
	}
}
