package main

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/sipack/sipack/bench"
	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/runner"
	"github.com/sipack/sipack/server"
)

// engineFlags are shared by chat and serve.
var engineFlags = append([]cli.Flag{
	modelFlag,
	ctxFlag,
	&cli.IntFlag{Name: "threads", Aliases: []string{"t"}, Value: defaultThreads(), Usage: "worker threads in all"},
	&cli.StringFlag{Name: "chat-template", Usage: "use this chat template (a tokenizer_config.json or a Jinja `FILE`) instead of the pack's"},
	&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no log or summary on stderr"},
}, selectionFlags...)

// openEngine opens the pack at the flags' γ and makes an engine whose slots
// each get threads/slots workers.
func openEngine(c *cli.Context, slots int) (*server.Engine, *format.Pack, error) {
	path, err := packArg(c)
	if err != nil {
		return nil, nil, err
	}
	if err := cliutil.CheckThreads("--threads", c.Int("threads")); err != nil {
		return nil, nil, err
	}
	ctx := c.Int("ctx-size")
	if c.IsSet("ctx-size") && ctx < 1 {
		return nil, nil, fmt.Errorf("--ctx-size must be ≥ 1, got %d", ctx)
	}
	pack, m, sel, err := openSelected(c, path, ctx, slots)
	if err != nil {
		return nil, nil, err
	}
	if !c.IsSet("ctx-size") {
		ctx = min(m.Config.MaxPositionEmbeddings, 4096)
	}
	var cfg *chat.Config
	if f := c.String("chat-template"); f != "" {
		if strings.HasSuffix(f, ".json") {
			cfg, err = chat.LoadConfig(f)
		} else {
			var src []byte
			src, err = tmpfile.ReadFile(f)
			cfg = chat.ConfigFromPack(pack, m.Tokenizer)
			cfg.Templates = []format.ChatTemplate{{Name: "default", Template: string(src)}}
		}
	} else {
		cfg = chat.ConfigFromPack(pack, m.Tokenizer)
	}
	var tmpl *chat.Template
	if err == nil && len(cfg.Templates) > 0 {
		tmpl, err = cfg.Compile("")
	}
	if err != nil {
		pack.Close()
		return nil, nil, fmt.Errorf("--chat-template: %w", err)
	}
	N := m.Config.IntermediateSize
	e, err := server.NewEngine(server.EngineOptions{
		Model: m, Gamma: (float64(pack.LoadedRanks) + 0.999) / float64(N), Selection: sel,
		Ctx: ctx, Threads: max(1, c.Int("threads")/slots), Template: tmpl,
	})
	if err != nil {
		pack.Close()
		return nil, nil, err
	}
	return e, pack, nil
}

