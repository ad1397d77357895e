package runner

import (
	"bytes"
	"cmp"
	"fmt"
	"time"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/kernels"
)

// GenerateOptions controls one generation.
type GenerateOptions struct {
	MaxTokens int // tokens to generate at most; < 0 is an error
	Sampler   SamplerConfig
	// StopAtEOS stops on any of the config's eos ids (the id is not emitted).
	StopAtEOS bool
	// StopTokens stop generation after the token is emitted (e.g. a newline).
	StopTokens map[int]bool
	// OnToken is called with every generated id, as it is produced.
	OnToken func(id int)
	// Shift, when the context would overflow, drops the oldest tokens after
	// the first Keep (Session.MakeRoom) instead of stopping: a long
	// interactive session keeps going, as llama.cpp's context shift does.
	Shift bool
	Keep  int
}

// Stats is what a run measured, in the spirit of llama.cpp's timings.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	Prefill         time.Duration // prompt processing, up to the first sampled token
	Decode          time.Duration // all later tokens
	StopReason      string        // "eos", "length", "context"
	ActiveRecords   int           // FFN records computed per decode token, all layers
	Dropped         int           // tokens the context shifts dropped (GenerateOptions.Shift)
	Shift           time.Duration // re-running the kept tokens after those shifts
}

// Session is a conversation: a KV cache that grows over turns. Each new
// prompt is prefilled over every loaded neuron while its tokens vote; the
// votes make the plan its decode steps compute (SelectInfer).
type Session struct {
	M       *Model
	S       *State
	Pos     int   // tokens in the cache
	History []int // every token seen, prompt and generated
	// Sel, if set, selects each sparse layer's decode set from the votes of
	// every new prompt (the prefill itself computes all loaded neurons).
	Sel *Selection
	// Plan is the decode plan of the last prompt (nil: all loaded ranks).
	Plan    Plan
	sampler *Sampler
	votes   *Votes // the last prompt's votes, for re-selection
	since   int    // tokens decoded since the plan was made
	// static holds the "layer" budget's static sets for the counts in
	// staticFor: they depend on the model and the counts only, so they
	// are made once, not at every prompt.
	static    [][]int
	staticFor Counts
	batch     int // a prefill batch's most tokens (0: PlanBatch); tests set fewer
}

// NewSession allocates a session with a context of ctx tokens.
func (m *Model) NewSession(pool *kernels.Pool, ctx int, sc SamplerConfig) (*Session, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	s, err := m.NewState(pool, ctx)
	if err != nil {
		return nil, err
	}
	return &Session{M: m, S: s, sampler: NewSampler(sc)}, nil
}

// counts is the session's selection in neurons per layer, and whether it
// selects.
func (ss *Session) counts() (LayerCounts, bool) {
	if ss.Sel == nil {
		return nil, false
	}
	cs := ss.Sel.LayerCounts(ss.M)
	return cs, cs.Selecting()
}

// Prefill runs a new prompt (after any pending generated token) over every
// loaded neuron and returns the next-token logits and, when the session
// selects, the prompt's votes (nil otherwise). Decoding then continues
// with Decode at Pos.
func (ss *Session) Prefill(prompt []int) ([]float32, *Votes, error) {
	input := append(append([]int(nil), ss.Pending()...), prompt...)
	if ss.Pos+len(input) > ss.S.Ctx {
		return nil, nil, fmt.Errorf("prompt of %d tokens does not fit the context (%d of %d tokens free); use a larger --ctx (at most %d)",
			len(input), ss.S.Ctx-ss.Pos, ss.S.Ctx, ss.M.Config.MaxPositionEmbeddings)
	}
	var votes *Votes
	var pass Pass
	ss.Sel = ss.Sel.For(ss.M) // "auto": the router where the pack has one
	if ss.Sel != nil && ss.Sel.Budget == "pack" && !ss.M.Pack.HasBudgets() {
		return nil, nil, fmt.Errorf("--budget pack: %s has no layer budgets (sipack convert with a calibrated profile writes them)", ss.M.Pack.Path)
	}
	if cs, ok := ss.counts(); ok && !ss.Sel.PerToken() { // gate, hybrid, router: no votes
		votes = NewVotes(ss.M, cs, ss.Sel.Method)
		votes.pool = ss.S.pool
		if ss.Sel.Budget == "layer" {
			if ss.M.Pack.HasBudgets() {
				return nil, nil, fmt.Errorf("--budget layer: %s has layer budgets, which share δ and φ out per layer already (--budget uniform ignores them)", ss.M.Pack.Path)
			}
			c := cs[ss.M.Pack.Index.SparseLayers[0].Layer] // the same in every layer
			if ss.static == nil || ss.staticFor != c {
				static, err := LayerStatic(ss.M, c)
				if err != nil {
					return nil, nil, err
				}
				ss.static, ss.staticFor = static, c
			}
			votes.static = ss.static
		}
		pass.Votes = votes
	}
	// The prompt goes through in batches of at most PlanBatch tokens (as
	// llama.cpp's micro-batches): the activations then stay those of one
	// batch whatever the prompt's length, as the memory plan counts them,
	// and the votes add up over the batches.
	batch := cmp.Or(ss.batch, PlanBatch)
	var logits []float32
	for off := 0; off < len(input); off += batch {
		var err error
		if logits, err = ss.S.ForwardBatch(input[off:min(off+batch, len(input))], ss.Pos+off, pass); err != nil {
			return nil, nil, err
		}
	}
	ss.Pos += len(input)
	ss.History = append(ss.History, prompt...)
	ss.votes, ss.since = votes, 0
	return logits, votes, nil
}

