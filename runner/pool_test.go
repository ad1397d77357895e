package runner

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
)

// serialPool is a backend.Pool that is not a *kernels.Pool: the CPU device
// runs on a pool of its own of as many workers (2), and the runner's
// host-side work (the votes) runs on it, all as worker 0.
type serialPool struct{}

func (serialPool) Workers() int { return 2 }
func (serialPool) RunStatic(n int, f func(lo, hi, w int)) {
	if n > 0 {
		f(0, n, 0)
	}
}

// TestSessionPools: a session decodes the same tokens, votes included, on
// a *kernels.Pool of two workers and on another Pool of two; a nil Pool is
// refused.
func TestSessionPools(t *testing.T) {
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3}), 1)
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	run := func(pool backend.Pool) []int {
		ss, err := m.NewSession(pool, 64, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.S.Close()
		ss.Sel = &Selection{Phi: 0.5, Alpha: 0.2, Base: 0.3}
		var out []int
		if _, err := ss.Generate(prompt, GenerateOptions{MaxTokens: 12, OnToken: func(id int) { out = append(out, id) }}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	two := kernels.NewPool(2)
	defer two.Close()
	want := run(two)
	if got := run(serialPool{}); !slices.Equal(got, want) {
		t.Errorf("serialPool: %v, want %v", got, want)
	}
	if _, err := m.NewSession(nil, 64, SamplerConfig{TopP: 1, RepetitionPenalty: 1}); err == nil {
		t.Error("a nil pool was taken")
	}
}
