// Package testutil holds the setup that the tests of several packages
// share: a pack of a checkpoint in a test's temporary directory, a model
// loaded from it, the golden reference cases, and the method's
// profile → rank → ranked pack step. Only tests import it.
package testutil

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

// Tiny is the trained tiny model's checkpoint, from a package directory one
// level below the module root.
const Tiny = "../testdata/tinyllama"

// PackOf converts dir with opt into a pack in the test's temporary directory.
func PackOf(t testing.TB, dir string, opt convert.Options) string {
	t.Helper()
	opt.ModelDir = dir
	opt.Output = filepath.Join(t.TempDir(), "m.sip")
	if _, err := convert.Convert(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	return opt.Output
}

// LoadModel opens path at γ = gamma and loads it; the pack is closed when
// the test ends.
func LoadModel(t testing.TB, path string, gamma float64) *runner.Model {
	t.Helper()
	p, err := format.Open(path, format.OpenOptions{Gamma: gamma})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m, err := runner.Load(p, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GoldenCase is one case of a golden.json written by the reference
// implementation (the fields the shared tests read).
type GoldenCase struct {
	Prompt   string      `json:"prompt"`
	InputIDs []int       `json:"input_ids"`
	FFNAct   [][]float32 `json:"ffn_act"`   // layer-2 input of down_proj, [token][neuron]
	Greedy32 []int       `json:"greedy_32"` // the first 32 greedy tokens after the prompt
}

// ReadGolden reads the cases of a golden.json.
func ReadGolden(t testing.TB, path string) []GoldenCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []GoldenCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g.Cases
}

// Ranked is the method's setup on the tiny model: a profile of prompts on
// the dense model and the order it ranks every layer in (δ = 0.3, the task
// itself as the secondary score).
type Ranked struct {
	Profile *profile.Profile
	Order   *convert.Order
	Sparse  []int // the tiny model's six layers, all sparse
}

// ProfileAndRank profiles prompts on dense (gen greedy tokens after each,
// jobs at a time) and ranks the tiny model's layers by the profile.
func ProfileAndRank(t testing.TB, dense *runner.Model, task string, prompts [][]int, gen, jobs int) *Ranked {
	t.Helper()
	prof, err := profile.Run(context.Background(), dense, task, prompts, profile.RunOptions{GenTokens: gen, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	sparse := []int{0, 1, 2, 3, 4, 5}
	order, err := profile.RankOrder(prof, nil, 0.3, sparse, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Ranked{Profile: prof, Order: order, Sparse: sparse}
}

// MaxAbsDiff is the largest |a[i] − b[i]|; lengths must match.
func MaxAbsDiff(t testing.TB, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d", len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		d := float64(a[i] - b[i])
		worst = max(worst, max(d, -d))
	}
	return worst
}
