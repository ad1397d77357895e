package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sipack/sipack/chat"
)

// ollamaDo sends one request to h; an error status must come in ollama's
// shape, {"error": "message"} and nothing else.
func ollamaDo(t *testing.T, h http.Handler, method, path, body string) (int, string, *httptest.ResponseRecorder) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	if rec.Code < 400 {
		return rec.Code, "", rec
	}
	var e map[string]any
	msg, ok := "", false
	if json.Unmarshal(rec.Body.Bytes(), &e) == nil && len(e) == 1 {
		msg, ok = e["error"].(string)
	}
	if !ok || msg == "" {
		t.Fatalf("%s %s: %d, body is not an ollama error: %s", method, path, rec.Code, rec.Body)
	}
	return rec.Code, msg, rec
}

// ollamaFinal is the last object of an answer.
type ollamaFinal struct {
	Model     string `json:"model"`
	CreatedAt string `json:"created_at"`
	Message   *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	Response           *string `json:"response"`
	Done               bool    `json:"done"`
	DoneReason         string  `json:"done_reason"`
	TotalDuration      int64   `json:"total_duration"`
	LoadDuration       *int64  `json:"load_duration"`
	PromptEvalCount    int     `json:"prompt_eval_count"`
	PromptEvalDuration int64   `json:"prompt_eval_duration"`
	EvalCount          int     `json:"eval_count"`
	EvalDuration       int64   `json:"eval_duration"`
	Error              string  `json:"error"`
}

func (f *ollamaFinal) text() string {
	if f.Message != nil {
		return f.Message.Content
	}
	if f.Response != nil {
		return *f.Response
	}
	return ""
}

// ollamaStream reads an NDJSON answer: the text of its objects and the
// last; every object but the last must say done false.
func ollamaStream(t *testing.T, rec *httptest.ResponseRecorder) (string, ollamaFinal) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("streamed Content-Type %q", ct)
	}
	var lines []ollamaFinal
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var f ollamaFinal
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, f)
	}
	if len(lines) < 2 {
		t.Fatalf("streamed %d objects: %s", len(lines), rec.Body)
	}
	var b strings.Builder
	for i, f := range lines {
		if f.Done != (i == len(lines)-1) {
			t.Fatalf("object %d of %d says done %v", i, len(lines), f.Done)
		}
		b.WriteString(f.text())
	}
	return b.String(), lines[len(lines)-1]
}

// checkFinal checks the counts and durations of a last object.
func checkFinal(t *testing.T, f ollamaFinal, model string, prompt, maxTokens int) {
	t.Helper()
	if _, err := time.Parse(time.RFC3339Nano, f.CreatedAt); err != nil || f.Model != model || !f.Done {
		t.Fatalf("final object %+v", f)
	}
	if f.PromptEvalCount != prompt || f.EvalCount < 1 || f.EvalCount > maxTokens {
		t.Fatalf("counts: %d prompt (want %d), %d eval of %d", f.PromptEvalCount, prompt, f.EvalCount, maxTokens)
	}
	if (f.DoneReason == "length") != (f.EvalCount == maxTokens) || (f.DoneReason != "length" && f.DoneReason != "stop") {
		t.Fatalf("done_reason %q after %d tokens of %d", f.DoneReason, f.EvalCount, maxTokens)
	}
	if f.PromptEvalDuration <= 0 || f.EvalDuration <= 0 || f.LoadDuration == nil || *f.LoadDuration < 0 ||
		f.TotalDuration < f.PromptEvalDuration+f.EvalDuration {
		t.Fatalf("durations: total %d, prompt %d, eval %d", f.TotalDuration, f.PromptEvalDuration, f.EvalDuration)
	}
}

