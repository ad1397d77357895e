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

// TestOlderPacksRunTheSame: the tiny model written as a version 1 pack
// (interleaved records), a version 2 pack (gate rows, then up | down pairs),
// a version 3 pack (gate, up and down rows in three runs) and as writers
// write it now (version 4 for bf16 and f16: the down rows by tiles) loads
// and runs the same, in bf16 (the
// checkpoint's dtype) and converted to f16: at γ 0.7 the logits of a
// prompt and of 12 greedy tokens, with the paper's selection and with the
// gate's, are bit for bit equal on one thread (the same arithmetic on other
// addresses).
func TestOlderPacksRunTheSame(t *testing.T) {
	for _, dt := range []string{"bf16", "f16"} {
		t.Run(dt, func(t *testing.T) {
			var paths []string
			for _, major := range []uint16{1, 2, 3, 0} { // 0: the writer's choice
				restore := format.SetWriteMajor(major)
				paths = append(paths, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3, DType: dt}))
				restore()
			}
			prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
			for _, method := range []string{"paper", "gate"} {
				var logits [4][]float32
				var ids [4][]int
				for i, path := range paths {
					m := testutil.LoadModel(t, path, 0.7)
					if got, want := m.Pack.Preamble.Major, []uint16{1, 2, 3, 4}[i]; got != want {
						t.Fatalf("pack %d: version %d", i+1, got)
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
				for i := 1; i < 4; i++ {
					if !slices.Equal(ids[0], ids[i]) || !slices.Equal(logits[0], logits[i]) {
						t.Fatalf("%s: version 1 and %d packs differ:\n%v\n%v", method, []uint16{1, 2, 3, 4}[i], ids[0], ids[i])
					}
				}
			}
		})
	}
}
