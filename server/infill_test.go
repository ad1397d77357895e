package server

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/tokenizer"
)

// TestInfillTokens: the fill-in-the-middle layouts llama-server's /infill
// documents, with and without the repository tokens, over an encoder that
// makes each byte a token.
func TestInfillTokens(t *testing.T) {
	enc := func(s string) []int {
		var ids []int
		for _, b := range []byte(s) {
			ids = append(ids, int(b))
		}
		return ids
	}
	cat := func(parts ...any) []int {
		var ids []int
		for _, p := range parts {
			switch v := p.(type) {
			case int:
				ids = append(ids, v)
			case string:
				ids = append(ids, enc(v)...)
			}
		}
		return ids
	}
	const pre, suf, mid, rep, sep, bos = 1001, 1002, 1003, 1004, 1005, 1
	extra := []infillChunk{{"a.go", "x"}, {"", "y"}}
	got := infillTokens(enc, fimTokens{pre, suf, mid, rep, sep}, []int{bos}, "P", "S", "M", extra)
	want := cat(bos, rep, "myproject\n", sep, "a.go\n", "x", sep, "tmp\n", "y", sep, "filename\n", pre, "P", suf, "S", mid, "M")
	if !slices.Equal(got, want) {
		t.Errorf("repository layout:\n got %v\nwant %v", got, want)
	}
	got = infillTokens(enc, fimTokens{pre, suf, mid, -1, -1}, nil, "P", "S", "", extra)
	want = cat("\n\n--- snippet ---\n\n", "x", "\n\n--- snippet ---\n\n", "y", pre, "P", suf, "S", mid)
	if !slices.Equal(got, want) {
		t.Errorf("without repository tokens:\n got %v\nwant %v", got, want)
	}
}

// TestInfillNeedsFIMTokens: a model without FIM tokens (the tiny one) gets
// a 400 that says why; a malformed input_extra is a 400 naming it.
func TestInfillNeedsFIMTokens(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	code, e, _ := do(t, h, "POST", "/infill", `{"input_prefix": "def f(", "input_suffix": ")"}`)
	if code != 400 || !strings.Contains(e.Error.Message, "fill-in-the-middle") {
		t.Errorf("no FIM tokens: %d %+v", code, e)
	}
	for _, c := range []struct{ body, param string }{
		{`{"input_prefix": "x", "input_extra": {"a": 1}}`, "input_extra"},
		{`{"input_prefix": "x", "prompt": [1, 2]}`, "prompt"},
	} {
		code, e, _ := do(t, h, "POST", "/infill", c.body)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %+v, want 400 naming %s", c.body, code, e, c.param)
		}
	}
}

// TestFindFIM: Qwen's FIM tokens, added to the tiny model's tokenizer, are
// found by their texts; the tiny tokenizer itself has none.
func TestFindFIM(t *testing.T) {
	raw, err := os.ReadFile("../testdata/tinyllama/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if f := findFIM(tok); f != (fimTokens{-1, -1, -1, -1, -1}) {
		t.Errorf("tiny tokenizer: %+v, want none", f)
	}
	var j map[string]any
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	added, _ := j["added_tokens"].([]any)
	v := tok.VocabSize()
	for i, n := range []string{"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|repo_name|>", "<|file_sep|>"} {
		added = append(added, map[string]any{"id": v + i, "content": n, "special": true, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false})
	}
	j["added_tokens"] = added
	raw, _ = json.Marshal(j)
	if tok, err = tokenizer.Load(raw); err != nil {
		t.Fatal(err)
	}
	if f, want := findFIM(tok), (fimTokens{v, v + 2, v + 1, v + 3, v + 4}); f != want {
		t.Errorf("with Qwen's FIM tokens: %+v, want %+v", f, want)
	}
}
