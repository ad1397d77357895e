// Command loadtest runs sirun serve on a pack and drives it with N clients
// for a while, each cycling through the endpoints people use: OpenAI's chat
// and text completions (the official Go SDK; plain, streamed, with
// logprobs, with a JSON schema whose answers must validate, a conversation
// that grows turn by turn over the prompt cache), ollama's /api/chat
// (NDJSON stream) and /api/generate (format "json"), and llama-server's
// /tokenize, /detokenize and /metrics. It prints requests/s, p50/p99 latency, errors (any is a
// failure), the server's peak RSS and its RSS over the run, and fails when
// the RSS of the last minute exceeds the first minute's by more than 10 %.
// `make loadtest` runs it on the tiny model; it is not part of go test.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// model is the id sirun serve gives the pack: its file name without .sip.
var model string

func main() {
	sirun := flag.String("sirun", "bin/sirun", "sirun binary")
	pack := flag.String("pack", "bin/tinyllama-chat.sip", "pack to serve (with a chat template)")
	clients := flag.Int("clients", 8, "concurrent clients")
	perClient := flag.Int("requests", 0, "requests per client (0: until -duration)")
	duration := flag.Duration("duration", 3*time.Minute, "how long to run")
	parallel := flag.Int("parallel", 2, "server slots (--parallel)")
	threads := flag.Int("threads", 2, "server threads")
	maxTokens := flag.Int64("max-tokens", 48, "max_tokens of each request")
	flag.Parse()
	model = strings.TrimSuffix(filepath.Base(*pack), ".sip")

	cmd := exec.Command(*sirun, "serve", *pack, "--port", "0", "--parallel", strconv.Itoa(*parallel),
		"--threads", strconv.Itoa(*threads), "--queue", strconv.Itoa(4**clients), "--metrics", "-q")
	stderr, err := cmd.StderrPipe()
	must(err)
	must(cmd.Start())
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var url string
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		fail("sirun serve printed no address")
	}
	go func() {
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, "server:", sc.Text())
		}
	}()
	client := openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
	base = url

	// RSS of the server, sampled every second.
	type sample struct {
		t   time.Duration
		rss uint64
	}
	var samples []sample
	var smu sync.Mutex
	start := time.Now()
	stopSampling := make(chan struct{})
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
				if rss, _ := procStatus(cmd.Process.Pid, "VmRSS"); rss > 0 {
					smu.Lock()
					samples = append(samples, sample{time.Since(start), rss})
					smu.Unlock()
				}
			}
		}
	}()

	var mu sync.Mutex
	var lat []time.Duration
	var errs []string
	var tokens int64
	deadline := start.Add(*duration)
	var wg sync.WaitGroup
	for c := range *clients {
		wg.Go(func() {
			for i := 0; *perClient == 0 || i < *perClient; i++ {
				if time.Now().After(deadline) {
					return
				}
				p := prompts[(c+i)%len(prompts)]
				t0 := time.Now()
				n, err := request(&client, (c+i)%kinds, p, *maxTokens, int64(c*1000+i))
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					errs = append(errs, err.Error())
				} else {
					lat = append(lat, d)
					tokens += n
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	peak, _ := procStatus(cmd.Process.Pid, "VmHWM")
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()

	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("loadtest: %d clients, %d slots, %d threads, %s, max_tokens %d\n", *clients, *parallel, *threads, elapsed.Round(time.Second), *maxTokens)
	fmt.Printf("requests: %d ok, %d errors; %.2f requests/s, %.1f generated tokens/s\n", len(lat), len(errs), float64(len(lat))/elapsed.Seconds(), float64(tokens)/elapsed.Seconds())
	fmt.Printf("latency:  p50 %s, p99 %s, max %s\n", pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	first, last := meanRSS(samples, 0, time.Minute, func(s sample) (time.Duration, uint64) { return s.t, s.rss }),
		meanRSS(samples, elapsed-time.Minute, elapsed, func(s sample) (time.Duration, uint64) { return s.t, s.rss })
	fmt.Printf("memory:   peak RSS %.1f MiB; mean RSS first minute %.1f MiB, last minute %.1f MiB\n", mib(peak), mib(first), mib(last))
	for i, e := range errs {
		if i == 5 {
			break
		}
		fmt.Println("error:", e)
	}
	if len(errs) > 0 {
		fail(fmt.Sprintf("%d errors", len(errs)))
	}
	if elapsed >= 2*time.Minute && float64(last) > 1.1*float64(first) {
		fail("RSS grew from the first to the last minute")
	}
}

// request sends one request of the given kind and returns the tokens generated.
func request(c *openai.Client, kind int, prompt string, maxTokens, seed int64) (int64, error) {
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage(prompt)}
	switch kind {
	case 0: // chat, sampled
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs,
			MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(0.8), Seed: openai.Int(seed)})
		if err != nil {
			return 0, err
		}
		return r.Usage.CompletionTokens, nil
	case 1: // chat, streamed, greedy
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs,
			MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(0),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var n int64
		for s.Next() {
			if u := s.Current().Usage; u.CompletionTokens > 0 {
				n = u.CompletionTokens
			}
		}
		return n, s.Err()
	case 2: // text completion
		r, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(maxTokens),
			Temperature: openai.Float(0.7), Seed: openai.Int(seed)})
		if err != nil {
			return 0, err
		}
		return r.Usage.CompletionTokens, nil
	case 3: // text completion, streamed, with a stop string
		s := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}, MaxTokens: openai.Int(maxTokens),
			Temperature: openai.Float(0), Stop: openai.CompletionNewParamsStopUnion{OfString: openai.String("LORD")}})
		var n int64
		for s.Next() {
			n++
		}
		return n, s.Err()
	case 4: // chat, streamed, with logprobs
		s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs,
			MaxTokens: openai.Int(maxTokens), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3)})
		var n int64
		for s.Next() {
			for _, ch := range s.Current().Choices {
				n += int64(len(ch.Logprobs.Content))
			}
		}
		return n, s.Err()
	case 5: // chat with a JSON schema: a finished answer must validate
		r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msgs,
			MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(1), Seed: openai.Int(seed),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
				JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: personSchema}}}})
		if err != nil {
			return 0, err
		}
		if len(r.Choices) == 1 && r.Choices[0].FinishReason == "stop" {
			if err := validate(r.Choices[0].Message.Content); err != nil {
				return 0, err
			}
		}
		return r.Usage.CompletionTokens, nil
	case 6: // a conversation growing by a turn a request (the prompt cache)
		conv := slices.Clone(msgs)
		var n int64
		for turn := range 3 {
			r, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: conv,
				MaxTokens: openai.Int(maxTokens / 2), Temperature: openai.Float(0)})
			if err != nil {
				return n, err
			}
			n += r.Usage.CompletionTokens
			conv = append(conv, openai.AssistantMessage(r.Choices[0].Message.Content), openai.UserMessage(prompts[turn]))
		}
		return n, nil
	case 7: // ollama /api/chat, NDJSON stream
		body := map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": prompt}},
			"options": map[string]any{"num_predict": maxTokens, "temperature": 0.8, "seed": seed}}
		var last struct {
			Done      bool  `json:"done"`
			EvalCount int64 `json:"eval_count"`
		}
		err := post("/api/chat", body, func(line []byte) error { return json.Unmarshal(line, &last) })
		if err == nil && !last.Done {
			err = fmt.Errorf("/api/chat: the stream ended without done")
		}
		return last.EvalCount, err
	case 8: // ollama /api/generate, format json, not streamed
		body := map[string]any{"model": model, "prompt": prompt, "stream": false, "format": "json",
			"options": map[string]any{"num_predict": maxTokens}}
		var r struct {
			Response   string `json:"response"`
			DoneReason string `json:"done_reason"`
			EvalCount  int64  `json:"eval_count"`
		}
		if err := post("/api/generate", body, func(b []byte) error { return json.Unmarshal(b, &r) }); err != nil {
			return 0, err
		}
		if r.DoneReason == "stop" && !json.Valid([]byte(r.Response)) {
			return 0, fmt.Errorf("/api/generate format json: not JSON: %q", r.Response)
		}
		return r.EvalCount, nil
	default: // llama-server: tokenize, detokenize, metrics
		var tok struct{ Tokens []int }
		if err := post("/tokenize", map[string]any{"content": prompt}, func(b []byte) error { return json.Unmarshal(b, &tok) }); err != nil {
			return 0, err
		}
		var detok struct{ Content string }
		if err := post("/detokenize", map[string]any{"tokens": tok.Tokens}, func(b []byte) error { return json.Unmarshal(b, &detok) }); err != nil {
			return 0, err
		}
		if strings.TrimSpace(detok.Content) != strings.TrimSpace(prompt) {
			return 0, fmt.Errorf("/detokenize of /tokenize: %q, want %q", detok.Content, prompt)
		}
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !bytes.Contains(b, []byte("# TYPE")) {
			return 0, fmt.Errorf("/metrics: %s", resp.Status)
		}
		return 0, nil
	}
}

