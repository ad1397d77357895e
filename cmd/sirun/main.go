// Command sirun runs a .sip pack: it maps the prefix a γ load needs and
// generates text.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/bench"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
	"github.com/sipack/sipack/tokenizer"
)

var generateFlags = []cli.Flag{
	modelFlag,
	&cli.StringFlag{Name: "prompt", Aliases: []string{"p"}, Usage: "prompt `TEXT` (escapes such as \\n are processed unless --no-escape)"},
	&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the prompt from `FILE`"},
	&cli.StringFlag{Name: "prompt-ids", Usage: "prompt as a JSON array of token ids, such as '[4094,3709]'"},
	&cli.IntFlag{Name: "n-predict", Aliases: []string{"n"}, Value: defaultPredict, Usage: "tokens to generate at most"},
	&cli.Float64Flag{Name: "temperature", Aliases: []string{"temp"}, Value: runner.DefaultSampler().Temperature, Usage: "sampling temperature; 0 is greedy"},
	&cli.IntFlag{Name: "top-k", Value: runner.DefaultSampler().TopK, Usage: "keep the k most likely tokens (0: all)"},
	&cli.Float64Flag{Name: "top-p", Value: runner.DefaultSampler().TopP, Usage: "keep the most likely tokens up to probability p (1: all)"},
	&cli.Float64Flag{Name: "min-p", Value: runner.DefaultSampler().MinP, Usage: "keep the tokens at least p times as likely as the most likely (0: off)"},
	&cli.Float64Flag{Name: "repeat-penalty", Value: runner.DefaultSampler().RepetitionPenalty, Usage: "penalty for recently seen tokens (1: off)"},
	&cli.IntFlag{Name: "repeat-last-n", Value: runner.DefaultSampler().RepeatLastN, Usage: "recent tokens the repeat penalty looks at (-1: all, 0: none)"},
	&cli.Int64Flag{Name: "seed", Value: -1, Usage: "random seed (-1: from the clock)"},
	&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: defaultThreads(), Usage: "worker threads"},
	ctxFlag,
	&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "after the prompt, read more turns from stdin, a line each"},
	&cli.BoolFlag{Name: "output-ids", Usage: "print the generated token ids as a JSON array instead of text"},
	&cli.BoolFlag{Name: "ignore-eos", Usage: "do not stop at the end-of-sequence token"},
	&cli.BoolFlag{Name: "no-escape", Usage: "take -p literally"},
	&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no summary on stderr"},
	deviceFlag,
}

// deviceFlag is where a command runs the model.
var deviceFlag = &cli.StringFlag{Name: "device", Value: "cpu", Usage: "run on `DEVICE`: cpu, cuda or cuda:N (the CUDA build)"}

// modelFlag names the pack, as llama.cpp's -m does, where a command takes
// one (the positional PACK works as well).
var modelFlag = &cli.StringFlag{Name: "model", Aliases: []string{"m"}, Usage: "the `PACK` to run (or give it as the argument)", TakesFile: true}

// ctxFlag is the context length, as llama.cpp names it.
var ctxFlag = &cli.IntFlag{Name: "ctx-size", Aliases: []string{"c", "ctx"}, Usage: "context length in tokens", DefaultText: "the model's, at most 4096"}

// packArg is the pack a command runs: -m/--model or its one argument.
func packArg(c *cli.Context) (string, error) {
	m := c.String("model")
	switch {
	case m != "" && c.NArg() == 0:
		return m, nil
	case m == "" && c.NArg() == 1:
		return c.Args().First(), nil
	case m != "":
		return "", fmt.Errorf("give the pack once, as -m or as the argument (got -m %s and %q)", m, c.Args().First())
	}
	return "", fmt.Errorf("%s needs one PACK (or -m PACK), got %d arguments", c.Command.FullName(), c.NArg())
}

func init() { generateFlags = append(generateFlags, selectionFlags...) }

// defaultPredict is how many tokens sirun and each sirun chat turn generate
// at most unless -n says otherwise (an end-of-sequence token stops sooner).
const defaultPredict = 128

func defaultThreads() int { return cliutil.PhysicalCores() }

