package cliutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// An output whose folder cannot take a file is refused by CheckOutput,
// naming the output, before any work: the folder is missing, or is a file.
// (Permission bits do not stop root; a read-only mount is tested on Linux.)
func TestCheckOutputProbesTheFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, out := range []string{filepath.Join(dir, "missing", "p.prof"), filepath.Join(file, "p.prof")} {
		err := CheckOutput(out, false)
		if err == nil || !strings.Contains(err.Error(), "output "+out+" cannot be written") {
			t.Errorf("CheckOutput(%s) = %v", out, err)
		}
	}
	if err := CheckOutput(filepath.Join(dir, "ok.prof"), false); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the probe left %v", entries)
	}
}

// Stale temporary files of every output of the folder are removed and
// named, not only those of the output being written.
func TestRemoveStaleTempsOfTheFolder(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, ".other.sip.sipack-tmp-"+strconv.Itoa(dead.Process.Pid))
	os.WriteFile(other, make([]byte, 2048), 0o644)
	var w strings.Builder
	RemoveStaleTemps(&w, "sipack", filepath.Join(dir, "new.sip"))
	want := "sipack: removed " + other + " (2.00 KiB), the unfinished temporary file of process " + strconv.Itoa(dead.Process.Pid) + ", no longer running\n"
	if w.String() != want {
		t.Errorf("said %q, want %q", w.String(), want)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("%s left", other)
	}
}

// A required flag left out is named by its short and long forms and what
// it is for, and the action does not run.
func TestRequireFlags(t *testing.T) {
	ran := false
	app := &cli.App{Name: "sipack", Commands: []*cli.Command{{
		Name: "slice",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output pack `FILE`"},
			&cli.Float64Flag{Name: "gamma", Required: true, Usage: "fraction γ to keep"},
		},
		Action: func(*cli.Context) error { ran = true; return nil },
	}}}
	app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
	RequireFlags(app.Commands)
	err := app.Run([]string{"sipack", "slice", "--gamma", "0.5"})
	if err == nil || err.Error() != "missing -o/--output (output pack FILE)" || ran {
		t.Errorf("without -o: %v (ran %v)", err, ran)
	}
	err = app.Run([]string{"sipack", "slice"})
	if err == nil || err.Error() != "missing -o/--output (output pack FILE); missing --gamma (fraction γ to keep)" {
		t.Errorf("without either: %v", err)
	}
	if err := app.Run([]string{"sipack", "slice", "-o", "x.sip", "--gamma", "0.5"}); err != nil || !ran {
		t.Errorf("with both: %v (ran %v)", err, ran)
	}
}