// TestOllamaChat: /api/chat answers what /v1/chat/completions does at
// temperature 0 (the same template and engine), plainly and as NDJSON (the
// default), with ollama's counts.
func TestOllamaChat(t *testing.T) {
	srv := newTestServer(t, Options{Parallel: 1})
	h := srv.Handler()
	const sys, user = "You answer in one line.", "Who made the heaven and the earth?"
	code, _, out := do(t, h, "POST", "/v1/chat/completions", `{"messages": [{"role": "system", "content": "`+sys+`"}, {"role": "user", "content": "`+user+`"}], "temperature": 0, "max_tokens": 24}`)
	var oa struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if code != 200 || json.Unmarshal([]byte(out), &oa) != nil || oa.Choices[0].Message.Content == "" {
		t.Fatalf("openai chat: %d %s", code, out)
	}
	want := oa.Choices[0].Message.Content
	rendered, err := tinyTmpl.Render([]chat.Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}, true)
	if err != nil {
		t.Fatal(err)
	}
	promptTokens := len(chat.Encode(tinyModel.Tokenizer, rendered))

	body := `{"model": "tiny", "messages": [{"role": "system", "content": "` + sys + `"}, {"role": "user", "content": "` + user + `"}], "options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 24}`
	code, msg, rec := ollamaDo(t, h, "POST", "/api/chat", body+`, "stream": false}`)
	var f ollamaFinal
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &f) != nil {
		t.Fatalf("chat: %d %s", code, msg)
	}
	if f.Message == nil || f.Message.Role != "assistant" || f.Message.Content != want {
		t.Fatalf("chat message %+v, want %q", f.Message, want)
	}
	checkFinal(t, f, "tiny", promptTokens, 24)

	_, _, rec = ollamaDo(t, h, "POST", "/api/chat", body+`}`)
	text, last := ollamaStream(t, rec)
	if text != want || last.Message == nil || last.Message.Content != "" {
		t.Fatalf("streamed %q, want %q; last %+v", text, want, last)
	}
	checkFinal(t, last, "tiny", promptTokens, 24)

	// No messages is ollama's "load the model".
	code, _, rec = ollamaDo(t, h, "POST", "/api/chat", `{"model": "tiny:latest", "messages": []}`)
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &f) != nil || f.DoneReason != "load" || !f.Done || f.Model != "tiny:latest" {
		t.Fatalf("load: %d %s", code, rec.Body)
	}
}

