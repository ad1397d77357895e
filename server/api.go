package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/runner"
)

// params are the generation fields shared by chat and text completions.
// Pointers tell a field that is absent from one that is zero.
type params struct {
	Model               *string         `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float64        `json:"min_p"` // llama-server's extension
	Seed                *int64          `json:"seed"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	RepeatPenalty       *float64        `json:"repeat_penalty"`
	RepeatLastN         *int            `json:"repeat_last_n"` // llama-server's extension
	LogitBias           json.RawMessage `json:"logit_bias"`
	Stop                json.RawMessage `json:"stop"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int  `json:"n"`
	IgnoreEOS *bool `json:"ignore_eos"`
	// Extensions: this request's SelectInfer φ and α (γ is the server's),
	// and how it chooses its neurons (sirun's --select: auto, paper or
	// router).
	Phi    *float64 `json:"phi"`
	Select *string  `json:"select"`

	// Structured output: JSON, or JSON of a schema (structured.go).
	ResponseFormat json.RawMessage `json:"response_format"`
}

type chatRequest struct {
	params
	Messages    json.RawMessage `json:"messages"`
	Logprobs    *bool           `json:"logprobs"`
	TopLogprobs *int            `json:"top_logprobs"`
	Tools       json.RawMessage `json:"tools"`       // tools.go
	ToolChoice  json.RawMessage `json:"tool_choice"` // tools.go
}

type completionRequest struct {
	params
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"` // the legacy API: how many alternatives, 0-5
}

// logprobs sets a request's log probabilities from chat's fields: logprobs
// and top_logprobs (0-20, which needs logprobs), as OpenAI checks them.
func (req *chatRequest) logprobs(gen *Request) error {
	on := req.Logprobs != nil && *req.Logprobs
	if req.TopLogprobs != nil {
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return fieldErr("top_logprobs", "top_logprobs must be in [0, 20], got %d", *req.TopLogprobs)
		}
		if !on {
			return fieldErr("top_logprobs", "top_logprobs needs logprobs: true")
		}
		gen.TopLogprobs = *req.TopLogprobs
	}
	gen.Logprobs = on
	return nil
}

// chatLogprobs is a chat choice's logprobs object.
func (s *Server) chatLogprobs(res *Result) any {
	if res.Logprobs == nil {
		return nil
	}
	entry := func(lp TokenLogprob) map[string]any {
		b := s.e.Tok.TokenBytes(lp.ID)
		ints := make([]int, len(b))
		for i, c := range b {
			ints[i] = int(c)
		}
		return map[string]any{"token": string(b), "logprob": lp.Logprob, "bytes": ints}
	}
	content := make([]any, len(res.Logprobs))
	for i, lp := range res.Logprobs {
		e := entry(lp)
		top := make([]any, len(lp.Top))
		for j, t := range lp.Top {
			top[j] = entry(t)
		}
		e["top_logprobs"] = top
		content[i] = e
	}
	return map[string]any{"content": content}
}

// completionLogprobs is a text completion choice's logprobs object (the
// legacy shape: parallel lists, text offsets from the prompt's end).
func (s *Server) completionLogprobs(res *Result) any {
	if res.Logprobs == nil {
		return nil
	}
	var tokens []string
	var lps []float64
	var tops []map[string]float64
	var offsets []int
	off := 0
	for _, lp := range res.Logprobs {
		t := string(s.e.Tok.TokenBytes(lp.ID))
		tokens, lps, offsets = append(tokens, t), append(lps, lp.Logprob), append(offsets, off)
		off += len(t)
		top := map[string]float64{}
		for _, a := range lp.Top {
			top[string(s.e.Tok.TokenBytes(a.ID))] = a.Logprob
		}
		tops = append(tops, top)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
}

// parseLogitBias reads OpenAI's logit_bias: an object from token ids (as
// strings) to biases in [−100, 100] (absent or null: none). The ids are
// checked against the vocabulary when the request is prepared.
func parseLogitBias(raw json.RawMessage) (map[int]float32, error) {
	if isNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, mustBe("logit_bias", "an object from token ids to biases", raw)
	}
	bias := make(map[int]float32, len(m))
	for k, v := range m {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 {
			return nil, fieldErr("logit_bias", "logit_bias keys must be token ids, got %q", clip(k, 40))
		}
		var b float64
		if err := json.Unmarshal(v, &b); err != nil || b < -100 || b > 100 {
			return nil, fieldErr("logit_bias", "logit_bias[%q] must be a number in [-100, 100], got %s", k, describe(v))
		}
		bias[id] = float32(b)
	}
	return bias, nil
}

