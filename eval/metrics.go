package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/sipack/sipack/manifests"
)

// rowScores are what each row adds to its metric, so that the score of
// any multiset of the rows can be computed again (Result.ScoreOf).
type rowScores struct {
	metric  string
	bleu    []manifests.BLEUStats // bleu
	em, f1  []float64             // qa
	kinds   []string              // qa
	rouge   []float64             // rougeL
	nll     []float64             // perplexity
	tokens  []int                 // perplexity
	correct []int                 // perplexity
}

// score fills res.Score and res.Extra for the manifest's metric from the
// rows' results and references, and keeps the rows' scores.
func score(res *Result, metric string, rows []manifests.Row, results []rowResult) {
	rs := &rowScores{metric: metric}
	for i, r := range results {
		switch metric {
		case "bleu":
			rs.bleu = append(rs.bleu, manifests.SentenceStats(r.hyp, rows[i].Reference))
		case "qa":
			rs.em = append(rs.em, manifests.ExactMatch(r.hyp, rows[i].Reference))
			rs.f1 = append(rs.f1, manifests.TokenF1(r.hyp, rows[i].Reference))
			k := rows[i].Kind
			if k == "" {
				k = "all"
			}
			rs.kinds = append(rs.kinds, k)
		case "rougeL":
			rs.rouge = append(rs.rouge, manifests.RougeL(r.hyp, rows[i].Reference))
		case "perplexity":
			rs.nll = append(rs.nll, r.nll)
			rs.tokens = append(rs.tokens, r.tokens)
			rs.correct = append(rs.correct, r.correct)
		}
	}
	res.rows = rs
	all := make([]int, len(results))
	for i := range all {
		all[i] = i
	}
	res.Score = rs.score(all, res.Extra)
}

// score is the metric over the rows idx (repeats count again); extra, if
// not nil, receives the metric's other figures.
func (rs *rowScores) score(idx []int, extra map[string]float64) float64 {
	n := float64(len(idx))
	switch rs.metric {
	case "bleu":
		var s manifests.BLEUStats
		for _, i := range idx {
			s.Add(rs.bleu[i])
		}
		b := s.BLEU()
		if extra != nil {
			for n, p := range b.Precisions {
				extra[fmt.Sprintf("precision_%d", n+1)] = p
			}
			extra["hyp_len"], extra["ref_len"] = float64(b.HypLen), float64(b.RefLen)
		}
		return b.Score
	case "qa":
		var em, f1 float64
		byKind := map[string][2]float64{}
		for _, i := range idx {
			em += rs.em[i]
			f1 += rs.f1[i]
			v := byKind[rs.kinds[i]]
			byKind[rs.kinds[i]] = [2]float64{v[0] + rs.em[i], v[1] + 1}
		}
		if extra != nil {
			extra["token_f1"] = 100 * f1 / n
			for k, v := range byKind {
				extra["exact_match_"+k] = 100 * v[0] / v[1]
			}
		}
		return 100 * em / n
	case "rougeL":
		var s float64
		for _, i := range idx {
			s += rs.rouge[i]
		}
		return 100 * s / n
	case "perplexity":
		var nll float64
		var tokens, correct int
		for _, i := range idx {
			nll += rs.nll[i]
			tokens += rs.tokens[i]
			correct += rs.correct[i]
		}
		if extra != nil {
			extra["mean_nll"] = nll / float64(tokens)
			extra["next_token_acc"] = 100 * float64(correct) / float64(tokens)
		}
		return math.Exp(nll / float64(tokens))
	}
	return math.NaN()
}

// ScoreOf is the metric over the rows idx of the eval (indices into its
// rows, repeats counting again).
func (r *Result) ScoreOf(idx []int) float64 { return r.rows.score(idx, nil) }

// Interval is the bootstrap's 95 % interval of the score: the 2.5th and
// 97.5th percentiles of the metric over n resamples of the rows (drawn
// with replacement, as many as there are, from the seeded generator). With
// base, an eval of the same rows (another pack or selection), it is the
// paired interval of the ratio score / base's score, both computed on the
// same resample of the rows (Koehn's paired bootstrap).
func Interval(r, base *Result, n int, seed uint64) (lo, hi float64, err error) {
	if r.rows == nil || n < 1 {
		return 0, 0, fmt.Errorf("bootstrap: no rows kept, or %d resamples", n)
	}
	if base != nil && (base.rows == nil || base.Metric != r.Metric || base.N != r.N) {
		return 0, 0, fmt.Errorf("bootstrap: %s over %d rows against %s over %d", r.Metric, r.N, base.Metric, base.N)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	idx := make([]int, r.N)
	vals := make([]float64, n)
	for b := range vals {
		for i := range idx {
			idx[i] = rng.IntN(r.N)
		}
		vals[b] = r.ScoreOf(idx)
		if base != nil {
			d := base.ScoreOf(idx)
			if !(d > 0) {
				return 0, 0, fmt.Errorf("bootstrap: the baseline scores %v on a resample of its rows: no fraction of it", d)
			}
			vals[b] /= d
		}
	}
	slices.Sort(vals)
	at := func(q float64) float64 { return vals[min(n-1, int(q*float64(n)))] }
	return at(0.025), at(0.975), nil
}