// TestOllamaGenerate: a raw prompt continues as the golden does; a plain one
// is a user turn of the chat template, with the system prompt; streamed and
// plain answers agree.
func TestOllamaGenerate(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	prompt, ids, want := golden(t)
	p, _ := json.Marshal(prompt)
	raw := `{"model": "tiny", "prompt": ` + string(p) + `, "raw": true, "options": {"temperature": 0, "repeat_penalty": 1, "num_predict": ` + itoa(len(ids)) + `}`
	code, msg, rec := ollamaDo(t, h, "POST", "/api/generate", raw+`, "stream": false}`)
	var f ollamaFinal
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &f) != nil {
		t.Fatalf("generate: %d %s", code, msg)
	}
	if f.text() != want || f.Message != nil {
		t.Fatalf("raw generate %q, want the golden %q", f.text(), want)
	}
	checkFinal(t, f, "tiny", len(tinyModel.Tokenizer.Encode(prompt, true)), len(ids))
	_, _, rec = ollamaDo(t, h, "POST", "/api/generate", raw+`}`)
	if text, last := ollamaStream(t, rec); text != want {
		t.Fatalf("streamed raw generate %q, want %q", text, want)
	} else {
		checkFinal(t, last, "tiny", len(tinyModel.Tokenizer.Encode(prompt, true)), len(ids))
	}

	// Templated: as a chat of the system prompt and the prompt.
	code, _, out := do(t, h, "POST", "/v1/chat/completions", `{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}], "temperature": 0, "max_tokens": 16}`)
	var oa struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if code != 200 || json.Unmarshal([]byte(out), &oa) != nil {
		t.Fatalf("openai chat: %d %s", code, out)
	}
	code, msg, rec = ollamaDo(t, h, "POST", "/api/generate", `{"prompt": "Hello", "system": "Be brief.", "stream": false, "options": {"temperature": 0, "repeat_penalty": 1, "num_predict": 16}}`)
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &f) != nil || f.text() != oa.Choices[0].Message.Content || f.Model != "tiny:latest" {
		t.Fatalf("templated generate: %d %s %s, want %q", code, msg, rec.Body, oa.Choices[0].Message.Content)
	}
	rendered, err := tinyTmpl.Render([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	checkFinal(t, f, "tiny:latest", len(chat.Encode(tinyModel.Tokenizer, rendered)), 16)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestOllamaNumCtx: a num_ctx beyond the server's context is refused,
// naming both; a smaller one bounds the prompt and the answer.
func TestOllamaNumCtx(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	code, msg, _ := ollamaDo(t, h, "POST", "/api/generate", `{"prompt": "Hi", "raw": true, "options": {"num_ctx": 8192}}`)
	if code != 400 || !strings.Contains(msg, "options.num_ctx must be in [1, 512]") || !strings.Contains(msg, "8192") {
		t.Fatalf("num_ctx 8192: %d %q", code, msg)
	}
	n := len(tinyModel.Tokenizer.Encode("In the beginning", true))
	code, msg, _ = ollamaDo(t, h, "POST", "/api/generate", `{"prompt": "In the beginning", "raw": true, "options": {"num_ctx": `+itoa(n)+`}}`)
	if code != 400 || !strings.Contains(msg, "options.num_ctx") {
		t.Fatalf("prompt of num_ctx: %d %q", code, msg)
	}
	code, msg, rec := ollamaDo(t, h, "POST", "/api/generate", `{"prompt": "In the beginning", "raw": true, "stream": false, "options": {"num_ctx": `+itoa(n+3)+`, "temperature": 0, "repeat_penalty": 1}}`)
	var f ollamaFinal
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &f) != nil || f.EvalCount != 3 || f.DoneReason != "length" {
		t.Fatalf("num_ctx %d: %d %s %s", n+3, code, msg, rec.Body)
	}
}

// TestOllamaBadRequests: each is a 400 in ollama's shape naming the field
// as ollama's API names it.
func TestOllamaBadRequests(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	msg := `"messages": [{"role": "user", "content": "hi"}]`
	for _, c := range []struct {
		path, body, want string
	}{
		{"/api/chat", `{"messages": [`, "malformed JSON"},
		{"/api/chat", `[]`, "must be a JSON object"},
		{"/api/chat", `{"messages": "hi"}`, "messages must be an array"},
		{"/api/chat", `{"messages": [{"role": "robot", "content": "x"}]}`, "messages[0].role must be one of"},
		{"/api/chat", `{"messages": [{"role": "user", "content": 5}]}`, "messages[0].content must be a string"},
		{"/api/chat", `{"messages": [{"role": "user", "content": "x", "images": ["aGk="]}]}`, "messages[0].images"},
		{"/api/chat", `{` + msg + `, "options": []}`, "options must be an object"},
		{"/api/chat", `{` + msg + `, "options": {"temperature": "hot"}}`, "options.temperature must be a number, got a string"},
		{"/api/chat", `{` + msg + `, "options": {"temperature": 5}}`, "options.temperature must be in [0, 2], got 5"},
		{"/api/chat", `{` + msg + `, "options": {"top_k": -1}}`, "options.top_k must be ≥ 0"},
		{"/api/chat", `{` + msg + `, "options": {"top_p": 0}}`, "options.top_p must be in (0, 1]"},
		{"/api/chat", `{` + msg + `, "options": {"min_p": 1.5}}`, "options.min_p must be in [0, 1]"},
		{"/api/chat", `{` + msg + `, "options": {"repeat_last_n": -2}}`, "options.repeat_last_n must be ≥ -1"},
		{"/api/chat", `{` + msg + `, "options": {"repeat_penalty": -1}}`, "options.repeat_penalty must be in"},
		{"/api/chat", `{` + msg + `, "options": {"num_predict": -3}}`, "options.num_predict must be in [-2, 512]"},
		{"/api/chat", `{` + msg + `, "options": {"num_predict": 100000}}`, "options.num_predict must be in [-2, 512]"},
		{"/api/chat", `{` + msg + `, "options": {"num_ctx": 0}}`, "options.num_ctx must be in [1, 512]"},
		{"/api/chat", `{` + msg + `, "options": {"seed": "x"}}`, "options.seed must be an integer"},
		{"/api/chat", `{` + msg + `, "options": {"stop": 5}}`, "options.stop must be a string or an array of strings"},
		{"/api/chat", `{` + msg + `, "options": {"stop": [""]}}`, "options.stop[0] must be 1-256 bytes"},
		{"/api/chat", `{` + msg + `, "stream": "yes"}`, "stream must be a boolean"},
		{"/api/chat", `{` + msg + `, "format": "yaml"}`, `format must be "json" or a JSON schema object, got "yaml"`},
		{"/api/chat", `{` + msg + `, "model": 7}`, "model must be a string"},
		{"/api/generate", `{"prompt": 5}`, "prompt must be a string, got 5"},
		{"/api/generate", `{"prompt": "x", "system": ["a"]}`, "system must be a string"},
		{"/api/generate", `{"prompt": "x", "raw": 1}`, "raw must be a boolean"},
		{"/api/generate", `{"prompt": "x", "template": "{{ .Prompt }}"}`, "template is not supported"},
		{"/api/generate", `{"prompt": "x", "suffix": "y"}`, "suffix needs a model with fill-in-the-middle tokens"},
		{"/api/generate", `{"prompt": "x", "context": [1, 2]}`, "context is not supported"},
		{"/api/generate", `{"prompt": "x", "options": {"top_k": 1.5}}`, "options.top_k must be an integer"},
		{"/api/show", `{}`, "model is required"},
		{"/api/show", `{"model": 3}`, "model must be a string"},
	} {
		code, got, _ := ollamaDo(t, h, "POST", c.path, c.body)
		if code != 400 || !strings.Contains(got, c.want) {
			t.Errorf("%s %s: %d %q, want 400 with %q", c.path, c.body, code, got, c.want)
		}
	}
	for _, c := range []struct{ method, path string }{{"GET", "/api/chat"}, {"POST", "/api/tags"}, {"DELETE", "/api/show"}} {
		if code, got, _ := ollamaDo(t, h, c.method, c.path, ""); code != 405 || !strings.Contains(got, "does not take "+c.method) {
			t.Errorf("%s %s: %d %q", c.method, c.path, code, got)
		}
	}
}

// TestOllamaModelNotFound: another model is 404 {"error": "model 'x' not
// found..."}; the served one is found by its id, its alias and its
// ollama name with the :latest tag.
func TestOllamaModelNotFound(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1, Aliases: []string{"tiny.sip"}}).Handler()
	for _, path := range []string{"/api/chat", "/api/generate", "/api/show"} {
		code, msg, _ := ollamaDo(t, h, "POST", path, `{"model": "llama3:8b", "messages": [{"role": "user", "content": "hi"}], "prompt": "hi"}`)
		if code != 404 || !strings.HasPrefix(msg, "model 'llama3:8b' not found") || !strings.Contains(msg, "tiny:latest") {
			t.Errorf("%s: %d %q", path, code, msg)
		}
	}
	for _, name := range []string{"tiny", "tiny:latest", "tiny.sip"} {
		if code, msg, _ := ollamaDo(t, h, "POST", "/api/show", `{"model": "`+name+`"}`); code != 200 {
			t.Errorf("show %q: %d %q", name, code, msg)
		}
	}
	if code, msg, _ := ollamaDo(t, h, "POST", "/api/show", `{"name": "nope"}`); code != 404 {
		t.Errorf("show by the old name field: %d %q", code, msg)
	}
}