var serveCmd = &cli.Command{
	Name:      "serve",
	Usage:     "serve the pack over HTTP: OpenAI's API (/v1/...), ollama's (/api/...) and llama-server's extras",
	ArgsUsage: "PACK",
	Description: "γ is fixed when the pack is loaded; every request computes --phi of the neurons per token,\n" +
		"chosen by --select (a request may override them with the extension fields \"phi\" and \"select\").\n" +
		"SIGINT or SIGTERM stop accepting requests, finish those in flight, then exit.",
	Flags: append([]cli.Flag{
		&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on (non-loopback needs --api-key)"},
		&cli.IntFlag{Name: "port", Value: 8080, Usage: "port to listen on (0: any free port)"},
		&cli.IntFlag{Name: "parallel", Aliases: []string{"np"}, Value: 1, Usage: "requests generated at once, each with its own KV cache"},
		&cli.IntFlag{Name: "queue", Value: 64, Usage: "requests that may wait for a slot; more get 503"},
		&cli.StringFlag{Name: "api-key", Usage: "require Authorization: Bearer `KEY` (default: $SIRUN_API_KEY)", EnvVars: []string{"SIRUN_API_KEY"}},
		&cli.StringFlag{Name: "alias", Usage: "model id to report (default: the pack's file name without .sip); requests may also give the file name"},
		&cli.StringFlag{Name: "max-body", Value: "1MiB", Usage: "largest request body"},
		&cli.BoolFlag{Name: "metrics", Usage: "serve GET /metrics in Prometheus' text format"},
	}, engineFlags...),
	Action: func(c *cli.Context) error {
		host, port := c.String("host"), c.Int("port")
		if err := server.CheckListen(host, c.String("api-key")); err != nil {
			return err
		}
		if port < 0 || port > 65535 {
			return fmt.Errorf("--port must be in [0, 65535], got %d", port)
		}
		maxBody, err := cliutil.ParseBytes(c.String("max-body"))
		if err != nil {
			return fmt.Errorf("--max-body: %w", err)
		}
		if c.Int("parallel") < 1 {
			return fmt.Errorf("--parallel must be ≥ 1, got %d", c.Int("parallel"))
		}
		e, pack, err := openEngine(c, c.Int("parallel"))
		if err != nil {
			return err
		}
		defer pack.Close()
		// The pack's file name, with or without .sip, names the model as
		// well as its id does: a request that gives it is served, not 404.
		file := filepath.Base(pack.Path)
		aliases := []string{file, strings.TrimSuffix(file, ".sip")}
		name := c.String("alias")
		if name == "" {
			name = aliases[1]
		}
		var logger *log.Logger
		if !c.Bool("quiet") {
			logger = log.New(os.Stderr, "sirun serve: ", log.LstdFlags)
		}
		srv, err := server.New(e, server.Options{
			Parallel: c.Int("parallel"), Queue: c.Int("queue"), APIKey: c.String("api-key"),
			Model: name, Aliases: aliases, MaxBodyBytes: int64(maxBody), Log: logger, Metrics: c.Bool("metrics"),
		})
		if err != nil {
			return err
		}
		defer srv.Close()
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		// The address goes to stderr even with --quiet: with --port 0 it is
		// how a caller learns the port.
		fmt.Fprintf(os.Stderr, "sirun serve: listening on http://%s (model %q, %d slots of %d tokens, chat template: %v)\n",
			ln.Addr(), name, c.Int("parallel"), e.Ctx(), e.Template() != nil)
		ctx, stop := cliutil.SignalContext()
		defer stop()
		if err := srv.Serve(ctx, ln); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "sirun serve: stopped")
		return nil
	},
}

