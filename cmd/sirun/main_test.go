package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert"
)

var bin, pack string

// TestMain builds sirun and a pack of the tiny model once.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sirun-cli")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "sirun")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	pack = filepath.Join(dir, "tiny.sip")
	if _, err := convert.Convert(context.Background(), convert.Options{ModelDir: "../../testdata/tinyllama", Output: pack}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, stdin string, args ...string) (string, string, int) {
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
		t.Fatalf("sirun %v panicked:\n%s", args, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

func goldenGreedy(t *testing.T) (prompt string, ids, greedy []int, text string) {
	raw, err := os.ReadFile("../../testdata/tinyllama/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Prompt   string `json:"prompt"`
			InputIDs []int  `json:"input_ids"`
			Greedy   []int  `json:"greedy_32"`
			Text     string `json:"greedy_32_text"`
		} `json:"cases"`
	}
	json.Unmarshal(raw, &g)
	c := g.Cases[1] // "In the beginning"
	return c.Prompt, c.InputIDs, c.Greedy, c.Text
}

func TestGenerateMatchesGolden(t *testing.T) {
	prompt, ids, greedy, text := goldenGreedy(t)
	idsJSON, _ := json.Marshal(ids)
	out, errOut, code := run(t, "", pack, "--prompt-ids", string(idsJSON), "-n", "32", "--temperature", "0", "--output-ids", "--ignore-eos")
	var got []int
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || !slices.Equal(got, greedy) {
		t.Fatalf("--output-ids (%d): %q, want %v\n%s", code, out, greedy, errOut)
	}
	// The same through text in, text out, and the subcommand spelling.
	out, errOut, code = run(t, "", "generate", pack, "-p", prompt, "-n", "32", "--temp", "0", "--ignore-eos")
	if code != 0 || strings.TrimSuffix(out, "\n") != text {
		t.Fatalf("text (%d): %q, want %q\n%s", code, out, text, errOut)
	}
	for _, want := range []string{"prompt", "tok/s", "time to first token", "peak RSS"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
	}
	// A prompt file gives the same.
	f := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(f, []byte(prompt), 0o644)
	out2, _, _ := run(t, "", pack, "-f", f, "-n", "32", "--temp", "0", "--ignore-eos", "-q")
	if out2 != out {
		t.Fatalf("-f gave %q, -p gave %q", out2, out)
	}
}

func TestSeedReproducible(t *testing.T) {
	a, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "42", "-q")
	b, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "42", "-q")
	c, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "43", "-q")
	if a != b || a == c {
		t.Fatalf("seed 42 twice: %q / %q; seed 43: %q", a, b, c)
	}
}

func TestInteractive(t *testing.T) {
	out, errOut, code := run(t, "And God said\nSpanish: Y dijo Dios\n", pack, "-i", "-p", "In the beginning", "-n", "8", "--temp", "0")
	if code != 0 || strings.Count(out, "\n") < 3 || strings.Count(errOut, "> ") < 2 {
		t.Fatalf("interactive (%d): stdout %q\nstderr %s", code, out, errOut)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	b, _ := os.ReadFile(pack)
	trunc := filepath.Join(dir, "t.sip")
	os.WriteFile(trunc, b[:len(b)-4096], 0o644)
	corrupt := filepath.Join(dir, "c.sip")
	c := append([]byte(nil), b...)
	c[len(c)-100] ^= 0xff
	os.WriteFile(corrupt, c, 0o644)
	long := strings.Repeat("In the beginning ", 400)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{trunc, "-p", "x"}, "truncated"},
		{[]string{corrupt, "-p", "x", "--verify"}, "BLAKE3 mismatch"},
		{[]string{pack, "-p", long}, "longer than the context"},
		{[]string{pack, "-p", "x", "-n", "-3"}, "-n must be ≥ 0"},
		{[]string{pack, "-p", "x", "--gamma", "1.5"}, "--gamma must be in (0, 1]"},
		{[]string{pack, "-p", "x", "--gamma", "0"}, "--gamma must be in (0, 1]"},
		{[]string{pack, "-p", "x", "--top-p", "0"}, "--top-p"},
		{[]string{pack, "-p", "x", "--ctx", "100000"}, "--ctx must be in [1, 512]"},
		{[]string{pack, "--prompt-ids", "[1,99999]"}, "outside the vocabulary"},
		{[]string{pack, "--prompt-ids", "nope"}, "JSON array"},
		{[]string{pack, "-p", "x", "--frobnicate"}, "flag provided but not defined"},
		{[]string{pack}, "no prompt"},
		{[]string{filepath.Join(dir, "none.sip"), "-p", "x"}, "no such file"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, "", c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sirun %v: exit %d, stderr %q; want non-zero and %q", c.args, code, errOut, c.want)
		}
	}
	// Without --verify the flipped band byte still loads (structure is intact).
	if _, _, code := run(t, "", corrupt, "-p", "x", "-n", "1", "-q"); code != 0 {
		t.Errorf("structurally valid pack with a flipped weight refused without --verify")
	}
}
