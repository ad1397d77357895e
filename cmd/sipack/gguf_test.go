package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/gguf"
	"github.com/sipack/sipack/gguf/fromhf"
)

// TestConvertGGUF: sipack convert takes a GGUF file where it takes a model
// directory. The tiny model's BF16 GGUF (written as llama.cpp writes one)
// gives the pack the directory gives: the same config, dense tensors and
// bands (by their BLAKE3 hashes); inspect, verify and tokenize work on it;
// --order random opens the GGUF too; a cut file is refused with the byte
// offset and leaves no pack.
func TestConvertGGUF(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "tiny.gguf")
	if err := fromhf.Write(tiny, src, fromhf.Options{Type: gguf.BF16}); err != nil {
		t.Fatal(err)
	}
	fromGGUF, fromDir := filepath.Join(dir, "g.sip"), filepath.Join(dir, "d.sip")
	for _, c := range [][]string{{"convert", src, "-o", fromGGUF, "-q"}, {"convert", tiny, "-o", fromDir, "-q"}} {
		if _, errOut, code := run(t, c...); code != 0 {
			t.Fatalf("sipack %v (%d): %s", c, code, errOut)
		}
	}
	a, err := format.Open(fromGGUF, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := format.Open(fromDir, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	hashes := func(p *format.Pack) map[string][32]byte {
		m := map[string][32]byte{}
		for _, ti := range p.Index.DenseTensors {
			m[ti.Name] = ti.Hash
		}
		return m
	}
	if !reflect.DeepEqual(a.Index.Config, b.Index.Config) || !reflect.DeepEqual(hashes(a), hashes(b)) || !reflect.DeepEqual(a.Index.BandHashes, b.Index.BandHashes) {
		t.Fatal("the GGUF's pack holds another model than the directory's")
	}
	out, _, code := run(t, "inspect", fromGGUF)
	if code != 0 || !strings.Contains(out, "LlamaForCausalLM") {
		t.Fatalf("inspect (%d):\n%s", code, out)
	}
	if out, _, code = run(t, "verify", fromGGUF); code != 0 || !strings.Contains(out, "all hashes match") {
		t.Fatalf("verify (%d):\n%s", code, out)
	}
	out, _, code = run(t, "tokenize", "--tokenizer", fromGGUF, "In the beginning")
	var ids []int
	if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || !slices.Equal(ids, []int{4094, 3709, 260, 3652}) {
		t.Fatalf("tokenize (%d): %q", code, out)
	}
	if _, errOut, code := run(t, "convert", src, "--order", "random", "-o", filepath.Join(dir, "r.sip"), "-q"); code != 0 {
		t.Fatalf("convert --order random (%d): %s", code, errOut)
	}
	// profile runs the GGUF's model; a pack without -o is named after the
	// file, not "tiny.gguf.sip".
	prof := filepath.Join(dir, "g.prof")
	if _, errOut, code := run(t, "profile", "--task", "translate", src, "-o", prof, "--max-prompts", "2", "--gen-tokens", "2", "--calibrate", "0", "-q"); code != 0 {
		t.Fatalf("profile of a GGUF (%d): %s", code, errOut)
	}
	if got := defaultPackName(src); got != "tiny.sip" {
		t.Fatalf("default pack name of %s: %s", src, got)
	}

	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.gguf")
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	bad := filepath.Join(dir, "bad.sip")
	_, errOut, code := run(t, "convert", cut, "-o", bad)
	if code == 0 || !strings.Contains(errOut, cut) || !strings.Contains(errOut, "ends past the end of the file") || !strings.Contains(errOut, "at offset") {
		t.Fatalf("convert of a cut GGUF (%d): %s", code, errOut)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Fatal("a failed convert left its output")
	}
}
