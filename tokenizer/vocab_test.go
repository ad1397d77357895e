package tokenizer

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// gunzip returns the bytes of a gzipped file.
func gunzip(t testing.TB, path string) []byte {
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
	return data
}

func loadGz(t *testing.T, path string) *Tokenizer {
	t.Helper()
	tk, err := Load(gunzip(t, path))
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

// spmVariant is spm.tokenizer.json in the form make_expected_spm.mjs
// names: the file as it is ("prepend"), or its normaliser replaced by a
// Metaspace pre-tokenizer and decoder ("metaspace-SCHEME[-split]").
func spmVariant(t *testing.T, base []byte, name string) *Tokenizer {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(base, &doc); err != nil {
		t.Fatal(err)
	}
	if name != "prepend" {
		scheme, split := strings.CutSuffix(strings.TrimPrefix(name, "metaspace-"), "-split")
		m := map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}
		doc["normalizer"], doc["pre_tokenizer"], doc["decoder"] = nil, m, m
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Load(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tk
}

// TestSentencePieceVocabulary checks a 32k SentencePiece-style vocabulary
// (byte-fallback BPE, "▁" for spaces) in Llama 2's and Mistral 7B's
// tokenizer.json form and in the Metaspace forms, against ids made by
// HuggingFace's tokenizers library (testdata/vocab/make_expected_spm.mjs),
// and that decoding gives the text back.
func TestSentencePieceVocabulary(t *testing.T) {
	base := gunzip(t, "../testdata/vocab/spm.tokenizer.json.gz")
	ef, err := os.Open("../testdata/vocab/expected_spm.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	tks := map[string]*Tokenizer{}
	sc := bufio.NewScanner(ef)
	sc.Buffer(nil, 1<<20)
	n := map[string]int{}
	for sc.Scan() {
		var c struct {
			Variant     string `json:"variant"`
			Text        string `json:"text"`
			IDs         []int  `json:"ids"`
			WithSpecial []int  `json:"with_special"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		tk := tks[c.Variant]
		if tk == nil {
			tk = spmVariant(t, base, c.Variant)
			tks[c.Variant] = tk
		}
		n[c.Variant]++
		got := tk.Encode(c.Text, false)
		if !slices.Equal(got, c.IDs) && !(len(got) == 0 && len(c.IDs) == 0) {
			t.Errorf("%s: Encode(%.80q)\n got %v\nwant %v", c.Variant, c.Text, got, c.IDs)
		}
		if got := tk.Encode(c.Text, true); !slices.Equal(got, c.WithSpecial) {
			t.Errorf("%s: Encode(%.80q, special) = %v, want %v", c.Variant, c.Text, got, c.WithSpecial)
		}
		// Decoding gives the text back, a space for the "▁" put before it.
		dec := tk.Decode(got)
		if c.Variant == "prepend" && c.Text != "" && !strings.HasPrefix(c.Text, "<s>") {
			dec = strings.TrimPrefix(dec, " ")
		}
		if c.Variant == "metaspace-first" && strings.HasPrefix(dec, " ") && !strings.HasPrefix(c.Text, " ") {
			dec = dec[1:]
		}
		if c.Variant == "metaspace-first" && dec != c.Text {
			t.Errorf("%s: Decode(Encode(%.80q)) = %.80q", c.Variant, c.Text, dec)
		}
		if c.Variant == "prepend" && !strings.Contains(c.Text, "<s>") && dec != c.Text {
			t.Errorf("%s: Decode(Encode(%.80q)) = %.80q", c.Variant, c.Text, dec)
		}
	}
	for _, v := range []string{"prepend", "metaspace-first", "metaspace-always", "metaspace-never", "metaspace-first-split"} {
		if n[v] != 40 {
			t.Errorf("read %d cases of %s, want 40", n[v], v)
		}
	}
}

// TestSentencePieceContinuation: text encoded after a prefix gets no "▁"
// of its own where the joint encoding would change the prefix's tokens,
// and a space in the text is still one.
func TestSentencePieceContinuation(t *testing.T) {
	tk := spmVariant(t, gunzip(t, "../testdata/vocab/spm.tokenizer.json.gz"), "prepend")
	for _, c := range []struct{ prefix, text string }{
		{"Q: Who made the heaven?\nA:", " God"}, // joint: the prefix's tokens stay
		{"Hel", "lo world"},                     // joint "▁Hello" changes the prefix's "▁Hel"
	} {
		got := tk.EncodeAfter(c.prefix, c.text)
		if dec := tk.Decode(got); dec != c.text {
			t.Errorf("EncodeAfter(%q, %q) = %v, decoding to %q", c.prefix, c.text, got, dec)
		}
	}
}

// FuzzEncodeSentencePiece: with the 32k SentencePiece vocabulary, any
// valid text without its special tokens' markup decodes back to itself
// behind the one space the normaliser puts before it; invalid UTF-8 is
// encoded (byte tokens) without a panic.
func FuzzEncodeSentencePiece(f *testing.F) {
	tk, err := Load(gunzip(f, "../testdata/vocab/spm.tokenizer.json.gz"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello world", "  a\n\n b\t", "ñandú 日本 😀 ᏣᎳᎩ", "x\xff\xfey", "▁▁ x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s, false)
		if !utf8.ValidString(s) || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") {
			return
		}
		want := s
		if s != "" {
			want = " " + strings.ReplaceAll(s, "▁", " ")
		}
		if got := tk.Decode(ids); got != want {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}
