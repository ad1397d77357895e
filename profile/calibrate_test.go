package profile_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

// stepNLL is the reference for Calibrate's loss: the text fed one token at
// a time (the decode path, not the teacher-forced batches), each
// prediction from the last token's logits, under plan.
func stepNLL(t *testing.T, m *runner.Model, plan func(*runner.State) runner.Plan, texts []profile.Text) float64 {
	t.Helper()
	pool := kernels.NewPool(1)
	defer pool.Close()
	var sum float64
	var n int
	for _, tx := range texts {
		s, err := m.NewState(pool, len(tx.Tokens))
		if err != nil {
			t.Fatal(err)
		}
		p := plan(s)
		for pos := 0; pos < len(tx.Tokens)-1; pos++ {
			logits, err := s.ForwardBatch(tx.Tokens[pos:pos+1], pos, runner.Pass{Plan: p})
			if err != nil {
				t.Fatal(err)
			}
			if pos+1 >= tx.From {
				sum += refNLL(logits, tx.Tokens[pos+1])
				n++
			}
		}
	}
	return sum / float64(n)
}

// TestCalibrate: on the tiny model in a random rank order (so a neuron's
// rank is not its index), Calibrate's dense loss and its losses with one
// layer cut to its top fraction by the profile (the first layer, and two
// whose passes resume from the whole pass, over a text of two chunks)
// equal the same losses computed token by token with the neurons chosen
// independently (by a scan of the pack's permutation); progress counts up
// to the layers run; cutting the first layer to a tenth costs more than
// to nine tenths; Run with Calibrate fills the curves.
func TestCalibrate(t *testing.T) {
	dir := "../testdata/tinyllama"
	path := testutil.PackOf(t, dir, convert.Options{Order: convert.RandomOrder([]int{0, 1, 2, 3, 4, 5}, 768, 3)})
	m := testutil.LoadModel(t, path, 1)
	prompts := [][]int{
		m.Tokenizer.Encode("Spanish: En el principio creó Dios los cielos y la tierra.\nEnglish:", true),
		m.Tokenizer.Encode("Q: Who built the ark?\nA:", true),
	}
	p, err := profile.Run(context.Background(), m, "t", prompts, profile.RunOptions{GenTokens: 12, Jobs: 1, Calibrate: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p.SensitivityPrompts != 2 || len(p.Sensitivity) != 6 || len(p.Sensitivity[0]) != len(profile.CalibrationFractions) || p.Validate() != nil {
		t.Fatalf("Run with Calibrate: %d prompts, %d layers of curves", p.SensitivityPrompts, len(p.Sensitivity))
	}
	if !(p.Sensitivity[0][0] > p.Sensitivity[0][8]) {
		t.Fatalf("first layer at a tenth %v, at nine tenths %v: cutting more should cost more", p.Sensitivity[0][0], p.Sensitivity[0][8])
	}

	// Two texts, the second longer than a calibration chunk of 64 tokens,
	// so a cut layer's pass resumes a second chunk from its own first.
	long := "In the beginning God created the heaven and the earth. And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God said, Let there be light: and there was light."
	texts := []profile.Text{
		{Tokens: append(slices.Clone(prompts[0]), m.Tokenizer.Encode(" In the beginning God created", false)...), From: len(prompts[0])},
		{Tokens: append(slices.Clone(prompts[1]), m.Tokenizer.Encode(" Noah. "+long, false)...), From: len(prompts[1])},
	}
	if n := len(texts[1].Tokens); n <= 66 {
		t.Fatalf("the long text has %d tokens: not two chunks", n)
	}
	q := &profile.Profile{Layers: 6, Neurons: 768, Sums: p.Sums}
	if err := profile.Calibrate(context.Background(), m, q, texts, 2, nil); err != nil {
		t.Fatal(err)
	}
	// The texts run on workers, their losses added in text order: the
	// curves are the same to the bit on one thread as on three.
	// (Four texts of unequal lengths: three workers finish them out of
	// order, and three or more float sums depend on their order.)
	four := append(slices.Clone(texts),
		profile.Text{Tokens: append(slices.Clone(prompts[0]), m.Tokenizer.Encode(" And God said", false)...), From: len(prompts[0])},
		profile.Text{Tokens: append(slices.Clone(prompts[1]), m.Tokenizer.Encode(" Moses and Aaron", false)...), From: len(prompts[1])})
	var curves [2]*profile.Profile
	for i, threads := range []int{1, 3} {
		curves[i] = &profile.Profile{Layers: 6, Neurons: 768, Sums: p.Sums}
		if err := profile.Calibrate(context.Background(), m, curves[i], four, threads, nil); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := curves[0], curves[1]; a.SensitivityDense != b.SensitivityDense || !slices.EqualFunc(a.Sensitivity, b.Sensitivity, slices.Equal) {
		t.Fatalf("one thread: dense %v, curves %v; three: %v, %v", a.SensitivityDense, a.Sensitivity, b.SensitivityDense, b.Sensitivity)
	}
	dense := stepNLL(t, m, func(*runner.State) runner.Plan { return nil }, texts)
	if math.Abs(q.SensitivityDense-dense) > 1e-3 {
		t.Fatalf("dense loss %v, token by token %v", q.SensitivityDense, dense)
	}
	// Layers 0 (a whole pass), 2 and 5 (resumed) at 0.3: the top 230
	// neurons by the sums, found as ranks by scanning the permutation.
	const fi = 2
	for _, layer := range []int{0, 2, 5} {
		byScore := make([]int, 768)
		for i := range byScore {
			byScore[i] = i
		}
		slices.SortStableFunc(byScore, func(a, b int) int { return cmp.Compare(p.Sums[layer][b], p.Sums[layer][a]) })
		top := map[uint32]bool{}
		for _, n := range byScore[:230] {
			top[uint32(n)] = true
		}
		si, _ := m.Pack.SparseIndex(layer)
		var ranks []int
		for r, n := range m.Pack.Index.SparseLayers[si].Perm {
			if top[n] {
				ranks = append(ranks, r)
			}
		}
		cut := stepNLL(t, m, func(s *runner.State) runner.Plan {
			rs := make([][]int, 6)
			rs[layer] = ranks
			plan, err := s.RanksPlan(rs)
			if err != nil {
				t.Fatal(err)
			}
			return plan
		}, texts)
		if math.Abs(q.Sensitivity[layer][fi]-cut) > 1e-3 || math.Abs(cut-dense) < 1e-6 {
			t.Fatalf("layer %d at %v: loss %v, token by token %v (dense %v)", layer, profile.CalibrationFractions[fi], q.Sensitivity[layer][fi], cut, dense)
		}
	}
	var steps []int
	if err := profile.Calibrate(context.Background(), m, q, texts[:1], 2, func(done, total int) {
		if done > total || (len(steps) > 0 && done <= steps[len(steps)-1]) {
			t.Errorf("progress %d of %d after %v", done, total, steps)
		}
		steps = append(steps, done)
	}); err != nil {
		t.Fatal(err)
	}
	if want := 1 + 6*len(profile.CalibrationFractions); len(steps) != want || steps[len(steps)-1] != 6+9*(6+5+4+3+2+1) {
		t.Errorf("progress told %d times, last %v: want %d times, ending at the layers run", len(steps), steps[len(steps)-1:], want)
	}
	if _, err := profile.Run(context.Background(), m, "t", prompts, profile.RunOptions{GenTokens: 0, Jobs: 1, Calibrate: 2}); err == nil {
		t.Fatal("calibration with nothing after the prompts: no error")
	}
}

// refNLL is −log softmax(logits)[target], summed in float64 with the
// largest logit subtracted.
func refNLL(logits []float32, target int) float64 {
	m := slices.Max(logits)
	var z float64
	for _, v := range logits {
		z += math.Exp(float64(v - m))
	}
	return math.Log(z) - float64(logits[target]-m)
}

// TestCalibrationCountsFirstFollowers: the calibration counts at most
// CalibrationFollowers tokens after each prompt: a profile run that
// generates more gives the curves of its prompt followed by the first
// ones alone (the golden greedy tokens), and says so in the profile.
func TestCalibrationCountsFirstFollowers(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	g := testutil.ReadGolden(t, "../testdata/tinyllama/golden.json")[0]
	if len(g.Greedy32) < profile.CalibrationFollowers {
		t.Fatalf("the golden file has %d greedy tokens, fewer than %d", len(g.Greedy32), profile.CalibrationFollowers)
	}
	p, err := profile.Run(context.Background(), m, "t", [][]int{g.InputIDs}, profile.RunOptions{GenTokens: profile.CalibrationFollowers + 8, Jobs: 1, Calibrate: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := &profile.Profile{Layers: 6, Neurons: 768, Sums: p.Sums}
	text := profile.Text{Tokens: slices.Concat(g.InputIDs, g.Greedy32[:profile.CalibrationFollowers]), From: len(g.InputIDs)}
	if err := profile.Calibrate(context.Background(), m, want, []profile.Text{text}, 1, nil); err != nil {
		t.Fatal(err)
	}
	if p.SensitivityFollowers != profile.CalibrationFollowers || p.SensitivityDense != want.SensitivityDense ||
		!slices.EqualFunc(p.Sensitivity, want.Sensitivity, slices.Equal) {
		t.Fatalf("%d generated tokens: dense loss %v, followers %d; want %v over the first %d", profile.CalibrationFollowers+8,
			p.SensitivityDense, p.SensitivityFollowers, want.SensitivityDense, profile.CalibrationFollowers)
	}
}
