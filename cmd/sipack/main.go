// Command sipack converts HuggingFace checkpoints into .sip packs and
// inspects, verifies and tokenizes with them.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/tokenizer"
)

func main() {
	app := &cli.App{
		Name:  "sipack",
		Usage: "build task-pruned .sip packs from HuggingFace checkpoints",
		Description: "A .sip pack stores a model with its FFN neurons in rank order, so that loading a\n" +
			"fraction γ of them is reading one contiguous prefix of the file (see format/SPEC.md).",
		Commands: []*cli.Command{convertCmd, profileCmd, routeCmd, sliceCmd, inspectCmd, verifyCmd, tokenizeCmd, templateCmd, synthCmd, plotCmd},
		ExitErrHandler: func(c *cli.Context, err error) {
			if err != nil {
				cliutil.Fail(os.Stderr, "sipack", err)
				os.Exit(1)
			}
		},
	}
	cliutil.RequireFlags(app.Commands)
	cliutil.Setup(app)
	if err := app.Run(cliutil.Intersperse(app, os.Args)); err != nil {
		cliutil.Fail(os.Stderr, "sipack", err)
		os.Exit(1)
	}
}

// openPresent opens a pack with every band its file holds mapped: all of
// them, a sliced pack's prefix, or the whole bands of a file cut short.
func openPresent(path string) (*format.Pack, error) {
	h, err := format.Open(path, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		return nil, err
	}
	n, avail := h.Index.Config.IntermediateSize, h.AvailableRanks()
	h.Close()
	if avail == 0 {
		return nil, fmt.Errorf("%s: truncated: the file is cut short before its first whole band; nothing of the FFN section to verify", path)
	}
	gamma := 0.0
	if avail < n {
		gamma = float64(avail) / float64(n) // format.Count gives back avail
	}
	return format.Open(path, format.OpenOptions{Gamma: gamma})
}

// absentNote says which ranks a pack does not hold, and why, or "".
func absentNote(p *format.Pack) string {
	n := p.Index.Config.IntermediateSize
	if len(p.Index.SparseLayers) == 0 || p.LoadedRanks >= n {
		return ""
	}
	var why []string
	if p.Index.RanksPresent < n {
		why = append(why, fmt.Sprintf("sliced to %d ranks", p.Index.RanksPresent))
	}
	if p.FileSize < int64(p.Preamble.FileLen) {
		why = append(why, fmt.Sprintf("the file is cut short: %d of %d bytes", p.FileSize, p.Preamble.FileLen))
	}
	return fmt.Sprintf("absent: ranks %d..%d of each sparse layer (bands %d..%d) are not in the file (%s); verified what is there, γ ≤ %.3f",
		p.LoadedRanks, n-1, p.LoadedBands, (n+p.Index.BandNeurons-1)/p.Index.BandNeurons-1, strings.Join(why, "; "), float64(p.LoadedRanks)/float64(n))
}

var sliceCmd = &cli.Command{
	Name:      "slice",
	Usage:     "write the γ prefix of a pack as a smaller valid pack (for a device that never loads more)",
	ArgsUsage: "PACK",
	Flags: []cli.Flag{
		&cli.Float64Flag{Name: "gamma", Required: true, Usage: "fraction γ of each sparse layer's ranks to keep, in (0, 1]"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "output pack `FILE`"},
		&cli.BoolFlag{Name: "force", Usage: "replace an existing read-only output file"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("slice needs exactly one PACK argument, got %d", c.NArg())
		}
		g := c.Float64("gamma")
		if !(g > 0 && g <= 1) {
			return fmt.Errorf("--gamma must be in (0, 1], got %v", g)
		}
		if err := cliutil.CheckOutput(c.String("output"), c.Bool("force"), c.Args().First()); err != nil {
			return err
		}
		p, err := format.Open(c.Args().First(), format.OpenOptions{Gamma: g})
		if err != nil {
			return err
		}
		defer p.Close()
		cliutil.RemoveStaleTemps(os.Stderr, "sipack", c.String("output"))
		ctx, stop := cliutil.SignalContext()
		defer stop()
		if err := format.Slice(ctx, p, c.String("output")); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted; no pack written to %s", c.String("output"))
			}
			return err
		}
		st, err := os.Stat(c.String("output"))
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "wrote %s: γ ≤ %.3f (%d ranks per sparse layer), %s (from %s)\n", c.String("output"),
			float64(p.LoadedRanks)/float64(p.Index.Config.IntermediateSize), p.LoadedRanks, cliutil.HumanBytes(uint64(st.Size())), cliutil.HumanBytes(uint64(p.FileSize)))
		return nil
	},
}

var inspectCmd = &cli.Command{
	Name:      "inspect",
	Usage:     "print a pack's config, sections and the bytes each γ loads; for a model, what its pack would",
	ArgsUsage: "PACK|MODEL_DIR|MODEL.gguf|config.json",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "tensors", Usage: "also list every dense tensor"},
		&cli.StringFlag{Name: "dtype", Usage: "for a model: the pack's dtype, as convert's --dtype"},
		&cli.IntFlag{Name: "ctx-size", Aliases: []string{"c"}, Value: 4096, Usage: "for a model: tokens of KV cache to count"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("inspect needs exactly one PACK argument, got %d", c.NArg())
		}
		if path := c.Args().First(); isModel(path) {
			return inspectModel(os.Stdout, path, c.String("dtype"), c.Int("ctx-size"))
		}
		// The header is all inspect reads, so sliced and cut packs inspect too.
		p, err := format.Open(c.Args().First(), format.OpenOptions{HeaderOnly: true})
		if err != nil {
			return err
		}
		defer p.Close()
		p.Summary(os.Stdout)
		if c.Bool("tensors") {
			for _, t := range p.Index.DenseTensors {
				fmt.Printf("  %-28s %-5s %-16v offset %-10d %d bytes\n", t.Name, t.DType, t.Shape, t.Offset, t.Length)
			}
		}
		return nil
	},
}

