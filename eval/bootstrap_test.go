package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/sipack/sipack/manifests"
)

// TestScoreOfAndInterval: the score of a multiset of rows equals the
// metric computed from scratch over the rows repeated (corpus BLEU of the
// repeated hypotheses, the mean of exact matches, the perplexity of the
// summed NLL); the bootstrap's interval holds the score and has width; a
// result's paired ratio to itself is 1 at every resample, and to a result
// whose every row is worse, below 1 at every resample; mismatched results
// and a baseline that scores 0 are errors.
func TestScoreOfAndInterval(t *testing.T) {
	refs := []string{"the cat sat on the mat", "a dog ran in the park", "it rained all day long", "we ate bread and fish", "the sun rose over hills", "birds sang in the trees"}
	hyps := []string{"the cat sat on a mat", "a dog runs in the park", "it rained all the day", "we ate the bread", "sun rose over the hills", "birds sing in trees"}
	// Each row's first word, one that its reference holds, replaced: fewer
	// matches at the same lengths in every row.
	var worse []string
	for _, h := range hyps {
		worse = append(worse, "zzz"+h[strings.Index(h, " "):])
	}
	rows := make([]manifests.Row, len(refs))
	res := func(hs []string) *Result {
		r := &Result{Metric: "bleu", N: len(hs), Extra: map[string]float64{}}
		var rr []rowResult
		for i, h := range hs {
			rows[i].Reference = refs[i]
			rr = append(rr, rowResult{hyp: h})
		}
		score(r, "bleu", rows, rr)
		return r
	}
	a, b := res(hyps), res(worse)
	if want := manifests.CorpusBLEU(hyps, refs).Score; a.Score != want || a.Score == 0 {
		t.Fatalf("score %v, corpus BLEU %v", a.Score, want)
	}
	idx := []int{0, 0, 3, 5, 5, 5}
	var hs, rs []string
	for _, i := range idx {
		hs, rs = append(hs, hyps[i]), append(rs, refs[i])
	}
	if got, want := a.ScoreOf(idx), manifests.CorpusBLEU(hs, rs).Score; math.Abs(got-want) > 1e-12 {
		t.Errorf("BLEU of rows %v: %v, from scratch %v", idx, got, want)
	}
	lo, hi, err := Interval(a, nil, 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(lo < a.Score && a.Score < hi) {
		t.Errorf("interval [%v, %v] does not hold the score %v", lo, hi, a.Score)
	}
	if lo, hi, _ := Interval(a, a, 200, 1); lo != 1 || hi != 1 {
		t.Errorf("paired ratio to itself in [%v, %v]", lo, hi)
	}
	if lo, hi, _ := Interval(b, a, 200, 1); !(hi < 1 && lo > 0) {
		t.Errorf("worse rows' paired ratio in [%v, %v], want below 1", lo, hi)
	}

	qa := &Result{Metric: "qa", N: 4, Extra: map[string]float64{}}
	score(qa, "qa", []manifests.Row{{Reference: "Noah"}, {Reference: "Moses"}, {Reference: "Abram"}, {Reference: "Eve"}},
		[]rowResult{{hyp: "Noah"}, {hyp: "moses."}, {hyp: "Lot"}, {hyp: "Adam"}})
	if qa.Score != 50 || qa.ScoreOf([]int{0, 1, 1, 2}) != 75 {
		t.Errorf("exact match %v, of rows 0 1 1 2 %v: want 50 and 75", qa.Score, qa.ScoreOf([]int{0, 1, 1, 2}))
	}
	ppl := &Result{Metric: "perplexity", N: 2, Extra: map[string]float64{}}
	score(ppl, "perplexity", make([]manifests.Row, 2), []rowResult{{nll: 2, tokens: 1}, {nll: 3, tokens: 3}})
	if want := math.Exp(5.0 / 4); math.Abs(ppl.Score-want) > 1e-12 || math.Abs(ppl.ScoreOf([]int{1, 1})-math.E) > 1e-12 {
		t.Errorf("perplexity %v, want %v; of row 1 twice %v", ppl.Score, want, ppl.ScoreOf([]int{1, 1}))
	}
	none := &Result{Metric: "qa", N: 4, Extra: map[string]float64{}}
	score(none, "qa", []manifests.Row{{Reference: "a"}, {Reference: "b"}, {Reference: "c"}, {Reference: "d"}},
		[]rowResult{{hyp: "x"}, {hyp: "x"}, {hyp: "x"}, {hyp: "x"}})
	if _, _, err := Interval(qa, none, 10, 1); err == nil {
		t.Error("a fraction of a baseline that scores 0: no error")
	}
	if _, _, err := Interval(a, qa, 10, 1); err == nil {
		t.Error("BLEU against exact match: no error")
	}
	if _, _, err := Interval(a, nil, 0, 1); err == nil {
		t.Error("no resamples: no error")
	}
}
