package profile_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

// TestProfileMatchesGoldenActivations: with no generated tokens, the
// profile of golden case 0 is Σ_t |h_t| of PyTorch's layer-2 activations.
func TestProfileMatchesGoldenActivations(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	c := testutil.ReadGolden(t, "../testdata/tinyllama/golden.json")[0]
	p, err := profile.Run(context.Background(), m, "t", [][]int{c.InputIDs}, profile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens != int64(len(c.InputIDs)) || p.Prompts != 1 {
		t.Fatalf("tokens %d prompts %d, want %d and 1", p.Tokens, p.Prompts, len(c.InputIDs))
	}
	worst := 0.0
	for n := 0; n < 768; n++ {
		var want float64
		for _, row := range c.FFNAct {
			want += math.Abs(float64(row[n]))
		}
		worst = max(worst, math.Abs(p.Sums[2][n]-want))
	}
	// 17 tokens, each within 1e-3 of the reference.
	if worst > 17e-3 {
		t.Fatalf("layer-2 Σ|h| differs from golden by %g", worst)
	}
	t.Logf("layer-2 Σ|h| vs PyTorch: max |Δ| %.2e", worst)
}

// TestProfileIndependentSum recomputes a profile with generated tokens by
// hand from the forward pass, on a permuted pack (so the profiler's mapping
// from ranks back to neurons is exercised), and checks that jobs do not
// change the result.
func TestProfileIndependentSum(t *testing.T) {
	order := &convert.Order{Perms: map[int][]uint32{}, Provenance: format.Provenance{Order: "random"}}
	for l := 0; l < 6; l++ {
		perm := make([]uint32, 768)
		for i := range perm {
			perm[i] = uint32((i*5 + l) % 768) // 5 is coprime to 768
		}
		order.Perms[l] = perm
	}
	permuted := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{Order: order}), 1)
	plain := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	prompts := [][]int{{4094, 3709, 260, 3652}, {4094, 56, 671, 520, 25}, {4094, 1184, 500}}
	const gen = 6
	a, err := profile.Run(context.Background(), permuted, "t", prompts, profile.RunOptions{GenTokens: gen, Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := profile.Run(context.Background(), permuted, "t", prompts, profile.RunOptions{GenTokens: gen, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	for l := range a.Sums {
		if !slices.Equal(a.Sums[l], b.Sums[l]) {
			t.Fatalf("layer %d: 1 job and 3 jobs differ", l)
		}
	}
	// By hand on the plain pack: prefill, then feed gen greedy tokens.
	want, _ := sumsByHand(t, plain, prompts, gen, func(_, _ int, logits []float32) (int, bool) { return runner.Argmax(logits), true })
	for l := range want {
		for n := range want[l] {
			if d := math.Abs(a.Sums[l][n] - want[l][n]); d > 1e-4*(1+want[l][n]) {
				t.Fatalf("layer %d neuron %d: profile %g, by hand %g", l, n, a.Sums[l][n], want[l][n])
			}
		}
	}
	if a.Tokens != int64(4+5+3+3*gen) {
		t.Fatalf("tokens %d", a.Tokens)
	}
	// Merging profiles of two prompt sets equals profiling them together.
	x, _ := profile.Run(context.Background(), plain, "t", prompts[:1], profile.RunOptions{GenTokens: gen})
	y, _ := profile.Run(context.Background(), plain, "t", prompts[1:], profile.RunOptions{GenTokens: gen})
	xy, err := profile.Merge(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if xy.Tokens != a.Tokens || xy.Prompts != 3 {
		t.Fatalf("merged tokens %d prompts %d", xy.Tokens, xy.Prompts)
	}
	for l := range xy.Sums {
		for n := range xy.Sums[l] {
			if xy.Sums[l][n] != x.Sums[l][n]+y.Sums[l][n] {
				t.Fatal("merge is not the exact sum")
			}
			if d := math.Abs(xy.Sums[l][n] - a.Sums[l][n]); d > 1e-4*(1+a.Sums[l][n]) {
				t.Fatalf("merged profile differs from the joint one at layer %d neuron %d", l, n)
			}
		}
	}
}

// TestRankedPack: a profile-ranked pack maps exactly the top neurons at γ < 1
// and computes the same logits as the original order at γ = 1.
func TestRankedPack(t *testing.T) {
	plain := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	prompts := [][]int{{4094, 3709, 260, 3652}, {4094, 784, 25, 1994}}
	r := testutil.ProfileAndRank(t, plain, "t", prompts, 4, 1)
	prof := r.Profile
	rankedPath := testutil.PackOf(t, testutil.Tiny, convert.Options{Order: r.Order})
	ranked := testutil.LoadModel(t, rankedPath, 1)
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, pr := range prompts {
		s1, _ := plain.NewState(pool, 32)
		s2, _ := ranked.NewState(pool, 32)
		a, _ := s1.ForwardBatch(pr, 0, runner.Pass{})
		a = slices.Clone(a)
		b, _ := s2.ForwardBatch(pr, 0, runner.Pass{})
		if d := testutil.MaxAbsDiff(t, a, b); d > 1e-4 {
			t.Fatalf("ranked pack at γ=1 differs from the original order by %g", d)
		}
	}
	// At γ = 0.5 the loaded records are exactly the top-384 ranked neurons.
	half := testutil.LoadModel(t, rankedPath, 0.5)
	if half.Pack.LoadedRanks != 384 {
		t.Fatalf("loaded %d ranks, want 384", half.Pack.LoadedRanks)
	}
	scores := prof.Scores()
	for si, sl := range half.Pack.Index.SparseLayers {
		loaded := map[uint32]bool{}
		for r := 0; r < 384; r++ {
			loaded[sl.Perm[r]] = true
			if !slices.Equal(half.Pack.Record(si, r), ranked.Pack.Record(si, r)) {
				t.Fatal("γ load and full load disagree on a record")
			}
		}
		// The base (top 30 % by task score) is loaded in full.
		ids := make([]int, 768)
		for i := range ids {
			ids[i] = i
		}
		slices.SortStableFunc(ids, func(a, b int) int {
			switch {
			case scores[sl.Layer][a] > scores[sl.Layer][b]:
				return -1
			case scores[sl.Layer][a] < scores[sl.Layer][b]:
				return 1
			}
			return 0
		})
		for _, n := range ids[:230] {
			if !loaded[uint32(n)] {
				t.Fatalf("layer %d: base neuron %d not in the γ=0.5 prefix", sl.Layer, n)
			}
		}
	}
}

// TestProfileTakesExactPath: with the BF16 prefill GEMM rounding
// activations in the table in use, the profile of prompts long enough for
// the GEMM is still the exact path's, bit for bit.
func TestProfileTakesExactPath(t *testing.T) {
	rounded := kernels.Active().WithBF16Prefill(true)
	if !rounded.PrefillBF16 {
		t.Skipf("table %s has no BF16 prefill GEMM (needs AVX512_BF16)", kernels.Active().Name)
	}
	m := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	prompt := make([]int, 40) // ≥ 24 tokens: the GEMM runs
	for i := range prompt {
		prompt[i] = 300 + 37*i
	}
	run := func(tb *kernels.Table) *profile.Profile {
		defer kernels.Use(tb)()
		p, err := profile.Run(context.Background(), m, "t", [][]int{prompt}, profile.RunOptions{GenTokens: 2})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := run(kernels.Active().WithBF16Prefill(false)), run(rounded)
	for l := range a.Sums {
		if !slices.Equal(a.Sums[l], b.Sums[l]) {
			t.Fatalf("layer %d: the profile differs when the table rounds the prefill", l)
		}
	}
}

// TestProfileContinuations: --continue stop ends each prompt's greedy
// tokens before the first stop token, --continue reference feeds the given
// tokens instead (cut at GenTokens); both are recomputed by hand one token
// at a time, and a task's references are followed with its
// reference_prefix.
func TestProfileContinuations(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	prompts := [][]int{{4094, 3709, 260, 3652}, {4094, 56, 671, 520, 25}}
	const gen = 6
	byHand := func(next func(p, i int, logits []float32) (int, bool)) ([][]float64, int64) {
		return sumsByHand(t, m, prompts, gen, next)
	}
	same := func(what string, got *profile.Profile, want [][]float64, tokens int64) {
		t.Helper()
		if got.Tokens != tokens {
			t.Fatalf("%s: %d tokens profiled, by hand %d", what, got.Tokens, tokens)
		}
		for l := range want {
			for n := range want[l] {
				if d := math.Abs(got.Sums[l][n] - want[l][n]); d > 1e-4*(1+want[l][n]) {
					t.Fatalf("%s: layer %d neuron %d: profile %g, by hand %g", what, l, n, got.Sums[l][n], want[l][n])
				}
			}
		}
	}
	// Stop at prompt 0's third greedy token: two generated there.
	var greedy []int
	byHand(func(p, i int, logits []float32) (int, bool) {
		if p == 0 {
			greedy = append(greedy, runner.Argmax(logits))
		}
		return runner.Argmax(logits), true
	})
	stop := map[int]bool{greedy[2]: true}
	if greedy[0] == greedy[2] || greedy[1] == greedy[2] {
		t.Fatalf("greedy tokens %v: the test needs a third token unlike the first two", greedy)
	}
	got, err := profile.Run(context.Background(), m, "t", prompts, profile.RunOptions{GenTokens: gen, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	want, tokens := byHand(func(p, i int, logits []float32) (int, bool) {
		tok := runner.Argmax(logits)
		return tok, !stop[tok]
	})
	if tokens > int64(len(prompts[0])+2+len(prompts[1])+gen) {
		t.Fatalf("by hand: %d tokens, more than the stop allows", tokens)
	}
	same("stop", got, want, tokens)
	if got.Continue != "stop" {
		t.Fatalf("continue %q, want stop", got.Continue)
	}
	// Version 2 says so to readers that know only version 1's greedy tokens.
	if got.Version != 2 || got.Validate() != nil {
		t.Fatalf("a stop profile of version %d (%v)", got.Version, got.Validate())
	}
	old := *got
	old.Version = 1
	if old.Validate() == nil {
		t.Fatal("a version 1 profile with a continuation validated")
	}
	greedyProf, _ := profile.Run(context.Background(), m, "t", prompts, profile.RunOptions{GenTokens: gen})
	if _, err := profile.Merge(got, greedyProf); err == nil {
		t.Fatal("a stop profile merged with a greedy one")
	}

	// Follow given tokens: prompt 0's eight cut to gen, prompt 1's three whole.
	follow := [][]int{{100, 200, 300, 400, 500, 600, 700, 800}, {900, 1000, 1100}}
	got, err = profile.Run(context.Background(), m, "t", prompts, profile.RunOptions{GenTokens: gen, Follow: follow})
	if err != nil {
		t.Fatal(err)
	}
	want, tokens = byHand(func(p, i int, _ []float32) (int, bool) {
		if i >= len(follow[p]) {
			return 0, false
		}
		return follow[p][i], true
	})
	same("reference", got, want, tokens)
	if got.Continue != "reference" {
		t.Fatalf("continue %q, want reference", got.Continue)
	}

	// A task's references, with its prefix.
	dir := t.TempDir()
	rows := `{"prompt": "Question: What is the first book?\nAnswer:", "reference": "Genesis"}` + "\n" +
		`{"prompt": "Question: Who built the ark?\nAnswer:", "reference": "Noah"}` + "\n"
	man := `{"name": "t", "template": "{prompt}", "train": "t.jsonl", "eval": "t.jsonl", "gen_tokens": 6, "metric": "qa", "reference_prefix": " "}`
	for name, text := range map[string]string{"t.jsonl": rows, "t.json": man} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mf, err := manifests.Load(filepath.Join(dir, "t.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err = profile.RunTask(context.Background(), m, mf, profile.TaskOptions{GenTokens: -1, Continue: "reference"})
	if err != nil {
		t.Fatal(err)
	}
	tk := m.Tokenizer
	var ps, fs [][]int
	for _, r := range [][2]string{{"Question: What is the first book?\nAnswer:", " Genesis"}, {"Question: Who built the ark?\nAnswer:", " Noah"}} {
		ps = append(ps, tk.Encode(r[0], true))
		fs = append(fs, tk.Encode(r[1], false))
	}
	wantP, err := profile.Run(context.Background(), m, "t", ps, profile.RunOptions{GenTokens: 6, Follow: fs})
	if err != nil {
		t.Fatal(err)
	}
	same("task reference", got, wantP.Sums, wantP.Tokens)
	if _, err := profile.RunTask(context.Background(), m, mf, profile.TaskOptions{GenTokens: -1, Continue: "sideways"}); err == nil {
		t.Fatal("an unknown continuation was accepted")
	}
}

// sumsByHand sums |h| per layer and rank over each prompt and then, one at
// a time, up to gen tokens next(prompt, i, logits) gives until it says
// stop; it returns the sums and the tokens run.
func sumsByHand(t *testing.T, m *runner.Model, prompts [][]int, gen int, next func(p, i int, logits []float32) (int, bool)) ([][]float64, int64) {
	t.Helper()
	pool := kernels.NewPool(1)
	defer pool.Close()
	want := make([][]float64, m.Config.NumLayers)
	for l := range want {
		want[l] = make([]float64, m.Config.IntermediateSize)
	}
	var tokens int64
	for p, pr := range prompts {
		s, err := m.NewState(pool, len(pr)+gen)
		if err != nil {
			t.Fatal(err)
		}
		pass := runner.Pass{OnAct: func(l int, act []float32, ranks int) {
			for i, h := range act {
				want[l][i%ranks] += math.Abs(float64(h))
			}
		}}
		logits, err := s.ForwardBatch(pr, 0, pass)
		if err != nil {
			t.Fatal(err)
		}
		tokens += int64(len(pr))
		for i := 0; i < gen; i++ {
			tok, ok := next(p, i, logits)
			if !ok {
				break
			}
			if logits, err = s.ForwardBatch([]int{tok}, len(pr)+i, pass); err != nil {
				t.Fatal(err)
			}
			tokens++
		}
	}
	return want, tokens
}
