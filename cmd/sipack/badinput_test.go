//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of issue 45 ("what a new user hit"), one per item.

// runWithin runs sipack like run, but fails the test, instead of hanging,
// if the command has not ended within limit.
func runWithin(t *testing.T, limit time.Duration, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("sipack %v did not end within %v (killed)", args, limit)
		return stderr.String(), -1
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "panic:") {
		t.Fatalf("sipack %v panicked:\n%s", args, stderr.String())
	}
	return stderr.String(), code
}

// special is a file made by the test that is not a regular file.
type special struct {
	path, kind string
	mode       os.FileMode
}

// intact fails the test loudly unless the special file is still what it was.
func (s special) intact(t *testing.T) {
	t.Helper()
	if st, err := os.Lstat(s.path); err != nil || st.Mode().Type() != s.mode {
		t.Fatalf("%s is no longer %s: %v %v", s.path, s.kind, st, err)
	}
}

func mkfifo(t *testing.T, path string) special {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return special{path, "a named pipe", os.ModeNamedPipe}
}

// Item 1: no writer replaces a special file given as its output (as root,
// `convert -o /dev/null` used to replace /dev/null by a 13 MB file): a named
// pipe, a character device of our own (/dev/null's numbers, where the
// process may make one) and a link to the pipe are refused, and stay.
func TestSpecialOutputsAreRefused(t *testing.T) {
	dir := t.TempDir()
	pack, prof := filepath.Join(dir, "p.sip"), filepath.Join(dir, "a.prof")
	if _, e, code := run(t, "convert", "-q", tiny, "-o", pack); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "profile", "-q", "--task", "translate", tiny, "-o", prof, "--max-prompts", "1", "--gen-tokens", "1"); code != 0 {
		t.Fatal(e)
	}
	prof2 := filepath.Join(dir, "b.prof")
	if _, e, code := run(t, "profile", "-q", "--task", "qa", tiny, "-o", prof2, "--max-prompts", "1", "--gen-tokens", "1"); code != 0 {
		t.Fatal(e)
	}
	lines := filepath.Join(dir, "b.jsonl")
	os.WriteFile(lines, []byte(`{"pack":"/x/a.sip","dtype":"bf16","bandwidth_gbs":40,"grid":[{"gamma":0.7,"phi":0.4,"tok_s":25,"bytes_per_token":1}]}`+"\n"), 0o644)
	outs := []special{mkfifo(t, filepath.Join(dir, "fifo"))}
	dev := filepath.Join(dir, "null")
	switch err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); {
	case err == nil:
		outs = append(outs, special{dev, "a character device", os.ModeDevice | os.ModeCharDevice})
	case errors.Is(err, syscall.EPERM):
		t.Log("not allowed to make a device node: the character device case is skipped")
	default:
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(outs[0].path, link)
	for _, sp := range append(outs, special{link, outs[0].kind, os.ModeSymlink}) {
		out := sp.path
		for _, args := range [][]string{
			{"convert", "-q", tiny, "-o", out},
			{"slice", "--gamma", "0.5", pack, "-o", out},
			{"route", "-q", "--task", "translate", pack, "-o", out},
			{"profile", "-q", "--task", "translate", tiny, "-o", out, "--max-prompts", "1", "--gen-tokens", "1"},
			{"profile", "-q", "--task", "translate", tiny, "-o", filepath.Join(dir, "c.prof"), "--plot", out, "--max-prompts", "1", "--gen-tokens", "1"},
			{"profile", "merge", prof, prof2, "-o", out},
			{"profile", "plot", prof, "-o", out},
			{"plot", "bench", lines, "-o", out},
		} {
			e, code := runWithin(t, time.Minute, nil, args...)
			want := "output " + out + " is " + sp.kind + ", not a regular file; refusing to replace it"
			if code == 0 || !strings.Contains(e, want) {
				t.Errorf("sipack %v: exit %d, stderr %q; want %q", args, code, e, want)
			}
			sp.intact(t)
			outs[0].intact(t)
		}
		if _, err := os.Stat(filepath.Join(dir, "c.prof")); err == nil {
			t.Error("profile --plot onto a special file profiled first")
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 5+len(outs) {
		t.Errorf("left %v", entries)
	}
}

// Item 2: a named pipe given where a file is read is refused at once,
// named, instead of blocking in open until a writer comes.
func TestNamedPipeInputsDoNotHang(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, filepath.Join(dir, "fifo.sip"))
	model := filepath.Join(dir, "model")
	os.Mkdir(model, 0o755)
	for _, f := range []string{"config.json", "tokenizer.json", "generation_config.json"} {
		abs, _ := filepath.Abs(filepath.Join(tiny, f))
		os.Symlink(abs, filepath.Join(model, f))
	}
	shard := mkfifo(t, filepath.Join(model, "model.safetensors"))
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		file string
	}{
		{[]string{"inspect", fifo.path}, fifo.path},
		{[]string{"verify", fifo.path}, fifo.path},
		{[]string{"slice", "--gamma", "0.5", fifo.path, "-o", out}, fifo.path},
		{[]string{"route", "--task", "translate", fifo.path, "-o", out}, fifo.path},
		{[]string{"tokenize", "-t", fifo.path, "x"}, fifo.path},
		{[]string{"profile", "show", fifo.path}, fifo.path},
		{[]string{"profile", "merge", fifo.path, fifo.path, "-o", out}, fifo.path},
		{[]string{"profile", "plot", fifo.path, "-o", out}, fifo.path},
		{[]string{"profile", "--task", "translate", fifo.path, "-o", out}, fifo.path},
		{[]string{"profile", "--task", fifo.path, tiny, "-o", out}, fifo.path},
		{[]string{"profile", "--task", "translate", "--data", fifo.path, tiny, "-o", out}, fifo.path},
		{[]string{"route", "--task", "translate", "--data", fifo.path, fifo.path, "-o", out}, fifo.path},
		{[]string{"convert", tiny, "--profile", fifo.path, "-o", out}, fifo.path},
		{[]string{"convert", tiny, "--route", fifo.path, "-o", out}, fifo.path},
		{[]string{"convert", tiny, "--chat-template", fifo.path, "-o", out}, fifo.path},
		{[]string{"convert", model, "-o", out}, shard.path},
		{[]string{"plot", "bench", fifo.path, "-o", out}, fifo.path},
		{[]string{"template", fifo.path, "[]"}, fifo.path},
	} {
		e, code := runWithin(t, 20*time.Second, nil, c.args...)
		want := c.file + " is a named pipe, not a regular file"
		if code == 0 || !strings.Contains(e, want) {
			t.Errorf("sipack %v: exit %d, stderr %q; want %q", c.args, code, e, want)
		}
	}
	fifo.intact(t)
	shard.intact(t)
}

