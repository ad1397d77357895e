package runner

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
)

// EvalOptions controls Eval.
type EvalOptions struct {
	Data     string     // JSONL overriding the manifest's eval data
	Limit    int        // first Limit rows only (0: all)
	Jobs     int        // rows run concurrently, one thread each
	Sel      *Selection // nil: compute every loaded neuron
	Progress func(done, total int)
}

// EvalResult is a task's score with the speed it was measured at.
type EvalResult struct {
	Task    string             `json:"task"`
	Metric  string             `json:"metric"`
	Score   float64            `json:"score"` // the metric named by Metric
	Extra   map[string]float64 `json:"extra,omitempty"`
	N       int                `json:"n"`
	Tokens  int                `json:"tokens"` // tokens generated (or scored)
	Seconds float64            `json:"seconds"`
	TokPerS float64            `json:"tok_per_s"` // per job
	Hyps    []string           `json:"-"`
}

// NewlineTokens returns the ids whose bytes contain a newline: generation for
// a task stops at the first of them, as the reference evaluator does.
func (m *Model) NewlineTokens() map[int]bool {
	out := map[int]bool{}
	for id := 0; id < m.Tokenizer.VocabSize(); id++ {
		if bytes.ContainsAny(m.Tokenizer.TokenBytes(id), "\n") {
			out[id] = true
		}
	}
	return out
}

type rowResult struct {
	hyp     string
	nll     float64
	correct int
	tokens  int
	err     error
}

