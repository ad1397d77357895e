package runner

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
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

// LogSumExp is log Σ exp(x), in float64: the log-softmax's normaliser.
func LogSumExp(x []float32) float64 {
	mx := float64(x[0])
	for _, v := range x {
		mx = math.Max(mx, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - mx)
	}
	return mx + math.Log(s)
}

// TopTokens is the k tokens of largest logit, largest first (ties: the
// lower id), as the sampler's top-k ranks them.
func TopTokens(logits []float32, k int) []int {
	var s Sampler
	n := s.candidates(logits, k)
	return s.idx[:n]
}

// SamplerConfig is what a user sets on the command line.
type SamplerConfig struct {
	Temperature       float64 // 0: greedy
	TopK              int     // 0: off
	TopP              float64 // 1: off
	MinP              float64 // 0: off
	RepetitionPenalty float64 // 1: off
	RepeatLastN       int     // the recent tokens the penalty looks at (-1: all, 0: none), as llama.cpp's
	Seed              uint64
}

// DefaultSampler is what sirun and sirun serve sample with unless told
// otherwise: llama.cpp's defaults, the repetition penalty off.
func DefaultSampler() SamplerConfig {
	return SamplerConfig{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepetitionPenalty: 1, RepeatLastN: 64}
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
	case !(c.MinP >= 0 && c.MinP <= 1):
		return fmt.Errorf("--min-p must be in [0, 1], got %v", c.MinP)
	case !(c.RepetitionPenalty > 0):
		return fmt.Errorf("--repeat-penalty must be > 0, got %v", c.RepetitionPenalty)
	case c.RepeatLastN < -1:
		return fmt.Errorf("--repeat-last-n must be ≥ -1, got %d", c.RepeatLastN)
	}
	return nil
}

// Sampler picks next tokens; with the same seed and logits it picks the same tokens.
type Sampler struct {
	cfg  SamplerConfig
	rng  *rand.Rand
	prob []float32
	idx  []int
	vals []float32 // the candidates' logits (draw)
	pos  []int
	// A device's top-k of a decode step (Session.NextSampled).
	topIDs  []int32
	topVals []float32
	seen    map[int]struct{}
}

// NewSampler makes a sampler; cfg must be valid.
func NewSampler(cfg SamplerConfig) *Sampler {
	return &Sampler{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), seen: map[int]struct{}{}}
}

// Sample picks a token from logits (which it may modify), given the tokens so far.
// Order, as in llama.cpp: repetition penalty, then greedy or top-k → top-p
// → min-p → temperature (top-p and min-p see the logits untempered).
func (s *Sampler) Sample(logits []float32, history []int) int {
	return s.sample(logits, history, s.cfg.TopK)
}

// SampleAllowed is Sample restricted to the tokens whose bit is set in
// allowed (bit id%64 of word id/64; ids past it are not allowed), as a
// grammar constrains output: the others' logits become -Inf, and top-k
// keeps at most the allowed count, so a -Inf token is never a candidate.
// It returns -1 when no token is allowed.
func (s *Sampler) SampleAllowed(logits []float32, history []int, allowed []uint64) int {
	n := 0
	negInf := float32(math.Inf(-1))
	for w := 0; w*64 < len(logits); w++ {
		var word uint64
		if w < len(allowed) {
			word = allowed[w]
		}
		part := logits[w*64 : min(w*64+64, len(logits))]
		if word == ^uint64(0) && len(part) == 64 {
			n += 64
			continue
		}
		n += bits.OnesCount64(word & (^uint64(0) >> (64 - len(part))))
		for i := range part {
			if word&(1<<i) == 0 {
				part[i] = negInf
			}
		}
	}
	if n == 0 {
		return -1
	}
	k := s.cfg.TopK
	if k <= 0 || k > n {
		k = n
	}
	tok := s.sample(logits, history, k)
	if tok >= len(logits) || tok/64 >= len(allowed) || allowed[tok/64]&(1<<(tok%64)) == 0 {
		// Only when the allowed logits are themselves -Inf or NaN: any allowed token.
		for w, word := range allowed {
			if word != 0 && w*64+bits.TrailingZeros64(word) < len(logits) {
				return w*64 + bits.TrailingZeros64(word)
			}
		}
	}
	return tok
}