// Item 3: a temporary file a killed run left is recognisable, whatever
// output it was for, by any later run writing into its folder, which
// removes it and says so; one of a live process stays.
func TestStaleTempsOfOtherOutputs(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".old.sip.sipack-tmp-"+strconv.Itoa(dead.Process.Pid))
	live := filepath.Join(dir, ".other.sip.sipack-tmp-1") // init's: always running
	os.WriteFile(stale, make([]byte, 4096), 0o644)
	os.WriteFile(live, nil, 0o644)
	e, code := runWithin(t, time.Minute, nil, "profile", "-q", "--task", "translate", tiny, "-o", filepath.Join(dir, "new.prof"), "--max-prompts", "1", "--gen-tokens", "1")
	if code != 0 || !strings.Contains(e, "removed "+stale+" (4.00 KiB), the unfinished temporary file of process "+strconv.Itoa(dead.Process.Pid)) {
		t.Errorf("stale temporary file of another output not removed and named (%d): %s", code, e)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s left", stale)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's temporary file was removed: %v", err)
	}
	// What a run writes while it runs is such a file.
	cmd := exec.Command("bash", "-c", `ulimit -f 2048 && exec "$0" "$@"`, bin, "convert", "-q", tiny, "-o", filepath.Join(dir, "x.sip"))
	b, _ := cmd.CombinedOutput()
	if !strings.Contains(string(b), filepath.Join(dir, ".x.sip.sipack-tmp-")) {
		t.Errorf("convert's temporary file is not .x.sip.sipack-tmp-PID: %s", b)
	}
}

