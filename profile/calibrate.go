package profile

import (
	"context"
	"fmt"
	"slices"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// DefaultCalibrate is how many prompts sipack profile calibrates over
// unless told otherwise.
const DefaultCalibrate = 16

// CalibrationFractions are the loaded fractions at which Calibrate
// measures each layer.
var CalibrationFractions = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// Text is one calibration text: the loss counts the predictions of
// Tokens[From:] (From ≥ 1), each from the tokens before it.
type Text struct {
	Tokens []int
	From   int
}

// calibrationChunk is the most tokens one teacher-forced forward pass takes.
const calibrationChunk = 64

// Calibrate fills p's sensitivity curves from texts run on m (loaded
// whole): the mean negative log-likelihood per counted token with every
// layer whole, then with one layer at a time restricted to the top
// fraction of its neurons by p's sums, for each CalibrationFractions —
// 1 + layers × fractions teacher-forced passes over the texts, on threads
// threads. progress, if set, is told after each pass.
func Calibrate(ctx context.Context, m *runner.Model, p *Profile, texts []Text, threads int, progress func(done, total int)) error {
	c := &m.Config
	if p.Layers != c.NumLayers || p.Neurons != c.IntermediateSize {
		return fmt.Errorf("calibration: profile of %d×%d neurons, model %d×%d", p.Layers, p.Neurons, c.NumLayers, c.IntermediateSize)
	}
	if len(texts) == 0 {
		return fmt.Errorf("calibration: no texts")
	}
	longest := 0
	for i, t := range texts {
		if t.From < 1 || t.From >= len(t.Tokens) {
			return fmt.Errorf("calibration text %d: counts from token %d of %d", i, t.From, len(t.Tokens))
		}
		longest = max(longest, len(t.Tokens))
	}
	if longest > c.MaxPositionEmbeddings {
		return fmt.Errorf("calibration: a text of %d tokens exceeds the model's context of %d", longest, c.MaxPositionEmbeddings)
	}
	if kernels.Active().PrefillBF16 { // as profiling: the exact path
		defer kernels.Use(kernels.Active().WithBF16Prefill(false))()
	}
	pool := kernels.NewPool(max(1, threads))
	defer pool.Close()
	s, err := m.NewState(pool, longest)
	if err != nil {
		return err
	}
	L, N, F := c.NumLayers, c.IntermediateSize, len(CalibrationFractions)
	// rankOf[l][neuron] = its rank in the model's layer l.
	rankOf := make([][]int, L)
	for l, perm := range modelPerms(m) {
		rankOf[l] = make([]int, N)
		for r, n := range perm {
			rankOf[l][n] = r
		}
	}
	loss := func(plan runner.Plan) (float64, error) {
		var sum float64
		var n int
		for _, t := range texts {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			for off := 0; off < len(t.Tokens)-1; off += calibrationChunk {
				end := min(off+calibrationChunk, len(t.Tokens)-1)
				if end+1 <= t.From { // no counted prediction in this chunk
					if _, err := s.ForwardBatch(t.Tokens[off:end], off, runner.Pass{Plan: plan}); err != nil {
						return 0, err
					}
					continue
				}
				logits, err := s.ForwardBatch(t.Tokens[off:end], off, runner.Pass{Plan: plan, All: true})
				if err != nil {
					return 0, err
				}
				for i := range end - off {
					next := off + i + 1
					if next < t.From {
						continue
					}
					sum -= runner.LogProb(logits[i*c.VocabSize:(i+1)*c.VocabSize], t.Tokens[next])
					n++
				}
			}
		}
		return sum / float64(n), nil
	}
	total, done := 1+L*F, 0
	step := func() {
		done++
		if progress != nil {
			progress(done, total)
		}
	}
	dense, err := loss(nil)
	if err != nil {
		return err
	}
	step()
	sens := make([][]float64, L)
	ranks := make([][]int, L)
	for l := range L {
		sens[l] = make([]float64, F)
		best := byScore(p.Sums[l]) // neurons, best first (ties: lower index)
		for i, f := range CalibrationFractions {
			k := max(1, format.Count(f, N))
			rs := make([]int, k)
			for j, n := range best[:k] {
				rs[j] = rankOf[l][n]
			}
			slices.Sort(rs)
			ranks[l] = rs
			plan, err := s.RanksPlan(ranks)
			if err != nil {
				return err
			}
			if sens[l][i], err = loss(plan); err != nil {
				return err
			}
			step()
		}
		ranks[l] = nil
	}
	p.SensitivityFractions = slices.Clone(CalibrationFractions)
	p.Sensitivity, p.SensitivityDense, p.SensitivityPrompts = sens, dense, len(texts)
	return p.validateSensitivity()
}
