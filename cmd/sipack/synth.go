package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/convert/testmodel"
	"github.com/sipack/sipack/format"
)

var synthCmd = &cli.Command{
	Name:  "synth",
	Usage: "write a random-weight Llama-3.2-1B-shape pack (original order, δ = 0.3) to measure speed on",
	Description: "The checkpoint (2.5 GB, two shards) is written once into --dir and reused; each call\n" +
		"converts it to one pack of --dtype. These are the packs `sirun bench` and\n" +
		"../shared/llamacpp/compare.sh measure (MAKE_PACK='bin/sipack synth --dtype $DTYPE -o $OUT').",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "pack `FILE` to write"},
		&cli.StringFlag{Name: "dtype", Value: "bf16", Usage: "weight dtype: bf16, f16, f32, q8_0, q4_0, q4_k, q6_k or q4_k_m (llama.cpp's Q4_K_M mix)"},
		&cli.StringFlag{Name: "layout", Usage: "band layout: pairs, runs or tiled (default: the dtype's, as convert)"},
		&cli.StringFlag{Name: "dir", Value: filepath.Join(os.TempDir(), "sipack-bench", "synth-1b"), Usage: "where the random checkpoint is kept"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no summary"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 0 {
			return fmt.Errorf("synth takes no arguments (got %q): the pack goes to -o FILE", c.Args().Slice())
		}
		ck, out := c.String("dir"), c.String("output")
		if d := c.String("dtype"); !strings.EqualFold(d, convert.MixQ4KM) {
			if _, err := format.ParseDType(d); err != nil {
				return fmt.Errorf("--dtype: %w (or %s)", err, convert.MixQ4KM)
			}
		}
		// The pack is replaced by a rename whatever its mode bits (force).
		if err := cliutil.CheckOutput(out, true, ck); err != nil {
			return err
		}
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", out)
		if _, err := os.Stat(filepath.Join(ck, "model.safetensors.index.json")); err != nil {
			if !c.Bool("quiet") {
				fmt.Fprintf(os.Stderr, "sipack synth: writing a random Llama-3.2-1B-shape checkpoint to %s (2.5 GB)\n", ck)
			}
			if err := testmodel.Write(ck, testmodel.Llama32_1B(synthTokenizer())); err != nil {
				return fmt.Errorf("synth checkpoint %s: %w", ck, err)
			}
		}
		ctx, stop := cliutil.SignalContext()
		defer stop()
		start := time.Now()
		res, err := convert.Convert(ctx, convert.Options{ModelDir: ck, Output: out, DType: c.String("dtype"), BaseFraction: 0.3, Layout: c.String("layout")})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; no pack written to %s", out)
			}
			return err
		}
		if !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "wrote %s: %s, original order, %s in %.1f s\n", res.Path, res.DType, cliutil.HumanBytes(uint64(res.Bytes)), time.Since(start).Seconds())
		}
		return nil
	},
}

// synthTokenizer is the tiny model's tokenizer when run from the project
// root (the vocabulary the packs have always carried), else a byte-level
// one: the random model only needs some byte-level BPE vocabulary.
func synthTokenizer() []byte {
	for _, p := range []string{"testdata/tinyllama/tokenizer.json", "../../testdata/tinyllama/tokenizer.json"} {
		if b, err := os.ReadFile(p); err == nil {
			return b
		}
	}
	return testmodel.ByteTokenizer()
}
