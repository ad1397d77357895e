package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/bench"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/runner"
)

var benchCmd = &cli.Command{
	Name:      "bench",
	Usage:     "measure bandwidth, decode tok/s on a γ×φ grid, prefill and the bandwidth bound of packs",
	ArgsUsage: "PACK [PACK ...]",
	Description: "Every decode figure comes with the bytes it reads per token and the fraction of the\n" +
		"bound (measured bandwidth / bytes per token) it reached. Ratios between packs are against\n" +
		"the first pack's dense decode, taken within each round. Random-weight 1B-shape packs to\n" +
		"measure are made by `sipack synth --dtype DTYPE -o PACK`; `sipack plot bench` draws the\n" +
		"JSON lines this prints with --json.",
	Flags: []cli.Flag{
		&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: defaultThreads(), Usage: "worker threads"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object (per pack, one per line)"},
		&cli.StringFlag{Name: "json-out", Usage: "also write the JSON lines to `FILE` (e.g. for sipack plot bench)"},
		&cli.IntFlag{Name: "tokens", Value: 8, Usage: "decode tokens timed per figure (the figure is 1 / the median step)"},
		&cli.IntFlag{Name: "rounds", Value: 3, Usage: "measure every decode figure this many times, interleaved, and report medians"},
		&cli.IntFlag{Name: "prefill", Value: 256, Usage: "prompt tokens of the prefill figure (with --quick and not given: 64)"},
		&cli.IntFlag{Name: "depth", Value: 0, Usage: "decode after a prompt of this many tokens, as llama-bench -d (0: 16)"},
		&cli.BoolFlag{Name: "ops", Usage: "print each decode operation's ms/token instead, dense and at γ 0.7 φ 0.4"},
		&cli.StringFlag{Name: "select", Value: "auto", Usage: "selections to measure, comma-separated (router,paper: each in every round, against the first)"},
		&cli.StringFlag{Name: "load", Value: "mmap", Usage: "load packs by mmap, no-mmap, or mmap,no-mmap (both in the same rounds)"},
		&cli.BoolFlag{Name: "quick", Usage: "dense and γ 0.7 × φ 0.4 only, shorter prefill unless --prefill is given"},
		cacheTypeFlag,
		deviceFlag,
	},
	Action: func(c *cli.Context) error {
		if c.NArg() == 0 {
			return fmt.Errorf("bench needs at least one PACK (make a 1B-shape one with: sipack synth --dtype bf16 -o synth-1b-bf16.sip)")
		}
		if err := cliutil.CheckThreads("--threads", c.Int("threads")); err != nil {
			return err
		}
		if out := c.String("json-out"); out != "" {
			if err := cliutil.CheckOutput(out, true, c.Args().Slice()...); err != nil {
				return fmt.Errorf("--json-out: %w", err)
			}
		}
		kv, err := cacheType(c, nil)
		if err != nil {
			return err
		}
		opt := bench.Options{Threads: c.Int("threads"), Tokens: c.Int("tokens"), Rounds: c.Int("rounds"),
			Prefill: c.Int("prefill"), Depth: c.Int("depth"), Quick: c.Bool("quick"), KVType: kv, Log: os.Stderr}
		for _, name := range strings.Split(c.String("select"), ",") {
			m, err := runner.ParseMethod(name)
			if err != nil {
				return fmt.Errorf("--select: %w", err)
			}
			if slices.Contains(opt.Select, m) {
				return fmt.Errorf("--select names %q twice", name)
			}
			opt.Select = append(opt.Select, m)
		}
		for _, l := range strings.Split(c.String("load"), ",") {
			if l != "mmap" && l != "no-mmap" {
				return fmt.Errorf("--load must be mmap, no-mmap or both, comma-separated, got %q", c.String("load"))
			}
			if slices.Contains(opt.Load, l) {
				return fmt.Errorf("--load names %q twice", l)
			}
			opt.Load = append(opt.Load, l)
		}
		if opt.Quick && !c.IsSet("prefill") {
			opt.Prefill = 64
		}
		if c.IsSet("device") {
			dev, err := openDevice(c.String("device"))
			if err != nil {
				return err
			}
			defer dev.Close()
			if _, gpu := dev.(backend.KernelTimer); gpu {
				if !c.Bool("ops") {
					return fmt.Errorf("--device %s: bench times a GPU with --ops (each kernel by CUDA events); its decode and prefill speeds are sirun's summary line (sirun --device %[1]s PACK -p ...)", c.String("device"))
				}
				opt.Device = dev
			}
		}
		if c.Bool("ops") {
			return bench.Ops(c.Args().Slice(), opt, os.Stdout)
		}
		reports, err := bench.Run(c.Args().Slice(), opt)
		if err != nil {
			return err
		}
		var lines []byte
		for _, r := range reports {
			b, err := json.Marshal(r)
			if err != nil {
				return err
			}
			lines = append(append(lines, b...), '\n')
			if !c.Bool("json") {
				r.Markdown(os.Stdout)
			}
		}
		if c.Bool("json") {
			os.Stdout.Write(lines)
		}
		if f := c.String("json-out"); f != "" {
			if err := os.WriteFile(f, lines, 0o644); err != nil {
				return err
			}
		}
		return nil
	},
}
