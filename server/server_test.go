package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/runner"
)

var (
	tinyModel *runner.Model
	tinyTmpl  *chat.Template
)

// TestMain converts the tiny model, with the test template, into a pack once.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sipack-server")
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, "tiny.sip")
	if _, err := convert.Convert(context.Background(), convert.Options{
		ModelDir: "../testdata/tinyllama", Output: path, ChatTemplate: "../testdata/chat/tiny_template.jinja",
	}); err != nil {
		panic(err)
	}
	pack, err := format.Open(path, format.OpenOptions{})
	if err != nil {
		panic(err)
	}
	if tinyModel, err = runner.Load(pack, cpu.New()); err != nil {
		panic(err)
	}
	if tinyTmpl, err = chat.ConfigFromPack(pack, tinyModel.Tokenizer).Compile(""); err != nil {
		panic(err)
	}
	code := m.Run()
	pack.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newEngine(t testing.TB, ctx int) *Engine {
	t.Helper()
	e, err := NewEngine(EngineOptions{Model: tinyModel, Gamma: 1, Ctx: ctx, Threads: 1, Template: tinyTmpl})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// testServer is a real server on a loopback port.
type testServer struct {
	*Server
	url    string
	stop   context.CancelFunc
	served chan error
}

func startServer(t *testing.T, opt Options, setup func(*Server)) *testServer {
	t.Helper()
	if opt.Model == "" {
		opt.Model = "tiny"
	}
	srv, err := New(newEngine(t, 512), opt)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{Server: srv, url: "http://" + ln.Addr().String(), stop: stop, served: make(chan error, 1)}
	go func() { ts.served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-ts.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
	})
	return ts
}

func (ts *testServer) client(opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(ts.url + "/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0)}, opts...)...)
	return &c
}

func chatParams(user string, maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You answer in one line."), openai.UserMessage(user)},
		Temperature: openai.Float(0),
		MaxTokens:   openai.Int(maxTokens),
	}
}