// PlanFor turns a prompt's votes into the decode plan (nil votes: a nil
// plan, every loaded rank).
func (ss *Session) PlanFor(votes *Votes) (Plan, error) {
	ss.Sel = ss.Sel.For(ss.M)
	c, ok := ss.counts()
	if ok && ss.Sel.Gated() {
		if !backend.CanGate(ss.S.ex) {
			return nil, fmt.Errorf("--select %s: this device does not run the gated FFN (the CPU does)", ss.Sel.Method)
		}
		for l, lc := range c {
			if ss.M.Layers[l].Sparse && lc.Selecting() && lc.Gate < 1 {
				return nil, fmt.Errorf("--select %s at --phi %.2f: layer %d loads %d ranks (the pack's layer budgets), whose gate rows alone take φ's budget; use a larger --phi", ss.Sel.Method, ss.Sel.Phi, l, lc.Loaded)
			}
		}
		return gatePlan(ss.M, c), nil
	}
	if ok && ss.Sel.Method == "router" {
		if ss.M.RouterGroup == 0 {
			return nil, fmt.Errorf("--select router: %s has no routers (sipack route fits them)", ss.M.Pack.Path)
		}
		return routerPlan(ss.M, ss.S.ex, c)
	}
	if votes == nil {
		return nil, nil
	}
	return votes.Plan(ss.M, ss.S.ex, c, ss.Sel.Compact)
}

// Decode runs the token at Pos with the plan and returns the next-token logits.
func (ss *Session) Decode(token int, plan Plan) ([]float32, error) {
	logits, err := ss.S.ForwardBatch([]int{token}, ss.Pos, Pass{Plan: plan})
	if err != nil {
		return nil, err
	}
	ss.Pos++
	return logits, nil
}

// Step decodes token with plan, re-selecting as the session's selection
// says (Selection.Reselect): every Reselect-th token after the last plan
// computes every loaded neuron, votes with the prompt's, and the plan is
// made again from all the votes. It returns the logits and the plan for the
// next token.
func (ss *Session) Step(token int, plan Plan) ([]float32, Plan, error) {
	if ss.Sel == nil || ss.Sel.Reselect <= 0 || ss.votes == nil || ss.since+1 < ss.Sel.Reselect {
		ss.since++
		logits, err := ss.Decode(token, plan)
		return logits, plan, err
	}
	w := ss.Sel.ReselectWeight
	if w == 0 {
		w = 1
	}
	ss.votes.SetWeight(w)
	logits, err := ss.S.ForwardBatch([]int{token}, ss.Pos, Pass{Votes: ss.votes})
	if err != nil {
		return nil, nil, err
	}
	ss.Pos++
	ss.since = 0
	if plan, err = ss.PlanFor(ss.votes); err != nil {
		return nil, nil, err
	}
	return logits, plan, nil
}

