package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// goldenCase is a one-slot test server's handler with the golden prompt
// (q: as a JSON string), its greedy tokens, their count as text (n) and
// their text.
type goldenCase struct {
	h         http.Handler
	prompt, q string
	ids       []int
	n, want   string
}

func newGoldenCase(t *testing.T) goldenCase {
	prompt, ids, want := golden(t)
	q, _ := json.Marshal(prompt)
	return goldenCase{newTestServer(t, Options{Parallel: 1}).Handler(), prompt, string(q), ids, strconv.Itoa(len(ids)), want}
}

// TestMinP: min_p reaches the sampler from both APIs (OpenAI's field, as
// llama-server takes it, and ollama's option). A min-p of 1 keeps only the
// most likely token, so at temperature 2 over the whole vocabulary the
// text is the greedy golden one; the same request without it is not.
func TestMinP(t *testing.T) {
	g := newGoldenCase(t)
	h, p, n, want := g.h, g.q, g.n, g.want
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
	hot := `{"prompt": ` + p + `, "max_tokens": ` + n + `, "temperature": 2, "top_k": 0, "seed": 7, "ignore_eos": true`
	if got := text(hot + `, "min_p": 1}`); got != want {
		t.Errorf("min_p 1 at temperature 2: %q, want the greedy %q", got, want)
	}
	if got := text(hot + `}`); got == want {
		t.Errorf("temperature 2 without min_p gave the greedy text: the test shows nothing")
	}
	body := `{"model": "tiny", "prompt": ` + p + `, "raw": true, "stream": false, "options": {"temperature": 2, "top_k": 0, "top_p": 1, "repeat_penalty": 1, "seed": 7, "num_predict": ` + n + `, "min_p": 1}}`
	code, msg, rec := ollamaDo(t, h, "POST", "/api/generate", body)
	var r struct {
		Response string `json:"response"`
	}
	if code != 200 || json.Unmarshal(rec.Body.Bytes(), &r) != nil || r.Response != want {
		t.Errorf("ollama options.min_p 1: %d %s %q, want %q", code, msg, r.Response, want)
	}
}

// TestRepeatLastN: the repeat penalty looks at the last repeat_last_n
// tokens (llama-server's field, ollama's option; 64 when absent, as in
// both), 0 at none and -1 at all. A penalty of 10 over every token moves
// the greedy text; over none it is the golden one.
func TestRepeatLastN(t *testing.T) {
	for _, c := range []struct {
		body string
		want int
	}{{`{}`, 64}, {`{"repeat_last_n": 0}`, 0}, {`{"repeat_last_n": -1}`, -1}} {
		var p params
		if err := json.Unmarshal([]byte(c.body), &p); err != nil {
			t.Fatal(err)
		}
		r, err := p.request(512)
		if err != nil || r.Sampling.RepeatLastN != c.want {
			t.Errorf("%s: repeat-last-n %d (%v), want %d", c.body, r.Sampling.RepeatLastN, err, c.want)
		}
	}
	var o ollamaCommon
	if r, _, err := o.request(512); err != nil || r.Sampling.RepeatLastN != 64 || r.Sampling.RepeatPenalty != 1.1 {
		t.Errorf("ollama's defaults: repeat_penalty %v over %d tokens (%v), want 1.1 over 64", r.Sampling.RepeatPenalty, r.Sampling.RepeatLastN, err)
	}

	g := newGoldenCase(t)
	h, p, n, want := g.h, g.q, g.n, g.want
	for _, c := range []struct {
		last   string
		greedy bool
	}{{"0", true}, {"-1", false}} {
		body := `{"model": "tiny", "prompt": ` + p + `, "raw": true, "stream": false, "options": {"temperature": 0, "repeat_penalty": 10, "repeat_last_n": ` + c.last + `, "num_predict": ` + n + `}}`
		code, msg, rec := ollamaDo(t, h, "POST", "/api/generate", body)
		var r struct {
			Response string `json:"response"`
		}
		if code != 200 || json.Unmarshal(rec.Body.Bytes(), &r) != nil || (r.Response == want) != c.greedy {
			t.Errorf("repeat_penalty 10, repeat_last_n %s: %d %s %q (the greedy text: %v)", c.last, code, msg, r.Response, c.greedy)
		}
	}
}

// TestLogitBias: OpenAI's logit_bias moves the sampler's logits: −100 on
// the greedy first token makes another token first, 100 on a token makes
// it first (two tokens are generated: a step past the first samples from
// the biased logits too, not the device's unbiased top-k); malformed
// biases and ids past the vocabulary are 400s naming the field.
func TestLogitBias(t *testing.T) {
	g := newGoldenCase(t)
	h, prompt, p, ids := g.h, g.prompt, g.q, g.ids
	tokens := func(bias string) []int {
		t.Helper()
		code, e, out := do(t, h, "POST", "/v1/completions", `{"prompt": `+p+`, "max_tokens": 2, "temperature": 0, "logit_bias": `+bias+`}`)
		var r struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if code != 200 || json.Unmarshal([]byte(out), &r) != nil || len(r.Choices) != 1 {
			t.Fatalf("logit_bias %s: %d %v %s", bias, code, e, out)
		}
		return tinyModel.Tokenizer.EncodeAfter(prompt, r.Choices[0].Text)
	}
	if got := tokens(`null`); len(got) == 0 || got[0] != ids[0] {
		t.Fatalf("no bias: tokens %v, golden first %d", got, ids[0])
	}
	if got := tokens(`{"` + strconv.Itoa(ids[0]) + `": -100}`); len(got) == 0 || got[0] == ids[0] {
		t.Errorf("logit_bias -100 on the greedy token %d: %v", ids[0], got)
	}
	const forced = 1000
	if got := tokens(`{"` + strconv.Itoa(forced) + `": 100}`); !slices.Equal(got, []int{forced, forced}) {
		t.Errorf("logit_bias 100 on token %d: %v, want it twice", forced, got)
	}
	for _, bias := range []string{`[1, 2]`, `{"x": 1}`, `{"-1": 1}`, `{"5": 101}`, `{"5": "a"}`, `{"99999999": 1}`} {
		code, e, _ := do(t, h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "logit_bias": `+bias+`}`)
		if code != 400 || e.Error.Param == nil || *e.Error.Param != "logit_bias" {
			t.Errorf("logit_bias %s: %d %+v, want 400 naming logit_bias", bias, code, e)
		}
	}
}