// golden is the tiny model's greedy continuation of "In the beginning" from
// an independent PyTorch implementation (testdata/tinyllama/golden.json).
func golden(t *testing.T) (prompt string, ids []int, text string) {
	raw, err := os.ReadFile("../testdata/tinyllama/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Prompt string `json:"prompt"`
			Greedy []int  `json:"greedy_32"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	c := g.Cases[1]
	return c.Prompt, c.Greedy, tinyModel.Tokenizer.Decode(c.Greedy)
}

func TestModelsAndHealth(t *testing.T) {
	ts := startServer(t, Options{Parallel: 2}, nil)
	c := ts.client()
	page, err := c.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "tiny" || page.Data[0].Object != "model" {
		t.Fatalf("models: %+v", page.Data)
	}
	resp, err := http.Get(ts.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 || h["status"] != "ok" || h["slots_idle"] != 2.0 {
		t.Fatalf("health: %d %v %v", resp.StatusCode, h, err)
	}
}

// TestChatPlainAndStreamed: the streamed text equals the plain one at
// temperature 0, and usage counts the template's tokens.
func TestChatPlainAndStreamed(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1}, nil)
	c := ts.client()
	p := chatParams("Who made the heaven and the earth?", 40)
	plain, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	text := plain.Choices[0].Message.Content
	if text == "" || plain.Choices[0].Message.Role != "assistant" || plain.Object != "chat.completion" {
		t.Fatalf("chat completion: %+v", plain)
	}
	rendered, err := tinyTmpl.Render([]chat.Message{{Role: "system", Content: "You answer in one line."}, {Role: "user", Content: "Who made the heaven and the earth?"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	wantPrompt := int64(len(chat.Encode(tinyModel.Tokenizer, rendered)))
	u := plain.Usage
	if u.PromptTokens != wantPrompt || u.CompletionTokens < 1 || u.CompletionTokens > 40 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Fatalf("usage %+v, want %d prompt tokens", u, wantPrompt)
	}
	if fr := plain.Choices[0].FinishReason; (fr == "length") != (u.CompletionTokens == 40) {
		t.Fatalf("finish reason %q with %d tokens of 40", fr, u.CompletionTokens)
	}

	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(t.Context(), p)
	var b strings.Builder
	var su openai.CompletionUsage
	var finish string
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		chunks++
		if len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Delta.Content)
			if ch.Choices[0].FinishReason != "" {
				finish = ch.Choices[0].FinishReason
			}
		}
		if ch.Usage.TotalTokens > 0 {
			su = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if b.String() != text || finish != plain.Choices[0].FinishReason || su.PromptTokens != u.PromptTokens || su.CompletionTokens != u.CompletionTokens || chunks < 3 {
		t.Fatalf("streamed %q (finish %q, usage %+v, %d chunks), plain %q (finish %q, usage %+v)", b.String(), finish, su, chunks, text, plain.Choices[0].FinishReason, u)
	}
}

// TestCompletionsMatchGolden: greedy /v1/completions of the golden prompt
// gives the independent implementation's text, plain and streamed; a stop
// string ends the text before it.
func TestCompletionsMatchGolden(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1}, nil)
	c := ts.client()
	prompt, ids, want := golden(t)
	p := openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(int64(len(ids))), Temperature: openai.Float(0),
	}
	res, err := c.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Text != want || res.Usage.CompletionTokens != int64(len(ids)) || res.Choices[0].FinishReason != "length" {
		t.Fatalf("completion %q (%d tokens, %s), want %q", res.Choices[0].Text, res.Usage.CompletionTokens, res.Choices[0].FinishReason, want)
	}
	stream := c.Completions.NewStreaming(t.Context(), p)
	var b strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Text)
		}
	}
	if err := stream.Err(); err != nil || b.String() != want {
		t.Fatalf("streamed %q (%v), want %q", b.String(), err, want)
	}

	// A stop string across two tokens in the middle of the text: it and all
	// after it go, and no part of it is streamed.
	var stop string
	for k := len(ids) / 2; k < len(ids)-1 && stop == ""; k++ {
		pre, next := tinyModel.Tokenizer.Decode(ids[:k]), tinyModel.Tokenizer.Decode(ids[k:k+1])
		if len(pre) >= 2 && len(next) >= 2 {
			stop = pre[len(pre)-2:] + next[:2]
		}
	}
	cut := strings.Index(want, stop)
	if stop == "" || cut < 0 {
		t.Fatalf("no stop string across tokens in %q", want)
	}
	p.Stop = openai.CompletionNewParamsStopUnion{OfString: openai.String(stop)}
	res, err = c.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Text != want[:cut] || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("with stop %q: %q (%s), want %q", stop, res.Choices[0].Text, res.Choices[0].FinishReason, want[:cut])
	}
	stream = c.Completions.NewStreaming(t.Context(), p)
	b.Reset()
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			b.WriteString(ch.Choices[0].Text)
		}
	}
	if err := stream.Err(); err != nil || b.String() != want[:cut] {
		t.Fatalf("streamed with stop %q: %q (%v), want %q", stop, b.String(), err, want[:cut])
	}
}

// TestConcurrentGreedyEqual: 8 concurrent greedy requests on 4 slots (4 of
// them queued) each give the single request's text.
func TestConcurrentGreedyEqual(t *testing.T) {
	ts := startServer(t, Options{Parallel: 4, Queue: 8}, nil)
	c := ts.client()
	p := chatParams("Tell me about the beginning.", 48)
	one, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := one.Choices[0].Message.Content
	var wg sync.WaitGroup
	got := make([]string, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() {
			r, err := c.Chat.Completions.New(context.Background(), p)
			if err != nil {
				errs[i] = err
				return
			}
			got[i] = r.Choices[0].Message.Content
		})
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != want {
			t.Errorf("request %d: %q (%v), want %q", i, got[i], errs[i], want)
		}
	}
}

// TestPerRequestSelection: "phi" and "select" choose a decode set for the
// request (fewer FFN records per token than loaded); bad values are 400s.
func TestPerRequestSelection(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1}, nil)
	loaded := ts.e.LoadedRecords()
	records := func(body string) (int, float64) {
		resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Timings struct {
				Records float64 `json:"ffn_records_per_token"`
			} `json:"timings"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r.Timings.Records
	}
	if code, n := records(`{"prompt": "In the beginning", "max_tokens": 4, "temperature": 0}`); code != 200 || int(n) != loaded {
		t.Fatalf("default: %d, %v records per token, want all %d", code, n, loaded)
	}
	code, n := records(`{"prompt": "In the beginning", "max_tokens": 4, "temperature": 0, "phi": 0.4}`)
	if code != 200 || n <= 0 || int(n) > loaded/2 {
		t.Fatalf("phi 0.4: %d, %v records per token of %d loaded", code, n, loaded)
	}
	if code, _ := records(`{"prompt": "x", "phi": 1.5}`); code != 400 {
		t.Fatalf("phi 1.5: status %d, want 400", code)
	}
	if code, p := records(`{"prompt": "In the beginning", "max_tokens": 4, "temperature": 0, "phi": 0.4, "select": "paper"}`); code != 200 || p != n {
		t.Fatalf("paper at phi 0.4: %d, %v records per token, want %v", code, p, n)
	}
	// "auto" on a pack without routers is the paper's selection.
	if code, a := records(`{"prompt": "In the beginning", "max_tokens": 4, "temperature": 0, "phi": 0.4, "select": "auto"}`); code != 200 || a != n {
		t.Fatalf("auto at phi 0.4: %d, %v records per token, want the paper's %v", code, a, n)
	}
	for _, bad := range []string{
		`{"prompt": "x", "phi": 0.4, "select": "nope"}`,
		`{"prompt": "x", "phi": 0.4, "select": "gate"}`,   // not a method
		`{"prompt": "x", "phi": 0.4, "select": "router"}`, // a pack without routers
	} {
		if code, _ := records(bad); code != 400 {
			t.Errorf("%s: status %d, want 400", bad, code)
		}
	}
}

