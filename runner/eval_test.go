package runner

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
)

// TestEvalReproducesPyTorch runs every task's full eval set on the dense
// pack and compares with the reference evaluator's numbers in
// metrics_dense.json (same decoding rule: greedy, ≤ max_new_tokens, stop at
// a token containing a newline or EOS), and the windowed perplexity of the
// held-out book of Ruth in English and Spanish.
func TestEvalReproducesPyTorch(t *testing.T) {
	raw, err := os.ReadFile("../testdata/tinyllama/metrics_dense.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		PPLEn struct{ PPL float64 }  `json:"ppl_en_ruth_web"`
		PPLEs struct{ PPL float64 }  `json:"ppl_es_ruth_rv1909"`
		TR    struct{ BLEU float64 } `json:"translate_es_en_eval"`
		QA    map[string]struct {
			EM float64 `json:"exact_match"`
			N  int     `json:"n"`
		} `json:"qa_eval"`
		LM struct {
			PPL float64 `json:"ppl"`
			Acc float64 `json:"next_token_acc"`
		} `json:"lm_eval"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	eval := func(task string) *EvalResult {
		man, err := manifests.Load(task)
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Eval(context.Background(), man, EvalOptions{Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	check := func(what string, got, want, tol float64) {
		t.Helper()
		t.Logf("%-28s %.4f (reference %.4f)", what, got, want)
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, reference %.4f (tolerance %g)", what, got, want, tol)
		}
	}
	tr := eval("translate")
	check("translate BLEU", tr.Score, ref.TR.BLEU, 0.05)
	qa := eval("qa")
	check("qa exact match, cloze", qa.Extra["exact_match_cloze_heldout"], 100*ref.QA["cloze_heldout"].EM, 1.0)
	check("qa exact match, book facts", qa.Extra["exact_match_book_fact_seen"], 100*ref.QA["book_fact_seen"].EM, 2.0)
	lm := eval("lm")
	check("lm perplexity", lm.Score, ref.LM.PPL, 0.05)
	check("lm next-token accuracy %", lm.Extra["next_token_acc"], 100*ref.LM.Acc, 0.1)
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, c := range []struct {
		file string
		want float64
	}{{"ppl_en_ruth_web.txt", ref.PPLEn.PPL}, {"ppl_es_ruth_rv1909.txt", ref.PPLEs.PPL}} {
		text, _ := os.ReadFile("../testdata/tinyllama/heldout/" + c.file)
		ppl, _, err := m.Perplexity(pool, m.Tokenizer.Encode(string(text), false), 512)
		if err != nil {
			t.Fatal(err)
		}
		check("perplexity "+c.file, ppl, c.want, 0.02)
	}
}

// TestTaskProfileBeatsRandomOrder is the method's central claim as a
// regression test: at γ = 0.7, φ = 0.4 a pack ranked by the translate
// profile keeps clearly more BLEU than a random-order pack.
func TestTaskProfileBeatsRandomOrder(t *testing.T) {
	dense := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	man, _ := manifests.Load("translate")
	rows, _, err := man.ReadRows("train", "")
	if err != nil {
		t.Fatal(err)
	}
	var prompts [][]int
	for _, r := range rows[:60] {
		prompts = append(prompts, dense.Tokenizer.Encode(r.Prompt, true))
	}
	prof, err := dense.Profile(context.Background(), "translate", prompts, ProfileOptions{GenTokens: 64, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	sparse := []int{0, 1, 2, 3, 4, 5}
	order, err := convert.RankOrder(prof, nil, 0.3, sparse)
	if err != nil {
		t.Fatal(err)
	}
	bleu := func(o *convert.Order) float64 {
		m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{Order: o, BaseFraction: 0.3}), 0.7)
		r, err := m.Eval(context.Background(), man, EvalOptions{Jobs: 2, Sel: &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Score
	}
	task, random := bleu(order), bleu(convert.RandomOrder(sparse, 768, 5))
	t.Logf("γ 0.7 φ 0.4 translate BLEU: task profile %.2f, random order %.2f (dense 6.13)", task, random)
	if task < random+1 {
		t.Fatalf("task profile %.2f does not beat random order %.2f by 1 BLEU", task, random)
	}
}