func main() {
	app := &cli.App{
		Name:      "sirun",
		Usage:     "run a .sip pack: load a γ prefix of its ranked FFN neurons and generate text",
		UsageText: "sirun [generate] [options] PACK -p PROMPT   (or -m PACK)",
		Flags:     generateFlags,
		Action:    generate,
		Commands: []*cli.Command{{
			Name: "generate", Usage: "generate text from a prompt (the default command)", ArgsUsage: "PACK",
			Flags: generateFlags, Action: generate,
		}, evalCmd, perplexityCmd, benchCmd, chatCmd, serveCmd},
		ExitErrHandler: func(c *cli.Context, err error) {
			if err != nil {
				cliutil.Fail(os.Stderr, "sirun", err)
				os.Exit(1)
			}
		},
	}
	cliutil.Setup(app)
	// SIPACK_KERNELS picks another kernel table by name (avx2 on an AVX-512
	// CPU, generic: the float reference), for benchmarks and reference runs.
	if name := os.Getenv("SIPACK_KERNELS"); name != "" {
		t, err := kernels.Named(name)
		if err != nil {
			cliutil.Fail(os.Stderr, "sirun", fmt.Errorf("SIPACK_KERNELS: %w", err))
			os.Exit(1)
		}
		kernels.Use(t)
	}
	if err := app.Run(cliutil.Intersperse(app, os.Args)); err != nil {
		cliutil.Fail(os.Stderr, "sirun", err)
		os.Exit(1)
	}
}

