package profile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// DefaultCalibrate is how many prompts sipack profile calibrates over
// unless told otherwise.
const DefaultCalibrate = 16

// CalibrationFollowers is how many of the tokens that followed each
// calibration prompt count: a pass costs the text's length, and past the
// first 32 the curves' held-out effect is within the spread between
// prompt samples (docs/DESIGN.md, Layer budgets).
const CalibrationFollowers = 32

// CalibrationFractions are the loaded fractions at which Calibrate
// measures each layer.
var CalibrationFractions = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// Text is one calibration text: the loss counts the predictions of
// Tokens[From:] (From ≥ 1), each from the tokens before it.
type Text struct {
	Tokens []int
	From   int
}

// checkTexts checks that texts are there, each counts from a token
// within it (From ≥ 1), and the longest fits a context of ctx tokens; it
// returns the longest's length. what names the caller in the messages.
func checkTexts(what string, texts []Text, ctx int) (int, error) {
	if len(texts) == 0 {
		return 0, fmt.Errorf("%s: no texts", what)
	}
	longest := 0
	for i, t := range texts {
		if t.From < 1 || t.From >= len(t.Tokens) {
			return 0, fmt.Errorf("%s text %d: counts from token %d of %d", what, i, t.From, len(t.Tokens))
		}
		longest = max(longest, len(t.Tokens))
	}
	if longest > ctx {
		return 0, fmt.Errorf("%s: a text of %d tokens exceeds the model's context of %d", what, longest, ctx)
	}
	return longest, nil
}

// calibrationChunk is the most tokens one teacher-forced forward pass takes.
const calibrationChunk = 64

