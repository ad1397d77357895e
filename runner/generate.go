package runner

import (
	"fmt"
	"time"

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
}

// Stats is what a run measured, in the spirit of llama.cpp's timings.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	Prefill         time.Duration // prompt processing, up to the first sampled token
	Decode          time.Duration // all later tokens
	StopReason      string        // "eos", "length", "context"
	ActiveRecords   int           // FFN records computed per decode token, all layers
}

// ActiveRecords is the number of FFN records a decode token computes now.
func (ss *Session) ActiveRecords() int {
	n := 0
	for l := range ss.M.Layers {
		if ss.S.Plan != nil && ss.S.Plan[l] != nil {
			n += len(ss.S.Plan[l].Ranks)
		} else {
			n += ss.M.Layers[l].Ranks
		}
	}
	return n
}

// selecting reports whether the selection computes fewer ranks than are loaded.
func (ss *Session) selecting() bool {
	if ss.Sel == nil {
		return false
	}
	N := ss.M.Config.IntermediateSize
	return int(ss.Sel.Phi*float64(N)+1e-9) < ss.M.Pack.LoadedRanks
}

// startVoting installs the vote counter for the coming prefill and returns
// the function that turns the votes into the decode plan.
func (ss *Session) startVoting() func() {
	if !ss.selecting() {
		return func() {}
	}
	m := ss.M
	N := m.Config.IntermediateSize
	nl := m.Pack.LoadedRanks
	k := max(1, int(ss.Sel.Alpha*float64(nl)+1e-9))
	nb := min(nl, int(ss.Sel.Base*float64(N)+1e-9))
	nf := min(nl, int(ss.Sel.Phi*float64(N)+1e-9))
	counts := make([][]int32, len(m.Layers))
	scratch := make([]float32, 2*nl)
	prev := ss.S.ActHook
	ss.S.ActHook = func(l int, act []float32, ranks int) {
		if prev != nil {
			prev(l, act, ranks)
		}
		if !m.Layers[l].Sparse {
			return
		}
		if counts[l] == nil {
			counts[l] = make([]int32, nl)
		}
		votes(act, ranks, k, counts[l], scratch)
	}
	return func() {
		ss.S.ActHook = prev
		plan := make(Plan, len(m.Layers))
		if ss.bufs == nil {
			ss.bufs = make([][]byte, len(m.Layers))
		}
		for l := range m.Layers {
			if !m.Layers[l].Sparse {
				continue
			}
			if counts[l] == nil {
				counts[l] = make([]int32, nl)
			}
			ranks := chooseRanks(counts[l], nb, nf, nl)
			var blocks [][]byte
			blocks, ss.bufs[l] = m.blocksFor(l, ranks, nb, ss.Sel.Compact, ss.bufs[l])
			plan[l] = &LayerPlan{Ranks: ranks, Blocks: blocks}
		}
		ss.S.Plan = plan
	}
}

// Session is a conversation: a KV cache that grows over turns.
type Session struct {
	M       *Model
	S       *State
	Pos     int   // tokens in the cache
	History []int // every token seen, prompt and generated
	// Sel, if set, selects each sparse layer's decode set from the votes of
	// every new prompt (the prefill itself computes all loaded neurons).
	Sel     *Selection
	sampler *Sampler
	bufs    [][]byte // per layer: compacted dynamic records
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

// Generate appends prompt to the session, then samples up to MaxTokens tokens.
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
	logits, err := ss.Prefill(prompt)
	if err != nil {
		return nil, err
	}
	st.ActiveRecords = ss.ActiveRecords()
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
			st.StopReason = "context"
			break
		}
		if logits, err = ss.S.Forward(tok, ss.Pos); err != nil {
			return st, err
		}
		ss.Pos++
	}
	if opt.MaxTokens == 0 {
		st.Prefill = time.Since(start)
	} else {
		st.Decode = time.Since(decodeStart)
	}
	// The last sampled token is not yet in the cache; the next turn feeds it.
	return st, nil
}

// Prefill runs a new prompt (voting, with a selection) and returns the
// next-token logits; decoding then continues with S.Forward at Pos.
func (ss *Session) Prefill(prompt []int) ([]float32, error) {
	input := append(append([]int(nil), ss.Pending()...), prompt...)
	if ss.Pos+len(input) > ss.S.Ctx {
		return nil, fmt.Errorf("prompt of %d tokens does not fit the context (%d of %d tokens free); use a larger --ctx (at most %d)",
			len(input), ss.S.Ctx-ss.Pos, ss.S.Ctx, ss.M.Config.MaxPositionEmbeddings)
	}
	ss.S.Plan = nil
	finish := ss.startVoting()
	logits, err := ss.S.ForwardBatch(input, ss.Pos, false)
	if err != nil {
		return nil, err
	}
	ss.Pos += len(input)
	ss.History = append(ss.History, prompt...)
	finish()
	return logits, nil
}

// Pending returns the generated tokens not yet run through the model (at
// most the last one); the next Generate feeds them first.
func (ss *Session) Pending() []int {
	if len(ss.History) > ss.Pos {
		return ss.History[ss.Pos:]
	}
	return nil
}
