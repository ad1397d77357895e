package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/bench"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/eval"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/runner"
)

// selectionFlags are the SelectInfer knobs and the loading options shared
// by generate, eval, chat and serve (openSelected reads them).
var selectionFlags = []cli.Flag{
	&cli.Float64Flag{Name: "gamma", Usage: "fraction γ of each layer's ranked FFN neurons to load, in (0, 1]", DefaultText: "all the pack holds"},
	&cli.Float64Flag{Name: "phi", Value: 1.0, Usage: "fraction φ of FFN neurons computed per decode token (1: all loaded)"},
	&cli.StringFlag{Name: "select", Value: "auto", Usage: "how a decode token's neurons are chosen: auto (router if the pack has routers, else paper), router or paper"},
	&cli.StringFlag{Name: "mem-budget", Usage: "load the largest γ whose whole process fits in `SIZE` (e.g. 1.5GiB)"},
	&cli.BoolFlag{Name: "verify", Usage: "check the loaded bytes' hashes even if this pack passed before"},
	&cli.BoolFlag{Name: "no-mmap", Usage: "read the loaded prefix into memory instead of mapping it"},
	&cli.BoolFlag{Name: "mlock", Usage: "lock the loaded prefix in memory"},
	cacheTypeFlag,
}

// cacheTypeFlag is the KV cache's element type, for keys and values both
// (llama.cpp's --cache-type-k and --cache-type-v).
var cacheTypeFlag = &cli.StringFlag{Name: "cache-type", Usage: "KV cache element type, f16 or f32 (default: f16 on a GPU, f32 on the CPU)"}

// cacheType is the element type --cache-type asks for on dev (nil: the
// CPU). Unset, a GPU keeps f16 (half the memory, where memory is scarce)
// and the CPU f32 (its f16 attention converts every value it reads).
func cacheType(c *cli.Context, dev backend.Device) (backend.KVType, error) {
	s := c.String("cache-type")
	if s == "" {
		if _, onCPU := dev.(*cpu.Device); onCPU || dev == nil {
			return backend.KVF32, nil
		}
		return backend.KVF16, nil
	}
	t, err := backend.ParseKVType(s)
	if err != nil {
		return 0, fmt.Errorf("--cache-type: %w", err)
	}
	return t, nil
}

// openSelected opens a pack at the γ the flags ask for (or the budget
// allows) and returns the model on the CPU and its selection (nil: compute
// all loaded). seqs is the number of sequences run at once (eval's jobs,
// serve's slots), each with its own KV cache and buffers, for --mem-budget.
func openSelected(c *cli.Context, path string, ctx, seqs int) (*format.Pack, *runner.Model, *runner.Selection, error) {
	return openSelectedFor(c, path, ctx, seqs, cpu.New())
}

