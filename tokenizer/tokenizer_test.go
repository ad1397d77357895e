package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/sipack/sipack/convert/testmodel"
)

func loadFile(t *testing.T, path string) *Tokenizer {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// golden: "In the beginning" is [4094 3709 260 3652] in golden.json.
// TestGoldenTinyllama checks every case of the tiny model's golden file,
// made by the model's own BPE trainer and cross-checked with transformers.js.
func TestGoldenTinyllama(t *testing.T) {
	tk := loadFile(t, "../testdata/tinyllama/tokenizer.json")
	f, err := os.Open("../testdata/tinyllama/tokenizer_golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c struct {
			Text       string `json:"text"`
			IDs        []int  `json:"ids"`
			IDsWithBOS []int  `json:"ids_with_bos"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		if got := tk.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q) = %v, want %v", c.Text, got, c.IDs)
		}
		if got := tk.Encode(c.Text, true); !slices.Equal(got, c.IDsWithBOS) {
			t.Errorf("Encode(%q, bos) = %v, want %v", c.Text, got, c.IDsWithBOS)
		}
		if got := tk.Decode(c.IDs); got != c.Text {
			t.Errorf("Decode(%v) = %q, want %q", c.IDs, got, c.Text)
		}
	}
	if n != 51 {
		t.Fatalf("read %d golden cases, want 51", n)
	}
}

func TestSplit(t *testing.T) {
	cases := []struct {
		in     string
		digits int
		want   []string
	}{
		{"Hello world", 3, []string{"Hello", " world"}},
		{"I'm here, they'LL go", 3, []string{"I", "'m", " here", ",", " they", "'LL", " go"}},
		{"12345", 3, []string{"123", "45"}},
		{"12345", 1, []string{"1", "2", "3", "4", "5"}},
		{"a  b", 3, []string{"a", " ", " b"}},
		{"a\n\n b", 3, []string{"a", "\n\n", " b"}},
		{"x   ", 3, []string{"x", "   "}},
		{"!!?\n\nx", 3, []string{"!!?\n\n", "x"}},
		{" ;)", 3, []string{" ;)"}},
		{"\t\tfoo", 3, []string{"\t", "\tfoo"}},
		{"日本語 テキスト", 3, []string{"日本語", " テキスト"}},
	}
	for _, c := range cases {
		if got := splitLlama3(c.in, c.digits); !slices.Equal(got, c.want) {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRefusesUnsupported(t *testing.T) {
	for name, js := range map[string]string{
		"wordpiece": `{"model":{"type":"WordPiece","vocab":{"a":0}}}`,
		"garbage":   `{"model":`,
		"metaspace": `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Metaspace"},"decoder":{"type":"ByteLevel"}}`,
	} {
		if _, err := Load([]byte(js)); err == nil {
			t.Errorf("%s: Load succeeded, want an error", name)
		}
	}
}

// FuzzEncode: any text round-trips through Encode and Decode (no NFC in the
// tiny tokenizer), and Encode never panics.
func FuzzEncode(f *testing.F) {
	data, err := os.ReadFile("../testdata/tinyllama/tokenizer.json")
	if err != nil {
		f.Fatal(err)
	}
	tk, err := Load(data)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"Hello world", "  a\n\n b\t", "ñandú 日本 😀", "<|begin_of_text|>x", "'S'LL'd 123456"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s, false)
		if !utf8.ValidString(s) {
			return
		}
		if got := tk.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}

// FuzzLoad: tokenizer.json parsing never panics.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a"]},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"added_tokens":[{"id":5,"content":"<x>"}],"model":{"type":"BPE","vocab":{"!":0},"merges":[["!","!"]]}}`))
	f.Add([]byte(`{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"model":{"type":"BPE","byte_fallback":true,"unk_token":"<unk>","fuse_unk":true,"vocab":{"<unk>":0,"▁":1,"a":2,"▁a":3,"<0x41>":4},"merges":["▁ a"]}}`))
	f.Add([]byte(`{"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},"decoder":{"type":"Metaspace","replacement":"▁"},"model":{"type":"BPE","byte_fallback":true,"vocab":{"▁":0,"a":1,"▁a":2},"merges":[["▁","a"]]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if tk, err := Load(raw); err == nil {
			tk.Decode(tk.Encode("some text 12", true))
		}
	})
}

// TestByteTokenizer: the synthetic models' fallback tokenizer loads and
// round-trips text byte by byte.
func TestByteTokenizer(t *testing.T) {
	tk, err := Load(testmodel.ByteTokenizer())
	if err != nil {
		t.Fatal(err)
	}
	s := "Hello, ñandú 日本\n"
	ids := tk.Encode(s, false)
	if len(ids) != len(s) || tk.Decode(ids) != s {
		t.Fatalf("%d ids for %d bytes, decode %q", len(ids), len(s), tk.Decode(ids))
	}
}
