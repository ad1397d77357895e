// Package clitest runs the command-line tools in their tests as a user
// would: built once into a temporary directory, run with arguments and
// stdin, and checked never to panic.
package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build builds the command in the current directory (a test's package
// directory) to a temporary file named name; remove the directory returned
// when done. It is meant for TestMain, so it returns errors instead of
// failing a test.
func Build(name string) (bin, dir string, err error) {
	dir, err = os.MkdirTemp("", name+"-cli")
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, name)
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", "", &BuildError{Output: string(out), Err: err}
	}
	return bin, dir, nil
}

// BuildError is a failed go build with its output.
type BuildError struct {
	Output string
	Err    error
}

func (e *BuildError) Error() string { return "go build: " + e.Err.Error() + "\n" + e.Output }

// Run runs bin with args and stdin and returns its stdout, stderr and exit
// code; the test fails if the command could not start or if it panicked.
func Run(t testing.TB, bin, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "panic:") || strings.Contains(stderr.String(), "goroutine ") {
		t.Fatalf("%s %v panicked:\n%s", filepath.Base(bin), args, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}