// openSelectedFor is openSelected for a run on dev: --mem-budget counts
// dev's host scratch. The model is still loaded on the CPU (onDevice moves
// it).
func openSelectedFor(c *cli.Context, path string, ctx, seqs int, dev backend.Device) (*format.Pack, *runner.Model, *runner.Selection, error) {
	gamma := c.Float64("gamma") // 0: everything the pack holds
	if c.IsSet("gamma") && !(gamma > 0 && gamma <= 1) {
		return nil, nil, nil, fmt.Errorf("--gamma must be in (0, 1], got %v", gamma)
	}
	kvType, err := cacheType(c, dev)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.IsSet("mem-budget") {
		if c.IsSet("gamma") {
			return nil, nil, nil, fmt.Errorf("give --gamma or --mem-budget, not both")
		}
		budget, err := cliutil.ParseBytes(c.String("mem-budget"))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--mem-budget: %w", err)
		}
		needs, err := budgetNeeds(c, path, ctx, seqs, dev)
		if err != nil {
			return nil, nil, nil, err
		}
		var plan runner.MemoryPlan
		if gamma, plan, err = runner.PlanForBudget(path, budget, needs); err != nil {
			return nil, nil, nil, fmt.Errorf("--mem-budget: %w", err)
		}
		// The Go heap's share of the plan is the runtime's soft limit, so
		// that garbage collection keeps the process inside the budget.
		debug.SetMemoryLimit(int64(plan.Heap()))
		if !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "sirun: --mem-budget %s: loading γ = %.3f, planned %s\n", c.String("mem-budget"), gamma, plan)
		}
	}
	pack, err := format.Open(path, format.OpenOptions{Gamma: gamma, NoMmap: c.Bool("no-mmap"), Mlock: c.Bool("mlock")})
	if err != nil {
		return nil, nil, nil, err
	}
	if pack.LockErr != nil && !c.Bool("quiet") {
		fmt.Fprintf(os.Stderr, "sirun: warning: --mlock: cannot lock %s's %d loaded bytes (%v): running unlocked (raise `ulimit -l`)\n", path, len(pack.Bytes()), pack.LockErr)
	}
	if n := pack.Index.Config.IntermediateSize; gamma == 0 && pack.LoadedRanks < n && !c.Bool("quiet") {
		fmt.Fprintf(os.Stderr, "sirun: %s holds a prefix of %d of %d ranks per sparse layer (sliced): loading all of it, γ = %.3f\n", path, pack.LoadedRanks, n, pack.MaxGamma())
	}
	if err := verifyLoaded(pack, c.Bool("verify"), c.Bool("quiet")); err != nil {
		pack.Close()
		return nil, nil, nil, err
	}
	m, err := runner.Load(pack, cpu.New())
	if err != nil {
		pack.Close()
		return nil, nil, nil, err
	}
	m.KVType = kvType
	method, err := runner.ParseMethod(c.String("select"))
	if err != nil {
		pack.Close()
		return nil, nil, nil, fmt.Errorf("--select: %w", err)
	}
	sel := &runner.Selection{Phi: c.Float64("phi"), Alpha: 0.2, Base: float32Decimal(pack.Index.BaseFraction), Compact: true, Method: method}
	sel = sel.For(m) // auto: the router where the pack has routers
	N := pack.Index.Config.IntermediateSize
	if err := sel.Validate(N, pack.LoadedRanks); err != nil {
		pack.Close()
		return nil, nil, nil, err
	}
	if !sel.Counts(N, pack.LoadedRanks).Selecting() {
		sel = nil // φ ≥ γ: every loaded neuron is computed
	}
	return pack, m, sel, nil
}

// verifyLoaded hashes the loaded bytes against the pack's BLAKE3 hashes the
// first time this file is run at this γ or more, and remembers the file in
// the user's cache directory, so a damaged pack is refused at once and a
// good one costs one pass over its bytes, ever; force (--verify) hashes
// again. A cache that cannot be written only means hashing every run.
func verifyLoaded(pack *format.Pack, force, quiet bool) error {
	dir, dirErr := format.VerifiedDir()
	if !force && dirErr == nil && pack.VerifiedBands(dir) >= pack.LoadedBands {
		return nil
	}
	start := time.Now()
	r, err := pack.Verify()
	if err != nil {
		return fmt.Errorf("%w: the pack is damaged; convert or copy it again", err)
	}
	if dirErr == nil {
		dirErr = pack.RememberVerified(dir)
	}
	if !quiet {
		fmt.Fprintf(os.Stderr, "sirun: checked %s's %s loaded bytes against their BLAKE3 hashes in %.2f s", pack.Path, cliutil.HumanBytes(r.Bytes), time.Since(start).Seconds())
		if dirErr != nil {
			fmt.Fprintf(os.Stderr, " (cannot remember it: %v; every run will check)\n", dirErr)
		} else {
			fmt.Fprintf(os.Stderr, "; not again until the file changes\n")
		}
	}
	return nil
}

// float32Decimal is a float32 read from a pack as the shortest decimal that
// rounds to it (δ stored as 0.3f is 0.3, not 0.30000001192092896), so that
// messages print what was asked for; counts come out the same.
func float32Decimal(f float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	return v
}

