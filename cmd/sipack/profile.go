package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/cmd/internal/plots"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
)

var profileCmd = &cli.Command{
	Name:      "profile",
	Usage:     "score every FFN neuron by Σ|activation| over a task's prompts",
	ArgsUsage: "MODEL_DIR_OR_PACK",
	Description: "Runs the dense model over the task's training prompts, each followed by --gen-tokens\n" +
		"greedy tokens (or, with --continue, its answer or its reference), and sums |h| (the input\n" +
		"of down_proj) per layer and neuron.\n" +
		"Subcommands merge, show and plot work on profile files.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "task", Usage: "task name (" + fmt.Sprint(manifests.Builtin()) + ") or a manifest `FILE`"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "profile `FILE` (default TASK.prof)"},
		&cli.StringFlag{Name: "data", Usage: "JSONL `FILE` of {\"prompt\": ...} rows instead of the task's own"},
		&cli.IntFlag{Name: "max-prompts", Value: 5000, Usage: "profile at most this many prompts (a seeded sample)"},
		&cli.IntFlag{Name: "gen-tokens", Value: -1, Usage: "greedy tokens generated after each prompt (-1: the manifest's, 128)"},
		&cli.StringFlag{Name: "continue", Value: "greedy", Usage: "what follows each prompt: greedy (the method's), stop (greedy up to the task's stop string) or reference (teacher-forced)"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed of the prompt sample"},
		&cli.IntFlag{Name: "calibrate", Value: profile.DefaultCalibrate, Usage: "measure each layer's sensitivity over the first N prompts (the first 32 tokens after each), for convert's layer budgets (0: none)"},
		&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: runtime.NumCPU(), Usage: "prompts profiled at once"},
		&cli.StringSliceFlag{Name: "manifests", Usage: "extra `DIR`s of task manifests"},
		&cli.StringFlag{Name: "plot", Usage: "also draw the profile's concentration curves to this PNG `FILE`"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no summary"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing read-only output file"},
	},
	Subcommands: []*cli.Command{profileMergeCmd, profileShowCmd, profilePlotCmd},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("profile needs exactly one MODEL_DIR_OR_PACK argument, got %d", c.NArg())
		}
		if !c.IsSet("task") {
			return fmt.Errorf("profile needs --task (one of %v, or a manifest file)", manifests.Builtin())
		}
		if err := cliutil.CheckInputs(c.Args().First(), c.String("data"), c.String("task")); err != nil {
			return err
		}
		man, err := manifests.Load(c.String("task"), c.StringSlice("manifests")...)
		if err != nil {
			return err
		}
		out := c.String("output")
		if out == "" {
			out = man.Name + ".prof"
		}
		if err := cliutil.CheckThreads("--parallel", c.Int("parallel")); err != nil {
			return err
		}
		if err := cliutil.CheckOutput(out, c.Bool("force"), c.Args().First(), c.String("data"), c.String("task")); err != nil {
			return err
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", out)
		if f := c.String("plot"); f != "" {
			if err := cliutil.CheckOutput(f, c.Bool("force"), c.Args().First(), c.String("data"), c.String("task")); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
			cliutil.RemoveStaleTemps(os.Stderr, "sipack", f)
		}
		ctx, stop := cliutil.SignalContext()
		defer stop()
		o, err := profile.Open(ctx, c.Args().First())
		if err != nil {
			return err
		}
		defer o.Close()
		p, err := runProfile(c, ctx, o, man, profile.TaskOptions{
			Data: c.String("data"), MaxPrompts: c.Int("max-prompts"), GenTokens: c.Int("gen-tokens"), Seed: c.Uint64("seed"),
			Continue: c.String("continue"), Calibrate: c.Int("calibrate"),
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; no profile written to %s", out)
			}
			return err
		}
		if err := profile.Write(out, p); err != nil {
			return err
		}
		if !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "wrote %s\n", out)
		}
		if f := c.String("plot"); f != "" {
			if err := plots.ProfileConcentration(f, []*profile.Profile{p}, []string{p.Task}); err != nil {
				return err
			}
			if !c.Bool("quiet") {
				fmt.Fprintf(os.Stderr, "wrote %s\n", f)
			}
		}
		return nil
	},
}

