// Command promptcache measures what a slot's prompt cache saves: the time
// to the first token of a conversation's 4th turn on a slot that served
// turns 1-3 (it prefills the 3rd answer and the 4th question) against a
// cold slot (it prefills the whole conversation), in interleaved rounds,
// with the server's own Slot.Generate. Prompts are random token ids and the
// answers the pack's own greedy tokens, so any pack will do, e.g. the 1B
// shape `make bench-packs` writes:
//
//	go run ./testdata/promptcache -threads 2 /tmp/sipack-bench/synth-1b-bf16.sip /tmp/sipack-bench/routed/synth-1b-bf16.sip
//
// It prints the medians of each and of the per-round ratios; it is not
// part of go test.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/runner"
	"github.com/sipack/sipack/server"
)

func main() {
	threads := flag.Int("threads", 2, "worker threads of the slot")
	rounds := flag.Int("rounds", 7, "measured rounds, cold and cached in alternating order")
	gamma := flag.Float64("gamma", 0.7, "loaded fraction γ")
	phi := flag.Float64("phi", 0.4, "fraction computed per decode token φ")
	sel := flag.String("select", "auto", "selection: auto, paper or router")
	first := flag.Int("first", 200, "tokens of the first turn's prompt (system and question)")
	user := flag.Int("user", 50, "tokens of each later question")
	answer := flag.Int("answer", 64, "tokens of each answer")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: promptcache [flags] PACK...")
		os.Exit(2)
	}
	method, err := runner.ParseMethod(*sel)
	must(err)
	fmt.Printf("%-44s %-6s %7s %9s %9s %11s %11s %7s\n", "pack", "select", "prompt", "prefill", "prefill", "TTFT ms", "TTFT ms", "ratio")
	fmt.Printf("%-44s %-6s %7s %9s %9s %11s %11s %7s\n", "", "", "tokens", "cold", "cached", "cold", "cached", "")
	for _, path := range flag.Args() {
		measure(path, *gamma, *phi, method, *threads, *rounds, *first, *user, *answer)
	}
}

func measure(path string, gamma, phi float64, method runner.Method, threads, rounds, first, user, answer int) {
	pack, err := format.Open(path, format.OpenOptions{Gamma: gamma})
	must(err)
	defer pack.Close()
	m, err := runner.Load(pack, cpu.New())
	must(err)
	sel := (&runner.Selection{Phi: phi, Alpha: 0.2, Base: float64(pack.Index.BaseFraction), Compact: true, Method: method}).For(m)
	must(sel.Validate(m.Config.IntermediateSize, pack.LoadedRanks))
	ctx := min(m.Config.MaxPositionEmbeddings, first+4*(user+answer))
	e, err := server.NewEngine(server.EngineOptions{Model: m, Gamma: gamma, Selection: sel, Ctx: ctx, Threads: threads})
	must(err)
	conv, err := e.NewSlot()
	must(err)
	defer conv.Close()
	cold, err := e.NewSlot()
	must(err)
	defer cold.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	toks := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 1 + rng.IntN(m.Config.VocabSize-1)
		}
		return out
	}
	gen := func(sl *server.Slot, prompt []int, n int) *server.Result {
		res, err := sl.Generate(context.Background(), server.Request{Prompt: prompt, MaxTokens: n, IgnoreEOS: true})
		must(err)
		return res
	}
	// Turns 1-3, each prompt the conversation so far and a new question.
	prompt := toks(first)
	var p3 []int
	for range 3 {
		p3 = prompt
		prompt = slices.Concat(prompt, gen(conv, prompt, answer).Tokens, toks(user))
	}
	p4 := prompt
	ttft := func(sl *server.Slot) (time.Duration, int) {
		t0 := time.Now()
		res := gen(sl, p4, 1)
		return time.Since(t0), res.PrefilledTokens
	}
	var cs, ws, ratios []float64
	var coldN, warmN int
	for r := range rounds {
		var c, w time.Duration
		measureCold := func() {
			cold.Reset()
			c, coldN = ttft(cold)
		}
		measureWarm := func() {
			if r > 0 { // back to the cache turn 3 left: its prompt, answered
				gen(conv, p3, 0)
			}
			w, warmN = ttft(conv)
		}
		if r%2 == 0 {
			measureWarm()
			measureCold()
		} else {
			measureCold()
			measureWarm()
		}
		cs, ws, ratios = append(cs, ms(c)), append(ws, ms(w)), append(ratios, float64(c)/float64(w))
	}
	name := path
	if len(name) > 44 {
		name = "…" + name[len(name)-43:]
	}
	fmt.Printf("%-44s %-6s %7d %9d %9d %11.1f %11.1f %6.2f×\n", name, sel.Method, len(p4), coldN, warmN, median(cs), median(ws), median(ratios))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "promptcache:", err)
		os.Exit(1)
	}
}