// budgetNeeds is what a run on dev with these flags asks of memory besides
// the pack: its sequences and, when it selects with a compact buffer, the
// records that buffer holds (φ's count less δ's; an upper bound, since the
// γ the budget allows may make φ compute every loaded neuron).
func budgetNeeds(c *cli.Context, path string, ctx, seqs int, dev backend.Device) (runner.MemoryNeeds, error) {
	kvType, err := cacheType(c, dev)
	if err != nil {
		return runner.MemoryNeeds{}, err
	}
	needs := runner.MemoryNeeds{Ctx: ctx, KVType: kvType, Sequences: seqs, Threads: c.Int("threads"), Device: dev}
	phi := c.Float64("phi")
	if phi >= 1 {
		return needs, nil
	}
	h, err := format.Open(path, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		return needs, err
	}
	defer h.Close()
	base := float32Decimal(h.Index.BaseFraction)
	N := h.Index.Config.IntermediateSize
	needs.Compact = max(0, format.Count(phi, N)-format.Count(base, N))
	needs.MinRanks = format.Count(phi, N)
	return needs, nil
}

var evalCmd = &cli.Command{
	Name:      "eval",
	Usage:     "run a task's eval set and print its metric",
	ArgsUsage: "PACK",
	Description: "Metrics: translate corpus BLEU-4 (13a, exp smoothing, brevity penalty), qa exact match\n" +
		"and token F1, summarize ROUGE-L, lm perplexity of the reference given the prompt.\n" +
		"Generation is greedy, stops at the first token containing one of the manifest's stop\n" +
		"strings (a newline for the built-in tasks) or EOS.",
	Flags: append([]cli.Flag{
		modelFlag,
		&cli.StringFlag{Name: "task", Usage: "the task to score: `NAME|FILE` (a built-in task or a manifest)"},
		&cli.StringFlag{Name: "data", Usage: "eval JSONL `FILE` instead of the task's own"},
		&cli.IntFlag{Name: "limit", Usage: "first N rows only"},
		&cli.IntFlag{Name: "half", Usage: "1: the even rows only (for tuning), 2: the odd rows (held out)"},
		&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: runtime.NumCPU(), Usage: "rows evaluated at once, one thread each"},
		&cli.StringSliceFlag{Name: "manifests", Usage: "extra `DIR`s of task manifests"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		&cli.StringFlag{Name: "hyps", Usage: "write the hypotheses to this JSONL `FILE`"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress"},
		&cli.StringFlag{Name: "baseline", Usage: "also score `PACK` with every neuron computed, and give the score as a fraction of it"},
		&cli.BoolFlag{Name: "baseline-selected", Usage: "score --baseline at the same γ, φ and selection instead"},
		&cli.IntFlag{Name: "bootstrap", Usage: "give 95 % intervals from `N` paired resamples of the rows (e.g. 1000)"},
	}, selectionFlags...),
	Action: func(c *cli.Context) error {
		path, err := packArg(c)
		if err != nil {
			return err
		}
		if !c.IsSet("task") {
			return fmt.Errorf("eval needs --task (one of %v, or a manifest file)", manifests.Builtin())
		}
		man, err := manifests.Load(c.String("task"), c.StringSlice("manifests")...)
		if err != nil {
			return err
		}
		if err := cliutil.CheckThreads("--parallel", c.Int("parallel")); err != nil {
			return err
		}
		if c.Int("limit") < 0 {
			return fmt.Errorf("--limit must be ≥ 0, got %d", c.Int("limit"))
		}
		if c.Bool("baseline-selected") && c.String("baseline") == "" {
			return fmt.Errorf("--baseline-selected needs --baseline PACK")
		}
		if f := c.String("hyps"); f != "" {
			if err := cliutil.CheckOutput(f, true, path); err != nil { // before the eval, not after
				return fmt.Errorf("--hyps: %w", err)
			}
		}
		if c.Int("bootstrap") < 0 {
			return fmt.Errorf("--bootstrap must be ≥ 0, got %d", c.Int("bootstrap"))
		}
		pack, m, sel, err := openSelected(c, path, 0, c.Int("parallel"))
		if err != nil {
			return err
		}
		defer pack.Close()
		ctx, stop := cliutil.SignalContext()
		defer stop()
		bar := &cliutil.Progress{}
		if !c.Bool("quiet") && !c.Bool("json") {
			bar = cliutil.NewProgress("eval "+man.Name, 0, false)
		}
		opt := eval.Options{
			Data: c.String("data"), Limit: c.Int("limit"), Half: c.Int("half"), Jobs: c.Int("parallel"), Sel: sel,
			Progress: func(done, total int) { bar.SetTotal(int64(total)); bar.Add(1) },
		}
		res, err := eval.Run(ctx, m, man, opt)
		bar.Done(err == nil)
		if err != nil {
			return err
		}
		var base *eval.Result
		if path := c.String("baseline"); path != "" {
			if base, err = evalBaseline(ctx, c, path, man, opt); err != nil {
				return err
			}
		}
		const seed = 1 // the resamples are the same for every run of the same rows
		var ci, ratioCI [2]float64
		if n := c.Int("bootstrap"); n > 0 {
			if ci[0], ci[1], err = eval.Interval(res, nil, n, seed); err != nil {
				return err
			}
			if base != nil {
				if ratioCI[0], ratioCI[1], err = eval.Interval(res, base, n, seed); err != nil {
					return err
				}
			}
		}
		if f := c.String("hyps"); f != "" {
			if err := writeHyps(f, res.Hyps); err != nil {
				return err
			}
		}
		// The φ asked for, capped at the γ loaded (φ ≥ γ computes every loaded neuron).
		phi := min(c.Float64("phi"), float64(pack.LoadedRanks)/float64(pack.Index.Config.IntermediateSize))
		out := map[string]any{
			"pack": pack.Path, "task": res.Task, "metric": res.Metric, "score": res.Score, "extra": res.Extra,
			"n": res.N, "gamma": float64(pack.LoadedRanks) / float64(pack.Index.Config.IntermediateSize), "phi": phi,
			"order": pack.Index.Provenance.Order, "profile_task": pack.Index.Provenance.Task,
			"tokens": res.Tokens, "seconds": res.Seconds, "tok_per_s": res.TokPerS, "parallel": c.Int("parallel"),
			"peak_rss_bytes": bench.PeakRSS(),
		}
		if c.Int("bootstrap") > 0 {
			out["ci95"], out["bootstrap"] = ci, c.Int("bootstrap")
		}
		var ratio float64
		if base != nil {
			ratio = res.Score / base.Score
			out["baseline"] = map[string]any{"pack": c.String("baseline"), "score": base.Score, "selected": c.Bool("baseline-selected")}
			out["ratio"] = ratio
			if c.Int("bootstrap") > 0 {
				out["ratio_ci95"] = ratioCI
			}
		}
		if c.Bool("json") {
			b, _ := json.Marshal(out)
			fmt.Println(string(b))
			return nil
		}
		fmt.Printf("%s %s = %.2f  (n %d, γ %.2f, φ %.2f, %s order", res.Task, res.Metric, res.Score, res.N, out["gamma"], phi, out["order"])
		if t := pack.Index.Provenance.Task; t != "" {
			fmt.Printf(" of %s", t)
		}
		fmt.Printf(")\n")
		if n := c.Int("bootstrap"); n > 0 {
			fmt.Printf("  95 %% interval %.2f – %.2f (bootstrap, %d resamples of the %d rows)\n", ci[0], ci[1], n, res.N)
		}
		if base != nil {
			how := "every neuron"
			if c.Bool("baseline-selected") {
				how = "the same selection"
			}
			fmt.Printf("  baseline %.2f (%s, %s): %.1f %%", base.Score, c.String("baseline"), how, 100*ratio)
			if c.Int("bootstrap") > 0 {
				fmt.Printf(", 95 %% interval %.1f – %.1f %% (paired)", 100*ratioCI[0], 100*ratioCI[1])
			}
			fmt.Println()
		}
		keys := make([]string, 0, len(res.Extra))
		for k := range res.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Printf("  %-22s %.4g\n", k, res.Extra[k])
		}
		fmt.Printf("  %d tokens in %.1f s: %.1f tok/s per sequence (%d at once), peak RSS %s\n", res.Tokens, res.Seconds, res.TokPerS, c.Int("parallel"), cliutil.HumanBytes(bench.PeakRSS()))
		return nil
	},
}

