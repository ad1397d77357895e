package eval

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/runner"
)

// Options controls Run.
type Options struct {
	Data  string // JSONL overriding the manifest's eval data
	Limit int    // first Limit rows only (0: all)
	// Half, if 1 or 2, keeps only the even (1: the tuning half) or the odd
	// rows (2: the held-out half) of the eval set, before Limit.
	Half     int
	Jobs     int               // rows run concurrently, one thread each
	Sel      *runner.Selection // nil: compute every loaded neuron
	Progress func(done, total int)
}

// Result is a task's score with the speed it was measured at.
type Result struct {
	Task    string             `json:"task"`
	Metric  string             `json:"metric"`
	Score   float64            `json:"score"` // the metric named by Metric
	Extra   map[string]float64 `json:"extra,omitempty"`
	N       int                `json:"n"`
	Tokens  int                `json:"tokens"` // tokens generated (or scored)
	Seconds float64            `json:"seconds"`
	TokPerS float64            `json:"tok_per_s"` // per job
	Hyps    []string           `json:"-"`

	rows *rowScores // what each row adds to the metric
}

// cutAtStop is the text before the first of the stop strings (all of it
// when none occurs): a stop string split over two tokens does not stop
// generation, but it still ends the hypothesis.
func cutAtStop(text string, stops []string) string {
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 {
			text = text[:i]
		}
	}
	return text
}

type rowResult struct {
	hyp     string
	nll     float64
	correct int
	tokens  int
	err     error
}

// Run runs a task's eval set on m and computes its metric: greedy
// generation of at most max_new_tokens, stopping at a token containing one
// of the manifest's stop strings or at EOS, the text before the first stop
// string as the hypothesis (bleu, qa, rougeL); or the reference's negative
// log-likelihood given the prompt (perplexity).
func Run(ctx context.Context, m *runner.Model, man *manifests.Manifest, opt Options) (*Result, error) {
	rows, name, err := man.ReadRows("eval", opt.Data)
	if err != nil {
		return nil, err
	}
	if opt.Half == 1 || opt.Half == 2 {
		var kept = rows[:0:0]
		for i := opt.Half - 1; i < len(rows); i += 2 {
			kept = append(kept, rows[i])
		}
		rows = kept
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
	stop := m.StopTokens(man.Stop)
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
				results[i] = evalRow(m, pool, man, rows[i], stop, opt.Sel)
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
	res := &Result{Task: man.Name, Metric: man.Metric, N: len(rows), Extra: map[string]float64{}}
	for i, r := range results {
		if r.err != nil {
			return nil, fmt.Errorf("%s: row %d (%s): %w", name, i+1, rows[i].ID, r.err)
		}
		res.Tokens += r.tokens
		res.Hyps = append(res.Hyps, r.hyp)
	}
	res.Seconds = time.Since(start).Seconds()
	res.TokPerS = float64(res.Tokens) / res.Seconds / float64(jobs)
	score(res, man.Metric, rows, results)
	return res, nil
}

func evalRow(m *runner.Model, pool *kernels.Pool, man *manifests.Manifest, row manifests.Row, stop map[int]bool, sel *runner.Selection) rowResult {
	text := man.Apply(row.Prompt)
	prompt := m.Tokenizer.Encode(text, true)
	if man.Metric == "perplexity" {
		return scoreContinuation(m, pool, text, man.ReferencePrefix+row.Reference, sel)
	}
	ctx := min(m.Config.MaxPositionEmbeddings, len(prompt)+man.MaxNewTokens)
	if len(prompt) >= ctx {
		return rowResult{err: fmt.Errorf("prompt of %d tokens leaves no room in the context of %d", len(prompt), m.Config.MaxPositionEmbeddings)}
	}
	ss, err := m.NewSession(pool, ctx, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return rowResult{err: err}
	}
	ss.Sel = sel
	var out []int
	_, err = ss.Generate(prompt, runner.GenerateOptions{MaxTokens: min(man.MaxNewTokens, ctx-len(prompt)), StopTokens: stop, OnToken: func(id int) { out = append(out, id) }})
	if err != nil {
		return rowResult{err: err}
	}
	hyp := cutAtStop(m.Tokenizer.Decode(out), man.Stop)
	return rowResult{hyp: strings.TrimSpace(hyp), tokens: len(out)}
}

// scoreContinuation is the NLL of ref after prompt: the prompt is prefilled
// (and votes, with a selection), then ref's tokens are fed one at a time
// through the decode path, each scored before it is fed. ref is tokenised
// as part of prompt+ref when that keeps the prompt's tokens, else alone.
func scoreContinuation(m *runner.Model, pool *kernels.Pool, prompt, ref string, sel *runner.Selection) rowResult {
	tk := m.Tokenizer
	p := tk.Encode(prompt, true)
	r := tk.EncodeAfter(prompt, ref)
	if len(r) == 0 {
		return rowResult{err: fmt.Errorf("empty reference")}
	}
	if len(p)+len(r) > m.Config.MaxPositionEmbeddings {
		return rowResult{err: fmt.Errorf("prompt and reference exceed the context")}
	}
	ss, err := m.NewSession(pool, len(p)+len(r), runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		return rowResult{err: err}
	}
	ss.Sel = sel
	logits, err := ss.Start(p)
	if err != nil {
		return rowResult{err: err}
	}
	res := rowResult{tokens: len(r)}
	for i, tok := range r {
		if runner.Argmax(logits) == tok {
			res.correct++
		}
		res.nll += nll(logits, tok)
		if i == len(r)-1 {
			break
		}
		if logits, err = ss.Next(tok); err != nil {
			return rowResult{err: err}
		}
	}
	return res
}

// nll is −log softmax(logits)[tok], the normaliser by the kernels' vector
// exponentials (kernels.LogSumExp: within 2e-6 of float64's); logits are
// overwritten.
func nll(logits []float32, tok int) float64 {
	x := float64(logits[tok])
	return kernels.LogSumExp(logits) - x
}

// Perplexity is exp(mean NLL) of ids in windows of window tokens, each window
// prefixed with bos and scoring its next window−1 tokens, as the reference
// evaluator does. All loaded neurons are computed.
func Perplexity(m *runner.Model, pool *kernels.Pool, ids []int, window int) (float64, int, error) {
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
	var sum float64
	n := 0
	V := m.Config.VocabSize
	for start := 0; start < len(ids); start += window - 1 {
		chunk := append([]int{m.Config.BOSTokenID}, ids[start:min(start+window-1, len(ids))]...)
		if len(chunk) < 2 {
			break
		}
		all, err := s.ForwardBatch(chunk[:len(chunk)-1], 0, runner.Pass{All: true})
		if err != nil {
			return 0, 0, err
		}
		for t := 0; t+1 < len(chunk); t++ {
			sum += nll(all[t*V:(t+1)*V], chunk[t+1])
			n++
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("no tokens to score")
	}
	return math.Exp(sum / float64(n)), n, nil
}
