package profile

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// RunOptions controls Run.
type RunOptions struct {
	GenTokens int // greedy tokens generated after each prompt (the method uses 128)
	// Stop, when set, ends a prompt's generation at the first token in it
	// (not fed): the profile then counts only the text the task produces
	// (its answer), not what a model writes after it.
	Stop map[int]bool
	// Follow, when set, replaces generation: prompt i is followed by the
	// tokens Follow[i] (its reference, teacher-forced; at most GenTokens of
	// them), so the profile counts the text the task should produce.
	Follow [][]int
	Jobs   int // prompts run concurrently, each on one thread (default 1)
	// Calibrate, if > 0, also measures the profile's sensitivity curves
	// (Calibrate) over the first Calibrate prompts and the first
	// CalibrationFollowers tokens of what followed each
	// (the loss counts the followers), on Jobs threads.
	Calibrate int
	// CalibrationProgress, if set, is told after each calibration pass the
	// layers run so far and in all (Calibrate's progress).
	CalibrationProgress func(done, total int)
	// Progress, if set, is called after each prompt with the prompts and tokens done so far.
	Progress func(prompts int, tokens int64)
}

// Run runs the model over prompts (each prompt, then GenTokens greedy
// tokens, all counted) and sums |h| per layer per original neuron, where h
// is the input of down_proj. The pack must be loaded whole (γ = 1). Sums are
// added in prompt order, so the result does not depend on Jobs.
func Run(ctx context.Context, m *runner.Model, task string, prompts [][]int, opt RunOptions) (*Profile, error) {
	c := &m.Config
	p := m.Pack
	if p.LoadedRanks != c.IntermediateSize {
		return nil, fmt.Errorf("profiling needs every neuron: load the pack with γ = 1 (loaded %d of %d)", p.LoadedRanks, c.IntermediateSize)
	}
	if opt.GenTokens < 0 {
		return nil, fmt.Errorf("generated tokens per prompt must be ≥ 0, got %d", opt.GenTokens)
	}
	// The profile is a statistic of the exact model. Activations rounded
	// to BF16 in the prefill GEMM (the default where VDPBF16PS exists) move
	// |h| little, but enough to reorder close ranks: a translate pack
	// profiled that way lost 7 % BLEU at γ0.7 φ0.4 on the tiny model (6.011
	// → 5.608 on the tuning half, 5.745 → 5.265 held out), run with either
	// path. Profiling is a one-off: it takes the exact path.
	if kernels.Active().PrefillBF16 {
		defer kernels.Use(kernels.Active().WithBF16Prefill(false))()
	}
	jobs := max(1, opt.Jobs)
	L, N := c.NumLayers, c.IntermediateSize
	perm := modelPerms(m) // perm[l][rank] = original neuron
	if opt.Calibrate < 0 {
		return nil, fmt.Errorf("calibration prompts must be ≥ 0, got %d", opt.Calibrate)
	}
	if opt.Follow != nil && len(opt.Follow) != len(prompts) {
		return nil, fmt.Errorf("%d continuations for %d prompts", len(opt.Follow), len(prompts))
	}
	for i, pr := range prompts {
		if len(pr) == 0 {
			return nil, fmt.Errorf("prompt %d is empty", i)
		}
		if len(pr)+opt.GenTokens > c.MaxPositionEmbeddings {
			return nil, fmt.Errorf("prompt %d: %d tokens + %d generated exceed the model's context of %d", i, len(pr), opt.GenTokens, c.MaxPositionEmbeddings)
		}
	}
	total := make([][]float64, L)
	for l := range total {
		total[l] = make([]float64, N)
	}
	type worker struct {
		pool *kernels.Pool
		sums [][]float64
		seq  []int // what followed the prompt
	}
	var texts []Text
	workers := make([]*worker, jobs)
	for w := range workers {
		workers[w] = &worker{pool: kernels.NewPool(1), sums: make([][]float64, L)}
		for l := range workers[w].sums {
			workers[w].sums[l] = make([]float64, N)
		}
		defer workers[w].pool.Close()
	}
	var tokens int64
	done := 0
	for start := 0; start < len(prompts); start += jobs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batch := prompts[start:min(start+jobs, len(prompts))]
		errs := make([]error, len(batch))
		ntoks := make([]int, len(batch))
		var wg sync.WaitGroup
		for j, pr := range batch {
			wg.Add(1)
			go func(w *worker, pr []int, errp *error, ntok *int) {
				defer wg.Done()
				var n int
				n, w.seq, *errp = runOne(m, w.pool, pr, &opt, start+j, perm, w.sums)
				*ntok = len(pr) + n
			}(workers[j], pr, &errs[j], &ntoks[j])
		}
		wg.Wait()
		for j := range batch {
			if errs[j] != nil {
				return nil, fmt.Errorf("prompt %d: %w", start+j, errs[j])
			}
			for l := range total {
				s := workers[j].sums[l]
				for n, v := range s {
					total[l][n] += v
				}
				clear(s)
			}
			tokens += int64(ntoks[j])
			if seq := workers[j].seq; start+j < opt.Calibrate && len(seq) > 0 {
				seq = seq[:min(len(seq), CalibrationFollowers)]
				texts = append(texts, Text{Tokens: append(slices.Clone(batch[j]), seq...), From: len(batch[j])})
			}
			done++
			if opt.Progress != nil {
				opt.Progress(done, tokens)
			}
		}
	}
	cont := ""
	switch {
	case opt.Follow != nil:
		cont = "reference"
	case opt.Stop != nil:
		cont = "stop"
	}
	prof := &Profile{
		Format: FileFormat, Version: versionOf(cont), Task: task, Continue: cont,
		Prompts: int64(len(prompts)), Tokens: tokens, GenTokens: opt.GenTokens,
		ModelHash: hex.EncodeToString(p.Index.SourceHash[:]),
		Layers:    L, Neurons: N, Sums: total,
	}
	if opt.Calibrate > 0 {
		if len(texts) == 0 {
			return nil, fmt.Errorf("calibration: no prompt was followed by any token (--gen-tokens 0, or every answer stopped at once)")
		}
		if err := Calibrate(ctx, m, prof, texts, jobs, opt.CalibrationProgress); err != nil {
			return nil, err
		}
		prof.SensitivityFollowers = CalibrationFollowers
	}
	return prof, nil
}