// request turns params into an engine request (without the prompt).
func (p *params) request(ctx int) (Request, error) {
	r := Request{Sampling: Sampling{Temperature: 1, TopP: 1, RepeatPenalty: 1, RepeatLastN: runner.DefaultSampler().RepeatLastN, Seed: rand.Uint64()}}
	in := func(name string, v *float64, lo, hi float64, loOpen bool) error {
		if v == nil {
			return nil
		}
		if *v < lo || *v > hi || (loOpen && *v == lo) {
			open := "["
			if loOpen {
				open = "("
			}
			return fieldErr(name, "%s must be in %s%v, %v], got %v", name, open, lo, hi, *v)
		}
		return nil
	}
	for _, err := range []error{
		in("temperature", p.Temperature, 0, 2, false),
		in("top_p", p.TopP, 0, 1, true),
		in("min_p", p.MinP, 0, 1, false),
		in("presence_penalty", p.PresencePenalty, -2, 2, false),
		in("frequency_penalty", p.FrequencyPenalty, -2, 2, false),
		in("repeat_penalty", p.RepeatPenalty, 0, 10, true),
		in("phi", p.Phi, 0, 1, true),
	} {
		if err != nil {
			return r, err
		}
	}
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.Sampling.Temperature, p.Temperature)
	set(&r.Sampling.TopP, p.TopP)
	set(&r.Sampling.MinP, p.MinP)
	set(&r.Sampling.PresencePenalty, p.PresencePenalty)
	set(&r.Sampling.FrequencyPenalty, p.FrequencyPenalty)
	set(&r.Sampling.RepeatPenalty, p.RepeatPenalty)
	set(&r.Phi, p.Phi)
	if p.Select != nil {
		m, err := runner.ParseMethod(*p.Select)
		if err != nil {
			return r, fieldErr("select", "select must be one of %s, got %q", strings.Join(runner.Methods, ", "), clip(*p.Select, 40))
		}
		r.Select = m
	}
	if p.TopK != nil {
		if *p.TopK < 0 {
			return r, fieldErr("top_k", "top_k must be ≥ 0, got %d", *p.TopK)
		}
		r.Sampling.TopK = *p.TopK
	}
	bias, err := parseLogitBias(p.LogitBias)
	if err != nil {
		return r, err
	}
	r.LogitBias = bias
	if p.RepeatLastN != nil {
		if *p.RepeatLastN < -1 {
			return r, fieldErr("repeat_last_n", "repeat_last_n must be ≥ -1 (-1: every token, 0: none), got %d", *p.RepeatLastN)
		}
		r.Sampling.RepeatLastN = *p.RepeatLastN
	}
	if p.Seed != nil {
		r.Sampling.Seed = uint64(*p.Seed)
	}
	if p.N != nil && *p.N != 1 {
		return r, fieldErr("n", "n must be 1 (one choice per request), got %d", *p.N)
	}
	if p.IgnoreEOS != nil {
		r.IgnoreEOS = *p.IgnoreEOS
	}
	r.MaxTokens = -1 // the rest of the context
	// max_completion_tokens is OpenAI's newer name: it wins over max_tokens.
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", p.MaxTokens}, {"max_completion_tokens", p.MaxCompletionTokens}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || *f.v > ctx {
			return r, fieldErr(f.name, "%s must be in [0, %d] (the context), got %d", f.name, ctx, *f.v)
		}
		r.MaxTokens = *f.v
	}
	stops, err := parseStop(p.Stop)
	if err != nil {
		return r, err
	}
	r.Stop = stops
	if r.Format, err = parseResponseFormat(p.ResponseFormat); err != nil {
		return r, err
	}
	return r, nil
}

