// Command accuracy turns the JSON lines of `sirun eval --json` runs (made by
// `make accuracy`) into the markdown table that ends docs/accuracy.md: the
// text above the table is kept, the table replaced.
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
	Label   string  `json:"label"` // added by make accuracy: dense, task, router, ...
	// With --baseline (the dense pack) and --bootstrap: the score as a
	// fraction of dense and its paired 95 % interval.
	Ratio   *float64    `json:"ratio"`
	RatioCI *[2]float64 `json:"ratio_ci95"`
	Extra   struct {
		F1 *float64 `json:"token_f1"` // qa
	} `json:"extra"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: accuracy RESULTS.jsonl DOC.md")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	doc, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail(err)
	}
	head, _, ok := strings.Cut(string(doc), tableHeader)
	if !ok {
		fail(fmt.Errorf("%s has no table starting %q", os.Args[2], tableHeader))
	}
	var out strings.Builder
	out.WriteString(head)
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
	rank := map[string]int{"dense": 0, "task, router": 1, "task, paper": 2, "other": 3, "random": 4}
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
	out.WriteString(tableHeader + "\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
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
		out.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	tmp := os.Args[2] + ".tmp"
	if err := os.WriteFile(tmp, []byte(out.String()), 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(tmp, os.Args[2]); err != nil {
		fail(err)
	}
}

// tableHeader is the first line of the table the command writes.
const tableHeader = "| order | γ | φ | translate BLEU | qa exact match % | qa token F1 % | qa answer perplexity | lm perplexity | decode tok/s (translate, 1 thread) | peak RSS |"

func fail(err error) {
	fmt.Fprintln(os.Stderr, "accuracy:", err)
	os.Exit(1)
}
