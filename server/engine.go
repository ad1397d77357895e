package server

// engine.go is the one file that drives the runner: sessions, the prompt
// cache, prefill (with SelectInfer's vote), the decode loop and token
// streaming. Everything else in this package (HTTP, chat turns) talks to
// Engine and Slot only, so a change of the runner's API is a change of this
// file.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/constrain"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
	"github.com/sipack/sipack/tokenizer"
)

// EngineOptions configure an Engine.
type EngineOptions struct {
	Model *runner.Model
	// Gamma is the loaded fraction γ (fixed when the pack was opened).
	Gamma float64
	// Selection is the default SelectInfer selection (φ, α, δ); nil computes
	// every loaded neuron.
	Selection *runner.Selection
	Ctx       int // context of each slot, tokens
	Threads   int // worker threads of each slot
	// Template is the chat template (nil: the model has none; chat is refused).
	Template *chat.Template
}

// Engine is a loaded model that slots run on.
type Engine struct {
	opt EngineOptions
	Tok *tokenizer.Tokenizer
	eos map[int]bool
}

// NewEngine checks the options and returns an engine.
func NewEngine(opt EngineOptions) (*Engine, error) {
	m := opt.Model
	if opt.Ctx < 1 || opt.Ctx > m.Config.MaxPositionEmbeddings {
		return nil, fmt.Errorf("--ctx must be in [1, %d] for this model, got %d", m.Config.MaxPositionEmbeddings, opt.Ctx)
	}
	if opt.Threads < 1 {
		return nil, fmt.Errorf("threads per slot must be ≥ 1, got %d", opt.Threads)
	}
	e := &Engine{opt: opt, Tok: m.Tokenizer, eos: map[int]bool{}}
	for _, id := range m.Config.EOSTokenIDs {
		e.eos[id] = true
	}
	return e, nil
}

// Ctx is the context of a slot in tokens.
func (e *Engine) Ctx() int { return e.opt.Ctx }

// Template is the chat template, or nil.
func (e *Engine) Template() *chat.Template { return e.opt.Template }

// LoadedRecords is the number of FFN records loaded, all layers.
func (e *Engine) LoadedRecords() int {
	n := 0
	for _, L := range e.opt.Model.Layers {
		n += L.Ranks
	}
	return n
}

// Slot is one conversation at a time: a KV cache, a selection and a worker
// pool of its own. A slot is not safe for concurrent use.
type Slot struct {
	e    *Engine
	pool *kernels.Pool
	ss   *runner.Session
}

