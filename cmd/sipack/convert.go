package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
)

var convertCmd = &cli.Command{
	Name:      "convert",
	Usage:     "convert a HuggingFace model directory or a GGUF file into a .sip pack, FFN neurons in rank order",
	ArgsUsage: "MODEL_DIR|MODEL.gguf",
	Description: "MODEL.gguf is a llama.cpp file of a llama or qwen2 model with a byte-level BPE (gpt2)\n" +
		"tokenizer; its F32, F16 and BF16 tensors are read as they are, Q8_0, Q4_0, Q4_K, Q5_K and\n" +
		"Q6_K ones dequantised to float32 (give --dtype for a smaller pack).\n" +
		"With --profile, each sparse layer's neurons are ranked as SelectInfer does: the top\n" +
		"--base fraction by the task's score, then the rest by the model-wide (secondary) score,\n" +
		"and written in that order, so that loading a fraction γ reads one prefix of the file.\n" +
		"--profile takes a profile file or a task name (profiled on the fly and cached).",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output pack `FILE` (default: the model directory's name + .sip)"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing read-only output file"},
		&cli.StringFlag{Name: "dtype", Usage: "weight dtype: bf16, f16, f32, q8_0, q4_0, q4_k, q6_k or q4_k_m (llama.cpp's mix)", DefaultText: "the checkpoint's; f32 for a quantised GGUF"},
		&cli.StringFlag{Name: "dense-dtype", Usage: "dtype of attention, embeddings and lm_head if not --dtype (e.g. --dtype q4_0 --dense-dtype bf16)"},
		&cli.StringFlag{Name: "layout", Usage: "band layout: pairs, runs or tiled", DefaultText: "tiled; pairs for q4_0 and f32"},
		&cli.IntFlag{Name: "band", Usage: "neurons per band B, the γ granularity (0: intermediate_size/32 as a power of two within 64-256)"},
		&cli.IntSliceFlag{Name: "dense-layers", Usage: "layers whose FFN is kept dense (e.g. --dense-layers 0,5)"},
		&cli.StringFlag{Name: "profile", Usage: "rank by this task: `NAME|FILE` (a built-in task, a manifest or a .prof file)"},
		&cli.Float64Flag{Name: "base", Value: 0.3, Usage: "fraction δ of each layer's neurons ranked by the task score (base neurons)"},
		&cli.StringFlag{Name: "secondary", Value: "all", Usage: "profiles for the model-wide score: all (every task with data), self, or FILE,FILE,..."},
		&cli.StringFlag{Name: "order", Usage: "rank order: profile (default with --profile), random (ablation) or original"},
		&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "seed of --order random and of prompt sampling when profiling"},
		&cli.IntFlag{Name: "max-prompts", Value: 0, Usage: "prompts per task when profiling on the fly, and for the routers (0: all; the routers 300)"},
		&cli.StringFlag{Name: "layer-budget", Value: "auto", Usage: "how sparse layers share γ, δ and φ: auto, sensitivity or uniform (the paper's)"},
		&cli.StringSliceFlag{Name: "manifests", Usage: "extra `DIR`s of task manifests"},
		&cli.StringFlag{Name: "chat-template", Usage: "set or override the chat template: a tokenizer_config.json or a Jinja `FILE`"},
		&cli.StringFlag{Name: "route", Usage: "fit the routers on this `TASK|FILE`'s prompts, or none", DefaultText: "the --profile task"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no summary"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("convert needs exactly one MODEL_DIR or MODEL.gguf argument, got %d", c.NArg())
		}
		dir := c.Args().First()
		out := c.String("output")
		if out == "" {
			out = defaultPackName(dir)
		}
		inputs := []string{dir, c.String("chat-template")}
		if f := c.String("profile"); f != "" {
			inputs = append(inputs, f)
		}
		if sec := c.String("secondary"); sec != "all" && sec != "self" {
			inputs = append(inputs, strings.Split(sec, ",")...)
		}
		routeFile := c.String("route")
		if routeFile == "none" {
			routeFile = ""
		}
		if err := cliutil.CheckInputs(append(inputs, routeFile)...); err != nil {
			return err
		}
		if err := cliutil.CheckOutput(out, c.Bool("force"), inputs...); err != nil {
			return err
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", out)
		if c.Int("band") < 0 {
			return fmt.Errorf("--band must be at least 1 (or 0 for the default), got %d", c.Int("band"))
		}
		if b := c.Float64("base"); !(b > 0 && b <= 1) {
			return fmt.Errorf("--base must be in (0, 1], got %v", b)
		}
		// A ranked pack gets routers by default: the router is the best
		// measured selection (docs/accuracy.md). The converted pack is then
		// a temporary file next to the output, which the routed pack
		// replaces; a task named on the command line is read first, so that
		// a bad name costs no conversion.
		var route *manifests.Manifest
		task := c.String("route")
		if task != "" && task != "none" {
			var err error
			if route, err = manifests.Load(task, c.StringSlice("manifests")...); err != nil {
				return fmt.Errorf("--route: %w", err)
			}
		}
		ctx, stop := cliutil.SignalContext()
		defer stop()
		order, err := rankOrder(ctx, c, dir)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; no pack written to %s", out)
			}
			return err
		}
		if task == "" && order != nil && order.Provenance.Task != "" {
			spec := order.Provenance.Task
			if p := c.String("profile"); strings.HasSuffix(p, ".json") {
				spec = p // the task's manifest itself
			}
			if route, err = manifests.Load(spec, c.StringSlice("manifests")...); err != nil {
				return fmt.Errorf("routing on the profile's task %q: %w (name it with --route TASK, or --route none)", order.Provenance.Task, err)
			}
		}
		target := out
		if route != nil {
			cliutil.RemoveStaleTemps(os.Stderr, "sipack", out+".unrouted")
			target = tmpfile.Name(out + ".unrouted")
			defer os.Remove(target)
		}
		bar := &cliutil.Progress{}
		if !c.Bool("quiet") {
			bar = cliutil.NewProgress("convert", 0, true)
		}
		start := time.Now()
		res, err := convert.Convert(ctx, convert.Options{
			ModelDir: dir, Output: target, DType: c.String("dtype"), DenseDType: c.String("dense-dtype"), BandNeurons: c.Int("band"), Layout: c.String("layout"),
			DenseLayers: c.IntSlice("dense-layers"), Order: order, BaseFraction: float32(c.Float64("base")),
			ChatTemplate: c.String("chat-template"),
			Progress: func(n int, total int64) {
				bar.SetTotal(total)
				bar.Add(n)
			},
		})
		bar.Done(err == nil)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; no pack written to %s", out)
			}
			return err
		}
		if !c.Bool("quiet") {
			secs := time.Since(start).Seconds()
			how := "original order"
			if order != nil {
				how = order.Provenance.Order + " order"
				if order.Provenance.Task != "" {
					how += " of task " + order.Provenance.Task
				}
			}
			verb := "wrote " + res.Path
			if route != nil {
				verb = "converted"
			}
			fmt.Fprintf(os.Stderr, "%s: %s, %s, %s in %.2f s (%.2f GB/s)\n", verb, res.DType, how, cliutil.HumanBytes(uint64(res.Bytes)), secs, float64(res.Bytes)/secs/1e9)
		}
		if route == nil {
			return nil
		}
		o := routeDefaults
		o.Jobs, o.Threads, o.Quiet = runtime.NumCPU(), runtime.NumCPU(), c.Bool("quiet")
		if n := c.Int("max-prompts"); n > 0 {
			o.MaxPrompts = min(o.MaxPrompts, n) // a quick conversion routes quickly too
		}
		return routePack(ctx, target, out, route, o)
	},
}