// TestOllamaListShowVersionPS: the served model as ollama describes one.
func TestOllamaListShowVersionPS(t *testing.T) {
	srv := newTestServer(t, Options{Parallel: 2})
	h := srv.Handler()
	fi, err := os.Stat(tinyModel.Pack.Path)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name, Model, Digest string
		Size                int64
		ModifiedAt          string `json:"modified_at"`
		ExpiresAt           string `json:"expires_at"`
		ContextLength       int    `json:"context_length"`
		Details             struct {
			Format, Family    string
			Families          []string
			ParameterSize     string `json:"parameter_size"`
			QuantizationLevel string `json:"quantization_level"`
		}
	}
	var tags, ps struct{ Models []entry }
	code, _, rec := ollamaDo(t, h, "GET", "/api/tags", "")
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &tags) != nil || len(tags.Models) != 1 {
		t.Fatalf("tags: %d %s", code, rec.Body)
	}
	m := tags.Models[0]
	if m.Name != "tiny:latest" || m.Model != "tiny:latest" || m.Size != fi.Size() || len(m.Digest) != 64 ||
		m.Details.Family != "llama" || m.Details.Format != "sip" || m.Details.ParameterSize == "" || m.Details.QuantizationLevel == "" {
		t.Fatalf("tags: %s", rec.Body)
	}
	if mt, err := time.Parse(time.RFC3339Nano, m.ModifiedAt); err != nil || !mt.Equal(fi.ModTime()) {
		t.Fatalf("modified_at %q, the file's %v", m.ModifiedAt, fi.ModTime())
	}

	code, _, rec = ollamaDo(t, h, "GET", "/api/ps", "")
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &ps) != nil || len(ps.Models) != 1 {
		t.Fatalf("ps: %d %s", code, rec.Body)
	}
	p := ps.Models[0]
	if p.Name != "tiny:latest" || p.Digest != m.Digest || p.Size != fi.Size()+2*int64(srv.all[0].CacheBytes()) || p.ContextLength != 512 {
		t.Fatalf("ps: %s", rec.Body)
	}
	if exp, err := time.Parse(time.RFC3339Nano, p.ExpiresAt); err != nil || exp.Before(time.Now().AddDate(50, 0, 0)) {
		t.Fatalf("expires_at %q", p.ExpiresAt)
	}

	code, _, rec = ollamaDo(t, h, "GET", "/api/version", "")
	var v struct{ Version string }
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &v) != nil || v.Version != ollamaVersion {
		t.Fatalf("version: %d %s", code, rec.Body)
	}

	code, _, rec = ollamaDo(t, h, "POST", "/api/show", `{"model": "tiny:latest"}`)
	var show struct {
		Template, Parameters, Modelfile string
		Capabilities                    []string
		Details                         struct{ Family string }
		ModelInfo                       map[string]any `json:"model_info"`
	}
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &show) != nil {
		t.Fatalf("show: %d %s", code, rec.Body)
	}
	c := tinyModel.Config
	if show.Template != tinyModel.Pack.Index.ChatTemplates[0].Template || show.Details.Family != "llama" ||
		!strings.Contains(show.Parameters, "num_ctx") || !strings.Contains(show.Modelfile, "FROM "+tinyModel.Pack.Path) ||
		show.ModelInfo["general.architecture"] != "llama" || show.ModelInfo["llama.context_length"] != float64(c.MaxPositionEmbeddings) ||
		show.ModelInfo["llama.block_count"] != float64(c.NumLayers) || show.ModelInfo["llama.embedding_length"] != float64(c.HiddenSize) {
		t.Fatalf("show: %s", rec.Body)
	}
}