// evalBaseline runs the eval of opt on the pack at path: with every neuron
// it holds computed, or with --baseline-selected at the same γ, φ and
// selection as the pack it is the baseline of.
func evalBaseline(ctx context.Context, c *cli.Context, path string, man *manifests.Manifest, opt eval.Options) (*eval.Result, error) {
	var bp *format.Pack
	var bm *runner.Model
	var err error
	if c.Bool("baseline-selected") {
		if bp, bm, opt.Sel, err = openSelected(c, path, 0, c.Int("parallel")); err != nil {
			return nil, fmt.Errorf("baseline %s: %w", path, err)
		}
	} else {
		if bp, err = format.Open(path, format.OpenOptions{}); err != nil {
			return nil, err
		}
		if bm, err = runner.Load(bp, cpu.New()); err != nil {
			bp.Close()
			return nil, err
		}
		if bm.KVType, err = cacheType(c, nil); err != nil {
			bp.Close()
			return nil, err
		}
		opt.Sel = nil
	}
	defer bp.Close()
	bar := &cliutil.Progress{}
	if !c.Bool("quiet") && !c.Bool("json") {
		bar = cliutil.NewProgress("eval "+man.Name+" (baseline)", 0, false)
	}
	opt.Progress = func(done, total int) { bar.SetTotal(int64(total)); bar.Add(1) }
	base, err := eval.Run(ctx, bm, man, opt)
	bar.Done(err == nil)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	if !(base.Score > 0) {
		return nil, fmt.Errorf("baseline %s scores %v: no fraction of it", path, base.Score)
	}
	return base, nil
}