// isModel says path is a model to estimate rather than a pack: a
// directory, a GGUF file or a config.json.
func isModel(path string) bool {
	st, err := os.Stat(path)
	return err == nil && (st.IsDir() || convert.IsGGUF(path) || (st.Mode().IsRegular() && filepath.Base(path) == "config.json"))
}

// inspectModel prints what converting the model at path would give: the
// dense and FFN bytes, what each γ loads and the KV cache at ctx tokens,
// in GB (10⁹ bytes, as device memory is sold) and GiB.
func inspectModel(w io.Writer, path, dtype string, ctx int) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return fmt.Errorf("%s: not a model directory (no config.json) and not a .sip pack", path)
		}
	}
	if ctx < 1 {
		return fmt.Errorf("--ctx-size must be ≥ 1, got %d", ctx)
	}
	e, assumed, err := convert.EstimateModel(path, dtype)
	if err != nil {
		return err
	}
	gb := func(n uint64) string { return fmt.Sprintf("%s (%.2f GB)", cliutil.HumanBytes(n), float64(n)/1e9) }
	cf := e.Config
	tied := ""
	if cf.TieWordEmbeddings {
		tied = ", tied embeddings"
	}
	fmt.Fprintf(w, "model           %s: %s, hidden %d, FFN %d, %d layers, %d/%d heads of %d, vocabulary %d%s\n",
		path, cf.Architecture, cf.HiddenSize, cf.IntermediateSize, cf.NumLayers, cf.NumHeads, cf.NumKVHeads, cf.HeadDim, cf.VocabSize, tied)
	note := ""
	if assumed {
		note = " (no weights here: bf16 assumed, --dtype to choose)"
	}
	ffn := uint64(e.SparseLayers) * uint64(cf.IntermediateSize) * e.RecordBytes
	fmt.Fprintf(w, "as a pack       %s: dense %s, FFN records %s%s\n", e.DTypeName(), gb(e.Dense), gb(ffn), note)
	fmt.Fprintf(w, "load bytes      ")
	for i, g := range []float64{0.25, 0.5, 0.7, 1.0} {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "γ=%.2f: %s", g, gb(e.Load(g)))
	}
	kv := uint64(2 * cf.NumLayers * ctx * cf.NumKVHeads * cf.HeadDim)
	fmt.Fprintf(w, "\nKV cache        %d tokens: %s in f16 (a GPU's default), %s in f32 (the CPU's)\n", ctx, gb(2*kv), gb(4*kv))
	fmt.Fprintf(w, "estimated       from the config before converting: the index and band alignment add a little\n")
	return nil
}

var verifyCmd = &cli.Command{
	Name:      "verify",
	Usage:     "check the BLAKE3 hash of the index, every dense tensor and every band",
	ArgsUsage: "PACK",
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("verify needs exactly one PACK argument, got %d", c.NArg())
		}
		p, err := openPresent(c.Args().First())
		if err != nil {
			return err
		}
		defer p.Close()
		start := time.Now()
		r, err := p.Verify()
		fmt.Printf("%s: index ok; %d tensors, %d bands, %s hashed in %.2f s\n", p.Path, r.Tensors, r.Bands, cliutil.HumanBytes(r.Bytes), time.Since(start).Seconds())
		if absent := absentNote(p); absent != "" {
			fmt.Println(absent)
		}
		for _, f := range r.Failures {
			fmt.Printf("  MISMATCH %s\n", f)
		}
		if err != nil {
			return fmt.Errorf("%s: %d of %d hashes do not match; first: %w", p.Path, len(r.Failures), r.Tensors+r.Bands, err)
		}
		fmt.Println("all hashes match")
		return nil
	},
}

var tokenizeCmd = &cli.Command{
	Name:      "tokenize",
	Usage:     "print the token ids of TEXT as one JSON array (TEXT \"-\" reads stdin)",
	ArgsUsage: "TEXT",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "tokenizer", Aliases: []string{"t"}, Required: true, Usage: "a tokenizer.json `FILE`, a model directory or a .sip pack"},
		&cli.BoolFlag{Name: "add-special", Value: true, Usage: "add the template's bos/eos tokens (--add-special=false for none)"},
	},
	Action: func(c *cli.Context) error {
		if c.NArg() != 1 {
			return fmt.Errorf("tokenize needs exactly one TEXT argument (or - for stdin), got %d", c.NArg())
		}
		tk, err := loadTokenizer(c.String("tokenizer"))
		if err != nil {
			return err
		}
		text := c.Args().First()
		if text == "-" {
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				return err
			}
			text = string(b)
		}
		ids := tk.Encode(text, c.Bool("add-special"))
		if ids == nil {
			ids = []int{}
		}
		out, _ := json.Marshal(ids)
		fmt.Println(string(out))
		return nil
	},
}

// loadTokenizer accepts a tokenizer.json, a model directory or a pack.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := cliutil.CheckInputs(path); err != nil {
		return nil, err
	}
	if st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	} else if strings.HasSuffix(path, ".sip") || isPack(path) {
		p, err := format.Open(path, format.OpenOptions{HeaderOnly: true})
		if err != nil {
			return nil, err
		}
		defer p.Close()
		tk, err := tokenizer.Load(p.Index.TokenizerJSON)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return tk, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tk, err := tokenizer.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tk, nil
}

func isPack(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(format.Magic))
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == format.Magic && !errors.Is(err, io.EOF)
}
