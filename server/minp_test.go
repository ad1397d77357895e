package server

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestMinP: min_p reaches the sampler from both APIs (OpenAI's field, as
// llama-server takes it, and ollama's option). A min-p of 1 keeps only the
// most likely token, so at temperature 2 over the whole vocabulary the
// text is the greedy golden one; the same request without it is not.
func TestMinP(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	prompt, ids, want := golden(t)
	p, _ := json.Marshal(prompt)
	n := strconv.Itoa(len(ids))
	text := func(body string) string {
		t.Helper()
		code, e, out := do(t, h, "POST", "/v1/completions", body)
		if code != 200 {
			t.Fatalf("%s: %d %v", body, code, e)
		}
		var r struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("%s: %v %s", body, err, out)
		}
		return r.Choices[0].Text
	}
	hot := `{"prompt": ` + string(p) + `, "max_tokens": ` + n + `, "temperature": 2, "top_k": 0, "seed": 7, "ignore_eos": true`
	if got := text(hot + `, "min_p": 1}`); got != want {
		t.Errorf("min_p 1 at temperature 2: %q, want the greedy %q", got, want)
	}
	if got := text(hot + `}`); got == want {
		t.Errorf("temperature 2 without min_p gave the greedy text: the test shows nothing")
	}
	body := `{"model": "tiny", "prompt": ` + string(p) + `, "raw": true, "stream": false, "options": {"temperature": 2, "top_k": 0, "top_p": 1, "repeat_penalty": 1, "seed": 7, "num_predict": ` + n + `, "min_p": 1}}`
	code, msg, rec := ollamaDo(t, h, "POST", "/api/generate", body)
	var r struct {
		Response string `json:"response"`
	}
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &r) != nil || r.Response != want {
		t.Errorf("ollama options.min_p 1: %d %s %q, want %q", code, msg, r.Response, want)
	}
}
