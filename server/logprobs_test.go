package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// TestLogprobs: text completions' legacy logprobs and chat's logprobs and
// top_logprobs. The first generated token's log probability equals
// runner.LogProb over the logits a session of the same model gives the
// same prompt; greedy picks the most likely, so each token is its top
// alternative; alternatives come most likely first, at most as many as
// asked; bad values are refused by name (TestStreamedLogprobs streams them).
func TestLogprobs(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1}, nil)
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(ts.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r map[string]any
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	code, r := post("/v1/completions", `{"prompt": "In the beginning", "max_tokens": 5, "temperature": 0, "ignore_eos": true, "logprobs": 3}`)
	if code != 200 {
		t.Fatalf("completion: %d %v", code, r)
	}
	lp := r["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	tokens, lps, tops := lp["tokens"].([]any), lp["token_logprobs"].([]any), lp["top_logprobs"].([]any)
	if len(tokens) != 5 || len(lps) != 5 || len(tops) != 5 {
		t.Fatalf("logprobs %v", lp)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	ss, err := tinyModel.NewSession(pool, 64, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	logits, err := ss.Start(tinyModel.Tokenizer.Encode("In the beginning", true))
	if err != nil {
		t.Fatal(err)
	}
	want := float64(logits[runner.Argmax(logits)]) - runner.LogSumExp(logits)
	if got := lps[0].(float64); math.Abs(got-want) > 1e-4 {
		t.Fatalf("first token's logprob %v, the session's %v", got, want)
	}
	for i, tp := range tops {
		alts := tp.(map[string]any)
		best := math.Inf(-1)
		for _, v := range alts {
			best = math.Max(best, v.(float64))
		}
		if len(alts) == 0 || len(alts) > 3 || best != lps[i].(float64) || best > 0 {
			t.Fatalf("token %d: logprob %v, alternatives %v", i, lps[i], alts)
		}
	}

	code, r = post("/v1/chat/completions", `{"messages": [{"role": "user", "content": "In the beginning"}], "max_tokens": 4, "temperature": 0, "logprobs": true, "top_logprobs": 2}`)
	if code != 200 {
		t.Fatalf("chat: %d %v", code, r)
	}
	content := r["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
	for i, c := range content {
		e := c.(map[string]any)
		top := e["top_logprobs"].([]any)
		if len(top) != 2 || len(e["bytes"].([]any)) == 0 || e["logprob"].(float64) != top[0].(map[string]any)["logprob"].(float64) ||
			top[0].(map[string]any)["logprob"].(float64) < top[1].(map[string]any)["logprob"].(float64) {
			t.Fatalf("chat token %d: %v", i, e)
		}
	}
	if code, r = post("/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2}`); code != 200 || r["choices"].([]any)[0].(map[string]any)["logprobs"] != nil {
		t.Fatalf("chat without logprobs: %d %v", code, r)
	}
	for _, c := range []struct{ path, body, param string }{
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21}`, "top_logprobs"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}`, "top_logprobs"},
		{"/v1/completions", `{"prompt": "x", "logprobs": 6}`, "logprobs"},
		{"/v1/completions", `{"prompt": "x", "logprobs": true}`, "logprobs"},
	} {
		code, r := post(c.path, c.body)
		e, _ := r["error"].(map[string]any)
		if code != 400 || e == nil || e["param"] != c.param {
			t.Errorf("%s %s: %d %v, want 400 naming %s", c.path, c.body, code, r, c.param)
		}
	}
}
