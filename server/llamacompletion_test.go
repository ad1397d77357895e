package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestLlamaCompletion: llama-server's native /completion (and
// /completions) in its shapes: a greedy request gives the golden text and
// tokens with its counts and stop type, a prompt of token ids the same, a
// stream the same text in events ending with stop true, a stop string
// stop_type "word"; absent fields take llama-server's defaults; json_schema
// constrains the output; bad fields are 400s naming them.
func TestLlamaCompletion(t *testing.T) {
	g := newGoldenCase(t)
	h, prompt, p, ids, n, want := g.h, g.prompt, g.q, g.ids, g.n, g.want
	type answer struct {
		Content         string `json:"content"`
		Tokens          []int  `json:"tokens"`
		Stop            bool   `json:"stop"`
		StopType        string `json:"stop_type"`
		StoppingWord    string `json:"stopping_word"`
		TokensPredicted int    `json:"tokens_predicted"`
		TokensEvaluated int    `json:"tokens_evaluated"`
		Timings         struct {
			PredictedN int `json:"predicted_n"`
		} `json:"timings"`
	}
	complete := func(path, body string) answer {
		t.Helper()
		code, e, out := do(t, h, "POST", path, body)
		var a answer
		if code != 200 || json.Unmarshal([]byte(out), &a) != nil {
			t.Fatalf("%s %s: %d %v %s", path, body, code, e, out)
		}
		return a
	}
	promptIDs := tinyModel.Tokenizer.Encode(prompt, true)
	for _, path := range []string{"/completion", "/completions"} {
		a := complete(path, `{"prompt": `+p+`, "n_predict": `+n+`, "temperature": 0, "ignore_eos": true}`)
		if a.Content != want || !slices.Equal(a.Tokens, ids) || !a.Stop || a.StopType != "limit" ||
			a.TokensPredicted != len(ids) || a.TokensEvaluated != len(promptIDs) || a.Timings.PredictedN != len(ids) {
			t.Errorf("%s greedy: %+v, want %q, tokens %v, %d evaluated", path, a, want, ids, len(promptIDs))
		}
	}
	tok, _ := json.Marshal(promptIDs)
	if a := complete("/completion", `{"prompt": `+string(tok)+`, "n_predict": `+n+`, "temperature": 0, "ignore_eos": true}`); a.Content != want {
		t.Errorf("prompt as token ids: %q, want %q", a.Content, want)
	}

	// Streamed: the events' contents make the text; the last says stop.
	code, _, out := do(t, h, "POST", "/completion", `{"prompt": `+p+`, "n_predict": `+n+`, "temperature": 0, "ignore_eos": true, "stream": true}`)
	var text strings.Builder
	var last answer
	events := 0
	for _, ev := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var a answer
		if !strings.HasPrefix(ev, "data: ") || json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &a) != nil {
			t.Fatalf("stream: event %q", ev)
		}
		text.WriteString(a.Content)
		last, events = a, events+1
	}
	if code != 200 || text.String() != want || !last.Stop || last.StopType != "limit" || events < 3 {
		t.Errorf("stream: %d, %d events, text %q, last %+v; want %q", code, events, text.String(), last, want)
	}

	// A stop string: the text ends before it.
	stop := " LORD"
	cut := strings.Index(want, stop)
	if cut < 0 {
		t.Fatalf("%q not in %q", stop, want)
	}
	if a := complete("/completion", `{"prompt": `+p+`, "n_predict": `+n+`, "temperature": 0, "stop": ["`+stop+`"]}`); a.Content != want[:cut] || a.StopType != "word" || a.StoppingWord != stop {
		t.Errorf("stop %q: %+v, want %q", stop, a, want[:cut])
	}

	// Absent fields: llama-server's defaults (llama.cpp's sampler, the rest
	// of the context).
	var q llamaCompletionRequest
	r, err := q.request(512)
	if s := r.Sampling; err != nil || s.Temperature != 0.8 || s.TopK != 40 || s.TopP != 0.95 || s.MinP != 0.05 || s.RepeatLastN != 64 || r.MaxTokens != -1 {
		t.Errorf("defaults: %+v, %d tokens (%v)", s, r.MaxTokens, err)
	}

	// json_schema: the output is JSON of the schema.
	schema := `{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`
	a := complete("/completion", `{"prompt": `+p+`, "n_predict": 48, "seed": 3, "json_schema": `+schema+`}`)
	var v struct {
		N *int `json:"n"`
	}
	dec := json.NewDecoder(strings.NewReader(a.Content))
	dec.DisallowUnknownFields()
	if a.StopType == "limit" || dec.Decode(&v) != nil || v.N == nil {
		t.Errorf("json_schema: %q (%s)", a.Content, a.StopType)
	}

	for _, c := range []struct{ body, param string }{
		{`{"n_predict": 4}`, "prompt"},
		{`{"prompt": {"a": 1}}`, "prompt"},
		{`{"prompt": [1, 99999999]}`, "prompt[1]"},
		{`{"prompt": "x", "n_predict": -5}`, "n_predict"},
		{`{"prompt": "x", "min_p": 3}`, "min_p"},
		{`{"prompt": "x", "json_schema": 5}`, "json_schema"},
	} {
		code, e, _ := do(t, h, "POST", "/completion", c.body)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %+v, want 400 naming %s", c.body, code, e, c.param)
		}
	}
}
