package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"
)

func loadGz(t *testing.T, path string) *Tokenizer {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestRealVocabularies checks the real Llama-3 (128k) and Qwen3 (151k)
// vocabularies against ids made by an independent implementation
// (@lenml/tokenizers, see testdata/vocab/make_expected.mjs): accents, CJK,
// emoji, digits, code, runs of spaces and newlines, decomposed accents, and
// NFC normalisation for Qwen3.
func TestRealVocabularies(t *testing.T) {
	tks := map[string]*Tokenizer{
		"llama3": loadGz(t, "../testdata/vocab/llama3.tokenizer.json.gz"),
		"qwen3":  loadGz(t, "../testdata/vocab/qwen3.tokenizer.json.gz"),
	}
	f, err := os.Open("../testdata/vocab/expected.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := map[string]int{}
	for sc.Scan() {
		var c struct {
			Vocab       string `json:"vocab"`
			Text        string `json:"text"`
			IDs         []int  `json:"ids"`
			WithSpecial []int  `json:"with_special"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		tk := tks[c.Vocab]
		n[c.Vocab]++
		if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("%s: Encode(%q)\n got %v\nwant %v", c.Vocab, c.Text, got, c.IDs)
		}
		if got := tk.Encode(c.Text, true); !slices.Equal(got, c.WithSpecial) && !(len(got) == 0 && len(c.WithSpecial) == 0) {
			t.Errorf("%s: Encode(%q, special) = %v, want %v", c.Vocab, c.Text, got, c.WithSpecial)
		}
	}
	if n["llama3"] != 30 || n["qwen3"] != 30 {
		t.Fatalf("read %v cases, want 30 per vocabulary", n)
	}
}
