package format_test

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// TestVersion1PacksRunTheSame: the tiny model written as a version 1 pack
// (interleaved records) and as a version 2 pack (split band blocks) loads
// and runs the same: at γ 0.7 the logits of a prompt and of 12 greedy
// tokens, with the paper's selection and with the gate's, are bit for bit
// equal on one thread (the same arithmetic on other addresses).
func TestVersion1PacksRunTheSame(t *testing.T) {
	restore := format.SetWriteMajor(1)
	v1 := testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	restore()
	v2 := testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	for _, method := range []string{"paper", "gate"} {
		var logits [2][]float32
		var ids [2][]int
		for i, path := range []string{v1, v2} {
			m := testutil.LoadModel(t, path, 0.7)
			if got := m.Pack.Split(); got != (i == 1) {
				t.Fatalf("pack %d: split %v", i+1, got)
			}
			pool := kernels.NewPool(1)
			ss, err := m.NewSession(pool, 64, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
			if err != nil {
				t.Fatal(err)
			}
			ss.Sel = &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: method, Compact: true}
			if _, err := ss.Generate(prompt, runner.GenerateOptions{MaxTokens: 12, OnToken: func(id int) { ids[i] = append(ids[i], id) }}); err != nil {
				t.Fatal(err)
			}
			logits[i] = slices.Clone(ss.S.Logits)
			pool.Close()
		}
		if !slices.Equal(ids[0], ids[1]) || !slices.Equal(logits[0], logits[1]) {
			t.Fatalf("%s: version 1 and 2 packs differ:\n%v\n%v", method, ids[0], ids[1])
		}
	}
}