// prepare validates a request's prompt length and max tokens.
func (s *Server) prepare(r *Request, prompt []int) error {
	ctx := s.e.Ctx()
	vocab := s.e.opt.Model.Config.VocabSize
	for id := range r.LogitBias {
		if id >= vocab {
			return fieldErr("logit_bias", "logit_bias names token %d; the vocabulary has %d", id, vocab)
		}
	}
	if len(prompt) == 0 {
		return fmt.Errorf("empty prompt")
	}
	if len(prompt) >= ctx {
		return fmt.Errorf("prompt is %d tokens, the context is %d (the server's --ctx)", len(prompt), ctx)
	}
	if r.MaxTokens < 0 {
		r.MaxTokens = ctx - len(prompt)
	}
	r.Prompt = prompt
	return nil
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"` // prompt tokens the slot's cache gave
	} `json:"prompt_tokens_details"`
}

func usageOf(res *Result) *usage {
	u := &usage{PromptTokens: res.PromptTokens, CompletionTokens: res.CompletionTokens, TotalTokens: res.PromptTokens + res.CompletionTokens}
	u.PromptTokensDetails.CachedTokens = res.PromptTokens - res.PrefilledTokens
	return u
}

// timings mirrors llama-server's per-request timings (an extension).
func timingsOf(res *Result) map[string]any {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	per := func(d time.Duration, n int) (msPer, perS float64) {
		if n > 0 && d > 0 {
			return ms(d) / float64(n), float64(n) / d.Seconds()
		}
		return 0, 0
	}
	pt, ps := per(res.Prefill, res.PrefilledTokens)
	dt, ds := per(res.Decode, res.CompletionTokens)
	return map[string]any{
		"prompt_n": res.PrefilledTokens, "prompt_ms": ms(res.Prefill), "cache_n": res.PromptTokens - res.PrefilledTokens,
		"prompt_per_token_ms": pt, "prompt_per_second": ps,
		"predicted_n": res.CompletionTokens, "predicted_ms": ms(res.Decode),
		"predicted_per_token_ms": dt, "predicted_per_second": ds,
		"ffn_records_per_token": res.ActiveRecords,
	}
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !s.decodeRequest(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		badRequest(w, err)
		return
	}
	gen, err := req.request(s.e.Ctx())
	if err == nil {
		err = req.logprobs(&gen)
	}
	if err != nil {
		badRequest(w, err)
		return
	}
	tmpl := s.e.Template()
	if tmpl == nil {
		badRequest(w, errors.New("the model has no chat template (convert it with sipack convert --chat-template FILE); use /v1/completions"))
		return
	}
	tu, err := toolUseOf(req.Tools, req.ToolChoice, tmpl)
	if err != nil {
		badRequest(w, err)
		return
	}
	text, err := tmpl.RenderTools(msgs, tu.list(), true)
	if err != nil {
		badRequest(w, err)
		return
	}
	if err := s.prepare(&gen, chat.Encode(s.e.Tok, text)); err != nil {
		badRequest(w, err)
		return
	}
	s.run(w, r, &req.params, gen, true, tu)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if !s.decodeRequest(w, r, &req) || !s.checkModel(w, req.Model) {
		return
	}
	prompt, err := parsePrompt(req.Prompt)
	if err != nil {
		badRequest(w, err)
		return
	}
	gen, err := req.request(s.e.Ctx())
	if err == nil && req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 5 {
			err = fieldErr("logprobs", "logprobs must be in [0, 5], got %d", *req.Logprobs)
		} else {
			gen.Logprobs, gen.TopLogprobs = true, *req.Logprobs
		}
	}
	if err != nil {
		badRequest(w, err)
		return
	}
	if err := s.prepare(&gen, s.e.Tok.Encode(prompt, true)); err != nil {
		badRequest(w, err)
		return
	}
	s.run(w, r, &req.params, gen, false, nil)
}