func writeHyps(path string, hyps []string) error {
	if err := tmpfile.CheckOutput(path); err != nil {
		return err
	}
	tmp := tmpfile.Name(path)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, h := range hyps {
		enc.Encode(map[string]string{"hyp": h})
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return tmpfile.Rename(tmp, path)
}

var perplexityCmd = &cli.Command{
	Name:      "perplexity",
	Usage:     "perplexity of a text file in windows, each starting with bos",
	ArgsUsage: "PACK FILE",
	Flags: []cli.Flag{
		&cli.IntFlag{Name: "window", Value: 512, Usage: "tokens per window (bos included)"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: defaultThreads(), Usage: "worker threads"},
		&cli.Float64Flag{Name: "gamma", Usage: "fraction γ of ranked neurons to load", DefaultText: "all the pack holds: 1, or a sliced pack's prefix"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object"},
		cacheTypeFlag,
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 2 {
			return fmt.Errorf("perplexity needs PACK and FILE, got %d arguments", c.NArg())
		}
		gamma := c.Float64("gamma") // 0: everything the pack holds
		if c.IsSet("gamma") && !(gamma > 0 && gamma <= 1) {
			return fmt.Errorf("--gamma must be in (0, 1], got %v", gamma)
		}
		if err := cliutil.CheckThreads("--threads", c.Int("threads")); err != nil {
			return err
		}
		text, err := tmpfile.ReadFile(c.Args().Get(1))
		if err != nil {
			return err
		}
		pack, err := format.Open(c.Args().First(), format.OpenOptions{Gamma: gamma})
		if err != nil {
			return err
		}
		defer pack.Close()
		m, err := runner.Load(pack, cpu.New())
		if err != nil {
			return err
		}
		if m.KVType, err = cacheType(c, nil); err != nil {
			return err
		}
		pool := kernels.NewPool(c.Int("threads"))
		defer pool.Close()
		gamma = float64(pack.LoadedRanks) / float64(pack.Index.Config.IntermediateSize)
		ppl, n, err := eval.Perplexity(m, pool, m.Tokenizer.Encode(string(text), false), c.Int("window"))
		if err != nil {
			return fmt.Errorf("%s: %w", c.Args().Get(1), err)
		}
		if c.Bool("json") {
			b, _ := json.Marshal(map[string]any{"file": c.Args().Get(1), "ppl": ppl, "tokens": n, "window": c.Int("window"), "gamma": gamma})
			fmt.Println(string(b))
			return nil
		}
		fmt.Printf("%s: perplexity %.3f over %d tokens (windows of %d, γ %.2f)\n", c.Args().Get(1), ppl, n, c.Int("window"), gamma)
		return nil
	},
}
