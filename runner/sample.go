package runner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Argmax returns the index of the largest logit (the first on ties).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// LogProb is log p(tok) under softmax(logits), in float64.
func LogProb(logits []float32, tok int) float64 {
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

// SamplerConfig is what a user sets on the command line.
type SamplerConfig struct {
	Temperature       float64 // 0: greedy
	TopK              int     // 0: off
	TopP              float64 // 1: off
	RepetitionPenalty float64 // 1: off
	RepeatLastN       int     // how many recent tokens the penalty looks at (0: all)
	Seed              uint64
}

// Validate checks the ranges.
func (c *SamplerConfig) Validate() error {
	switch {
	case c.Temperature < 0 || math.IsNaN(c.Temperature):
		return fmt.Errorf("--temperature must be ≥ 0, got %v", c.Temperature)
	case c.TopK < 0:
		return fmt.Errorf("--top-k must be ≥ 0, got %d", c.TopK)
	case !(c.TopP > 0 && c.TopP <= 1):
		return fmt.Errorf("--top-p must be in (0, 1], got %v", c.TopP)
	case !(c.RepetitionPenalty > 0):
		return fmt.Errorf("--repeat-penalty must be > 0, got %v", c.RepetitionPenalty)
	case c.RepeatLastN < 0:
		return fmt.Errorf("--repeat-last-n must be ≥ 0, got %d", c.RepeatLastN)
	}
	return nil
}

// Sampler picks next tokens; with the same seed and logits it picks the same tokens.
type Sampler struct {
	cfg  SamplerConfig
	rng  *rand.Rand
	prob []float32
	idx  []int
}

// NewSampler makes a sampler; cfg must be valid.
func NewSampler(cfg SamplerConfig) *Sampler {
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
}

// Sample picks a token from logits (which it may modify), given the tokens so far.
// Order, as in llama.cpp: repetition penalty, then greedy or top-k → top-p → temperature.
func (s *Sampler) Sample(logits []float32, history []int) int {
	c := &s.cfg
	if c.RepetitionPenalty != 1 {
		recent := history
		if c.RepeatLastN > 0 && len(recent) > c.RepeatLastN {
			recent = recent[len(recent)-c.RepeatLastN:]
		}
		seen := map[int]bool{}
		for _, t := range recent {
			if t < 0 || t >= len(logits) || seen[t] {
				continue
			}
			seen[t] = true
			// CTRL's penalty: shrink positive logits, push negative ones further down.
			if logits[t] > 0 {
				logits[t] /= float32(c.RepetitionPenalty)
			} else {
				logits[t] *= float32(c.RepetitionPenalty)
			}
		}
	}
	if c.Temperature == 0 {
		return Argmax(logits)
	}
	// Candidates sorted by logit, descending (ties by id for determinism).
	s.idx = s.idx[:0]
	for i := range logits {
		s.idx = append(s.idx, i)
	}
	sort.Slice(s.idx, func(a, b int) bool {
		la, lb := logits[s.idx[a]], logits[s.idx[b]]
		return la > lb || (la == lb && s.idx[a] < s.idx[b])
	})
	n := len(s.idx)
	if c.TopK > 0 && c.TopK < n {
		n = c.TopK
	}
	// Softmax with temperature over the candidates.
	s.prob = s.prob[:0]
	m := float64(logits[s.idx[0]])
	var sum float64
	for _, i := range s.idx[:n] {
		p := math.Exp((float64(logits[i]) - m) / c.Temperature)
		s.prob = append(s.prob, float32(p))
		sum += p
	}
	// Top-p: the smallest prefix whose probability reaches TopP.
	if c.TopP < 1 {
		acc := 0.0
		for k, p := range s.prob {
			acc += float64(p) / sum
			if acc >= c.TopP {
				n = k + 1
				break
			}
		}
		sum = 0
		for _, p := range s.prob[:n] {
			sum += float64(p)
		}
	}
	r := s.rng.Float64() * sum
	for k, p := range s.prob[:n] {
		r -= float64(p)
		if r <= 0 {
			return s.idx[k]
		}
	}
	return s.idx[n-1]
}
