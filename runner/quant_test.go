package runner

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
)

// TestQuantizedGreedy: the tiny model's greedy continuation at Q8_0 matches
// bf16 for the first 16 tokens on most golden prompts; Q4_0 is reported.
func TestQuantizedGreedy(t *testing.T) {
	cases := readGolden(t, "../testdata/tinyllama/golden.json")
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, c := range []struct {
		dtype, dense string
		minMatch     int
	}{{"q8_0", "", 4}, {"q4_0", "", 0}, {"q4_0", "bf16", 0}} {
		for _, intDot := range []bool{false, true} {
			restore := kernels.Use(kernels.Active().WithIntegerPath(intDot))
			m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: c.dtype, DenseDType: c.dense}), 1)
			matched, prefix := 0, 0
			for _, g := range cases {
				got := greedy(t, m, pool, g.InputIDs, 16)
				if slices.Equal(got, g.Greedy32[:16]) {
					matched++
				}
				for i := range got {
					if got[i] != g.Greedy32[i] {
						break
					}
					prefix++
				}
			}
			restore()
			t.Logf("%s (dense %q, integer dots %v): %d of %d golden prompts match bf16 for 16 greedy tokens; %d of %d tokens before the first divergence",
				c.dtype, c.dense, intDot, matched, len(cases), prefix, 16*len(cases))
			if matched < c.minMatch {
				t.Errorf("%s: only %d of %d prompts match for 16 tokens, want ≥ %d", c.dtype, matched, len(cases), c.minMatch)
			}
		}
	}
}
