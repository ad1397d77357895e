package server

// llamacompletion.go serves llama-server's native POST /completion (and
// /completions): a prompt as text or token ids, its sampling fields under
// its names and defaults (runner.DefaultSampler, llama.cpp's), n_predict
// −1 for the rest of the context, json_schema for structured output; the
// answer's content with its stop type and timings, or server-sent events
// of {"content", "stop": false} and a last event with stop true and the
// same fields. Front ends written for llama-server (and scripts) call it.

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sipack/sipack/runner"
)

type llamaCompletionRequest struct {
	Prompt           json.RawMessage `json:"prompt"`
	NPredict         *int            `json:"n_predict"`
	Temperature      *float64        `json:"temperature"`
	TopK             *int            `json:"top_k"`
	TopP             *float64        `json:"top_p"`
	MinP             *float64        `json:"min_p"`
	RepeatPenalty    *float64        `json:"repeat_penalty"`
	RepeatLastN      *int            `json:"repeat_last_n"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	Stream           *bool           `json:"stream"`
	IgnoreEOS        *bool           `json:"ignore_eos"`
	LogitBias        json.RawMessage `json:"logit_bias"`
	JSONSchema       json.RawMessage `json:"json_schema"`
	Phi              *float64        `json:"phi"`
	Select           *string         `json:"select"`
}

// request is the engine request of a /completion body: llama-server's
// defaults where a field is absent, the checks of params.request.
func (q *llamaCompletionRequest) request(ctx int) (Request, error) {
	d := runner.DefaultSampler()
	p := params{Temperature: or(q.Temperature, &d.Temperature), TopK: or(q.TopK, &d.TopK), TopP: or(q.TopP, &d.TopP),
		MinP: or(q.MinP, &d.MinP), RepeatPenalty: or(q.RepeatPenalty, &d.RepetitionPenalty), RepeatLastN: or(q.RepeatLastN, &d.RepeatLastN),
		PresencePenalty: q.PresencePenalty, FrequencyPenalty: q.FrequencyPenalty,
		Stop: q.Stop, IgnoreEOS: q.IgnoreEOS, LogitBias: q.LogitBias, Phi: q.Phi, Select: q.Select}
	// A negative seed is llama-server's "random".
	if q.Seed != nil && *q.Seed >= 0 {
		p.Seed = q.Seed
	}
	r, err := p.request(ctx)
	if err != nil {
		return r, err
	}
	r.MaxTokens = -1 // the rest of the context
	if q.NPredict != nil {
		if *q.NPredict < -1 || *q.NPredict > ctx {
			return r, fieldErr("n_predict", "n_predict must be in [-1, %d] (-1: the rest of the context), got %d", ctx, *q.NPredict)
		}
		r.MaxTokens = *q.NPredict
	}
	if !isNull(q.JSONSchema) {
		if r.Format, err = compileSchema("json_schema", q.JSONSchema); err != nil {
			return r, err
		}
	}
	return r, nil
}

// llamaPrompt is a /completion prompt's tokens: text (with the model's
// BOS, as llama-server adds it) or an array of token ids.
func (s *Server) llamaPrompt(raw json.RawMessage) ([]int, error) {
	const what = "a string or an array of token ids"
	if isNull(raw) {
		return nil, fieldErr("prompt", "prompt is required: %s", what)
	}
	var text string
	if first(raw) == '"' && json.Unmarshal(raw, &text) == nil {
		return s.e.Tok.Encode(text, true), nil
	}
	if first(raw) != '[' {
		return nil, mustBe("prompt", what, raw)
	}
	return parseTokens("prompt", raw, s.e.Tok.VocabSize())
}

func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	var req llamaCompletionRequest
	if !s.decodeRequest(w, r, &req) {
		return
	}
	ids, err := s.llamaPrompt(req.Prompt)
	if err != nil {
		badRequest(w, err)
		return
	}
	gen, err := req.request(s.e.Ctx())
	if err == nil {
		err = s.prepare(&gen, ids)
	}
	if err != nil {
		badRequest(w, err)
		return
	}
	s.llamaRun(w, r, req.Stream != nil && *req.Stream, gen)
}

// llamaRun generates a prepared /completion or /infill request and answers
// in llama-server's shape: one JSON object, or server-sent events of the
// text and a last event with the counts.
func (s *Server) llamaRun(w http.ResponseWriter, r *http.Request, stream bool, gen Request) {
	sl, release := s.generating(w, r, &gen)
	if sl == nil {
		return
	}
	defer release()
	start := time.Now()
	var ev *sse
	if stream {
		ev = newSSE(w)
	}
	gen.OnText = func(t string) {
		if ev != nil {
			ev.send(map[string]any{"content": t, "stop": false, "index": 0, "id_slot": 0})
		}
		if s.onText != nil {
			s.onText(r.Context())
		}
	}
	res, err := s.generate(r, sl, gen)
	release()
	if err != nil {
		if ev != nil {
			var e apiError
			e.Error.Message, e.Error.Type, e.Error.Code = err.Error(), "invalid_request_error", "invalid_request"
			ev.send(e)
		} else {
			badRequest(w, err)
		}
		return
	}
	s.finished(r, res, start)
	stopType := "limit"
	switch {
	case res.FinishReason == "cancelled":
		stopType = "none"
	case res.StopWord != "":
		stopType = "word"
	case res.FinishReason == "stop":
		stopType = "eos"
	}
	out := map[string]any{
		"content": res.Text, "tokens": res.Tokens, "stop": true, "index": 0, "id_slot": 0, "model": s.opt.Model,
		"tokens_predicted": res.CompletionTokens, "tokens_evaluated": res.PromptTokens,
		"tokens_cached": res.PromptTokens - res.PrefilledTokens, "truncated": false,
		"stop_type": stopType, "stopping_word": res.StopWord, "timings": timingsOf(res),
	}
	if ev != nil {
		out["content"] = "" // the events carried it
		ev.send(out)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