// sample is Sample with top-k k.
func (s *Sampler) sample(logits []float32, history []int, k int) int {
	c := &s.cfg
	if c.RepetitionPenalty != 1 && c.RepeatLastN != 0 {
		recent := history
		if c.RepeatLastN > 0 && len(recent) > c.RepeatLastN {
			recent = recent[len(recent)-c.RepeatLastN:]
		}
		clear(s.seen)
		for _, t := range recent {
			if _, dup := s.seen[t]; t < 0 || t >= len(logits) || dup {
				continue
			}
			s.seen[t] = struct{}{}
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
	n := s.candidates(logits, k)
	s.vals = s.vals[:0]
	for _, i := range s.idx[:n] {
		s.vals = append(s.vals, logits[i])
	}
	return s.draw(n)
}

// SampleTop is Sample for a sampler without a repetition penalty, at a
// temperature, with a top-k of len(ids), given the k tokens of largest
// logits (ids, their logits vals, in any order): the same token as Sample
// over the whole vocabulary's logits for the same draw.
func (s *Sampler) SampleTop(ids []int32, vals []float32) int {
	// The candidates in rank order: the larger logit, ties to the lower id.
	s.pos = s.pos[:0]
	for i := range ids {
		s.pos = append(s.pos, i)
	}
	slices.SortFunc(s.pos, func(a, b int) int {
		switch va, vb := vals[a], vals[b]; {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return int(ids[a]) - int(ids[b])
	})
	s.idx, s.vals = s.idx[:0], s.vals[:0]
	for _, i := range s.pos {
		s.idx, s.vals = append(s.idx, int(ids[i])), append(s.vals, vals[i])
	}
	return s.draw(len(ids))
}

// draw picks one of the n candidates s.idx[:n], best first, whose logits
// are s.vals[:n], as llama.cpp's chain does after top-k: top-p over the
// candidates' probabilities at temperature 1 (the smallest prefix
// reaching TopP), then min-p (the logits within ln MinP of the best: a
// probability at least MinP times the best's), then the softmax at the
// temperature over what is left and one uniform draw.
func (s *Sampler) draw(n int) int {
	c := &s.cfg
	m := float64(s.vals[0])
	if c.TopP < 1 {
		s.prob = s.prob[:0]
		var sum float64
		for _, v := range s.vals[:n] {
			p := math.Exp(float64(v) - m)
			s.prob = append(s.prob, float32(p))
			sum += p
		}
		acc := 0.0
		for k, p := range s.prob {
			acc += float64(p) / sum
			if acc >= c.TopP {
				n = k + 1
				break
			}
		}
	}
	if c.MinP > 0 {
		floor := m + math.Log(c.MinP)
		for k := 1; k < n; k++ {
			if float64(s.vals[k]) < floor {
				n = k
				break
			}
		}
	}
	s.prob = s.prob[:0]
	var sum float64
	for _, v := range s.vals[:n] {
		p := float32(math.Exp((float64(v) - m) / c.Temperature))
		s.prob = append(s.prob, p)
		sum += float64(p) // the draw below takes away these same values
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

// ahead reports whether token a ranks before token b: the larger logit,
// ties to the smaller id, so the order is total and the draw reproducible.
func ahead(logits []float32, a, b int) bool {
	return logits[a] > logits[b] || (logits[a] == logits[b] && a < b)
}

// candidates fills s.idx with the k best tokens in rank order (all of them
// when k is 0 or at least the vocabulary) and returns how many. A top-k is
// chosen through a k-entry heap in one pass, O(V log k): sorting a 128k
// vocabulary every token cost more than the decode step it follows.
func (s *Sampler) candidates(logits []float32, k int) int {
	v := len(logits)
	s.idx = s.idx[:0]
	if k <= 0 || k >= v {
		for i := range logits {
			s.idx = append(s.idx, i)
		}
		slices.SortFunc(s.idx, func(a, b int) int {
			if ahead(logits, a, b) {
				return -1
			}
			return 1
		})
		return v
	}
	// h is a heap whose root is the worst of the k best so far.
	h := s.idx
	for i := range k {
		h = append(h, i)
		for j := i; j > 0; {
			p := (j - 1) / 2
			if !ahead(logits, h[p], h[j]) {
				break
			}
			h[p], h[j] = h[j], h[p]
			j = p
		}
	}
	for i := k; i < v; i++ {
		if !ahead(logits, i, h[0]) {
			continue
		}
		h[0] = i
		siftWorst(logits, h, 0, k)
	}
	// Pop the worst to the back until the heap is empty: h ends best first.
	for end := k - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftWorst(logits, h, 0, end)
	}
	s.idx = h
	return k
}

// siftWorst restores the heap h[:n] below j (the root holds the token that
// ranks last).
func siftWorst(logits []float32, h []int, j, n int) {
	for {
		w, l, r := j, 2*j+1, 2*j+2
		if l < n && ahead(logits, h[w], h[l]) {
			w = l
		}
		if r < n && ahead(logits, h[w], h[r]) {
			w = r
		}
		if w == j {
			return
		}
		h[j], h[w] = h[w], h[j]
		j = w
	}
}
