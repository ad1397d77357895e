package runner

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/sipack/sipack/backend"
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
// votes make the plan its decode steps compute (SelectInfer). Start runs a
// prompt and Next each token after it: every caller's decode loop.
type Session struct {
	M       *Model
	S       *State
	Pos     int   // tokens in the cache; Truncate, not an assignment, moves it back
	History []int // every token seen, prompt and generated
	// Sel, if set, selects each sparse layer's decode set (the prefill
	// itself computes all loaded neurons).
	Sel *Selection
	// Plan is the decode plan of the last prompt (nil: all loaded ranks).
	Plan    Plan
	sampler *Sampler
	batch   int // a prefill batch's most tokens (0: PlanBatch); tests set fewer
	// exact is how many of the cache's first positions hold what one
	// prefill of History over every loaded neuron would: a decode step under
	// a selecting plan computes fewer neurons, so its keys and values are not
	// a prompt's, and Cached never reuses them.
	exact int
	// marks are the votes of the cache's first tokens at the ends of its
	// last prefills (paper selection), oldest first: a prompt that resumes at
	// one adds its votes to them, so its plan is that of the whole prompt.
	marks []voteMark
	// tail is the next-token logits where the last prefill ended, at
	// tailPos (empty: none): a prompt that ends there again starts from them
	// with nothing to prefill, and gets the same logits to the bit.
	tail    []float32
	tailPos int
}

// voteMark is the votes of the first pos tokens, counted with cs. A mark
// costs 4 bytes per loaded rank of every sparse layer (512 KiB for the 1B
// shape at γ = 1); a session keeps at most maxMarks.
type voteMark struct {
	pos    int
	cs     LayerCounts
	counts [][]uint32
}

// maxMarks bounds a session's vote marks: the last few prefills are what
// a conversation resumes from.
const maxMarks = 8

