package runner

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestSamplerGreedyAndDeterminism(t *testing.T) {
	logits := []float32{0.1, 2, 1.9, -1, 0.5}
	g := NewSampler(SamplerConfig{Temperature: 0, TopP: 1, RepetitionPenalty: 1})
	if got := g.Sample(slices.Clone(logits), nil); got != 1 {
		t.Fatalf("greedy picked %d, want 1", got)
	}
	draw := func(seed uint64) []int {
		s := NewSampler(SamplerConfig{Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: seed})
		var out []int
		for i := 0; i < 50; i++ {
			out = append(out, s.Sample(slices.Clone(logits), nil))
		}
		return out
	}
	if !slices.Equal(draw(7), draw(7)) {
		t.Fatal("same seed gave different samples")
	}
	if slices.Equal(draw(7), draw(8)) {
		t.Fatal("different seeds gave identical samples")
	}
}

func TestSamplerTopKTopPDistribution(t *testing.T) {
	logits := []float32{0, float32(math.Log(2)), float32(math.Log(3)), float32(math.Log(4))} // p ∝ 1:2:3:4
	count := func(cfg SamplerConfig) []float64 {
		s := NewSampler(cfg)
		c := make([]float64, 4)
		const n = 40000
		for i := 0; i < n; i++ {
			c[s.Sample(slices.Clone(logits), nil)] += 1.0 / n
		}
		return c
	}
	near := func(got, want []float64) bool {
		for i := range got {
			if math.Abs(got[i]-want[i]) > 0.015 {
				return false
			}
		}
		return true
	}
	base := SamplerConfig{Temperature: 1, TopP: 1, RepetitionPenalty: 1, Seed: 1}
	if got := count(base); !near(got, []float64{0.1, 0.2, 0.3, 0.4}) {
		t.Errorf("T=1: %v, want 0.1 0.2 0.3 0.4", got)
	}
	k2 := base
	k2.TopK = 2
	if got := count(k2); !near(got, []float64{0, 0, 3.0 / 7, 4.0 / 7}) {
		t.Errorf("top-k 2: %v", got)
	}
	p := base
	p.TopP = 0.65 // 0.4 + 0.3 reaches it: keep {3, 2}
	if got := count(p); !near(got, []float64{0, 0, 3.0 / 7, 4.0 / 7}) {
		t.Errorf("top-p 0.65: %v", got)
	}
	hot := base
	hot.Temperature = 0.5 // p ∝ 1:4:9:16
	if got := count(hot); !near(got, []float64{1.0 / 30, 4.0 / 30, 9.0 / 30, 16.0 / 30}) {
		t.Errorf("T=0.5: %v", got)
	}
	// llama.cpp's order: top-p and min-p see the logits before the
	// temperature. Top-p 0.75 at T=1 keeps {3, 2, 1} (0.4 + 0.3 falls
	// short); tempered first (p ∝ 1:4:9:16) it would keep {3, 2} only.
	hotP := hot
	hotP.TopP = 0.75
	if got := count(hotP); !near(got, []float64{0, 4.0 / 29, 9.0 / 29, 16.0 / 29}) {
		t.Errorf("top-p 0.75 at T=0.5: %v, want 0 4/29 9/29 16/29", got)
	}
	// Min-p 0.4 keeps the tokens at least 0.4 × 0.4 as likely as the
	// best at T=1, {3, 2, 1}, whatever the temperature: at T=2 (p ∝
	// √1:√2:√3:√4) a min-p of the tempered probabilities would keep all.
	minP := base
	minP.MinP, minP.Temperature = 0.4, 2
	sum := math.Sqrt(2) + math.Sqrt(3) + 2
	if got := count(minP); !near(got, []float64{0, math.Sqrt(2) / sum, math.Sqrt(3) / sum, 2 / sum}) {
		t.Errorf("min-p 0.4 at T=2: %v", got)
	}
}

func TestRepetitionPenalty(t *testing.T) {
	s := NewSampler(SamplerConfig{Temperature: 0, TopP: 1, RepetitionPenalty: 2, RepeatLastN: -1})
	// Token 1 (logit 2) was seen: 2/2 = 1 < 1.5, so token 2 wins; a seen negative logit goes further down.
	logits := []float32{-1, 2, 1.5}
	if got := s.Sample(logits, []int{1, 0}); got != 2 || logits[0] != -2 {
		t.Fatalf("picked %d with logits %v, want 2 and logits[0] = -2", got, logits)
	}
	// RepeatLastN as llama.cpp's penalty_last_n: the last n tokens only
	// (1: token 0, so token 1 keeps its 2 and wins), and 0 none at all.
	for _, c := range []struct{ n, want int }{{1, 1}, {0, 1}} {
		s := NewSampler(SamplerConfig{Temperature: 0, TopP: 1, RepetitionPenalty: 2, RepeatLastN: c.n})
		logits := []float32{-1, 2, 1.5}
		got := s.Sample(logits, []int{1, 0})
		if wantL0 := map[int]float32{1: -2, 0: -1}[c.n]; got != c.want || logits[0] != wantL0 {
			t.Errorf("repeat-last-n %d: picked %d with logits %v, want %d and logits[0] = %v", c.n, got, logits, c.want, wantL0)
		}
	}
}