// Calibrate fills p's sensitivity curves from texts run on m (loaded
// whole): the mean negative log-likelihood per counted token with every
// layer whole, then with one layer at a time restricted to the top
// fraction of its neurons by p's sums, for each CalibrationFractions —
// 1 + layers × fractions teacher-forced passes over the texts. A pass that
// cuts layer l resumes from the whole pass's residual stream entering l,
// so it runs only layers l and later (about half the work of whole
// passes). Texts run on threads workers of one thread each (the tiny
// chunks of one text do not spread over threads), and their losses add
// up in text order, so the curves do not depend on threads. progress, if
// set, is told after each text's passes, in layers run.
func Calibrate(ctx context.Context, m *runner.Model, p *Profile, texts []Text, threads int, progress func(done, total int)) error {
	c := &m.Config
	if p.Layers != c.NumLayers || p.Neurons != c.IntermediateSize {
		return fmt.Errorf("calibration: profile of %d×%d neurons, model %d×%d", p.Layers, p.Neurons, c.NumLayers, c.IntermediateSize)
	}
	longest, err := checkTexts("calibration", texts, c.MaxPositionEmbeddings)
	if err != nil {
		return err
	}
	if kernels.Active().PrefillBF16 { // as profiling: the exact path
		defer kernels.Use(kernels.Active().WithBF16Prefill(false))()
	}
	L, F := c.NumLayers, len(CalibrationFractions)
	perText := L // layers run per text: the whole pass, then each cut from its layer
	for l := range L {
		perText += F * (L - l)
	}
	var mu sync.Mutex
	total, done := len(texts)*perText, 0
	step := func(layers int) {
		mu.Lock()
		defer mu.Unlock()
		if done += layers; progress != nil {
			progress(done, total)
		}
	}
	dense := make([]float64, len(texts))
	sums := make([][][]float64, len(texts)) // [text][layer][fraction]
	var next atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(max(1, threads), len(texts))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw, err := newCalibrator(m, p, longest)
			if err != nil {
				errs[w] = err
				cancel()
				return
			}
			defer cw.pool.Close()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(texts) {
					return
				}
				if dense[i], sums[i], err = cw.text(ctx, texts[i], step); err != nil {
					errs[w] = err
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	// The first cause, not the cancellations it made of the other workers.
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var whole float64
	total2 := make([][]float64, L)
	for l := range total2 {
		total2[l] = make([]float64, F)
	}
	counted := 0
	for i, t := range texts {
		counted += len(t.Tokens) - t.From
		whole += dense[i]
		for l := range L {
			for f := range F {
				total2[l][f] += sums[i][l][f]
			}
		}
	}
	sens := make([][]float64, L)
	for l := range L {
		sens[l] = make([]float64, F)
		for i := range F {
			sens[l][i] = total2[l][i] / float64(counted)
		}
	}
	p.SensitivityFractions = slices.Clone(CalibrationFractions)
	p.Sensitivity, p.SensitivityDense, p.SensitivityPrompts = sens, whole/float64(counted), len(texts)
	return p.validateSensitivity()
}

// calibrator is one worker of Calibrate: a state, the cut plans and the
// whole pass's residual streams of the text it runs.
type calibrator struct {
	m    *runner.Model
	pool *kernels.Pool
	s    *runner.State
	// plans[l][i] cuts layer l to the top CalibrationFractions[i] of its
	// neurons by the profile, as ranks of the model's layer l.
	plans [][]runner.Plan
	// inputs[chunk][l] is the whole pass's residual stream entering layer
	// l for one text's chunk of tokens.
	inputs [][][]float32
}

func newCalibrator(m *runner.Model, p *Profile, longest int) (*calibrator, error) {
	c := &m.Config
	cw := &calibrator{m: m, pool: kernels.NewPool(1)}
	var err error
	if cw.s, err = m.NewState(cw.pool, longest); err != nil {
		cw.pool.Close()
		return nil, err
	}
	L, N, F := c.NumLayers, c.IntermediateSize, len(CalibrationFractions)
	cw.plans = make([][]runner.Plan, L)
	ranks := make([][]int, L)
	for l, perm := range modelPerms(m) {
		rankOf := make([]int, N)
		for r, n := range perm {
			rankOf[n] = r
		}
		best := byScore(p.Sums[l]) // neurons, best first (ties: lower index)
		cw.plans[l] = make([]runner.Plan, F)
		for i, f := range CalibrationFractions {
			rs := make([]int, max(1, format.Count(f, N)))
			for j, n := range best[:len(rs)] {
				rs[j] = rankOf[n]
			}
			slices.Sort(rs)
			ranks[l] = rs
			if cw.plans[l][i], err = cw.s.RanksPlan(ranks); err != nil {
				cw.pool.Close()
				return nil, err
			}
		}
		ranks[l] = nil
	}
	chunks := (longest - 2 + calibrationChunk) / calibrationChunk
	cw.inputs = make([][][]float32, chunks)
	for ci := range cw.inputs {
		cw.inputs[ci] = make([][]float32, L)
	}
	return cw, nil
}

// text runs t's whole pass and every cut pass: the whole pass's NLL and
// sums[l][i], the NLL with layer l cut to CalibrationFractions[i].
func (cw *calibrator) text(ctx context.Context, t Text, step func(layers int)) (float64, [][]float64, error) {
	L, F := cw.m.Config.NumLayers, len(CalibrationFractions)
	var dense float64
	if err := cw.loss(ctx, t, nil, 0, &dense); err != nil {
		return 0, nil, err
	}
	step(L)
	sums := make([][]float64, L)
	for l := range L {
		sums[l] = make([]float64, F)
		for i := range F {
			if err := cw.loss(ctx, t, cw.plans[l][i], l, &sums[l][i]); err != nil {
				return 0, nil, err
			}
			step(L - l)
		}
	}
	return dense, sums, nil
}

// loss adds to *sum the NLL of t's counted tokens under plan, the pass
// resumed at layer from with the inputs; the whole pass (no plan) fills
// them.
func (cw *calibrator) loss(ctx context.Context, t Text, plan runner.Plan, from int, sum *float64) error {
	V := cw.m.Config.VocabSize
	for ci, off := 0, 0; off < len(t.Tokens)-1; ci, off = ci+1, off+calibrationChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(off+calibrationChunk, len(t.Tokens)-1)
		// Logits of the tokens that predict a counted one only.
		pass := runner.Pass{Plan: plan, All: end+1 > t.From, LogitsFrom: max(0, t.From-1-off), From: from}
		switch {
		case plan == nil:
			in := cw.inputs[ci]
			pass.OnInput = func(l int, x []float32) { in[l] = append(in[l][:0], x...) }
		case from > 0:
			pass.Input = cw.inputs[ci][from]
		}
		logits, err := cw.s.ForwardBatch(t.Tokens[off:end], off, pass)
		if err != nil {
			return err
		}
		if !pass.All {
			continue // no counted prediction in this chunk
		}
		for i := range end - off - pass.LogitsFrom {
			row := logits[i*V : (i+1)*V]
			x := float64(row[t.Tokens[off+pass.LogitsFrom+i+1]])
			*sum += kernels.LogSumExp(row) - x // overwrites row
		}
	}
	return nil
}
