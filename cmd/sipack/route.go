package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

var routeCmd = &cli.Command{
	Name:      "route",
	Usage:     "fit per-token group routers for a pack (which sirun then runs by default)",
	ArgsUsage: "PACK",
	Description: "Runs the pack with every neuron over the task's training prompts, each followed by its\n" +
		"reference (or greedy tokens), and fits for every sparse layer a low-rank linear map from\n" +
		"the FFN's input to the Σ|h| of each group of --group consecutive ranks. The pack is\n" +
		"written again to --output with the routers added (format v1.5); sirun then computes by\n" +
		"default (--select auto, or router), after the static base, the groups each decode token's\n" +
		"router scores highest; --select paper runs the paper's prompt votes on it instead.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "task", Required: true, Usage: "task name (" + fmt.Sprint(manifests.Builtin()) + ") or a manifest `FILE`"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "pack `FILE` to write (the input is left as it is)"},
		&cli.StringFlag{Name: "data", Usage: "JSONL `FILE` of {\"prompt\": ..., \"reference\": ...} rows instead of the task's own"},
		&cli.IntFlag{Name: "max-prompts", Value: routeDefaults.MaxPrompts, Usage: "fit on at most this many prompts (a seeded sample)"},
		&cli.StringFlag{Name: "continue", Value: routeDefaults.Continue, Usage: "what follows each prompt: reference (teacher-forced) or greedy (the pack's own)"},
		&cli.IntFlag{Name: "gen-tokens", Value: -1, Usage: "tokens that follow each prompt, at most (-1: the manifest's)"},
		&cli.IntFlag{Name: "group", Usage: "consecutive ranks per routed group (0: 64-127 groups a layer, at least 8 ranks)"},
		&cli.IntFlag{Name: "rank", Usage: "rank of each layer's router (0: hidden size / 32, at least 32)"},
		&cli.IntFlag{Name: "cluster", Usage: "reorder each window of this many groups by co-activation first, for large groups (0: off)"},
		&cli.Float64Flag{Name: "ridge", Value: routeDefaults.Ridge, Usage: "ridge λ as a fraction of the inputs' mean square"},
		&cli.StringFlag{Name: "dtype", Value: routeDefaults.DType.String(), Usage: "dtype of the routers' matrices: f32, bf16, f16 or q8_0 (q8_0: --rank a multiple of 32)"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the prompt sample"},
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: runtime.NumCPU(), Usage: "threads"},
		&cli.StringSliceFlag{Name: "manifests", Usage: "extra `DIR`s of task manifests"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing read-only output file"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("route needs exactly one PACK argument, got %d", c.NArg())
		}
		in, out := c.Args().First(), c.String("output")
		if st, err := os.Stat(in); err == nil && st.IsDir() {
			if _, err := os.Stat(filepath.Join(in, "config.json")); err == nil {
				return fmt.Errorf("route takes a .sip pack; %s is a model directory: convert it first (sipack convert --profile TASK --route TASK %s -o PACK)", in, in)
			}
			return fmt.Errorf("route takes a .sip pack; %s is a directory", in)
		}
		if err := cliutil.CheckInputs(in, c.String("task"), c.String("data")); err != nil {
			return err
		}
		dt, err := format.ParseDType(c.String("dtype"))
		if err != nil || dt == format.Q4_0 {
			return fmt.Errorf("--dtype must be f32, bf16, f16 or q8_0, got %q", c.String("dtype"))
		}
		if err := cliutil.CheckThreads("--threads", c.Int("threads")); err != nil {
			return err
		}
		man, err := manifests.Load(c.String("task"), c.StringSlice("manifests")...)
		if err != nil {
			return err
		}
		if err := cliutil.CheckOutput(out, c.Bool("force"), in, c.String("data"), c.String("task")); err != nil {
			return err
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", out)
		ctx, stop := cliutil.SignalContext()
		defer stop()
		return routePack(ctx, in, out, man, routeOptions{
			TaskOptions: profile.TaskOptions{
				Data: c.String("data"), MaxPrompts: c.Int("max-prompts"), GenTokens: c.Int("gen-tokens"),
				Seed: c.Uint64("seed"), Continue: c.String("continue"), Jobs: c.Int("threads"),
			},
			RouterOptions: profile.RouterOptions{
				Group: c.Int("group"), Rank: c.Int("rank"), Ridge: c.Float64("ridge"), Cluster: c.Int("cluster"), DType: dt, Threads: c.Int("threads"),
			},
			Quiet: c.Bool("quiet"),
		})
	},
}

// routeDefaults are sipack route's defaults (sipack convert --route fits
// with them; Jobs and Threads are set from the CPUs).
var routeDefaults = routeOptions{
	TaskOptions:   profile.TaskOptions{MaxPrompts: 300, GenTokens: -1, Continue: "reference"},
	RouterOptions: profile.RouterOptions{Ridge: 1e-3, DType: format.Q8_0},
}

// routeOptions are what routePack fits with: the texts (TaskOptions) and
// the routers (RouterOptions; its Progress is routePack's bar).
type routeOptions struct {
	profile.TaskOptions
	profile.RouterOptions
	Quiet bool
}

// routePack fits routers on the task's texts for the whole pack at in and
// writes the pack with them to out (sipack route, and sipack convert
// --route after it converts).
func routePack(ctx context.Context, in, out string, man *manifests.Manifest, o routeOptions) error {
	p, err := format.Open(in, format.OpenOptions{})
	if err != nil {
		return err
	}
	defer p.Close()
	if len(p.Index.SparseLayers) == 0 {
		return fmt.Errorf("%s has no sparse layers to route", in)
	}
	if p.LoadedRanks < p.Index.Config.IntermediateSize {
		return fmt.Errorf("%s holds %d of %d ranks per layer (a slice); fit routers on the whole pack, then slice it", in, p.LoadedRanks, p.Index.Config.IntermediateSize)
	}
	m, err := runner.Load(p, cpu.New())
	if err != nil {
		return err
	}
	texts, err := profile.TaskTexts(m, man, o.TaskOptions)
	if err != nil {
		return err
	}
	bar := &cliutil.Progress{}
	if !o.Quiet {
		bar = cliutil.NewProgress("route "+man.Name, int64(len(texts)), false)
	}
	start := time.Now()
	ro := o.RouterOptions
	ro.Progress = func(done, total int) { bar.Add(1) }
	routers, group, err := profile.FitRouters(ctx, m, texts, ro)
	bar.Done(err == nil)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; no pack written to %s", out)
		}
		return err
	}
	if err := format.WithRouters(ctx, p, group, routers, out); err != nil {
		return err
	}
	if !o.Quiet {
		var bytes int
		for _, r := range routers {
			bytes += len(r.U) + len(r.B) + len(r.V)
		}
		tokens := 0
		for _, t := range texts {
			tokens += len(t.Tokens) - t.From + 1
		}
		fmt.Fprintf(os.Stderr, "wrote %s: routers of rank %d over groups of %d ranks in %d layers (%s, %s), fitted on %d positions of %d texts in %s\n",
			out, routers[0].Rank, group, len(routers), ro.DType, cliutil.HumanBytes(uint64(bytes)), tokens, len(texts), time.Since(start).Round(time.Second))
		if p.Layout() == format.Tiled && group < p.Index.BandNeurons {
			fmt.Fprintf(os.Stderr, "note: %s's down rows are tiled by groups of %d records, so a routed group's are one run; sirun runs its router by default (--select paper: the paper's selection)\n", out, group)
		}
	}
	return nil
}