// NewSession allocates a session with a context of ctx tokens.
func (m *Model) NewSession(pool backend.Pool, ctx int, sc SamplerConfig) (*Session, error) {
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

// Start runs a new prompt (after any pending generated token) over every
// loaded neuron — its tokens vote when the selection takes votes — then
// makes the decode plan of the tokens that follow (ss.Plan). A prompt that
// starts at a vote mark (a prefill's end, nothing decoded since: see
// Cached) adds its votes to the mark's, as one prefill of both would count;
// an empty one at the end of the last prefill (Cached gives a prompt all its
// tokens) takes that prefill's logits and votes. It returns the logits of
// the token after the prompt; Next continues at Pos.
func (ss *Session) Start(prompt []int) ([]float32, error) {
	logits, votes, err := ss.prefill(prompt)
	if err != nil {
		return nil, err
	}
	if ss.Plan, err = ss.planFor(votes); err != nil {
		return nil, err
	}
	return logits, nil
}

// Next runs token, the one sampled from the last logits, with the plan and
// returns the logits of the token after it. The caller keeps History.
func (ss *Session) Next(token int) ([]float32, error) {
	logits, err := ss.S.ForwardBatch([]int{token}, ss.Pos, Pass{Plan: ss.Plan})
	if err != nil {
		return nil, err
	}
	if ss.Plan == nil && ss.exact == ss.Pos { // every loaded neuron, as a prefill computes
		ss.exact++
	}
	ss.Pos++
	return logits, nil
}

// NextArgmax is Next followed by Argmax of the logits, which then need not
// leave the device (backend.Argmaxer): a greedy decode step.
func (ss *Session) NextArgmax(token int) (int, error) {
	next, err := ss.S.ForwardArgmax(token, ss.Pos, Pass{Plan: ss.Plan})
	if err != nil {
		return 0, err
	}
	if ss.Plan == nil && ss.exact == ss.Pos {
		ss.exact++
	}
	ss.Pos++
	return next, nil
}

// NextTopK is Next followed by the top len(ids) of the logits (ids and
// vals, in index order), found where the logits are: a sampled decode step
// whose sampler needs only its top-k (SampleTop).
func (ss *Session) NextTopK(token int, ids []int32, vals []float32) error {
	if err := ss.S.ForwardTopK(token, ss.Pos, Pass{Plan: ss.Plan}, ids, vals); err != nil {
		return err
	}
	if ss.Plan == nil && ss.exact == ss.Pos {
		ss.exact++
	}
	ss.Pos++
	return nil
}

// deviceTopK is the k of a sampled decode step whose candidates the
// backend can find (backend.TopKer): a sampler at a temperature with a
// top-k it can return and no penalty (which would need the history's
// logits); 0 when the step needs all the logits.
func (ss *Session) deviceTopK(s *Sampler) int {
	c := s.cfg
	tk, ok := ss.S.ex.(backend.TopKer)
	if !ok || c.Temperature == 0 || c.RepetitionPenalty != 1 || c.TopK < 1 || c.TopK > tk.MaxTopK() || c.TopK > ss.M.Config.VocabSize {
		return 0
	}
	return c.TopK
}

// NextSampled runs token (History already ends with it) and returns the
// token s draws after it, reading back from the device only what s needs:
// the argmax when greedy (NextArgmax), the top-k where the backend finds
// it (NextTopK), else the logits.
func (ss *Session) NextSampled(token int, s *Sampler) (int, error) {
	if s.cfg.Temperature == 0 && s.cfg.RepetitionPenalty == 1 {
		return ss.NextArgmax(token)
	}
	if k := ss.deviceTopK(s); k > 0 {
		if len(s.topIDs) != k {
			s.topIDs, s.topVals = make([]int32, k), make([]float32, k)
		}
		if err := ss.NextTopK(token, s.topIDs, s.topVals); err != nil {
			return 0, err
		}
		return s.SampleTop(s.topIDs, s.topVals), nil
	}
	logits, err := ss.Next(token)
	if err != nil {
		return 0, err
	}
	return s.Sample(logits, ss.History), nil
}

// prefill runs a new prompt and returns the next-token logits and, when the
// session selects by votes, the prompt's votes (nil otherwise).
func (ss *Session) prefill(prompt []int) ([]float32, *Votes, error) {
	input := append(append([]int(nil), ss.Pending()...), prompt...)
	if len(input) == 0 {
		return ss.again()
	}
	if ss.Pos+len(input) > ss.S.Ctx {
		return nil, nil, fmt.Errorf("prompt of %d tokens does not fit the context (%d of %d tokens free); use a larger --ctx-size (at most %d)",
			len(input), ss.S.Ctx-ss.Pos, ss.S.Ctx, ss.M.Config.MaxPositionEmbeddings)
	}
	var votes *Votes
	var pass Pass
	start, whole := ss.Pos, ss.Pos == 0 // whole: the votes count every token from 0
	ss.Sel = ss.Sel.For(ss.M)           // auto: the router where the pack has one
	if cs, ok := ss.counts(); ok && ss.Sel.Method == MethodPaper {
		votes = NewVotes(ss.M, cs)
		votes.pool = ss.S.pool
		if mk := ss.markAt(start, cs); mk != nil {
			mk.addTo(votes)
			whole = true
		}
		pass.Votes = votes
	}
	logits, err := ss.forward(input, ss.Pos, pass)
	if err != nil {
		return nil, nil, err
	}
	ss.Pos += len(input)
	ss.History = append(ss.History, prompt...)
	ss.tail = ss.tail[:0]
	if ss.exact == start {
		ss.exact = ss.Pos
		ss.tail, ss.tailPos = append(ss.tail, logits...), ss.Pos
		if votes != nil && whole {
			ss.addMark(votes)
		}
	}
	return logits, votes, nil
}

// again is the prefill of nothing at the end of the last one: its logits
// (a copy: callers change theirs) and, when the selection votes, the votes
// of its mark.
func (ss *Session) again() ([]float32, *Votes, error) {
	if len(ss.tail) == 0 || ss.tailPos != ss.Pos || ss.exact != ss.Pos {
		return nil, nil, fmt.Errorf("empty prompt")
	}
	ss.Sel = ss.Sel.For(ss.M)
	var votes *Votes
	if cs, ok := ss.counts(); ok && ss.Sel.Method == MethodPaper {
		mk := ss.markAt(ss.Pos, cs)
		if mk == nil {
			return nil, nil, fmt.Errorf("empty prompt: no votes kept at position %d for this selection", ss.Pos)
		}
		votes = NewVotes(ss.M, cs)
		mk.addTo(votes)
	}
	return slices.Clone(ss.tail), votes, nil
}

// markAt returns the mark at pos whose votes were counted as cs counts
// them, or nil.
func (ss *Session) markAt(pos int, cs LayerCounts) *voteMark {
	for i := range ss.marks {
		if mk := &ss.marks[i]; mk.pos == pos && mk.fits(cs) {
			return mk
		}
	}
	return nil
}

// fits reports whether the mark's votes were counted as cs counts them:
// the same ranks loaded and voted for in every layer.
func (mk *voteMark) fits(cs LayerCounts) bool {
	if len(mk.cs) != len(cs) {
		return false
	}
	for l, c := range cs {
		if c.Loaded != mk.cs[l].Loaded || c.Vote != mk.cs[l].Vote {
			return false
		}
	}
	return true
}

// addTo adds the mark's votes to v.
func (mk *voteMark) addTo(v *Votes) {
	for l, c := range mk.counts {
		for r, n := range c {
			v.counts[l][r] += float64(n)
		}
	}
}

// addMark keeps v's votes as the mark at Pos, dropping the oldest mark
// beyond maxMarks. Votes are counts of tokens, so uint32 holds them exactly.
func (ss *Session) addMark(v *Votes) {
	mk := voteMark{pos: ss.Pos, cs: v.cs, counts: make([][]uint32, len(v.counts))}
	for l, c := range v.counts {
		if c == nil {
			continue
		}
		mk.counts[l] = make([]uint32, len(c))
		for r, n := range c {
			mk.counts[l][r] = uint32(n)
		}
	}
	ss.marks = slices.DeleteFunc(ss.marks, func(o voteMark) bool { return o.pos >= mk.pos })
	if len(ss.marks) == maxMarks {
		ss.marks = slices.Delete(ss.marks, 0, 1)
	}
	ss.marks = append(ss.marks, mk)
}

// Cached returns how many of prompt's first tokens a Start of the rest
// under sel can take from the cache and still compute what Start(prompt)
// on an empty session would: the common prefix of the cache and prompt,
// within the part prefilled over every loaded neuron (exact), and under
// the paper's selection back to a vote mark, so that the votes are the
// whole prompt's. At least one token is left to prefill, for its logits,
// unless the prompt ends where the last prefill ended (they are kept).
// Truncate the session to it before that Start.
func (ss *Session) Cached(prompt []int, sel *Selection) int {
	n := 0
	for n < min(ss.Pos, ss.exact, len(ss.History), len(prompt)) && ss.History[n] == prompt[n] {
		n++
	}
	if n == len(prompt) && n > 0 && (len(ss.tail) == 0 || ss.tailPos != n) {
		n--
	}
	sel = sel.For(ss.M)
	if sel == nil || sel.Method != MethodPaper {
		return n
	}
	cs := sel.LayerCounts(ss.M)
	if !cs.Selecting() {
		return n
	}
	best := 0
	for _, mk := range ss.marks {
		if mk.pos <= n && mk.fits(cs) {
			best = max(best, mk.pos)
		}
	}
	return best
}

// Truncate keeps the first n tokens of the cache (at most Pos) and drops
// the rest, with any pending token and the marks past n: the keys and
// values beyond are overwritten by what runs next.
func (ss *Session) Truncate(n int) {
	n = max(0, min(n, ss.Pos))
	ss.Pos, ss.History, ss.exact = n, ss.History[:n], min(ss.exact, n)
	ss.marks = slices.DeleteFunc(ss.marks, func(mk voteMark) bool { return mk.pos > n })
	if ss.tailPos > n {
		ss.tail = ss.tail[:0]
	}
}

// forward runs input from position pos in batches of at most PlanBatch
// tokens (as llama.cpp's micro-batches): the activations stay those of one
// batch whatever the input's length, as the memory plan counts them, and
// votes add up over the batches. It returns the last token's logits.
func (ss *Session) forward(input []int, pos int, pass Pass) ([]float32, error) {
	batch := cmp.Or(ss.batch, PlanBatch)
	var logits []float32
	for off := 0; off < len(input); off += batch {
		var err error
		if logits, err = ss.S.ForwardBatch(input[off:min(off+batch, len(input))], pos+off, pass); err != nil {
			return nil, err
		}
	}
	return logits, nil
}

// planFor turns a prompt's votes into the decode plan (nil votes and no
// router: a nil plan, every loaded rank).
func (ss *Session) planFor(votes *Votes) (Plan, error) {
	ss.Sel = ss.Sel.For(ss.M)
	c, ok := ss.counts()
	if ok && ss.Sel.Method == MethodRouter {
		if ss.M.RouterGroup == 0 {
			return nil, fmt.Errorf("--select router: %s has no routers (sipack convert --profile TASK writes them)", ss.M.packPath())
		}
		return routerPlan(ss.M, ss.S.ex, c)
	}
	if votes == nil {
		return nil, nil
	}
	return votes.Plan(ss.M, ss.S.ex, c, ss.Sel.Compact)
}

// Generate appends prompt to the session, then samples up to MaxTokens
// tokens: Start, then Next for every token sampled.
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
	logits, err := ss.Start(prompt)
	if err != nil {
		return nil, err
	}
	st.ActiveRecords = ss.Plan.Active(ss.M)
	decodeStart := time.Now()
	tok := -1
	if opt.MaxTokens > 0 {
		tok = ss.sampler.Sample(logits, ss.History)
	}
	for i := 0; i < opt.MaxTokens; i++ {
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
		if tok, err = ss.NextSampled(tok, ss.sampler); err != nil {
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
		return 0, fmt.Errorf("%d new tokens do not fit the context of %d even after dropping every token but the first %d; use a larger --ctx-size (at most %d)",
			need, ctx, keep, ss.M.Config.MaxPositionEmbeddings)
	}
	pending := append([]int(nil), ss.Pending()...)
	kept := append(append([]int(nil), ss.History[:keep]...), ss.History[keep+drop:cached]...)
	// The kept tokens' votes are not counted: no mark survives the shift.
	ss.marks, ss.tail = ss.marks[:0], ss.tail[:0]
	if _, err := ss.forward(kept, 0, Pass{}); err != nil {
		ss.Pos, ss.History, ss.exact = 0, ss.History[:0], 0 // the cache is part rewritten: start over
		return 0, err
	}
	ss.Pos, ss.exact = len(kept), len(kept)
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
