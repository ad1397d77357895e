package cliutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sipack/sipack/internal/tmpfile"
)

// CheckOutput refuses an output path whose writing would destroy data or
// fail after the work: a path that is, or links to, one of the inputs (for
// a directory input, any file directly in it, such as a checkpoint's
// model.safetensors), a directory, a special file such as /dev/null or a
// named pipe (the writers rename over the path, which would replace it), an
// existing file without write permission (unless force: the rename would
// not otherwise be stopped by its mode bits), or a path whose folder cannot
// take the temporary file (missing, read-only, no permission: tmpfile.Probe
// creates and removes it), so that a command fails before its work.
func CheckOutput(out string, force bool, inputs ...string) error {
	if err := tmpfile.CheckOutput(out); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return tmpfile.Probe(out) // missing, or its folder is: say which
	}
	for _, in := range inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // the command reports a missing input itself
		}
		if os.SameFile(st, ist) {
			return fmt.Errorf("output %s is the input %s; refusing to overwrite it (choose another -o)", out, in)
		}
		if !ist.IsDir() {
			continue
		}
		entries, _ := os.ReadDir(in)
		for _, e := range entries {
			fst, err := os.Stat(filepath.Join(in, e.Name()))
			if err == nil && os.SameFile(st, fst) {
				return fmt.Errorf("output %s is %s, a file of the input %s; refusing to overwrite it (choose another -o)", out, filepath.Join(in, e.Name()), in)
			}
		}
	}
	if st.Mode().Perm()&0o200 == 0 && !force {
		return fmt.Errorf("output %s exists and is read-only (mode %v); refusing to replace it without --force", out, st.Mode().Perm())
	}
	return tmpfile.Probe(out)
}

// CheckInputs refuses input files that exist and are neither regular files
// nor directories, naming them: reading a named pipe blocks until something
// writes to it, and a device never ends. Empty and missing paths pass (the
// command reports a missing input itself), as do task names.
func CheckInputs(paths ...string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil || st.IsDir() || st.Mode().IsRegular() {
			continue
		}
		return fmt.Errorf("%s is %s, not a regular file", p, tmpfile.Kind(st.Mode()))
	}
	return nil
}

// RemoveStaleTemps removes the temporary files that killed runs left in the
// folder of out (tmpfile.RemoveStale: .NAME.sipack-tmp-PID of a process no
// longer running, whatever NAME, and out.tmp-PID of older versions) and
// says so on w.
func RemoveStaleTemps(w io.Writer, name, out string) {
	stale, err := tmpfile.RemoveStale(out)
	for _, s := range stale {
		who := "an earlier version's run"
		if s.PID != 0 {
			who = fmt.Sprintf("process %d, no longer running", s.PID)
		}
		fmt.Fprintf(w, "%s: removed %s (%s), the unfinished temporary file of %s\n", name, s.Path, HumanBytes(uint64(s.Bytes)), who)
	}
	if err != nil {
		fmt.Fprintf(w, "%s: warning: %v\n", name, err)
	}
}

// MaxThreadsPerCPU caps --threads: more workers than a few per CPU only
// add scheduling and spinning, and a typo such as 10000 would otherwise
// start that many spinning workers.
const MaxThreadsPerCPU = 4

// CheckThreads validates a --threads (or --parallel) value.
func CheckThreads(flag string, n int) error {
	limit := MaxThreadsPerCPU * runtime.NumCPU()
	switch {
	case n < 1:
		return fmt.Errorf("%s must be ≥ 1, got %d", flag, n)
	case n > limit:
		return fmt.Errorf("%s %d is more than %d × the %d CPUs of this machine (at most %d): extra threads only slow the work down", flag, n, MaxThreadsPerCPU, runtime.NumCPU(), limit)
	}
	return nil
}