// runOne adds prompt i's Σ|h| into sums (in original neuron order), over
// the prompt and then up to opt.GenTokens tokens: opt.Follow[i] where
// opt.Follow is set, else greedy ones up to the first in opt.Stop. It
// returns how many tokens followed the prompt, and those tokens when the
// prompt is one opt.Calibrate keeps.
func runOne(m *runner.Model, pool *kernels.Pool, prompt []int, opt *RunOptions, i int, perm [][]uint32, sums [][]float64) (int, []int, error) {
	gen := opt.GenTokens
	s, err := m.NewState(pool, len(prompt)+gen)
	if err != nil {
		return 0, nil, err
	}
	pass := runner.Pass{OnAct: func(l int, act []float32, ranks int) {
		dst, pl := sums[l], perm[l]
		for t := 0; t < len(act)/ranks; t++ {
			row := act[t*ranks : (t+1)*ranks]
			for r, h := range row {
				dst[pl[r]] += math.Abs(float64(h))
			}
		}
	}}
	logits, err := s.ForwardBatch(prompt, 0, pass)
	if err != nil {
		return 0, nil, err
	}
	keep := i < opt.Calibrate
	if opt.Follow != nil {
		follow := opt.Follow[i][:min(len(opt.Follow[i]), gen)]
		if len(follow) > 0 {
			if _, err := s.ForwardBatch(follow, len(prompt), pass); err != nil {
				return 0, nil, err
			}
		}
		if keep {
			return len(follow), slices.Clone(follow), nil
		}
		return len(follow), nil, nil
	}
	// Generate gen tokens greedily; the last one is fed too, so every counted
	// token contributes its activations (prompt + gen tokens in all).
	pos := len(prompt)
	var seq []int
	for range gen {
		tok := runner.Argmax(logits)
		if opt.Stop[tok] {
			break
		}
		if logits, err = s.ForwardBatch([]int{tok}, pos, pass); err != nil {
			return 0, nil, err
		}
		if keep {
			seq = append(seq, tok)
		}
		pos++
	}
	return pos - len(prompt), seq, nil
}
