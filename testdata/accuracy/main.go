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
		rows[k][r.Task] = r
	}
	rank := map[string]int{"dense": 0, "task": 1, "other": 2, "random": 3}
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
	tasks := []string{"translate", "qa", "lm"}
	fmt.Println("| order | γ | φ | translate BLEU | qa exact match % | lm perplexity | decode tok/s (translate, 1 thread) | peak RSS |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, k := range order {
		cells := []string{k.label, k.gamma, k.phi}
		var tok float64
		var rss uint64
		for _, t := range tasks {
			r, ok := rows[k][t]
			if !ok {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2f", r.Score))
			if t == "translate" {
				tok = r.TokPerS
			}
			rss = max(rss, r.RSS)
		}
		cells = append(cells, fmt.Sprintf("%.0f", tok), fmt.Sprintf("%.1f MiB", float64(rss)/(1<<20)))
		fmt.Println("| " + strings.Join(cells, " | ") + " |")
	}
}