// TestBadRequests: every malformed request gets a 4xx with an OpenAI-style
// JSON error, and the server answers a good request afterwards.
func TestBadRequests(t *testing.T) {
	ts := startServer(t, Options{Parallel: 1, MaxBodyBytes: 64 << 10}, nil)
	chatURL, compURL := "/v1/chat/completions", "/v1/completions"
	msg := `"messages": [{"role": "user", "content": "hi"}]`
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	long := strings.Repeat("In the beginning God created the heaven and the earth. ", 200)
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed JSON", "POST", chatURL, `{"messages": [`, 400},
		{"not an object", "POST", chatURL, `[1, 2]`, 400},
		{"empty body", "POST", chatURL, ``, 400},
		{"trailing data", "POST", chatURL, `{` + msg + `} {}`, 400},
		{"no messages", "POST", chatURL, `{"model": "tiny"}`, 400},
		{"empty messages", "POST", chatURL, `{"messages": []}`, 400},
		{"messages not an array", "POST", chatURL, `{"messages": "hi"}`, 400},
		{"role missing", "POST", chatURL, `{"messages": [{"content": "hi"}]}`, 400},
		{"unknown role", "POST", chatURL, `{"messages": [{"role": "wizard", "content": "hi"}]}`, 400},
		{"content a number", "POST", chatURL, `{"messages": [{"role": "user", "content": 5}]}`, 400},
		{"image part", "POST", chatURL, `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`, 400},
		{"temperature a string", "POST", chatURL, `{` + msg + `, "temperature": "hot"}`, 400},
		{"temperature 5", "POST", chatURL, `{` + msg + `, "temperature": 5}`, 400},
		{"top_p 0", "POST", chatURL, `{` + msg + `, "top_p": 0}`, 400},
		{"min_p 2", "POST", chatURL, `{` + msg + `, "min_p": 2}`, 400},
		{"min_p -0.1", "POST", chatURL, `{` + msg + `, "min_p": -0.1}`, 400},
		{"repeat_last_n -2", "POST", chatURL, `{` + msg + `, "repeat_last_n": -2}`, 400},
		{"top_k -1", "POST", chatURL, `{` + msg + `, "top_k": -1}`, 400},
		{"max_tokens -1", "POST", chatURL, `{` + msg + `, "max_tokens": -1}`, 400},
		{"max_tokens beyond context", "POST", chatURL, `{` + msg + `, "max_tokens": 100000}`, 400},
		{"max_tokens a float", "POST", chatURL, `{` + msg + `, "max_tokens": 1.5}`, 400},
		{"n 2", "POST", chatURL, `{` + msg + `, "n": 2}`, 400},
		{"stop a number", "POST", chatURL, `{` + msg + `, "stop": 3}`, 400},
		{"stop empty", "POST", chatURL, `{` + msg + `, "stop": [""]}`, 400},
		{"model a number", "POST", chatURL, `{` + msg + `, "model": 7}`, 400},
		{"stream a string", "POST", chatURL, `{` + msg + `, "stream": "yes"}`, 400},
		{"deep nesting", "POST", chatURL, `{` + msg + `, "x": ` + deep + `}`, 400},
		{"body too large", "POST", chatURL, `{` + msg + `, "x": "` + strings.Repeat("a", 70<<10) + `"}`, 413},
		{"prompt beyond context", "POST", compURL, `{"prompt": "` + long + `"}`, 400},
		{"chat beyond context", "POST", chatURL, `{"messages": [{"role": "user", "content": "` + long + `"}]}`, 400},
		{"prompt missing", "POST", compURL, `{"max_tokens": 3}`, 400},
		{"prompt a list of two", "POST", compURL, `{"prompt": ["a", "b"]}`, 400},
		{"prompt tokens", "POST", compURL, `{"prompt": [1, 2]}`, 400},
		{"wrong method", "GET", chatURL, ``, 405},
		{"unknown path", "POST", "/v1/embeddings", `{}`, 404},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, ts.url+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e apiError
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, resp.StatusCode, c.status, body)
			continue
		}
		if json.Unmarshal(body, &e) != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
			t.Errorf("%s: body is not an OpenAI error: %s", c.name, body)
		}
	}
	// The SDK sees the same error as a typed *openai.Error.
	p := chatParams("hi", 5)
	p.Temperature = openai.Float(9)
	_, err := ts.client().Chat.Completions.New(t.Context(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "temperature") {
		t.Fatalf("SDK error: %v", err)
	}
	// Still serving.
	if r, err := ts.client().Chat.Completions.New(t.Context(), chatParams("hi", 5)); err != nil || len(r.Choices) != 1 {
		t.Fatalf("after bad requests: %v", err)
	}
}

