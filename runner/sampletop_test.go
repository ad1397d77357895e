package runner

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSampleTop: given only the k tokens of largest logits, in any order,
// SampleTop draws what Sample draws from the whole vocabulary with the same
// seed, over vocabularies with many ties.
func TestSampleTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	for _, cfg := range []SamplerConfig{
		DefaultSampler(),
		{Temperature: 1, TopK: 1, TopP: 1, RepetitionPenalty: 1},
		{Temperature: 1.5, TopK: 7, TopP: 0.5, RepetitionPenalty: 1},
		{Temperature: 0.3, TopK: 200, TopP: 1, RepetitionPenalty: 1},
	} {
		cfg.Seed = 5
		full, top := NewSampler(cfg), NewSampler(cfg)
		for step := 0; step < 200; step++ {
			v := 300 + rng.IntN(500)
			logits := make([]float32, v)
			for i := range logits {
				logits[i] = float32(rng.IntN(40)) / 4 // ties
			}
			order := make([]int, v)
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int {
				switch {
				case logits[a] > logits[b]:
					return -1
				case logits[a] < logits[b]:
					return 1
				}
				return 0
			})
			k := min(cfg.TopK, v)
			ids, vals := make([]int32, k), make([]float32, k)
			for j, i := range rng.Perm(k) {
				ids[j], vals[j] = int32(order[i]), logits[order[i]]
			}
			want := full.Sample(slices.Clone(logits), nil)
			if got := top.SampleTop(ids, vals); got != want {
				t.Fatalf("%+v step %d: SampleTop %d, Sample %d", cfg, step, got, want)
			}
		}
	}
}