// NewSlot allocates a slot (its KV cache and workers).
func (e *Engine) NewSlot() (*Slot, error) {
	pool := kernels.NewPool(e.opt.Threads)
	ss, err := e.opt.Model.NewSession(pool, e.opt.Ctx, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Slot{e: e, pool: pool, ss: ss}, nil
}

// Close stops the slot's workers.
func (s *Slot) Close() { s.pool.Close() }

// Reset forgets the conversation: the next request is prefilled from the start.
func (s *Slot) Reset() { s.ss.Truncate(0) }

// Cached is how many of r's prompt tokens the slot's cache gives it: what
// Generate prefills not (runner.Session.Cached).
func (s *Slot) Cached(r *Request) int {
	sel, err := s.e.selection(r)
	if err != nil || len(r.Prompt) == 0 {
		return 0
	}
	return s.ss.Cached(r.Prompt, sel)
}

// CacheBytes is the size of the slot's KV cache.
func (s *Slot) CacheBytes() int { return int(s.ss.S.CacheBytes()) }

// Sampling is a request's sampling: as llama.cpp orders it, repetition
// penalty, then greedy or top-k → top-p → min-p → temperature; presence and
// frequency penalties (OpenAI's) are subtracted from the logits of the
// tokens generated so far before that.
type Sampling struct {
	Temperature      float64 // 0: greedy
	TopK             int     // 0: off
	TopP             float64 // 1: off
	MinP             float64 // 0: off
	Seed             uint64
	PresencePenalty  float64
	FrequencyPenalty float64
	RepeatPenalty    float64 // 1 (or 0): off
	RepeatLastN      int     // the recent tokens it looks at (-1: all, 0: none)
}

// Request is one generation. Its prompt is prefilled past what the slot's
// cache holds of it (Slot.Cached); the result is a fresh slot's, up to the
// arithmetic of other prefill batches.
type Request struct {
	Prompt    []int
	MaxTokens int
	Sampling  Sampling
	// LogitBias is added to the logits of its tokens before sampling
	// (OpenAI's logit_bias: −100 bans a token, 100 all but forces it).
	LogitBias map[int]float32
	Stop      []string // stop strings; the text ends before the first one
	IgnoreEOS bool
	// Phi and Select override the engine's selection for this request (0
	// and MethodAuto: the default).
	Phi    float64
	Select runner.Method
	// OnText receives the generated text as it becomes final (whole UTF-8
	// characters, never a part of a stop string).
	OnText func(string)
	// Logprobs records each generated token's log probability and those of
	// the TopLogprobs most likely tokens at its place (Result.Logprobs).
	Logprobs    bool
	TopLogprobs int
	// OnLogprob, with Logprobs, receives each generated token's entry as it
	// is sampled, before its text reaches OnText.
	OnLogprob func(TokenLogprob)
	// Format constrains the output to JSON (of a schema): structured.go.
	Format *constrain.Grammar
}

// TokenLogprob is a generated token with its log probability under the
// model's distribution (before penalties, temperature and truncation), and
// the most likely tokens at its place.
type TokenLogprob struct {
	ID      int
	Logprob float64
	Top     []TokenLogprob // most likely first; empty unless asked for
}

// Result is what a generation produced and measured.
type Result struct {
	Text             string
	Tokens           []int
	PromptTokens     int
	PrefilledTokens  int    // prompt tokens run through the model (the rest was cached)
	FinishReason     string // "stop" (eos or stop string), "length", "cancelled"
	StopWord         string // the stop string that ended the text, if one did
	Prefill, Decode  time.Duration
	ActiveRecords    int // FFN records computed per decode token
	CompletionTokens int
	Logprobs         []TokenLogprob // one per generated token, with Request.Logprobs
}

// selection returns the selection of a request, nil for all loaded neurons.
func (e *Engine) selection(r *Request) (*runner.Selection, error) {
	def := e.opt.Selection
	if r.Phi == 0 && r.Select == runner.MethodAuto {
		return def, nil
	}
	sel := runner.Selection{Phi: 1, Alpha: 0.2, Compact: true}
	if def != nil {
		sel = *def
	} else {
		sel.Base = float64(e.opt.Model.Pack.Index.BaseFraction)
	}
	if r.Phi != 0 {
		sel.Phi = r.Phi
	}
	if r.Select != runner.MethodAuto {
		sel.Method = r.Select
	}
	m := e.opt.Model
	rs := sel.For(m)
	if err := rs.Validate(m.Config.IntermediateSize, m.Pack.LoadedRanks); err != nil {
		return nil, err
	}
	return rs, nil
}

// Generate runs a request on the slot. It stops early, with FinishReason
// "cancelled", when ctx is done.
func (s *Slot) Generate(ctx context.Context, r Request) (*Result, error) {
	ss := s.ss
	if r.MaxTokens < 0 {
		return nil, fmt.Errorf("max tokens must be ≥ 0, got %d", r.MaxTokens)
	}
	if len(r.Prompt) == 0 {
		return nil, fmt.Errorf("empty prompt")
	}
	sel, err := s.e.selection(&r)
	if err != nil {
		return nil, err
	}
	sc := runner.SamplerConfig{Temperature: r.Sampling.Temperature, TopK: r.Sampling.TopK, TopP: r.Sampling.TopP, MinP: r.Sampling.MinP,
		RepetitionPenalty: r.Sampling.RepeatPenalty, RepeatLastN: r.Sampling.RepeatLastN, Seed: r.Sampling.Seed}
	if sc.TopP == 0 {
		sc.TopP = 1
	}
	if sc.RepetitionPenalty == 0 {
		sc.RepetitionPenalty = 1
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}

	// What to feed: the prompt past what the cache holds as a fresh slot's
	// prefill would (under the paper's selection, with the votes of what it
	// keeps); the cache past that is dropped.
	keep := ss.Cached(r.Prompt, sel)
	ss.Truncate(keep)
	feed := r.Prompt[keep:]
	res := &Result{PromptTokens: len(r.Prompt), PrefilledTokens: len(feed), FinishReason: "length"}

	start := time.Now()
	ss.Sel = sel
	logits, err := ss.Start(feed) // prefill, then this request's decode set
	if err != nil {
		s.Reset()
		return nil, err
	}
	res.ActiveRecords = ss.Plan.Active(ss.M)
	res.Prefill = time.Since(start)
	decodeStart := time.Now()

	sampler := runner.NewSampler(sc)
	// con is the JSON grammar's mask (structured.go); nil without r.Format.
	con := s.constraint(&r)
	var raw []float32 // the logits as the model gave them, for Logprobs
	counts := map[int]int{}
	var stream tokenizer.TextStream
	var out strings.Builder
	sent := 0 // bytes of out passed to OnText
	stopped := false
	emit := func(final bool) {
		text := out.String()
		end := len(text)
		if !final {
			end -= stopOverlap(text[sent:], r.Stop)
		}
		if end > sent && r.OnText != nil {
			r.OnText(text[sent:end])
		}
		sent = max(sent, end)
	}
	// Without logprobs, penalties or a grammar a step needs no logits: the
	// session reads back only what the sampler needs (NextSampled).
	plain := con == nil && !r.Logprobs && r.Sampling.PresencePenalty == 0 && r.Sampling.FrequencyPenalty == 0 && len(r.LogitBias) == 0
	next := -1 // the token NextSampled drew (−1: sample from logits)
	for i := 0; i < r.MaxTokens; i++ {
		if ctx.Err() != nil {
			res.FinishReason = "cancelled"
			break
		}
		var lse float64
		var top []TokenLogprob
		if r.Logprobs { // the model's distribution, before the penalties and the sampler change logits
			raw = append(raw[:0], logits...)
			lse = runner.LogSumExp(raw)
			if r.TopLogprobs > 0 {
				for _, id := range runner.TopTokens(raw, r.TopLogprobs) {
					top = append(top, TokenLogprob{ID: id, Logprob: float64(raw[id]) - lse})
				}
			}
		}
		for t, b := range r.LogitBias {
			logits[t] += b
		}
		if r.Sampling.PresencePenalty != 0 || r.Sampling.FrequencyPenalty != 0 {
			for t, n := range counts {
				logits[t] -= float32(r.Sampling.PresencePenalty + r.Sampling.FrequencyPenalty*float64(n))
			}
		}
		tok := next
		if tok < 0 {
			tok = con.sample(sampler, logits, ss.History)
		}
		if tok < 0 { // the grammar allows no token
			res.FinishReason = con.stuck()
			break
		}
		if s.e.eos[tok] && !r.IgnoreEOS {
			res.FinishReason = "stop"
			break
		}
		ss.History = append(ss.History, tok)
		res.Tokens = append(res.Tokens, tok)
		if r.Logprobs {
			lp := TokenLogprob{ID: tok, Logprob: float64(raw[tok]) - lse, Top: top}
			res.Logprobs = append(res.Logprobs, lp)
			if r.OnLogprob != nil {
				r.OnLogprob(lp)
			}
		}
		counts[tok]++
		out.WriteString(stream.Push(s.e.Tok.TokenBytes(tok)))
		if cut, word := findStop(out.String(), sent, r.Stop); cut >= 0 {
			res.StopWord = word
			text := out.String()[:cut]
			out.Reset()
			out.WriteString(text)
			res.FinishReason, stopped = "stop", true
			break
		}
		emit(false)
		if con.done() { // the JSON value is complete
			res.FinishReason = "stop"
			break
		}
		if i == r.MaxTokens-1 {
			break
		}
		if ss.Pos >= ss.S.Ctx {
			break // "length": the context is full
		}
		if plain {
			next, err = ss.NextSampled(tok, sampler)
		} else {
			logits, err = ss.Next(tok)
		}
		if err != nil {
			s.Reset()
			return nil, err
		}
	}
	if !stopped {
		out.WriteString(stream.Flush())
	}
	emit(true)
	res.Text = out.String()
	res.CompletionTokens = len(res.Tokens)
	res.Decode = time.Since(decodeStart)
	return res, nil
}

// findStop finds the first stop string in text[from:] (the one listed
// first where two start together): where it starts and which it is, or
// −1. None can start before from: text is only passed on when no suffix
// of it begins a stop.
func findStop(text string, from int, stops []string) (cut int, word string) {
	cut = -1
	for _, st := range stops {
		if i := strings.Index(text[from:], st); i >= 0 && (cut < 0 || from+i < cut) {
			cut, word = from+i, st
		}
	}
	return cut, word
}

// stopOverlap is the length of the longest suffix of text that is a proper
// prefix of a stop string: text that may yet become a stop and is held back.
func stopOverlap(text string, stops []string) int {
	n := 0
	for _, st := range stops {
		for k := min(len(st)-1, len(text)); k > n; k-- {
			if strings.HasSuffix(text, st[:k]) {
				n = k
				break
			}
		}
	}
	return n
}
