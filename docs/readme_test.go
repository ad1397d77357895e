// Package docs holds the project's documentation; its test runs the README.
package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeCommand is one command of a ```sh block of README.md.
type readmeCommand struct {
	line int
	cmd  string
}

// docsSkip marks the ```sh block after it as not run by TestReadmeCommands;
// the reason follows the marker.
const docsSkip = "<!-- docs-test: skip"

// readmeCommands returns the commands of every ```sh block of the README,
// in order, except blocks marked with docsSkip; continuation lines are
// joined and comment-only lines dropped.
func readmeCommands(text string) (run []readmeCommand, skipped []string) {
	lines := strings.Split(text, "\n")
	in, skip := false, false
	prev := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case !in && t == "```sh":
			in, skip = true, strings.HasPrefix(prev, docsSkip)
			continue
		case in && t == "```":
			in = false
		case in:
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			start := i
			for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
				i++
				l = strings.TrimSuffix(l, "\\") + "\n" + lines[i]
			}
			if skip {
				skipped = append(skipped, strings.TrimSpace(l))
			} else {
				run = append(run, readmeCommand{start + 1, strings.TrimSpace(l)})
			}
		}
		if t != "" {
			prev = t
		}
	}
	return run, skipped
}

func TestReadmeCommandsParse(t *testing.T) {
	md := "a\n```sh\nmake x   # c\n          # more comment\nbin/y \\\n  --z\n```\n<!-- docs-test: skip: long -->\n```sh\nmake bench\n```\n```go\nnot run\n```\n"
	run, skipped := readmeCommands(md)
	if len(run) != 2 || run[0].cmd != "make x   # c" || run[1].cmd != "bin/y \n  --z" || len(skipped) != 1 || skipped[0] != "make bench" {
		t.Fatalf("run %v, skipped %q", run, skipped)
	}
}

// TestReadmeCommands runs every command of README.md, in order, as written,
// in a fresh copy of the repository's tracked files (what a clone holds),
// with an empty profile cache and stdin at end of file. Blocks marked
// docsSkip (the test suite itself, the 1B-shape benchmark, the server and
// its clients, the llama.cpp comparison) are listed, not run.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README command (about a minute)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, skipped := readmeCommands(string(readme))
	if len(cmds) < 20 {
		t.Fatalf("only %d README commands found", len(cmds))
	}
	t.Logf("not run (marked %q in README.md): %q", docsSkip, skipped)

	// A fresh clone: the tracked files of the working tree.
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "sipack")
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src, dst := filepath.Join(root, f), filepath.Join(clone, f)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a link
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	env := os.Environ()
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} { // keep Go's caches where they are
		v, _ := exec.Command("go", "env", k).Output()
		env = append(env, k+"="+strings.TrimSpace(string(v)))
	}
	env = append(env, "HOME="+filepath.Join(tmp, "home"), "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))
	start := time.Now()
	for _, c := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", c.cmd)
		cmd.Dir, cmd.Env = clone, env
		t0 := time.Now()
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d: %s\n%v\n%s", c.line, c.cmd, err, b)
		}
		if strings.Contains(string(b), "panic:") {
			t.Fatalf("README.md:%d: %s panicked:\n%s", c.line, c.cmd, b)
		}
		t.Logf("README.md:%d (%.1f s): %s", c.line, time.Since(t0).Seconds(), c.cmd)
	}
	t.Logf("%d README commands in %.1f s", len(cmds), time.Since(start).Seconds())

	// sirun is what a device downloads: make build keeps it to 12 MB.
	st, err := os.Stat(filepath.Join(clone, "bin", "sirun"))
	if err != nil {
		t.Fatalf("the README's make commands built no bin/sirun: %v", err)
	}
	if st.Size() > maxSirunBytes {
		t.Errorf("make build's bin/sirun is %d bytes, over %d", st.Size(), maxSirunBytes)
	}
}

// maxSirunBytes bounds the stripped sirun make build writes.
const maxSirunBytes = 12_000_000