// TestQueueFull: with one slot busy and no room to wait, a request gets 503.
func TestQueueFull(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ts := startServer(t, Options{Parallel: 1, Queue: 0}, func(s *Server) {
		s.beforeGenerate = func(context.Context) {
			once.Do(func() { close(started); <-release })
		}
	})
	c := ts.client()
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(context.Background(), chatParams("first", 4))
		done <- err
	}()
	<-started
	_, err := c.Chat.Completions.New(t.Context(), chatParams("second", 4))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != "queue_full" {
		t.Fatalf("second request while the slot is busy: %v, want 503 queue_full", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first request: %v", err)
	}
	if _, err := c.Chat.Completions.New(t.Context(), chatParams("third", 4)); err != nil {
		t.Fatalf("after the queue drained: %v", err)
	}
}

// TestCancelOnDisconnect: a client that goes away, streamed or not, stops
// its generation (the slot is then free for the next request).
func TestCancelOnDisconnect(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			firstText := make(chan struct{})
			results := make(chan *Result, 4)
			var once sync.Once
			ts := startServer(t, Options{Parallel: 1, Queue: 4}, func(s *Server) {
				// After the first piece of text, wait for the client to go.
				s.onText = func(ctx context.Context) {
					once.Do(func() { close(firstText); <-ctx.Done() })
				}
				s.onResult = func(r *Result) { results <- r }
			})
			ctx, cancel := context.WithCancel(context.Background())
			body := fmt.Sprintf(`{"prompt": "In the beginning", "max_tokens": 400, "ignore_eos": true, "temperature": 0, "stream": %v}`, stream)
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", strings.NewReader(body))
			errc := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, bufio.NewReader(resp.Body))
					resp.Body.Close()
				}
				errc <- err
			}()
			<-firstText
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the cancelled request completed")
			}
			r := <-results
			if r.FinishReason != "cancelled" || r.CompletionTokens >= 400 {
				t.Fatalf("after the client left: finish %q after %d tokens, want cancelled early", r.FinishReason, r.CompletionTokens)
			}
			if _, err := ts.client().Completions.New(t.Context(), openai.CompletionNewParams{
				Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("x")}, MaxTokens: openai.Int(2),
			}); err != nil {
				t.Fatalf("next request: %v", err)
			}
		})
	}
}

// TestGracefulShutdown: when Serve's context ends, new connections are
// refused, the request in flight completes, then Serve returns.
func TestGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	ts := startServer(t, Options{Parallel: 1}, func(s *Server) {
		s.beforeGenerate = func(context.Context) { once.Do(func() { close(started); <-release }) }
	})
	c := ts.client()
	type out struct {
		r   *openai.ChatCompletion
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := c.Chat.Completions.New(context.Background(), chatParams("in flight", 16))
		done <- out{r, err}
	}()
	<-started
	ts.stop()
	// The listener closes: wait until a new connection is refused.
	addr := strings.TrimPrefix(ts.url, "http://")
	for {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		conn.Close()
		runtime.Gosched()
	}
	select {
	case err := <-ts.served:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	default:
	}
	close(release)
	o := <-done
	if o.err != nil || len(o.r.Choices) != 1 || o.r.Usage.CompletionTokens == 0 {
		t.Fatalf("in-flight request: %v %+v", o.err, o.r)
	}
	err := <-ts.served
	ts.served <- err // for the cleanup
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestAPIKeyAndListen(t *testing.T) {
	for _, c := range []struct {
		host, key string
		ok        bool
	}{
		{"127.0.0.1", "", true}, {"::1", "", true}, {"localhost", "", true}, {"127.0.0.5", "", true},
		{"0.0.0.0", "", false}, {"", "", false}, {"192.168.1.4", "", false}, {"example.com", "", false},
		{"0.0.0.0", "k", true},
	} {
		if err := CheckListen(c.host, c.key); (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok=%v", c.host, c.key, err, c.ok)
		}
	}
	ts := startServer(t, Options{Parallel: 1, APIKey: "s3cret"}, nil)
	_, err := ts.client().Models.List(t.Context())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("wrong key: %v, want 401", err)
	}
	if _, err := ts.client(option.WithAPIKey("s3cret")).Models.List(t.Context()); err != nil {
		t.Fatalf("right key: %v", err)
	}
	if resp, err := http.Get(ts.url + "/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health needs no key: %v", err)
	}
}

