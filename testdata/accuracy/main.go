// Command accuracy turns the JSON lines of `sirun eval --json` runs (made by
// `make accuracy`) into the markdown accuracy table of docs/accuracy.md.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type result struct {
	Pack    string  `json:"pack"`
	Task    string  `json:"task"`
	Metric  string  `json:"metric"`
	Score   float64 `json:"score"`
	Gamma   float64 `json:"gamma"`
	Phi     float64 `json:"phi"`
	Order   string  `json:"order"`
	Profile string  `json:"profile_task"`
	TokPerS float64 `json:"tok_per_s"`
	RSS     uint64  `json:"peak_rss_bytes"`
	N       int     `json:"n"`
	Label   string  `json:"label"` // added by make accuracy: dense, task, random, other
	// A second line of the same eval with --baseline (the dense pack) and
	// --bootstrap: the score as a fraction of dense and its paired 95 %
	// interval, merged into the first line's cell.
	Ratio   *float64    `json:"ratio"`
	RatioCI *[2]float64 `json:"ratio_ci95"`
	Extra   struct {
		F1 *float64 `json:"token_f1"` // qa
	} `json:"extra"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: accuracy RESULTS.jsonl")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "accuracy:", err)
		os.Exit(1)
	}
	type key struct {
		label      string
		gamma, phi string
	}
	rows := map[key]map[string]result{}
	var order []key
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Task == "" {
			continue
		}
		// φ ≥ γ computes every loaded neuron; eval reports it as φ = 1.
		k := key{r.Label, fmt.Sprintf("%.1f", r.Gamma+0.0005), fmt.Sprintf("%.1f", min(r.Phi, r.Gamma+0.0005))}
		if rows[k] == nil {
			rows[k] = map[string]result{}
			order = append(order, k)
		}
		if old, ok := rows[k][r.Task]; ok && r.RatioCI != nil {
			old.Ratio, old.RatioCI = r.Ratio, r.RatioCI
			r = old
		}
		rows[k][r.Task] = r
	}
	rank := map[string]int{"dense": 0, "task": 1, "task, paper": 2, "task, router": 3, "task, mass": 4, "task, l2": 5, "task, signed": 6, "task, gate": 7, "task, hybrid": 8, "other": 9, "random": 10, "random, gate": 11, "random, hybrid": 12}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if rank[a.label] != rank[b.label] {
			return rank[a.label] < rank[b.label]
		}
		if a.gamma != b.gamma {
			return a.gamma < b.gamma
		}
		return a.phi < b.phi
	})
	tasks := []string{"translate", "qa", "qa-f1", "qa-ppl", "lm"}
	fmt.Print(header)
	fmt.Println("| order | γ | φ | translate BLEU | qa exact match % | qa token F1 % | qa answer perplexity | lm perplexity | decode tok/s (translate, 1 thread) | peak RSS |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range order {
		cells := []string{k.label, k.gamma, k.phi}
		var tok float64
		var rss uint64
		for _, t := range tasks {
			r, ok := rows[k][strings.TrimSuffix(t, "-f1")]
			if !ok || (t == "qa-f1" && r.Extra.F1 == nil) {
				cells = append(cells, "–")
				continue
			}
			if t == "qa-f1" {
				cells = append(cells, fmt.Sprintf("%.2f", *r.Extra.F1))
				continue
			}
			cell := fmt.Sprintf("%.2f", r.Score)
			if r.RatioCI != nil {
				cell += fmt.Sprintf(" (%.0f %%: %.0f–%.0f)", 100**r.Ratio, 100*r.RatioCI[0], 100*r.RatioCI[1])
			}
			cells = append(cells, cell)
			if t == "translate" {
				tok = r.TokPerS
			}
			rss = max(rss, r.RSS)
		}
		cells = append(cells, fmt.Sprintf("%.0f", tok), fmt.Sprintf("%.1f MiB", float64(rss)/(1<<20)))
		fmt.Println("| " + strings.Join(cells, " | ") + " |")
	}
}

// header is the text above the table in docs/accuracy.md.
const header = "# Accuracy of SelectInfer on the tiny model\n\nMade by `make accuracy` (about 9 minutes on 2 cores): profiles of translate, qa and lm (150 train\nprompts each, + 128 greedy tokens; each calibrated over its first 16, `sipack profile --calibrate`),\npacks ranked by each (δ = 0.3, secondary = mean of the three normalised profiles, all 6 layers\nsparse), a random-order pack (seed 5), then every task's full eval set at γ ∈ {0.5, 0.7, 0.9} × φ ∈\n{0.3, 0.4, 0.5}, α = 0.2, greedy, stop at a newline or EOS.\n`task`: the pack ranked by the evaluated task's own profile, with the layer budgets its\ncalibration gives (the default since the twenty-first session: each sparse layer's share of γ, δ\nand φ by what cutting it costs the profiled text, at the same totals; docs/selection.md, tenth screen);\n`task, paper`: the same profile's pack without layer budgets (`sipack convert --layer-budget\nuniform`: δN and φN in every layer, the method as the paper gives it, the default before);\n`other`: ranked by another task's, with its budgets (translate and lm columns use qa's, the qa\ncolumn uses translate's); `random`: random rank order (no profile: no budgets).\n`, gate`: the same pack with `--select gate` (each decode token computes the neurons its gate rows\npick, within the same bytes per token as φ: the gate rows of all γN loaded, then up and down of\n(3φ − γ)N/2; not at γ0.9 φ0.3, where the gate rows alone are φ's budget), instead of the paper's\nprompt votes; `, hybrid`: `--select hybrid` (the first δN ranks computed whole, cut to half of the\ngate's (3φ − γ)N/2 neurons, the gate choosing the rest among the other loaded ranks: the same bytes;\nits rows were added to the same packs' results afterwards, ninth session); `, router`: `--select router`\non the budgeted pack with routers fitted on its task's 300 train prompts and their references\n(`sipack route`, default group of 8 ranks, rank 32, q8_0; the static part at most a quarter of φN,\nthe groups the router scores highest from each decode token's FFN input computed after it; rows\nadded to the same packs' results, twenty-third session, docs/selection.md twelfth screen). `, mass`, `, l2`, `, signed`: the other vote statistics (`--select`; docs/selection.md\nscreens 1 and 3), task order only, on the budgeted pack (the gated rows: each layer dots its own\nloaded gate rows, then the same number of whole records in every layer). None changes the decode's\nbytes or kernels: the paper's speed; the gate's speed on the 1B shape is in docs/selection.md.\nMetrics: translate corpus BLEU-4 (300 held-out verses), qa exact match and token F1 (199 questions)\nand the perplexity of qa's reference answers given the question (`docs/tasks/qa-ppl.json`: smoother\nthan exact match, which at γ0.5 the prefill alone decides; nineteenth session), lm perplexity of\nthe reference continuation given the prompt (200 held-out verse halves; lower is better). tok/s is eval throughput per thread (prefill included; two rows in parallel), peak RSS is\nthe whole process. The PyTorch reference (the metrics file written when the tiny model was trained; it is not part of this repository): BLEU 6.13,\nqa exact match 14.1 % (cloze) / 26 % (facts) = 17.1 % overall, lm perplexity 31.5 — the dense row\nreproduces all three. The PyTorch simulation of the method (a script outside this repository) gives, for\ntranslate BLEU: task γ0.7 φ0.4 5.67, random 3.97; task γ0.5 φ0.3 4.71, random 0.76; task γ0.9 φ0.5\n6.47, random 5.37.\nIn brackets, for the `task`, `task, paper` and `task, router` rows' translate BLEU and qa exact match: the score as a percentage of\nthe dense pack's and the 95 % interval of that percentage (`sirun eval --baseline dense.sip\n--bootstrap 1000`: both packs' scores on the same 1000 resamples of the rows; docs/selection.md,\neleventh screen) — what these sets can tell apart.\n\n"