func TestSamplerValidate(t *testing.T) {
	for _, c := range []SamplerConfig{
		{Temperature: -1, TopP: 1, RepetitionPenalty: 1},
		{TopK: -1, TopP: 1, RepetitionPenalty: 1},
		{TopP: 0, RepetitionPenalty: 1},
		{TopP: 1.5, RepetitionPenalty: 1},
		{TopP: 1, RepetitionPenalty: 0},
		{TopP: 1, MinP: -0.1, RepetitionPenalty: 1},
		{TopP: 1, MinP: 1.5, RepetitionPenalty: 1},
		{TopP: 1, RepetitionPenalty: 1, RepeatLastN: -2},
	} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestSessionMultiTurnMatchesOneShot: a conversation continued turn by
// turn (the KV cache kept) and the same tokens in one prompt decode the
// same, on the exact path: with the BF16 prefill GEMM the one-shot prompt's
// activations are rounded where the turns' shorter pieces are not (batch
// size changes the arithmetic, as in llama.cpp; TestGoldenRoundedPrefill
// bounds that path against PyTorch).
func TestSessionMultiTurnMatchesOneShot(t *testing.T) {
	exactPath(t)
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convertOptions()), 1)
	pool := newPool(1)
	defer pool.Close()
	greedyCfg := SamplerConfig{Temperature: 0, TopP: 1, RepetitionPenalty: 1}
	a, _ := m.NewSession(pool, 128, greedyCfg)
	first := []int{4094, 3709, 260, 3652}
	if _, err := a.Generate(first, GenerateOptions{MaxTokens: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Generate([]int{11, 285}, GenerateOptions{MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	// One shot over the same tokens: the continuation must be identical.
	b, _ := m.NewSession(pool, 128, greedyCfg)
	all := append(slices.Clone(a.History[:len(a.History)-4]), []int{}...)
	if _, err := b.Generate(all, GenerateOptions{MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.History[len(a.History)-4:], b.History[len(b.History)-4:]) {
		t.Fatalf("multi-turn continuation %v, one-shot %v", a.History[len(a.History)-4:], b.History[len(b.History)-4:])
	}
	// Errors: prompt beyond the context, negative n.
	if _, err := b.Generate(make([]int, 200), GenerateOptions{MaxTokens: 1}); err == nil {
		t.Error("prompt beyond the context accepted")
	}
	if _, err := b.Generate([]int{1}, GenerateOptions{MaxTokens: -1}); err == nil {
		t.Error("negative token count accepted")
	}
}

// TestSamplerTopKMatchesFullSort: the heap's top-k is the full sort's
// prefix in the same order, so a seed draws the same tokens as a sampler
// that sorts the whole vocabulary (ties and repeated values included).
func TestSamplerTopKMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		v := 1 + rng.IntN(3000)
		logits := make([]float32, v)
		levels := 1 + rng.IntN(50) // few levels: many ties
		for i := range logits {
			logits[i] = float32(rng.IntN(levels)) / 4
		}
		k := rng.IntN(v + 3)
		s := NewSampler(SamplerConfig{Temperature: 1, TopK: k, TopP: 1, RepetitionPenalty: 1})
		n := s.candidates(logits, k)
		want := make([]int, v)
		for i := range want {
			want[i] = i
		}
		sort.Slice(want, func(a, b int) bool {
			la, lb := logits[want[a]], logits[want[b]]
			return la > lb || (la == lb && want[a] < want[b])
		})
		if k > 0 && k < v {
			want = want[:k]
		}
		if n != len(want) || !slices.Equal(s.idx[:n], want) {
			t.Fatalf("trial %d (V %d, k %d): candidates %v, want %v", trial, v, k, s.idx[:min(n, 12)], want[:min(len(want), 12)])
		}
	}
}

// BenchmarkSampleDefaults: sirun's default sampler over a 1B-shape vocabulary.
func BenchmarkSampleDefaults(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	work := make([]float32, len(logits))
	s := NewSampler(DefaultSampler())
	history := []int{1, 2, 3}
	for b.Loop() {
		copy(work, logits)
		s.Sample(work, history)
	}
}