// runProfile profiles with a progress bar and prints the throughput.
func runProfile(c *cli.Context, ctx context.Context, o *profile.Opened, man *manifests.Manifest, opt profile.TaskOptions) (*profile.Profile, error) {
	bar := &cliutil.Progress{}
	if !c.Bool("quiet") {
		bar = cliutil.NewProgress("profile "+man.Name, 0, false)
	}
	opt.Jobs = c.Int("parallel")
	if opt.Jobs == 0 {
		opt.Jobs = runtime.NumCPU()
	}
	start := time.Now()
	opt.Progress = func(done, total int, tokens int64) {
		bar.SetTotal(int64(total))
		bar.Add(1)
		if done == total && opt.Calibrate > 0 && !c.Bool("quiet") {
			bar.Done(true)
			bar = cliutil.NewProgress("calibrate "+man.Name, 0, false)
		}
	}
	told := 0 // the calibration counts layers run, not passes
	opt.CalibrationProgress = func(done, total int) {
		bar.SetTotal(int64(total))
		bar.Add(done - told)
		told = done
	}
	p, err := profile.RunTask(ctx, o.Model, man, opt)
	bar.Done(err == nil)
	if err != nil {
		return nil, err
	}
	if !c.Bool("quiet") {
		fmt.Fprintln(os.Stderr, profile.Summary(p, time.Since(start)))
	}
	return p, nil
}

var profileMergeCmd = &cli.Command{
	Name:      "merge",
	Usage:     "add profiles of the same model (over different prompts) into one",
	ArgsUsage: "A.prof B.prof [...]",
	Description: "Profiles of the same prompts must not be added twice: the same file given twice, or\n" +
		"two profiles with identical sums (the same prompts profiled twice), are refused.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "merged profile `FILE`"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing read-only output file"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() < 2 {
			return fmt.Errorf("merge needs at least two profiles, got %d", c.NArg())
		}
		out, files := c.String("output"), c.Args().Slice()
		if err := cliutil.CheckInputs(files...); err != nil {
			return err
		}
		if err := cliutil.CheckOutput(out, c.Bool("force"), files...); err != nil {
			return err
		}
		var read []*profile.Profile
		for _, f := range files {
			p, err := profile.Read(f)
			if err != nil {
				return err
			}
			for j, q := range read {
				if sameFile(files[j], f) {
					return fmt.Errorf("merge: %s and %s are the same file; its prompts would count twice", files[j], f)
				}
				if profile.SameCounts(q, p) {
					return fmt.Errorf("merge: %s and %s hold identical sums (the same prompts profiled twice?); they would count twice", files[j], f)
				}
			}
			read = append(read, p)
		}
		acc := read[0]
		for i, p := range read[1:] {
			var err error
			if acc, err = profile.Merge(acc, p); err != nil {
				return fmt.Errorf("merge %s: %w", files[i+1], err)
			}
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", out)
		if err := profile.Write(out, acc); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s: task %s, %d prompts, %d tokens, from %d profiles\n", out, acc.Task, acc.Prompts, acc.Tokens, len(read))
		return nil
	},
}

var concentrationFracs = []float64{0.1, 0.3, 0.5, 0.7}

