package runner

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// allowedSet is the bitset of ids over a vocabulary of n.
func allowedSet(n int, ids ...int) []uint64 {
	set := make([]uint64, (n+63)/64)
	for _, id := range ids {
		set[id/64] |= 1 << (id % 64)
	}
	return set
}

// TestSampleAllowed: a mask restricts every sampling mode to the allowed
// tokens, renormalising among them; no allowed token is -1.
func TestSampleAllowed(t *testing.T) {
	const V = 150 // not a multiple of 64: the last word is partial
	logits := make([]float32, V)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i))) * 3
	}
	logits[5], logits[70], logits[149] = 9, 1, float32(math.Log(3))+1 // p(149) = 3·p(70) among the two
	allowed := allowedSet(V, 70, 149)
	if got := NewSampler(SamplerConfig{TopP: 1, RepetitionPenalty: 1}).SampleAllowed(slices.Clone(logits), nil, allowed); got != 149 {
		t.Errorf("greedy: %d, want 149 (5 is better but not allowed)", got)
	}
	for _, cfg := range []SamplerConfig{
		{Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: 3},
		{Temperature: 1, TopK: 1, TopP: 1, RepetitionPenalty: 1, Seed: 3},
		{Temperature: 1, TopK: 40, TopP: 1, RepetitionPenalty: 1, Seed: 3},
		{Temperature: 1, TopK: 40, TopP: 0.9, RepetitionPenalty: 1.3, RepeatLastN: 64, Seed: 3},
		{Temperature: 0.7, TopP: 0.5, RepetitionPenalty: 1, Seed: 3},
	} {
		s := NewSampler(cfg)
		var n149 int
		const draws = 8000
		for range draws {
			tok := s.SampleAllowed(slices.Clone(logits), []int{5, 70}, allowed)
			if tok != 70 && tok != 149 {
				t.Fatalf("%+v: drew %d, not allowed", cfg, tok)
			}
			if tok == 149 {
				n149++
			}
		}
		if cfg.TopK == 0 && cfg.TopP == 1 && cfg.RepetitionPenalty == 1 {
			// Renormalised over the two allowed: 3/4 and 1/4.
			if got := float64(n149) / draws; math.Abs(got-0.75) > 0.02 {
				t.Errorf("%+v: p(149) = %.3f, want 0.75", cfg, got)
			}
		}
	}
	s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepetitionPenalty: 1})
	if got := s.SampleAllowed(slices.Clone(logits), nil, allowedSet(V)); got != -1 {
		t.Errorf("nothing allowed: %d, want -1", got)
	}
	// A set shorter than the vocabulary allows nothing past its end.
	if got := s.SampleAllowed(slices.Clone(logits), nil, allowedSet(64, 3)); got != 3 {
		t.Errorf("short set: %d, want 3", got)
	}
	// Allowed tokens whose logits are -Inf still give an allowed token.
	neg := slices.Clone(logits)
	neg[70], neg[149] = float32(math.Inf(-1)), float32(math.Inf(-1))
	if got := NewSampler(SamplerConfig{TopP: 1, RepetitionPenalty: 1}).SampleAllowed(neg, nil, allowed); got != 70 && got != 149 {
		t.Errorf("-Inf allowed logits: %d", got)
	}
}

// TestSampleAllowedAll: with every token allowed, SampleAllowed draws what
// Sample draws from the same seed.
func TestSampleAllowedAll(t *testing.T) {
	logits := []float32{0.3, 1.5, -0.2, 1.4, 0.9, 2.2, -1}
	all := allowedSet(len(logits), 0, 1, 2, 3, 4, 5, 6)
	for _, cfg := range []SamplerConfig{
		{Temperature: 0.9, TopP: 0.95, RepetitionPenalty: 1, Seed: 9},
		{Temperature: 1.2, TopK: 3, TopP: 1, RepetitionPenalty: 1.1, RepeatLastN: 64, Seed: 9},
	} {
		a, b := NewSampler(cfg), NewSampler(cfg)
		for range 200 {
			x, y := a.Sample(slices.Clone(logits), []int{1}), b.SampleAllowed(slices.Clone(logits), []int{1}, all)
			if x != y {
				t.Fatalf("%+v: Sample %d, SampleAllowed (all allowed) %d", cfg, x, y)
			}
		}
	}
}

// BenchmarkSampleAllowed compares a masked draw with a plain one over a
// Llama 3-sized vocabulary (sirun's default sampler), with most tokens
// allowed (inside a JSON string) and few (between values).
func BenchmarkSampleAllowed(b *testing.B) {
	const V = 128256
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, V)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	most, few := allowedSet(V), allowedSet(V)
	for id := range V {
		if id%50 != 0 {
			most[id/64] |= 1 << (id % 64)
		}
		if id%5000 == 0 {
			few[id/64] |= 1 << (id % 64)
		}
	}
	buf := make([]float32, V)
	s := NewSampler(DefaultSampler())
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			copy(buf, logits)
			s.Sample(buf, nil)
		}
	})
	for _, c := range []struct {
		name string
		set  []uint64
	}{{"most", most}, {"few", few}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				copy(buf, logits)
				s.SampleAllowed(buf, nil, c.set)
			}
		})
	}
}