// kinds is how many kinds of request request sends.
const kinds = 10

// base is the server's address; prompts are the clients' questions.
var (
	base    string
	prompts = []string{"In the beginning", "Tell me about the LORD.", "What did Moses say?", "Spanish: Y dijo Dios\nEnglish:", "¿Qué tal? 🙂"}
)

// personSchema is the structured requests' schema; validate checks an
// answer against it.
var personSchema = map[string]any{"type": "object", "properties": map[string]any{
	"name": map[string]any{"type": "string", "maxLength": 12},
	"age":  map[string]any{"type": "integer", "minimum": 0, "maximum": 120},
}, "required": []any{"name", "age"}, "additionalProperties": false}

var compiled = func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	must(c.AddResource("person.json", personSchema))
	s, err := c.Compile("person.json")
	must(err)
	return s
}()

func validate(answer string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(answer))
	if err != nil {
		return fmt.Errorf("structured answer %q: %v", answer, err)
	}
	if err := compiled.Validate(v); err != nil {
		return fmt.Errorf("structured answer %q: %v", answer, err)
	}
	return nil
}

// post sends body as JSON to path and gives each line of a 200 answer to
// line (an NDJSON stream's objects, or the one JSON answer).
func post(path string, body any, line func([]byte) error) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := line(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	return sc.Err()
}

func meanRSS[S any](ss []S, from, to time.Duration, get func(S) (time.Duration, uint64)) uint64 {
	var sum, n uint64
	for _, s := range ss {
		if t, v := get(s); t >= from && t <= to {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// procStatus reads a kB field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func must(err error) {
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "loadtest:", msg)
	os.Exit(1)
}
