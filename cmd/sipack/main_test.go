package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var bin string

// TestMain builds the sipack binary once; the tests run it as a user would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sipack-cli")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "sipack")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
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
		t.Fatalf("sipack %v panicked:\n%s", args, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

const tiny = "../../testdata/tinyllama"

func TestConvertInspectVerifyTokenize(t *testing.T) {
	pack := filepath.Join(t.TempDir(), "tiny.sip")
	// Flags after the positional argument work, as in llama.cpp's tools.
	if _, errOut, code := run(t, "convert", tiny, "-o", pack); code != 0 {
		t.Fatalf("convert failed (%d): %s", code, errOut)
	}
	out, _, code := run(t, "inspect", pack)
	if code != 0 || !strings.Contains(out, "LlamaForCausalLM") || !strings.Contains(out, "γ=0.70") {
		t.Fatalf("inspect (%d):\n%s", code, out)
	}
	out, _, code = run(t, "verify", pack)
	if code != 0 || !strings.Contains(out, "all hashes match") {
		t.Fatalf("verify (%d):\n%s", code, out)
	}
	for _, src := range []string{pack, tiny, filepath.Join(tiny, "tokenizer.json")} {
		out, _, code = run(t, "tokenize", "--tokenizer", src, "In the beginning")
		var ids []int
		if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || !slices.Equal(ids, []int{4094, 3709, 260, 3652}) {
			t.Fatalf("tokenize -t %s (%d): %q", src, code, out)
		}
	}
}

func TestBadInputExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	notPack := filepath.Join(dir, "x.sip")
	os.WriteFile(notPack, []byte("definitely not a pack"), 0o644)
	good := filepath.Join(dir, "good.sip")
	if _, e, code := run(t, "convert", "-q", tiny, "-o", good); code != 0 {
		t.Fatal(e)
	}
	b, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "trunc.sip")
	os.WriteFile(truncated, b[:len(b)/2], 0o644)
	flipped := filepath.Join(dir, "flip.sip")
	b[len(b)-5] ^= 1
	os.WriteFile(flipped, b, 0o644)

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", notPack}, "bad magic"},
		{[]string{"inspect", truncated}, "file is shorter than the preamble says"},
		{[]string{"verify", truncated}, "file is shorter"},
		{[]string{"verify", flipped}, "band 11 BLAKE3 mismatch"},
		{[]string{"inspect", filepath.Join(dir, "missing.sip")}, "no such file"},
		{[]string{"convert", dir, "-o", filepath.Join(dir, "o.sip")}, "no such file"},
		{[]string{"convert", tiny, "--dtype", "q2", "-o", filepath.Join(dir, "o.sip")}, `unknown dtype "q2"`},
		{[]string{"convert", tiny, "--band", "0", "-o", filepath.Join(dir, "o.sip")}, "--band must be at least 1"},
		{[]string{"convert"}, "exactly one MODEL_DIR"},
		{[]string{"tokenize", "--tokenizer", notPack, "x"}, ""},
		{[]string{"frobnicate"}, ""},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code == 0 {
			t.Errorf("sipack %v exited 0", c.args)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("sipack %v: stderr %q does not mention %q", c.args, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.sip")); err == nil {
		t.Error("failed convert left o.sip")
	}
}