// defaultPackName names a pack after the model directory: "convert ." in
// ~/models/Llama-3.2-1B writes Llama-3.2-1B.sip, not "..sip".
func defaultPackName(dir string) string {
	name := filepath.Base(filepath.Clean(dir))
	if abs, err := filepath.Abs(dir); err == nil {
		name = filepath.Base(abs)
	}
	name = strings.TrimSuffix(name, ".gguf")
	if name == "." || name == ".." || name == string(filepath.Separator) || name == "" {
		name = "model"
	}
	return name + ".sip"
}

// rankOrder builds the rank order the flags ask for, or nil for the original order.
func rankOrder(ctx context.Context, c *cli.Context, dir string) (*convert.Order, error) {
	mode := c.String("order")
	if mode == "" {
		mode = "original"
		if c.IsSet("profile") {
			mode = "profile"
		}
	}
	if mode != "profile" && c.IsSet("profile") {
		return nil, fmt.Errorf("--profile ranks by a profile; it cannot be combined with --order %s", mode)
	}
	switch mode {
	case "original":
		return nil, nil
	case "random":
		m, err := convert.OpenModel(dir)
		if err != nil {
			return nil, err
		}
		cfg := m.Config
		m.Close()
		return convert.RandomOrder(convert.SparseLayers(cfg, c.IntSlice("dense-layers")), cfg.IntermediateSize, c.Uint64("seed")), nil
	case "profile":
	default:
		return nil, fmt.Errorf("unknown --order %q (want profile, random or original)", mode)
	}
	if !c.IsSet("profile") {
		return nil, fmt.Errorf("--order profile needs --profile FILE or a task name")
	}
	quiet := c.Bool("quiet")
	var bar *cliutil.Progress
	return profile.Order(ctx, profile.OrderOptions{
		ModelDir: dir, Task: c.String("profile"), Secondary: c.String("secondary"),
		Base: c.Float64("base"), DenseLayers: c.IntSlice("dense-layers"), Manifests: c.StringSlice("manifests"),
		MaxPrompts: c.Int("max-prompts"), Seed: c.Uint64("seed"), LayerBudget: c.String("layer-budget"),
		Progress: func(task string, done, total int, _ int64) {
			if quiet {
				return
			}
			if done == 1 {
				bar = cliutil.NewProgress("profile "+task, int64(total), false)
			}
			bar.Add(1)
			if done == total {
				bar.Done(true)
			}
		},
		Log: func(msg string) {
			if !quiet {
				fmt.Fprintln(os.Stderr, msg)
			}
		},
	})
}