// TestConversationPrefillsOnlyNewTurn: a second turn prefills only its new
// tokens, and (computing every neuron) answers as a fresh slot given the
// whole conversation does.
func TestConversationPrefillsOnlyNewTurn(t *testing.T) {
	e := newEngine(t, 512)
	slot, err := e.NewSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close()
	conv := NewConversation(slot, tinyTmpl, "Be brief.")
	gen := Request{MaxTokens: 24}
	r1, err := conv.Send(t.Context(), "In the beginning", gen)
	if err != nil {
		t.Fatal(err)
	}
	if r1.PrefilledTokens != r1.PromptTokens {
		t.Fatalf("first turn prefilled %d of %d", r1.PrefilledTokens, r1.PromptTokens)
	}
	r2, err := conv.Send(t.Context(), "And then?", gen)
	if err != nil {
		t.Fatal(err)
	}
	if r2.PrefilledTokens >= r2.PromptTokens-r1.PromptTokens {
		t.Fatalf("second turn prefilled %d tokens of %d (first turn %d + answer)", r2.PrefilledTokens, r2.PromptTokens, r1.PromptTokens)
	}
	// The same conversation from scratch.
	fresh, err := e.NewSlot()
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	msgs := conv.Messages()
	text, err := tinyTmpl.Render(msgs[:len(msgs)-1], true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Generate(t.Context(), Request{Prompt: chat.Encode(e.Tok, text), MaxTokens: 24})
	if err != nil {
		t.Fatal(err)
	}
	if want.Text != r2.Text || want.PromptTokens != r2.PromptTokens {
		t.Fatalf("continued turn %q (%d prompt tokens), fresh %q (%d)", r2.Text, r2.PromptTokens, want.Text, want.PromptTokens)
	}
	conv.Reset()
	if len(conv.Messages()) != 1 {
		t.Fatalf("after reset: %v", conv.Messages())
	}
	r3, err := conv.Send(t.Context(), "In the beginning", gen)
	if err != nil || r3.Text != r1.Text || r3.PrefilledTokens != r3.PromptTokens {
		t.Fatalf("after reset: %+v %v, want the first turn again", r3, err)
	}
}

// TestNoTemplate: a pack without a chat template still serves text
// completions; chat completions are refused with a 400 that says why.
func TestNoTemplate(t *testing.T) {
	e, err := NewEngine(EngineOptions{Model: tinyModel, Gamma: 1, Ctx: 128, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(e, Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, 400, "no chat template"},
		{"/v1/completions", `{"prompt": "In the beginning", "max_tokens": 3}`, 200, `"text_completion"`},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", c.path, strings.NewReader(c.body)))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.path, rec.Code, rec.Body.String(), c.status, c.want)
		}
	}
}

// FuzzRequestParsing: no request body makes the parsers panic, and what they
// accept is in range.
func FuzzRequestParsing(f *testing.F) {
	for _, s := range []string{
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "stop": ["a", "b"], "temperature": 0.5}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}], "top_p": 0.9, "top_k": 3, "seed": -4}`,
		`{"messages": [{"role": "assistant", "content": null}], "phi": 0.4, "alpha": 0.2, "stream": true, "stream_options": {"include_usage": true}}`,
		`{"prompt": ["x"], "stop": "\n", "n": 1, "presence_penalty": -2, "frequency_penalty": 2}`,
		`{"messages": "x"}`, `[[[[`, `{"max_tokens": 1e400}`, `{"stop": [1]}`, `{"messages": [{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if jsonDepth(body) > maxDepth {
			return
		}
		var req chatRequest
		if decode(body, &req) != nil {
			return
		}
		if msgs, err := parseMessages(req.Messages); err == nil {
			if cerr := chat.CheckMessages(msgs); cerr != nil {
				t.Fatalf("parseMessages accepted %v: %v", msgs, cerr)
			}
		}
		r, err := req.request(512)
		if err != nil {
			return
		}
		s := r.Sampling
		if s.Temperature < 0 || s.Temperature > 2 || s.TopP <= 0 || s.TopP > 1 || s.MinP < 0 || s.MinP > 1 || s.TopK < 0 || r.MaxTokens > 512 || r.MaxTokens < -1 {
			t.Fatalf("accepted out-of-range request %+v", r)
		}
		for _, st := range r.Stop {
			if st == "" {
				t.Fatal("accepted an empty stop string")
			}
		}
	})
}

// do sends one request to h and returns its status, OpenAI error (empty
// on success) and body; headers come in name, value pairs.
func do(t *testing.T, h http.Handler, method, path, body string, headers ...string) (int, apiError, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e apiError
	if rec.Code >= 400 {
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
			t.Errorf("%s %s: %d, body is not an OpenAI error: %s", method, path, rec.Code, rec.Body)
		}
	}
	return rec.Code, e, rec.Body.String()
}

func errParam(e apiError) string {
	if e.Error.Param == nil {
		return ""
	}
	return *e.Error.Param
}

func newTestServer(t *testing.T, opt Options) *Server {
	t.Helper()
	if opt.Model == "" {
		opt.Model = "tiny"
	}
	srv, err := New(newEngine(t, 512), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// TestFieldErrors: a wrongly typed, missing or malformed field is answered
// with its API name (nested ones too), what it must be, and what came; the
// error's param names the field.
func TestFieldErrors(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	chatURL, compURL := "/v1/chat/completions", "/v1/completions"
	msg := `"messages": [{"role": "user", "content": "hi"}]`
	parts := `an array of {"type": "text", "text": ...} parts`
	for _, c := range []struct {
		path, body, ctype string
		want, param       string
	}{
		{chatURL, `{` + msg + `, "max_tokens": "ten"}`, "", "max_tokens must be an integer, got a string", "max_tokens"},
		{chatURL, `{` + msg + `, "max_tokens": 1.5}`, "", "max_tokens must be an integer, got 1.5", "max_tokens"},
		{chatURL, `{` + msg + `, "max_tokens": 99999999999999999999}`, "", "max_tokens must be an integer, got 99999999999999999999, which is out of range", "max_tokens"},
		{chatURL, `{` + msg + `, "max_tokens": -1}`, "", "max_tokens must be in [0, 512] (the context), got -1", "max_tokens"},
		{chatURL, `{` + msg + `, "temperature": "hot"}`, "", "temperature must be a number, got a string", "temperature"},
		{chatURL, `{` + msg + `, "temperature": 1e400}`, "", "temperature must be a number, got 1e400, which is out of range", "temperature"},
		{chatURL, `{` + msg + `, "temperature": 5}`, "", "temperature must be in [0, 2], got 5", "temperature"},
		{chatURL, `{` + msg + `, "stream": "yes"}`, "", "stream must be a boolean, got a string", "stream"},
		{chatURL, `{` + msg + `, "seed": true}`, "", "seed must be an integer, got true", "seed"},
		{chatURL, `{` + msg + `, "model": 7}`, "", "model must be a string, got 7", "model"},
		{chatURL, `{` + msg + `, "stream_options": "usage"}`, "", "stream_options must be an object, got a string", "stream_options"},
		{chatURL, `{` + msg + `, "stream_options": {"include_usage": 1}}`, "", "stream_options.include_usage must be a boolean, got 1", "stream_options.include_usage"},
		{chatURL, `{` + msg + `, "stop": 3}`, "", "stop must be a string or an array of strings, got 3", "stop"},
		{chatURL, `{` + msg + `, "stop": ["a", 1]}`, "", "stop[1] must be a string, got 1", "stop[1]"},
		{chatURL, `{"model": "tiny"}`, "", `messages is required: an array of {"role": ..., "content": ...} objects`, "messages"},
		{chatURL, `{"messages": "hi"}`, "", `messages must be an array of {"role": ..., "content": ...} objects, got a string`, "messages"},
		{chatURL, `{"messages": [{"role": "user", "content": "a"}, "hi"]}`, "", `messages[1] must be an object {"role": ..., "content": ...}, got a string`, "messages[1]"},
		{chatURL, `{"messages": [{"content": "hi"}]}`, "", "messages[0].role is required: one of system, user, assistant, tool", "messages[0].role"},
		{chatURL, `{"messages": [{"role": 1, "content": "hi"}]}`, "", "messages[0].role must be a string, got 1", "messages[0].role"},
		{chatURL, `{"messages": [{"role": "wizard", "content": "hi"}]}`, "", `messages[0].role must be one of system, user, assistant, tool, got "wizard"`, "messages[0].role"},
		{chatURL, `{"messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}, {"role": "user", "content": 5}]}`, "", "messages[2].content must be a string or " + parts + ", got 5", "messages[2].content"},
		{chatURL, `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`, "", `messages[0].content[0].type must be "text" (this server reads text only), got "image_url"`, "messages[0].content[0].type"},
		{chatURL, `{"messages": [{"role": "user", "content": [{"type": "text", "text": 3}]}]}`, "", "messages[0].content[0].text must be a string, got 3", "messages[0].content[0].text"},
		{chatURL, `{"messages": [{"role": "user", "content": [{"text": "x"}]}]}`, "", `messages[0].content[0].type is required: "text"`, "messages[0].content[0].type"},
		{chatURL, `{"messages": [{"role": "user", "content": ["x"]}]}`, "", `messages[0].content[0] must be an object {"type": "text", "text": ...}, got a string`, "messages[0].content[0]"},
		{compURL, `{"max_tokens": 3}`, "", "prompt is required: a string (or an array of one string; token ids are not supported)", "prompt"},
		{compURL, `{"prompt": ["a", "b"]}`, "", "prompt must be a string (or an array of one string; token ids are not supported), got an array of 2 items", "prompt"},
		{compURL, `{"prompt": 5}`, "", "prompt must be a string (or an array of one string; token ids are not supported), got 5", "prompt"},
		{compURL, `{"prompt": "x", "n": "2"}`, "", "n must be an integer, got a string", "n"},
		// The body as a whole.
		{chatURL, `{"messages": [`, "", "malformed JSON at byte 14: unexpected end of JSON input", ""},
		{chatURL, `{"max_tokens": 5,}`, "", "malformed JSON at byte 18: invalid character '}' looking for beginning of object key string", ""},
		{chatURL, "{\n  \"max_tokens\": 5\n  \"stream\": true\n}", "", "malformed JSON at byte 23 (line 3, column 3): invalid character '\"' after object key:value pair", ""},
		{chatURL, `{` + msg + `} {}`, "", "malformed JSON at byte 51: invalid character '{' after top-level value", ""},
		{chatURL, ``, "", "the request body is empty; it must be a JSON object", ""},
		{chatURL, " \n", "application/json", "the request body is empty; it must be a JSON object", ""},
		{chatURL, `[1, 2]`, "", "the request body must be a JSON object, got an array of 2 items", ""},
		{chatURL, `null`, "", "the request body must be a JSON object, got null", ""},
		{compURL, `prompt=hi`, "application/x-www-form-urlencoded", `malformed JSON at byte 1: invalid character 'p' looking for beginning of value (the request's Content-Type is "application/x-www-form-urlencoded": send a JSON body with Content-Type: application/json)`, ""},
		{compURL, `prompt=hi`, "application/json; charset=utf-8", `malformed JSON at byte 1: invalid character 'p' looking for beginning of value`, ""},
	} {
		var hdr []string
		if c.ctype != "" {
			hdr = []string{"Content-Type", c.ctype}
		}
		code, e, body := do(t, h, "POST", c.path, c.body, hdr...)
		if code != 400 || e.Error.Message != c.want || errParam(e) != c.param || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s %s:\n got %d %s\nwant 400 %q (param %q)", c.path, c.body, code, body, c.want, c.param)
		}
	}
	// A form-encoded body that is JSON is read as JSON (curl -d sends that).
	if code, _, body := do(t, h, "POST", compURL, `{"prompt": "In the beginning", "max_tokens": 1}`, "Content-Type", "application/x-www-form-urlencoded"); code != 200 {
		t.Errorf("JSON sent as a form: %d %s", code, body)
	}
}

// TestEveryFieldNamed: every field of the chat and completion requests,
// nested ones too, given a value of the wrong type, is named by its API
// name in the error and its param.
func TestEveryFieldNamed(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1}).Handler()
	// fields lists the JSON names of t's fields, path-prefixed, recursing
	// into embedded and nested structs.
	var fields func(typ reflect.Type, path string) []string
	fields = func(typ reflect.Type, path string) []string {
		var names []string
		for f := range typ.Fields() {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous {
				names = append(names, fields(ft, path)...)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				t.Fatalf("%s has no json name", f.Name)
			}
			names = append(names, path+name)
			if ft.Kind() == reflect.Struct {
				names = append(names, fields(ft, path+name+".")...)
			}
		}
		return names
	}
	// set puts value at the dotted name in a body.
	set := func(body map[string]any, name string, value any) {
		keys := strings.Split(name, ".")
		for _, k := range keys[:len(keys)-1] {
			inner := map[string]any{}
			body[k] = inner
			body = inner
		}
		body[keys[len(keys)-1]] = value
	}
	n := 0
	for _, c := range []struct {
		path string
		req  any
		base map[string]any
	}{
		{"/v1/chat/completions", chatRequest{}, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"/v1/completions", completionRequest{}, map[string]any{"prompt": "hi"}},
	} {
		for _, name := range fields(reflect.TypeOf(c.req), "") {
			body := maps.Clone(c.base)
			// An array of numbers is the wrong type for every field but
			// messages and stop (arrays of other things); a number is for them.
			var bad any = []int{1, 2}
			got := "an array of 2 items"
			if name == "messages" || name == "stop" {
				bad, got = 42, "42"
			}
			set(body, name, bad)
			b, _ := json.Marshal(body)
			code, e, resp := do(t, h, "POST", c.path, string(b))
			n++
			if code != 400 || !strings.HasPrefix(e.Error.Message, name+" must be ") || !strings.HasSuffix(e.Error.Message, ", got "+got) || errParam(e) != name {
				t.Errorf("%s %s: %d %s, want 400 %q must be ..., got %s (param %q)", c.path, b, code, resp, name, got, name)
			}
		}
	}
	if n < 38 { // every field of both request types, nested ones included
		t.Fatalf("only %d fields checked", n)
	}
}

// TestModelNotFound: a model the server does not serve gets OpenAI's 404
// model_not_found on both completion endpoints and on GET /v1/models/{id};
// no model, the id and the aliases are served.
func TestModelNotFound(t *testing.T) {
	h := newTestServer(t, Options{Parallel: 1, Aliases: []string{"tiny.sip"}}).Handler()
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}`},
		{"/v1/completions", `{"model": "gpt-4o", "prompt": "In the beginning", "max_tokens": 1}`},
		// The model is checked before the rest of the request.
		{"/v1/completions", `{"model": "gpt-4o", "max_tokens": 1}`},
	} {
		code, _, body := do(t, h, "POST", c.path, c.body)
		want := "{\"error\":{\"message\":\"The model `gpt-4o` does not exist; this server serves `tiny`\",\"type\":\"invalid_request_error\",\"param\":\"model\",\"code\":\"model_not_found\"}}\n"
		if code != 404 || body != want {
			t.Errorf("%s %s: %d %s, want 404 %s", c.path, c.body, code, body, want)
		}
	}
	for _, model := range []string{``, `"model": "tiny", `, `"model": "tiny.sip", `, `"model": "", `, `"model": null, `} {
		body := `{` + model + `"prompt": "In the beginning", "max_tokens": 1}`
		if code, _, resp := do(t, h, "POST", "/v1/completions", body); code != 200 || !strings.Contains(resp, `"model":"tiny"`) {
			t.Errorf("%s: %d %s, want 200 for model tiny", body, code, resp)
		}
	}
	for _, c := range []struct {
		id     string
		status int
	}{{"tiny", 200}, {"tiny.sip", 200}, {"gpt-4o", 404}, {"org/model", 404}} {
		code, e, body := do(t, h, "GET", "/v1/models/"+c.id, "")
		if code != c.status || (code == 200 && !strings.Contains(body, `"id":"tiny"`)) || (code == 404 && e.Error.Code != "model_not_found") {
			t.Errorf("GET /v1/models/%s: %d %s, want %d", c.id, code, body, c.status)
		}
	}
	if code, _, _ := do(t, h, "DELETE", "/v1/models/tiny", ""); code != 405 {
		t.Errorf("DELETE /v1/models/tiny: %d, want 405", code)
	}

	// The OpenAI SDK retrieves the model and sees the 404 as a typed error.
	ts := startServer(t, Options{Parallel: 1}, nil)
	c := ts.client()
	if m, err := c.Models.Get(t.Context(), "tiny"); err != nil || m.ID != "tiny" {
		t.Fatalf("SDK retrieve: %+v %v", m, err)
	}
	p := chatParams("hi", 1)
	p.Model = "gpt-4o"
	_, err := c.Chat.Completions.New(t.Context(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Param != "model" {
		t.Fatalf("SDK chat with model gpt-4o: %v, want 404 model_not_found", err)
	}
}

// TestErrorLog: each request answered with a 4xx or 5xx logs one line with
// its method, path, status, duration and error message; a served request
// logs only its own line.
func TestErrorLog(t *testing.T) {
	var buf strings.Builder
	srv := newTestServer(t, Options{Parallel: 1, APIKey: "k", MaxBodyBytes: 1 << 10, Log: log.New(&buf, "", 0)})
	h := srv.Handler()
	auth := []string{"Authorization", "Bearer k"}
	for _, c := range []struct {
		method, path, body string
		headers            []string
		want               string // the line, with DUR for the duration
	}{
		{"POST", "/v1/completions", `{"prompt": "x", "max_tokens": "ten"}`, auth,
			"POST /v1/completions: status 400, DUR: max_tokens must be an integer, got a string"},
		{"POST", "/v1/chat/completions", `{"model": "gpt-4o", "messages": []}`, auth,
			"POST /v1/chat/completions: status 404, DUR: The model `gpt-4o` does not exist; this server serves `tiny`"},
		{"GET", "/v1/models/gpt-4o", ``, auth,
			"GET /v1/models/gpt-4o: status 404, DUR: The model `gpt-4o` does not exist; this server serves `tiny`"},
		{"POST", "/v1/completions", `{"prompt": "x"}`, nil,
			"POST /v1/completions: status 401, DUR: missing or wrong API key (Authorization: Bearer KEY)"},
		{"POST", "/v1/completions", `{"prompt": "` + strings.Repeat("a", 2<<10) + `"}`, auth,
			"POST /v1/completions: status 413, DUR: request body over 1024 bytes"},
		{"GET", "/v1/completions", ``, auth,
			"GET /v1/completions: status 405, DUR: /v1/completions does not take GET"},
		{"POST", "/v1/embeddings", `{}`, auth,
			"POST /v1/embeddings: status 404, DUR: no endpoint POST /v1/embeddings"},
		// A path cannot break the log into lines.
		{"GET", "/v1/x%0Afake%20line", ``, auth,
			`GET /v1/x\nfake line: status 404, DUR: no endpoint GET /v1/x\nfake line`},
	} {
		buf.Reset()
		do(t, h, c.method, c.path, c.body, c.headers...)
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(c.want), "DUR", `[0-9]+\.[0-9] ms`) + "\n$"
		if !regexp.MustCompile(re).MatchString(buf.String()) {
			t.Errorf("%s %s: logged %q, want one line %q", c.method, c.path, buf.String(), c.want)
		}
	}
	buf.Reset()
	if code, _, body := do(t, h, "POST", "/v1/completions", `{"prompt": "In the beginning", "max_tokens": 2}`, auth...); code != 200 {
		t.Fatalf("good request: %d %s", code, body)
	}
	if lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "prompt tokens") {
		t.Errorf("served request logged %q, want its one line", buf.String())
	}
}