var profileShowCmd = &cli.Command{
	Name:      "show",
	Usage:     "print a profile's provenance, per-layer concentration and sensitivity curves",
	ArgsUsage: "PROFILE [...]",
	Action: func(c *cli.Context) error {
		if c.NArg() < 1 {
			return fmt.Errorf("show needs a profile file")
		}
		var ps []*profile.Profile
		for _, f := range c.Args().Slice() {
			p, err := profile.Read(f)
			if err != nil {
				return err
			}
			fmt.Printf("%s: task %s, %d prompts, %d tokens, %s, model %.16s…\n", f, p.Task, p.Prompts, p.Tokens, p.Followed(), p.ModelHash)
			printConcentration(p.Scores())
			printSensitivity(p)
			ps = append(ps, p)
		}
		for i := 0; i < len(ps); i++ {
			for j := i + 1; j < len(ps); j++ {
				if ps[i].Layers != ps[j].Layers || ps[i].Neurons != ps[j].Neurons {
					continue
				}
				fmt.Printf("overlap of the top-30 %% sets, %s vs %s, per layer:", ps[i].Task, ps[j].Task)
				for l := 0; l < ps[i].Layers; l++ {
					fmt.Printf(" %.2f", profile.TopOverlap(ps[i].Sums[l], ps[j].Sums[l], 0.3))
				}
				fmt.Println()
			}
		}
		return nil
	},
}

// printSensitivity prints a calibrated profile's sensitivity curves: per
// layer the loss (mean NLL per token) with that layer cut to each
// fraction, and the dense loss.
func printSensitivity(p *profile.Profile) {
	if p.Sensitivity == nil {
		fmt.Println("sensitivity: not calibrated (sipack profile --calibrate N)")
		return
	}
	each := ""
	if p.SensitivityFollowers > 0 {
		each = fmt.Sprintf(" (at most %d tokens each)", p.SensitivityFollowers)
	}
	fmt.Printf("sensitivity: loss per token of the text after %d prompts%s with one layer cut to a fraction of its neurons (dense %.4f):\n", p.SensitivityPrompts, each, p.SensitivityDense)
	fmt.Print("| layer |")
	for _, f := range p.SensitivityFractions {
		fmt.Printf(" %.0f %% |", 100*f)
	}
	fmt.Print("\n|---:|")
	for range p.SensitivityFractions {
		fmt.Print("---:|")
	}
	fmt.Println()
	for l, c := range p.Sensitivity {
		fmt.Printf("| %d |", l)
		for _, v := range c {
			fmt.Printf(" %.4f |", v)
		}
		fmt.Println()
	}
}

func printConcentration(scores [][]float64) {
	fmt.Println("| layer | top 10 % | top 30 % | top 50 % | top 70 % |")
	fmt.Println("|---:|---:|---:|---:|---:|")
	for l, s := range scores {
		if s == nil {
			continue
		}
		cc := format.Concentration(s, concentrationFracs)
		fmt.Printf("| %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", l, 100*cc[0], 100*cc[1], 100*cc[2], 100*cc[3])
	}
}

var profilePlotCmd = &cli.Command{
	Name:      "plot",
	Usage:     "draw per-layer cumulative activation mass against rank fraction, one line per profile",
	ArgsUsage: "PROFILE [...]",
	Flags:     []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "PNG `FILE`"}},
	Action: func(c *cli.Context) error {
		if c.NArg() < 1 {
			return fmt.Errorf("plot needs at least one profile")
		}
		// The PNG is replaced by a rename whatever its mode bits (force).
		if err := cliutil.CheckOutput(c.String("output"), true, c.Args().Slice()...); err != nil {
			return err
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", c.String("output"))
		var ps []*profile.Profile
		var names []string
		for _, f := range c.Args().Slice() {
			p, err := profile.Read(f)
			if err != nil {
				return err
			}
			if len(ps) > 0 && (p.Layers != ps[0].Layers || p.Neurons != ps[0].Neurons) {
				return fmt.Errorf("%s: %d×%d neurons, %s has %d×%d", f, p.Layers, p.Neurons, c.Args().Get(0), ps[0].Layers, ps[0].Neurons)
			}
			ps, names = append(ps, p), append(names, p.Task)
		}
		if err := plots.ProfileConcentration(c.String("output"), ps, names); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s\n", c.String("output"))
		return nil
	},
}

// sameFile reports whether a and b name one file (links included).
func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