var chatCmd = &cli.Command{
	Name:      "chat",
	Usage:     "chat with the pack interactively, with its chat template (lines from stdin; /reset starts over)",
	ArgsUsage: "PACK",
	Description: "Each turn prefills only what the KV cache lacks (the new turn, and the last answer where the\n" +
		"decode computed a selection); the whole conversation votes the decode set, as if sent cold.\n" +
		"/reset forgets the conversation; end of input (Ctrl-D) ends the chat and\n" +
		"prints the timing summary.",
	Flags: append([]cli.Flag{
		&cli.StringFlag{Name: "system", Usage: "system prompt `TEXT`"},
		&cli.IntFlag{Name: "n-predict", Aliases: []string{"n"}, Value: defaultPredict, Usage: "tokens to generate per turn at most (-1: the rest of the context)"},
		&cli.Float64Flag{Name: "temperature", Aliases: []string{"temp"}, Value: runner.DefaultSampler().Temperature, Usage: "sampling temperature; 0 is greedy"},
		&cli.IntFlag{Name: "top-k", Value: runner.DefaultSampler().TopK, Usage: "keep the k most likely tokens (0: all)"},
		&cli.Float64Flag{Name: "top-p", Value: runner.DefaultSampler().TopP, Usage: "keep the smallest set of tokens whose probability reaches p (1: all)"},
		&cli.Float64Flag{Name: "min-p", Value: runner.DefaultSampler().MinP, Usage: "keep the tokens at least p times as likely as the most likely (0: off)"},
		&cli.Float64Flag{Name: "repeat-penalty", Value: runner.DefaultSampler().RepetitionPenalty, Usage: "penalty for recently seen tokens (1: off)"},
		&cli.Int64Flag{Name: "seed", Value: -1, Usage: "random seed (-1: from the clock)"},
	}, engineFlags...),
	Action: func(c *cli.Context) error {
		if c.Int("n-predict") < -1 {
			return fmt.Errorf("-n must be ≥ -1, got %d", c.Int("n-predict"))
		}
		loadStart := time.Now()
		e, pack, err := openEngine(c, 1)
		if err != nil {
			return err
		}
		defer pack.Close()
		if e.Template() == nil {
			return fmt.Errorf("%s: %w", pack.Path, chat.ErrNoTemplate)
		}
		slot, err := e.NewSlot()
		if err != nil {
			return err
		}
		defer slot.Close()
		load := time.Since(loadStart)
		seed := c.Int64("seed")
		if seed < 0 {
			seed = time.Now().UnixNano() & (1<<62 - 1)
		}
		gen := server.Request{MaxTokens: c.Int("n-predict"), Sampling: server.Sampling{
			Temperature: c.Float64("temperature"), TopK: c.Int("top-k"), TopP: c.Float64("top-p"), MinP: c.Float64("min-p"),
			RepeatPenalty: c.Float64("repeat-penalty"), RepeatLastN: runner.DefaultSampler().RepeatLastN, Seed: uint64(seed),
		}}
		return chatLoop(c, os.Stdin, os.Stdout, server.NewConversation(slot, e.Template(), c.String("system")), gen, load, e)
	},
}

// chatLoop reads turns from in and streams the answers to out.
func chatLoop(c *cli.Context, in io.Reader, out io.Writer, conv *server.Conversation, gen server.Request, load time.Duration, e *server.Engine) error {
	quiet := c.Bool("quiet")
	ctx, stop := cliutil.SignalContext()
	defer stop()
	var prefilled, generated, turns int
	var prefill, decode time.Duration
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	w := bufio.NewWriter(out)
	for {
		if !quiet {
			fmt.Fprint(os.Stderr, "> ")
		}
		if !sc.Scan() {
			break
		}
		line := strings.TrimSpace(sc.Text())
		switch line {
		case "":
			continue
		case "/reset":
			conv.Reset()
			if !quiet {
				fmt.Fprintln(os.Stderr, "(conversation reset)")
			}
			continue
		}
		g := gen
		g.Sampling.Seed += uint64(turns)
		g.OnText = func(t string) {
			w.WriteString(t)
			w.Flush()
		}
		res, err := conv.Send(ctx, line, g)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sirun:", err)
			continue
		}
		w.WriteString("\n")
		w.Flush()
		turns++
		prefilled += res.PrefilledTokens
		generated += res.CompletionTokens
		prefill += res.Prefill
		decode += res.Decode
		if ctx.Err() != nil {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !quiet {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		rate := func(n int, d time.Duration) float64 {
			if d <= 0 {
				return 0
			}
			return float64(n) / d.Seconds()
		}
		per := func(n int, d time.Duration) float64 {
			if n == 0 {
				return 0
			}
			return ms(d) / float64(n)
		}
		fmt.Fprintf(os.Stderr, "\nsirun: load time   = %10.2f ms\n", ms(load))
		fmt.Fprintf(os.Stderr, "sirun: prompt eval = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n", ms(prefill), prefilled, per(prefilled, prefill), rate(prefilled, prefill))
		fmt.Fprintf(os.Stderr, "sirun:        eval = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)\n", ms(decode), generated, per(generated, decode), rate(generated, decode))
		fmt.Fprintf(os.Stderr, "sirun: total time  = %10.2f ms / %5d tokens, %d turns; peak RSS %s\n", ms(load+prefill+decode), prefilled+generated, turns, cliutil.HumanBytes(bench.PeakRSS()))
	}
	return nil
}
