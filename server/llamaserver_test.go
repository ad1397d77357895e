package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/chat"
)

// TestTokenizeDetokenize: /tokenize gives the tokenizer's ids, with BOS only
// when add_special asks, and pieces that spell the text; /detokenize turns
// them back into the text.
func TestTokenizeDetokenize(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	const text = "In the beginning God created the heaven"
	tok := tinyModel.Tokenizer
	for _, special := range []bool{false, true} {
		body, _ := json.Marshal(map[string]any{"content": text, "add_special": special})
		code, _, out := do(t, h, "POST", "/tokenize", string(body))
		var got struct{ Tokens []int }
		if code != 200 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("tokenize: %d %s", code, out)
		}
		if want := tok.Encode(text, special); !slices.Equal(got.Tokens, want) {
			t.Fatalf("add_special %v: tokens %v, want %v", special, got.Tokens, want)
		}
		if special == slices.Equal(got.Tokens, tok.Encode(text, false)) {
			t.Fatalf("add_special %v made no difference: %v", special, got.Tokens)
		}
	}
	code, _, out := do(t, h, "POST", "/tokenize", `{"content": "`+text+`", "with_pieces": true}`)
	var pieces struct {
		Tokens []struct {
			ID    int    `json:"id"`
			Piece string `json:"piece"`
		}
	}
	if code != 200 || json.Unmarshal([]byte(out), &pieces) != nil {
		t.Fatalf("with_pieces: %d %s", code, out)
	}
	var b strings.Builder
	var ids []int
	for _, p := range pieces.Tokens {
		b.WriteString(p.Piece)
		ids = append(ids, p.ID)
	}
	if b.String() != text || !slices.Equal(ids, tok.Encode(text, false)) {
		t.Fatalf("pieces spell %q, ids %v", b.String(), ids)
	}

	body, _ := json.Marshal(map[string]any{"tokens": ids})
	code, _, out = do(t, h, "POST", "/detokenize", string(body))
	var dt struct{ Content string }
	if code != 200 || json.Unmarshal([]byte(out), &dt) != nil || dt.Content != text {
		t.Fatalf("detokenize: %d %s", code, out)
	}
}

// TestApplyTemplateAndProps: /apply-template renders the prompt chat
// completions generate from; /props describes the server.
func TestApplyTemplateAndProps(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 2}).Handler()
	code, _, out := do(t, h, "POST", "/apply-template", `{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}`)
	want, err := tinyTmpl.Render([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	var at struct{ Prompt string }
	if code != 200 || json.Unmarshal([]byte(out), &at) != nil || at.Prompt != want || !strings.Contains(want, "Be brief.") {
		t.Fatalf("apply-template: %d %s, want %q", code, out, want)
	}

	code, _, out = do(t, h, "GET", "/props", "")
	var p struct {
		Default struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
		TotalSlots   int    `json:"total_slots"`
		ModelPath    string `json:"model_path"`
		ChatTemplate string `json:"chat_template"`
		BuildInfo    string `json:"build_info"`
	}
	if code != 200 || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("props: %d %s", code, out)
	}
	if p.Default.NCtx != 512 || p.TotalSlots != 2 || p.ModelPath != tinyModel.Pack.Path || p.ChatTemplate == "" ||
		p.ChatTemplate != tinyModel.Pack.Index.ChatTemplates[0].Template || !strings.HasPrefix(p.BuildInfo, "sirun ") {
		t.Fatalf("props: %s", out)
	}
}

// TestLlamaServerBadRequests: each bad request gets a 4xx OpenAI error
// naming its field.
func TestLlamaServerBadRequests(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	for _, c := range []struct {
		method, path, body string
		status             int
		param, msg         string
	}{
		{"POST", "/tokenize", `{}`, 400, "content", "content is required"},
		{"POST", "/tokenize", `{"content": 5}`, 400, "content", "content must be a string, got 5"},
		{"POST", "/tokenize", `{"content": "a", "add_special": "yes"}`, 400, "add_special", "add_special must be a boolean"},
		{"POST", "/tokenize", `{"content": "a"`, 400, "", "malformed JSON"},
		{"POST", "/detokenize", `{}`, 400, "tokens", "tokens is required"},
		{"POST", "/detokenize", `{"tokens": "1 2"}`, 400, "tokens", "tokens must be an array of token ids, got a string"},
		{"POST", "/detokenize", `{"tokens": [1, "2"]}`, 400, "tokens[1]", "tokens[1] must be an integer token id"},
		{"POST", "/detokenize", `{"tokens": [1.5]}`, 400, "tokens[0]", "tokens[0] must be an integer token id"},
		{"POST", "/detokenize", `{"tokens": [4096]}`, 400, "tokens[0]", "tokens[0] must be a token id in [0, 4096), got 4096"},
		{"POST", "/detokenize", `{"tokens": [-1]}`, 400, "tokens[0]", "got -1"},
		{"POST", "/apply-template", `{}`, 400, "messages", "messages is required"},
		{"POST", "/apply-template", `{"messages": [{"role": "robot", "content": "x"}]}`, 400, "messages[0].role", "messages[0].role must be one of"},
		{"GET", "/tokenize", ``, 405, "", "/tokenize does not take GET"},
		{"POST", "/props", ``, 405, "", "/props does not take POST"},
	} {
		code, e, out := do(t, h, c.method, c.path, c.body)
		if code != c.status || errParam(e) != c.param || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s %s %s: %d %s, want %d param %q with %q", c.method, c.path, c.body, code, out, c.status, c.param, c.msg)
		}
	}
}

// TestLlamaServerNeedsKey: the extras are behind the API key as /v1 is.
func TestLlamaServerNeedsKey(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1, APIKey: "k"}).Handler()
	for _, p := range []string{"/tokenize", "/detokenize", "/apply-template"} {
		if code, _, _ := do(t, h, "POST", p, `{}`); code != http.StatusUnauthorized {
			t.Errorf("%s without the key: %d", p, code)
		}
	}
	if code, _, _ := do(t, h, "GET", "/props", ``); code != http.StatusUnauthorized {
		t.Errorf("/props without the key: %d", code)
	}
}