// run waits for a slot, generates, and answers in JSON or as events; tu
// reads a chat answer's tool calls (nil: none).
func (s *Server) run(w http.ResponseWriter, r *http.Request, p *params, gen Request, isChat bool, tu *toolUse) {
	stream := p.Stream != nil && *p.Stream
	sl, release := s.generating(w, r, &gen)
	if sl == nil {
		return
	}
	defer release()
	send := func(string) {}
	gen.OnText = func(t string) {
		send(t)
		if s.onText != nil {
			s.onText(r.Context())
		}
	}
	id, object := s.id("cmpl-"), "text_completion"
	if isChat {
		id, object = s.id("chatcmpl-"), "chat.completion"
	}
	model := s.opt.Model
	start := time.Now()
	var ev *sse
	if stream {
		ev = newSSE(w)
		object += ".chunk"
		if !isChat {
			object = "text_completion"
		}
		chunk := func(delta map[string]any, text string, finish any) map[string]any {
			choice := map[string]any{"index": 0, "finish_reason": finish, "logprobs": nil}
			if isChat {
				choice["delta"] = delta
			} else {
				choice["text"] = text
			}
			return map[string]any{"id": id, "object": object, "created": start.Unix(), "model": model, "choices": []any{choice}}
		}
		if isChat {
			ev.send(chunk(map[string]any{"role": "assistant", "content": ""}, "", nil))
		}
		lps := &streamedLogprobs{s: s, chat: isChat}
		if gen.Logprobs {
			gen.OnLogprob = lps.add
		}
		send = func(t string) { ev.send(lps.attach(chunk(map[string]any{"content": t}, t, nil))) }
		ts := tu.stream() // holds back text that may be a tool call
		send = ts.wrap(send)
		res, err := s.generate(r, sl, gen)
		release()
		if err != nil {
			var e apiError
			e.Error.Message, e.Error.Type, e.Error.Code = err.Error(), "invalid_request_error", "invalid_request"
			ev.send(e)
			ev.raw([]byte("[DONE]"))
			return
		}
		s.finished(r, res, start)
		finish := ts.finish(res.Text, finishReason(res), func(d map[string]any) { ev.send(chunk(d, "", nil)) })
		ev.send(lps.attach(chunk(map[string]any{}, "", finish)))
		if p.StreamOptions != nil && p.StreamOptions.IncludeUsage {
			ev.send(map[string]any{"id": id, "object": object, "created": start.Unix(), "model": model, "choices": []any{}, "usage": usageOf(res)})
		}
		ev.raw([]byte("[DONE]"))
		return
	}
	res, err := s.generate(r, sl, gen)
	release()
	if err != nil {
		badRequest(w, err)
		return
	}
	s.finished(r, res, start)
	choice := map[string]any{"index": 0, "finish_reason": finishReason(res)}
	if isChat {
		choice["message"], choice["finish_reason"] = tu.message(res.Text, finishReason(res))
		choice["logprobs"] = s.chatLogprobs(res)
	} else {
		choice["text"] = res.Text
		choice["logprobs"] = s.completionLogprobs(res)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": object, "created": start.Unix(), "model": model,
		"choices": []any{choice}, "usage": usageOf(res), "timings": timingsOf(res),
	})
}

func finishReason(res *Result) string {
	if res.FinishReason == "cancelled" {
		return "stop"
	}
	return res.FinishReason
}

func (s *Server) finished(r *http.Request, res *Result, start time.Time) {
	if s.onResult != nil {
		s.onResult(res)
	}
	if s.opt.Log != nil {
		s.opt.Log.Printf("%s %s: %d prompt tokens (%d prefilled), %d generated, %s, %.0f ms",
			r.Method, r.URL.Path, res.PromptTokens, res.PrefilledTokens, res.CompletionTokens, res.FinishReason, float64(time.Since(start).Microseconds())/1000)
	}
}