// Item 4: an output that cannot be created is refused before the work
// (profiling used to run to its end and then fail): its folder is missing,
// or is a regular file. (Root writes through permission bits; the read-only
// mount case is cliutil's test.) Progress lines on every interval show
// whether any work started.
func TestUnwritableOutputsFailFirst(t *testing.T) {
	dir := t.TempDir()
	pack, prof := filepath.Join(dir, "p.sip"), filepath.Join(dir, "a.prof")
	if _, e, code := run(t, "convert", "-q", tiny, "-o", pack); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "profile", "-q", "--task", "translate", tiny, "-o", prof, "--max-prompts", "1", "--gen-tokens", "1"); code != 0 {
		t.Fatal(e)
	}
	prof2 := filepath.Join(dir, "b.prof")
	if _, e, code := run(t, "profile", "-q", "--task", "qa", tiny, "-o", prof2, "--max-prompts", "1", "--gen-tokens", "1"); code != 0 {
		t.Fatal(e)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	env := []string{"SIPACK_PROGRESS_EVERY=1ns", "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}
	for _, parent := range []string{filepath.Join(dir, "missing"), file} {
		out := filepath.Join(parent, "o")
		for _, args := range [][]string{
			{"convert", tiny, "-o", out},
			{"convert", tiny, "--route", "none", "--profile", "translate", "--secondary", "self", "--max-prompts", "2", "-o", out},
			{"slice", "--gamma", "0.5", pack, "-o", out},
			{"route", "--task", "translate", pack, "-o", out},
			{"profile", "--task", "translate", tiny, "-o", out, "--max-prompts", "50", "--gen-tokens", "32"},
			{"profile", "--task", "translate", tiny, "-o", filepath.Join(dir, "c.prof"), "--plot", out, "--max-prompts", "50", "--gen-tokens", "32"},
			{"profile", "merge", prof, prof2, "-o", out},
			{"profile", "plot", prof, "-o", out},
		} {
			e, code := runWithin(t, 2*time.Minute, env, args...)
			want := "output " + out + " cannot be written: folder " + parent + ": "
			if code == 0 || !strings.Contains(e, want) {
				t.Errorf("sipack %v: exit %d, stderr %q; want %q", args, code, e, want)
			}
			for _, work := range []string{"convert: ", "profile translate: ", "route translate: ", "wrote "} {
				if strings.Contains(e, work) {
					t.Errorf("sipack %v worked before refusing its output: %q", args, e)
				}
			}
		}
	}
}

// Item 5: errors say what is wrong in the user's words.
func TestClearErrors(t *testing.T) {
	dir := t.TempDir()
	st := make([]byte, 8, 64)
	hdr := `{"__metadata__":{}}`
	binary.LittleEndian.PutUint64(st, uint64(len(hdr)))
	st = append(st, hdr...)
	safetensors := filepath.Join(dir, "model.safetensors")
	os.WriteFile(safetensors, st, 0o644)
	gguf := filepath.Join(dir, "m.gguf")
	os.WriteFile(gguf, []byte("GGUF\x03\x00\x00\x00rest"), 0o644)
	prof := filepath.Join(dir, "a.prof")
	if _, e, code := run(t, "profile", "-q", "--task", "translate", tiny, "-o", prof, "--max-prompts", "1", "--gen-tokens", "1"); code != 0 {
		t.Fatal(e)
	}
	out := filepath.Join(dir, "o.sip")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", safetensors}, safetensors + ": not a .sip pack (looks like: a safetensors file)"},
		{[]string{"verify", prof}, prof + ": not a .sip pack (looks like: a sipack profile)"},
		{[]string{"slice", "--gamma", "0.5", gguf, "-o", out}, gguf + ": not a .sip pack (looks like: a GGUF file: convert it first, sipack convert " + gguf + " -o PACK)"},
		{[]string{"inspect", dir}, dir + ": not a model directory (no config.json) and not a .sip pack"},
		{[]string{"route", "--task", "translate", tiny, "-o", out}, "route takes a .sip pack; " + tiny + " is a model directory: convert it first (sipack convert --profile TASK --route TASK " + tiny + " -o PACK)"},
		{[]string{"slice", "--gamma", "0.5", gguf}, "missing -o/--output (output pack FILE)"},
		{[]string{"route", gguf, "-o", out}, "missing --task (task name"},
		{[]string{"profile", "merge", prof, prof}, "missing -o/--output (merged profile FILE)"},
		{[]string{"profile", "plot", prof}, "missing -o/--output (PNG FILE)"},
		{[]string{"plot", "bench", prof}, "missing -o/--output (PNG FILE)"},
		{[]string{"synth"}, "missing -o/--output (pack FILE to write)"},
		{[]string{"tokenize", "x"}, "missing -t/--tokenizer (a tokenizer.json FILE, a model directory or a .sip pack)"},
	} {
		e, code := runWithin(t, time.Minute, nil, c.args...)
		if code == 0 || !strings.Contains(e, c.want) || strings.Contains(e, "Required flag") {
			t.Errorf("sipack %v: exit %d, stderr %q; want %q", c.args, code, e, c.want)
		}
	}
}
