package eval

import (
	"fmt"
	"math"

	"github.com/sipack/sipack/manifests"
)

// score fills res.Score and res.Extra for the manifest's metric from the
// hypotheses and references (or, for perplexity, the summed NLL and the
// next-token hits over res.Tokens scored tokens).
func score(res *Result, metric string, rows []manifests.Row, hyps, refs []string, nll float64, correct int) {
	switch metric {
	case "bleu":
		b := manifests.CorpusBLEU(hyps, refs)
		res.Score = b.Score
		for n, p := range b.Precisions {
			res.Extra[fmt.Sprintf("precision_%d", n+1)] = p
		}
		res.Extra["hyp_len"], res.Extra["ref_len"] = float64(b.HypLen), float64(b.RefLen)
	case "qa":
		var em, f1 float64
		byKind := map[string][2]float64{}
		for i := range hyps {
			e := manifests.ExactMatch(hyps[i], refs[i])
			em += e
			f1 += manifests.TokenF1(hyps[i], refs[i])
			k := rows[i].Kind
			if k == "" {
				k = "all"
			}
			v := byKind[k]
			byKind[k] = [2]float64{v[0] + e, v[1] + 1}
		}
		res.Score = 100 * em / float64(len(hyps))
		res.Extra["token_f1"] = 100 * f1 / float64(len(hyps))
		for k, v := range byKind {
			res.Extra["exact_match_"+k] = 100 * v[0] / v[1]
		}
	case "rougeL":
		var s float64
		for i := range hyps {
			s += manifests.RougeL(hyps[i], refs[i])
		}
		res.Score = 100 * s / float64(len(hyps))
	case "perplexity":
		res.Score = math.Exp(nll / float64(res.Tokens))
		res.Extra["mean_nll"] = nll / float64(res.Tokens)
		res.Extra["next_token_acc"] = 100 * float64(correct) / float64(res.Tokens)
	}
}