// Eval runs a task's eval set and computes its metric: greedy generation of
// at most max_new_tokens, stopping at a token containing a newline or at EOS,
// the text before the first newline as the hypothesis (bleu, qa, rougeL); or
// the reference's negative log-likelihood given the prompt (perplexity).
func (m *Model) Eval(ctx context.Context, man *manifests.Manifest, opt EvalOptions) (*EvalResult, error) {
	rows, name, err := man.ReadRows("eval", opt.Data)
	if err != nil {
		return nil, err
	}
	if opt.Limit > 0 && opt.Limit < len(rows) {
		rows = rows[:opt.Limit]
	}
	if opt.Sel != nil {
		if err := opt.Sel.Validate(m.Config.IntermediateSize, m.Pack.LoadedRanks); err != nil {
			return nil, err
		}
	}
	for i, r := range rows {
		if man.Metric != "perplexity" && r.Reference == "" && man.Metric != "rougeL" {
			return nil, fmt.Errorf("%s: row %d has no reference", name, i+1)
		}
	}
	stop := m.NewlineTokens()
	for _, e := range m.Config.EOSTokenIDs {
		stop[e] = true
	}
	jobs := max(1, opt.Jobs)
	results := make([]rowResult, len(rows))
	start := time.Now()
	var mu sync.Mutex
	done := 0
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := kernels.NewPool(1)
			defer pool.Close()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(rows) || ctx.Err() != nil {
					return
				}
				results[i] = m.evalRow(pool, man, rows[i], stop, opt.Sel)
				mu.Lock()
				done++
				if opt.Progress != nil {
					opt.Progress(done, len(rows))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := &EvalResult{Task: man.Name, Metric: man.Metric, N: len(rows), Extra: map[string]float64{}}
	var hyps, refs []string
	var nll float64
	correct := 0
	for i, r := range results {
		if r.err != nil {
			return nil, fmt.Errorf("%s: row %d (%s): %w", name, i+1, rows[i].ID, r.err)
		}
		res.Tokens += r.tokens
		nll += r.nll
		correct += r.correct
		hyps, refs = append(hyps, r.hyp), append(refs, rows[i].Reference)
	}
	res.Hyps = hyps
	res.Seconds = time.Since(start).Seconds()
	res.TokPerS = float64(res.Tokens) / res.Seconds / float64(jobs)
	switch man.Metric {
	case "bleu":
		b := manifests.CorpusBLEU(hyps, refs)
		res.Score = b.Score
		for n, p := range b.Precisions {
			res.Extra[fmt.Sprintf("precision_%d", n+1)] = p
		}
		res.Extra["hyp_len"], res.Extra["ref_len"] = float64(b.HypLen), float64(b.RefLen)
	case "qa":
		var em, f1 float64
		byKind := map[string][2]float64{}
		for i := range hyps {
			e := manifests.ExactMatch(hyps[i], refs[i])
			em += e
			f1 += manifests.TokenF1(hyps[i], refs[i])
			k := rows[i].Kind
			if k == "" {
				k = "all"
			}
			v := byKind[k]
			byKind[k] = [2]float64{v[0] + e, v[1] + 1}
		}
		res.Score = 100 * em / float64(len(hyps))
		res.Extra["token_f1"] = 100 * f1 / float64(len(hyps))
		for k, v := range byKind {
			res.Extra["exact_match_"+k] = 100 * v[0] / v[1]
		}
	case "rougeL":
		var s float64
		for i := range hyps {
			s += manifests.RougeL(hyps[i], refs[i])
		}
		res.Score = 100 * s / float64(len(hyps))
	case "perplexity":
		res.Score = math.Exp(nll / float64(res.Tokens))
		res.Extra["mean_nll"] = nll / float64(res.Tokens)
		res.Extra["next_token_acc"] = 100 * float64(correct) / float64(res.Tokens)
	}
	return res, nil
}

func (m *Model) evalRow(pool *kernels.Pool, man *manifests.Manifest, row manifests.Row, stop map[int]bool, sel *Selection) rowResult {
	text := man.Apply(row.Prompt)
	prompt := m.Tokenizer.Encode(text, true)
	if man.Metric == "perplexity" {
		return m.scoreContinuation(pool, text, row.Reference, sel)
	}
	ctx := min(m.Config.MaxPositionEmbeddings, len(prompt)+man.MaxNewTokens)
	if len(prompt) >= ctx {
		return rowResult{err: fmt.Errorf("prompt of %d tokens leaves no room in the context of %d", len(prompt), m.Config.MaxPositionEmbeddings)}
	}
	ss, err := m.NewSession(pool, ctx, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return rowResult{err: err}
	}
	ss.Sel = sel
	var out []int
	_, err = ss.Generate(prompt, GenerateOptions{MaxTokens: min(man.MaxNewTokens, ctx-len(prompt)), StopTokens: stop, OnToken: func(id int) { out = append(out, id) }})
	if err != nil {
		return rowResult{err: err}
	}
	hyp := m.Tokenizer.Decode(out)
	hyp, _, _ = strings.Cut(hyp, "\n")
	return rowResult{hyp: strings.TrimSpace(hyp), tokens: len(out)}
}

// scoreContinuation is the NLL of ref after prompt: the prompt is prefilled
// (and votes, with a selection), then ref's tokens are fed one at a time
// through the decode path, each scored before it is fed. ref is tokenised
// as part of prompt+ref when that keeps the prompt's tokens, else alone.
func (m *Model) scoreContinuation(pool *kernels.Pool, prompt, ref string, sel *Selection) rowResult {
	tk := m.Tokenizer
	p := tk.Encode(prompt, true)
	plain := tk.Encode(prompt, false)
	joint := tk.Encode(prompt+ref, false)
	var r []int
	if len(joint) >= len(plain) && slices.Equal(joint[:len(plain)], plain) {
		r = joint[len(plain):]
	} else {
		r = tk.Encode(ref, false)
	}
	if len(r) == 0 {
		return rowResult{err: fmt.Errorf("empty reference")}
	}
	if len(p)+len(r) > m.Config.MaxPositionEmbeddings {
		return rowResult{err: fmt.Errorf("prompt and reference exceed the context")}
	}
	ss, err := m.NewSession(pool, len(p)+len(r), SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return rowResult{err: err}
	}
	ss.Sel = sel
	logits, votes, err := ss.Prefill(p)
	if err != nil {
		return rowResult{err: err}
	}
	plan, err := ss.PlanFor(votes)
	if err != nil {
		return rowResult{err: err}
	}
	res := rowResult{tokens: len(r)}
	for i, tok := range r {
		res.nll += -logSoftmaxAt(logits, tok)
		if Argmax(logits) == tok {
			res.correct++
		}
		if i == len(r)-1 {
			break
		}
		if logits, err = ss.Decode(tok, plan); err != nil {
			return rowResult{err: err}
		}
	}
	return res
}

// logSoftmaxAt is log p(tok) under softmax(logits), in float64.
func logSoftmaxAt(logits []float32, tok int) float64 {
	mx := float64(logits[0])
	for _, v := range logits {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(float64(v) - mx)
	}
	return float64(logits[tok]) - mx - math.Log(s)
}

// Perplexity is exp(mean NLL) of ids in windows of window tokens, each window
// prefixed with bos and scoring its next window−1 tokens, as the reference
// evaluator does. All loaded neurons are computed.
func (m *Model) Perplexity(pool *kernels.Pool, ids []int, window int) (float64, int, error) {
	if window < 2 || window > m.Config.MaxPositionEmbeddings {
		return 0, 0, fmt.Errorf("window %d out of range [2, %d]", window, m.Config.MaxPositionEmbeddings)
	}
	if m.Config.BOSTokenID < 0 {
		return 0, 0, fmt.Errorf("model has no bos token to start windows with")
	}
	s, err := m.NewState(pool, window)
	if err != nil {
		return 0, 0, err
	}
	var nll float64
	n := 0
	V := m.Config.VocabSize
	for start := 0; start < len(ids); start += window - 1 {
		chunk := append([]int{m.Config.BOSTokenID}, ids[start:min(start+window-1, len(ids))]...)
		if len(chunk) < 2 {
			break
		}
		all, err := s.ForwardBatch(chunk[:len(chunk)-1], 0, Pass{All: true})
		if err != nil {
			return 0, 0, err
		}
		for t := 0; t+1 < len(chunk); t++ {
			nll -= logSoftmaxAt(all[t*V:(t+1)*V], chunk[t+1])
			n++
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no tokens to score")
	}
	return math.Exp(nll / float64(n)), n, nil
}