// unescape processes \n, \t, \r, \\, \" and \' as llama.cpp does for -p.
func unescape(s string) string {
	r := strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\'`, `'`)
	return r.Replace(s)
}

func generate(c *cli.Context) error {
	if c.NArg() == 0 && c.NumFlags() == 0 { // a bare sirun: what it is and how to run it
		cli.ShowAppHelp(c)
	}
	path, err := packArg(c)
	if err != nil {
		return err
	}
	n := c.Int("n-predict")
	if n < 0 {
		return fmt.Errorf("-n must be ≥ 0, got %d", n)
	}
	if err := cliutil.CheckThreads("--threads", c.Int("threads")); err != nil {
		return err
	}
	sc, seed, err := samplerFlags(c)
	if err != nil {
		return err
	}

	loadStart := time.Now()
	ctx := c.Int("ctx-size")
	if c.IsSet("ctx-size") && ctx < 1 {
		return fmt.Errorf("--ctx-size must be ≥ 1, got %d", ctx)
	}
	dev, err := openDevice(c.String("device"))
	if err != nil {
		return err
	}
	pack, m, sel, err := openSelectedFor(c, path, ctx, 1, dev)
	if err != nil {
		dev.Close()
		return err
	}
	defer pack.Close()
	defer dev.Close() // before the pack: a GPU may use it in place
	if m, err = onDevice(dev, pack, m); err != nil {
		return err
	}
	if !c.IsSet("ctx-size") {
		ctx = min(m.Config.MaxPositionEmbeddings, 4096)
	}
	if ctx > m.Config.MaxPositionEmbeddings {
		return fmt.Errorf("--ctx-size must be in [1, %d] for this model, got %d", m.Config.MaxPositionEmbeddings, ctx)
	}

	prompt, err := readPrompt(c, m)
	if err != nil {
		return err
	}
	if len(prompt) > ctx {
		return fmt.Errorf("prompt is %d tokens, longer than the context of %d (--ctx, at most %d for this model)", len(prompt), ctx, m.Config.MaxPositionEmbeddings)
	}

	pool := kernels.NewPool(c.Int("threads"))
	defer pool.Close()
	sess, err := m.NewSession(pool, ctx, sc)
	if err != nil {
		return err
	}
	sess.Sel = sel
	loadTime := time.Since(loadStart)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var ids []int
	stream := &tokenizer.TextStream{}
	opt := runner.GenerateOptions{
		MaxTokens: n, Sampler: sc, StopAtEOS: !c.Bool("ignore-eos"),
		OnToken: func(id int) {
			if c.Bool("output-ids") {
				ids = append(ids, id)
				return
			}
			out.WriteString(stream.Push(m.Tokenizer.TokenBytes(id)))
			out.Flush()
		},
	}
	if c.Bool("interactive") {
		// A full context drops the oldest turns and keeps the first prompt
		// (up to a quarter of the context), as llama.cpp's context shift.
		opt.Shift, opt.Keep = true, min(len(prompt), ctx/4)
		if opt.Keep == 0 && len(prompt) == 0 {
			opt.Keep = 1 // the bos the first turn starts with
		}
	}
	// One summary at the end, over every turn (interactive mode adds them up).
	var total *runner.Stats
	defer func() {
		if total != nil && !c.Bool("quiet") {
			printSummary(os.Stderr, total, loadTime, pack, sess, c.Int("threads"), seed, sc.Temperature == 0)
		}
	}()
	turn := func(p []int) error {
		st, err := sess.Generate(p, opt)
		if err != nil {
			return err
		}
		if total == nil {
			// Each turn's first token comes with its prompt; the summary
			// subtracts one, so count the first turn's only.
			total = &runner.Stats{GeneratedTokens: 1}
		}
		total.PromptTokens += st.PromptTokens
		total.GeneratedTokens += max(0, st.GeneratedTokens-1)
		total.Prefill += st.Prefill
		total.Decode += st.Decode
		total.StopReason, total.ActiveRecords = st.StopReason, st.ActiveRecords
		if st.Dropped > 0 && !c.Bool("quiet") {
			fmt.Fprintf(os.Stderr, "\nsirun: the context of %d tokens was full: dropped the oldest %d tokens after the first %d (running the rest again took %.0f ms)\n",
				ctx, st.Dropped, opt.Keep, float64(st.Shift.Microseconds())/1000)
		}
		if !c.Bool("output-ids") {
			rest := stream.Flush()
			out.WriteString(rest)
			if !stream.EndsWithNewline(rest) {
				out.WriteString("\n")
			}
			out.Flush()
		}
		return nil
	}
	if len(prompt) > 0 {
		if err := turn(prompt); err != nil {
			return err
		}
	}
	failed := 0
	if c.Bool("interactive") {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(nil, 1<<20)
		for {
			fmt.Fprint(os.Stderr, "> ")
			if !in.Scan() {
				fmt.Fprintln(os.Stderr)
				break
			}
			line := in.Text()
			if strings.TrimSpace(line) == "" {
				continue
			}
			if !c.Bool("no-escape") {
				line = unescape(line)
			}
			// The turn is sent as typed (no newline is added: a base model
			// would take it as the end of the text); later turns continue the
			// same sequence, so no second bos.
			p := m.Tokenizer.Encode(line, len(sess.History) == 0)
			if err := turn(p); err != nil {
				fmt.Fprintln(os.Stderr, "sirun:", err)
				failed++
			}
		}
	}
	if c.Bool("output-ids") {
		if ids == nil {
			ids = []int{}
		}
		b, _ := json.Marshal(ids)
		out.Write(b)
		out.WriteString("\n")
	}
	if failed > 0 {
		return fmt.Errorf("%d interactive turns failed", failed)
	}
	return nil
}

// samplerFlags is the sampler the flags ask for, and its seed (-1: the
// clock's), after checking that exactly one prompt source is given.
func samplerFlags(c *cli.Context) (runner.SamplerConfig, int64, error) {
	seed := c.Int64("seed")
	if seed < 0 {
		seed = time.Now().UnixNano() & (1<<62 - 1)
	}
	sc := runner.SamplerConfig{
		Temperature: c.Float64("temperature"), TopK: c.Int("top-k"), TopP: c.Float64("top-p"), MinP: c.Float64("min-p"),
		RepetitionPenalty: c.Float64("repeat-penalty"), RepeatLastN: c.Int("repeat-last-n"), Seed: uint64(seed),
	}
	if err := sc.Validate(); err != nil {
		return sc, seed, err
	}
	sources := 0
	for _, f := range []string{"prompt", "file", "prompt-ids"} {
		if c.IsSet(f) {
			sources++
		}
	}
	if sources > 1 {
		return sc, seed, fmt.Errorf("give the prompt once: -p, -f or --prompt-ids")
	}
	if sources == 0 && !c.Bool("interactive") {
		return sc, seed, fmt.Errorf("no prompt: use -p TEXT, -f FILE, --prompt-ids or --interactive")
	}
	return sc, seed, nil
}

// readPrompt is the prompt of -p, -f or --prompt-ids as token ids (none
// with -i alone).
func readPrompt(c *cli.Context, m *runner.Model) ([]int, error) {
	var prompt []int
	switch {
	case c.IsSet("prompt-ids"):
		if err := json.Unmarshal([]byte(c.String("prompt-ids")), &prompt); err != nil {
			return nil, fmt.Errorf("--prompt-ids: want a JSON array of integers: %w", err)
		}
		for _, id := range prompt {
			if id < 0 || id >= m.Config.VocabSize {
				return nil, fmt.Errorf("--prompt-ids: token id %d outside the vocabulary of %d", id, m.Config.VocabSize)
			}
		}
		if len(prompt) == 0 {
			return nil, fmt.Errorf("--prompt-ids: empty prompt")
		}
	case c.IsSet("file"):
		b, err := tmpfile.ReadFile(c.String("file"))
		if err != nil {
			return nil, err
		}
		prompt = m.Tokenizer.Encode(string(b), true)
	case c.IsSet("prompt"):
		text := c.String("prompt")
		if !c.Bool("no-escape") {
			text = unescape(text)
		}
		prompt = m.Tokenizer.Encode(text, true)
	}
	return prompt, nil
}

func printSummary(w io.Writer, st *runner.Stats, load time.Duration, p *format.Pack, s *runner.Session, threads int, seed int64, greedy bool) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rate := func(n int, d time.Duration) float64 {
		if d <= 0 {
			return 0
		}
		return float64(n) / d.Seconds()
	}
	how := "mapped"
	if p.Anon {
		how = "read into memory"
	}
	if p.Locked {
		how += ", locked"
	}
	if huge, ok := p.HugeMapped(); ok && len(p.Bytes()) > 0 {
		how += fmt.Sprintf(", %.0f %% in 2 MiB pages", 100*float64(huge)/float64(len(p.Bytes())))
	}
	fmt.Fprintf(w, "\nsirun: load       %8.1f ms (γ=%.2f: %d of %d bands, %s %s)\n", ms(load),
		float64(p.LoadedRanks)/float64(p.Index.Config.IntermediateSize), p.LoadedBands, p.Preamble.BandCount, cliutil.HumanBytes(uint64(len(p.Bytes()))), how)
	fmt.Fprintf(w, "sirun: prompt     %8.1f ms / %4d tokens (%8.2f tok/s)  [time to first token]\n", ms(st.Prefill), st.PromptTokens, rate(st.PromptTokens, st.Prefill))
	gen := st.GeneratedTokens - 1 // the first token came with the prompt
	if gen < 0 {
		gen = 0
	}
	fmt.Fprintf(w, "sirun: generate   %8.1f ms / %4d tokens (%8.2f tok/s)  stop: %s\n", ms(st.Decode), gen, rate(gen, st.Decode), st.StopReason)
	loaded, all := 0, 0
	for _, L := range s.M.Layers {
		loaded += L.Ranks
		all += p.Index.Config.IntermediateSize
	}
	fmt.Fprintf(w, "sirun: ffn        φ = %.2f of %d neurons = %d computed per decode token, of %d loaded (γ = %.2f)\n",
		float64(st.ActiveRecords)/float64(max(1, all)), all, st.ActiveRecords, loaded, float64(loaded)/float64(max(1, all)))
	if p.HasBudgets() {
		var per []string
		for l, L := range s.M.Layers {
			if !L.Sparse {
				continue
			}
			per = append(per, fmt.Sprintf("%d/%d", s.Plan.LayerActive(s.M, l), L.Ranks))
		}
		fmt.Fprintf(w, "sirun: budgets    the pack's layer budgets share them out, computed/loaded per sparse layer: %s\n", strings.Join(per, " "))
	}
	if s.Sel != nil && s.Sel.Method == runner.MethodRouter {
		fmt.Fprintf(w, "sirun: router     each decode token computes a static part, then the groups of %d ranks the pack's router scores highest (--select paper: the prompt's votes)\n", s.M.RouterGroup)
	}
	sampling := fmt.Sprintf("seed %d", seed)
	if greedy {
		sampling = "greedy"
	}
	fmt.Fprintf(w, "sirun: memory     peak RSS %s, KV cache %s (%d tokens); %d threads, kernels %s, %s\n",
		cliutil.HumanBytes(bench.PeakRSS()), cliutil.HumanBytes(uint64(s.S.CacheBytes())), s.S.Ctx, threads, kernels.Active().Name, sampling)
	if d := deviceSummary(s.M); d != "" {
		fmt.Fprintln(w, d)
	}
}