// Generate appends prompt to the session, then samples up to MaxTokens
// tokens: prefill and vote, plan, decode with the plan.
func (ss *Session) Generate(prompt []int, opt GenerateOptions) (*Stats, error) {
	if opt.MaxTokens < 0 {
		return nil, fmt.Errorf("number of tokens to generate must be ≥ 0, got %d", opt.MaxTokens)
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("empty prompt")
	}
	st := &Stats{PromptTokens: len(prompt), StopReason: "length"}
	eos := map[int]bool{}
	if opt.StopAtEOS || opt.StopTokens != nil {
		for _, e := range ss.M.Config.EOSTokenIDs {
			eos[e] = true
		}
	}
	start := time.Now()
	if opt.Shift {
		if err := ss.shift(st, opt.Keep, len(ss.Pending())+len(prompt)+1); err != nil {
			return nil, err
		}
	}
	logits, votes, err := ss.Prefill(prompt)
	if err != nil {
		return nil, err
	}
	if ss.Plan, err = ss.PlanFor(votes); err != nil {
		return nil, err
	}
	st.ActiveRecords = ss.Plan.Active(ss.M)
	decodeStart := time.Now()
	for i := 0; i < opt.MaxTokens; i++ {
		tok := ss.sampler.Sample(logits, ss.History)
		if i == 0 {
			st.Prefill = time.Since(start)
			decodeStart = time.Now()
		}
		if eos[tok] {
			st.StopReason = "eos"
			break
		}
		st.GeneratedTokens++
		ss.History = append(ss.History, tok)
		if opt.OnToken != nil {
			opt.OnToken(tok)
		}
		if opt.StopTokens[tok] {
			st.StopReason = "stop token"
			break
		}
		if i == opt.MaxTokens-1 {
			break
		}
		if ss.Pos >= ss.S.Ctx {
			if !opt.Shift {
				st.StopReason = "context"
				break
			}
			if err := ss.shift(st, opt.Keep, 1); err != nil {
				return st, err
			}
		}
		if logits, ss.Plan, err = ss.Step(tok, ss.Plan); err != nil {
			return st, err
		}
	}
	if opt.MaxTokens == 0 {
		st.Prefill = time.Since(start)
	} else {
		st.Decode = time.Since(decodeStart)
	}
	// The last sampled token is not yet in the cache; the next turn feeds it.
	return st, nil
}

// shift makes room for need tokens (MakeRoom) and counts what it did in st.
func (ss *Session) shift(st *Stats, keep, need int) error {
	t0 := time.Now()
	dropped, err := ss.MakeRoom(keep, need)
	if dropped > 0 {
		st.Dropped += dropped
		st.Shift += time.Since(t0)
	}
	return err
}

// MakeRoom frees the cache for need more tokens when it lacks them: it keeps
// the first keep tokens and drops the oldest of the rest, half of them or as
// many as need takes (llama.cpp's context shift), then runs the kept tokens
// through the model again from position 0 — positions move, so their keys
// must be computed anew. It returns how many tokens it dropped.
func (ss *Session) MakeRoom(keep, need int) (int, error) {
	ctx, cached := ss.S.Ctx, ss.Pos
	if cached+need <= ctx {
		return 0, nil
	}
	keep = max(0, min(keep, cached))
	drop := max((cached-keep)/2, cached+need-ctx)
	if keep+need > ctx || drop > cached-keep {
		return 0, fmt.Errorf("%d new tokens do not fit the context of %d even after dropping every token but the first %d; use a larger --ctx (at most %d)",
			need, ctx, keep, ss.M.Config.MaxPositionEmbeddings)
	}
	pending := append([]int(nil), ss.Pending()...)
	kept := append(append([]int(nil), ss.History[:keep]...), ss.History[keep+drop:cached]...)
	batch := cmp.Or(ss.batch, PlanBatch)
	for off := 0; off < len(kept); off += batch {
		if _, err := ss.S.ForwardBatch(kept[off:min(off+batch, len(kept))], off, Pass{}); err != nil {
			ss.Pos, ss.History = 0, ss.History[:0] // the cache is part rewritten: start over
			return 0, err
		}
	}
	ss.Pos = len(kept)
	ss.History = append(kept, pending...)
	return drop, nil
}

// Pending returns the generated tokens not yet run through the model (at
// most the last one); the next Generate feeds them first.
func (ss *Session) Pending() []int {
	if len(ss.History) > ss.Pos {
		return ss.History[ss.Pos:]
	}
	return nil
}

// StopTokens returns the ids whose bytes contain one of the stop strings,
// and the model's EOS ids: generation for a task stops after the first of
// them, as the reference evaluator does for the built-in tasks' "\n".
func (m *Model) StopTokens(stops []string) map[int]bool {
	out := map[int]bool{}
	for id := 0; id < m.Tokenizer.VocabSize(); id++ {
		b := m.Tokenizer.TokenBytes(id)
		for _, s := range stops {
			if bytes.Contains(b, []byte(s)) {
				out[id] = true
				break
			}
		}
	}
	for _, e := range m.Config.EOSTokenIDs {
		out[e] = true
	}
	return out
}
