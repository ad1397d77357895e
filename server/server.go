// Package server runs a pack for chat and completions: Engine and Slot (the
// one adapter over the runner, engine.go), the interactive multi-turn chat
// of sirun chat (Conversation), and an OpenAI-compatible HTTP server
// (GET /v1/models and /v1/models/{id}, POST /v1/chat/completions and
// /v1/completions, streamed as server-sent events, GET /health), with
// ollama's API (/api/chat, /api/generate, ..., ollama.go) and llama-server's
// extras (/tokenize, /detokenize, /apply-template, /props, llamaserver.go).
//
// The server has --parallel slots, each with its own KV cache and
// selection; a request waits for a slot in a bounded queue and gets 503 when
// the queue is full. As llama-server, it takes the free slot whose cache
// holds the longest prefix of its prompt, if over a tenth of it (ties and
// none: the least recently used), and prefills only the rest; its answer
// and decode set are what a fresh slot would give (Slot.Cached). A client
// that disconnects cancels its generation; Serve drains in-flight requests
// when its context ends.
//
// It refuses, with an OpenAI-style JSON error and a 4xx status, bodies over
// MaxBodyBytes, JSON nested deeper than maxDepth, malformed JSON, missing or
// wrongly typed fields (named as in the API: messages[2].content), unknown
// roles, out-of-range sampling values, prompts or max_tokens beyond the
// context, and models it does not serve (404 model_not_found). Each refused
// request logs one line. It refuses to listen on a non-loopback address
// without an API key.
package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// Options configure a Server.
type Options struct {
	Parallel int    // slots
	Queue    int    // requests that may wait for a slot; beyond them: 503
	APIKey   string // required as "Authorization: Bearer KEY" when set
	Model    string // the model id /v1/models reports
	// Aliases are other names a request may give as its model (the pack's
	// file name); a request naming neither them nor Model gets 404.
	Aliases []string
	// MaxBodyBytes caps a request body (default 1 MiB).
	MaxBodyBytes int64
	Log          *log.Logger // nil: no request log
	// Metrics serves GET /metrics in Prometheus' text format.
	Metrics bool
}

// maxDepth caps the nesting of a request's JSON.
const maxDepth = 32

// Server is the HTTP server over an engine's slots.
type Server struct {
	e       *Engine
	opt     Options
	idle    chan struct{} // one token per slot in free
	waiting chan struct{} // one token per request queued or running
	all     []*Slot
	mu      sync.Mutex
	free    []*Slot // the slots not generating, least recently used first
	seq     atomic.Uint64
	created int64

	// Test hooks: called in the slot before generation, for each piece of
	// text generated, and with each result.
	beforeGenerate func(ctx context.Context)
	onText         func(ctx context.Context)
	onResult       func(*Result)

	metrics metrics
}

// New allocates the slots.
func New(e *Engine, opt Options) (*Server, error) {
	if opt.Parallel < 1 {
		return nil, fmt.Errorf("--parallel must be ≥ 1, got %d", opt.Parallel)
	}
	if opt.Queue < 0 {
		return nil, fmt.Errorf("--queue must be ≥ 0, got %d", opt.Queue)
	}
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 1 << 20
	}
	if opt.Model == "" {
		opt.Model = "sipack"
	}
	s := &Server{e: e, opt: opt, idle: make(chan struct{}, opt.Parallel),
		waiting: make(chan struct{}, opt.Parallel+opt.Queue), created: time.Now().Unix()}
	for range opt.Parallel {
		sl, err := e.NewSlot()
		if err != nil {
			s.Close()
			return nil, err
		}
		s.all, s.free = append(s.all, sl), append(s.free, sl)
		s.idle <- struct{}{}
	}
	return s, nil
}

// Close releases the slots; call it after Serve returns.
func (s *Server) Close() {
	for _, sl := range s.all {
		sl.Close()
	}
}

// CheckListen refuses a non-loopback host without an API key.
func CheckListen(host, apiKey string) error {
	if apiKey != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--host %q is not a loopback address: anyone who can reach it could use the server; give --api-key KEY (clients then send Authorization: Bearer KEY), or use --host 127.0.0.1", host)
}

// Serve serves on ln until ctx ends, then stops accepting, waits for the
// requests in flight to finish and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if s.opt.Log != nil {
		s.opt.Log.Printf("shutting down: finishing the requests in flight")
	}
	if err := hs.Shutdown(context.Background()); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the HTTP API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /v1/models", s.auth(s.models))
	mux.HandleFunc("GET /v1/models/{id...}", s.auth(s.model))
	mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chatCompletions))
	mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	// llama-server's extras (llamaserver.go).
	mux.HandleFunc("POST /tokenize", s.auth(s.tokenize))
	mux.HandleFunc("POST /detokenize", s.auth(s.detokenize))
	mux.HandleFunc("POST /apply-template", s.auth(s.applyTemplate))
	mux.HandleFunc("GET /props", s.auth(s.props))
	mux.HandleFunc("POST /completion", s.auth(s.llamaCompletion))
	mux.HandleFunc("POST /completions", s.auth(s.llamaCompletion))
	mux.HandleFunc("POST /infill", s.auth(s.llamaInfill))
	mux.HandleFunc("GET /metrics", s.auth(s.serveMetrics))
	// ollama's API (ollama.go); its errors are ollama's {"error": "..."}.
	mux.HandleFunc("POST /api/chat", s.auth(s.ollamaChat))
	mux.HandleFunc("POST /api/generate", s.auth(s.ollamaGenerate))
	mux.HandleFunc("POST /api/show", s.auth(s.ollamaShow))
	mux.HandleFunc("GET /api/tags", s.auth(s.ollamaTags))
	mux.HandleFunc("GET /api/ps", s.auth(s.ollamaPS))
	mux.HandleFunc("GET /api/version", s.auth(s.ollamaVersion))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/v1/models", "/v1/chat/completions", "/v1/completions",
			"/tokenize", "/detokenize", "/apply-template", "/props":
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", fmt.Sprintf("%s does not take %s", r.URL.Path, r.Method))
			return
		}
		switch r.URL.Path {
		case "/api/chat", "/api/generate", "/api/show", "/api/tags", "/api/ps", "/api/version":
			ollamaError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s does not take %s", r.URL.Path, r.Method))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v1/models/") {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", fmt.Sprintf("/v1/models/{id} does not take %s", r.Method))
			return
		}
		writeError(w, http.StatusNotFound, "not_found_error", "unknown_url", "", fmt.Sprintf("no endpoint %s %s", r.Method, clip(r.URL.Path, 200)))
	})
	return s.logErrors(mux)
}

// logErrors caps request bodies and logs one line for each request answered
// with a 4xx or 5xx status: a served request logs its own line (finished),
// and a refused one would otherwise leave no trace of why.
func (s *Server) logErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The cap is on the server's own writer, which it tells to close the
		// connection rather than read the rest of an oversized body.
		r.Body = http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes)
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.metrics.requests.Add(1)
		if sw.status >= 400 {
			s.metrics.failed.Add(1)
		}
		if sw.status < 400 || s.opt.Log == nil {
			return
		}
		msg := string(sw.body)
		var e apiError
		if json.Unmarshal(sw.body, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		s.opt.Log.Printf("%s %s: status %d, %.1f ms: %s", r.Method, logSafe(r.URL.Path), sw.status,
			float64(time.Since(start).Microseconds())/1000, logSafe(msg))
	})
}

// logSafe clips s and escapes its control characters, so that a request
// cannot forge or flood log lines.
func logSafe(s string) string {
	s = clip(strings.TrimSpace(s), 1000)
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// maxLoggedBody is how much of an error body statusWriter keeps for the log.
const maxLoggedBody = 64 << 10

// statusWriter records a response's status and the start of an error body.
type statusWriter struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 && code >= 200 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	if sw.status >= 400 && len(sw.body) < maxLoggedBody {
		sw.body = append(sw.body, b[:min(len(b), maxLoggedBody-len(sw.body))]...)
	}
	return sw.ResponseWriter.Write(b)
}

// Flush passes on the flushes of streamed answers.
func (sw *statusWriter) Flush() {
	if f, ok := sw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// apiError is an OpenAI-style error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// writeError answers an OpenAI-style error; param is the request field to
// blame, "" for none.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
	if param != "" {
		e.Error.Param = &param
	}
	writeJSON(w, status, e)
}

// badRequest answers 400 with err, naming its field if it is a fieldError.
func badRequest(w http.ResponseWriter, err error) {
	var fe *fieldError
	param := ""
	if errors.As(err, &fe) {
		param = fe.param
	}
	writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", param, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error","code":"internal"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.opt.APIKey == "" {
		return h
	}
	want := "Bearer " + s.opt.APIKey
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			writeError(w, http.StatusUnauthorized, "authentication_error", "invalid_api_key", "", "missing or wrong API key (Authorization: Bearer KEY)")
			return
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "slots_idle": len(s.idle), "slots_total": s.opt.Parallel})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.opt.Model, "object": "model", "created": s.created, "owned_by": "sipack"}
}

// model is OpenAI's retrieve-model endpoint; an alias retrieves the model
// under its id, as a completion reports it.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.serves(id) {
		s.modelNotFound(w, id, "")
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

// serves says whether a request may name model: the id or an alias.
func (s *Server) serves(model string) bool {
	return model == s.opt.Model || slices.Contains(s.opt.Aliases, model)
}

// checkModel answers 404 for a model the server does not serve and returns
// false. An absent or empty model is this one: many clients send none.
func (s *Server) checkModel(w http.ResponseWriter, model *string) bool {
	if model == nil || *model == "" || s.serves(*model) {
		return true
	}
	s.modelNotFound(w, *model, "model")
	return false
}

// modelNotFound answers as OpenAI does, then names the model served: the
// user who got the name wrong needs the right one.
func (s *Server) modelNotFound(w http.ResponseWriter, model, param string) {
	writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", param,
		fmt.Sprintf("The model `%s` does not exist; this server serves `%s`", clip(model, 200), s.opt.Model))
}

// readBody reads a body (capped by logErrors) and checks its nesting; it
// answers the error itself and returns nil.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) []byte {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "", fmt.Sprintf("request body over %d bytes", s.opt.MaxBodyBytes))
		} else {
			badRequest(w, fmt.Errorf("reading the body: %w", err))
		}
		return nil
	}
	if d := jsonDepth(body); d > maxDepth {
		badRequest(w, fmt.Errorf("JSON nested %d deep, at most %d", d, maxDepth))
		return nil
	}
	return body
}

// jsonDepth is the deepest nesting of arrays and objects in b (strings skipped).
func jsonDepth(b []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// acquire waits for a slot for gen. It answers 503 itself when the queue is
// full and returns nil when the client went away first.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request, gen *Request) *Slot {
	select {
	case s.waiting <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "server_error", "queue_full", "",
			fmt.Sprintf("all %d slots busy and %d requests waiting; try again", s.opt.Parallel, s.opt.Queue))
		return nil
	}
	select {
	case <-s.idle:
		return s.take(gen)
	case <-r.Context().Done():
		<-s.waiting
		return nil
	}
}

// slotSimilarity is the share of a prompt a slot's cache must give it for
// the slot to be chosen for it (llama-server's --slot-prompt-similarity
// default): a shared system prompt alone does not take another
// conversation's slot.
const slotSimilarity = 0.1

// take removes from the free slots the one whose cache gives gen the most
// prompt tokens, if more than slotSimilarity of them; of equals, or when
// none gives that many, the least recently used: a conversation's next
// turn finds its own cache, and a new one evicts the oldest.
func (s *Server) take(gen *Request) *Slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, most := 0, -1
	for i, sl := range s.free {
		n := sl.Cached(gen)
		if float64(n) <= slotSimilarity*float64(len(gen.Prompt)) {
			n = 0
		}
		if n > most { // of equals the first: the least recently used
			best, most = i, n
		}
	}
	sl := s.free[best]
	s.free = slices.Delete(s.free, best, best+1)
	return sl
}

func (s *Server) release(sl *Slot) {
	s.mu.Lock()
	s.free = append(s.free, sl)
	s.mu.Unlock()
	s.idle <- struct{}{}
	<-s.waiting
}

// generating waits for a slot for gen (acquire answers w when there is
// none) and returns it with a release that gives it back once however often
// it is called, and runs the test hook. A handler releases the slot as soon
// as generation ends, before the answer's last bytes: a client that sends
// its next request on reading them must find the slot free.
func (s *Server) generating(w http.ResponseWriter, r *http.Request, gen *Request) (*Slot, func()) {
	sl := s.acquire(w, r, gen)
	if sl == nil {
		return nil, nil
	}
	released := false
	release := func() {
		if !released {
			released = true
			s.release(sl)
		}
	}
	if s.beforeGenerate != nil {
		s.beforeGenerate(r.Context())
	}
	return sl, release
}

// id makes a response id.
func (s *Server) id(prefix string) string {
	return prefix + strconv.FormatUint(s.seq.Add(1), 10)
}

// sse writes server-sent events.
type sse struct {
	w  http.ResponseWriter
	fl http.Flusher
	mu sync.Mutex
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &sse{w: w, fl: fl}
}

func (e *sse) send(v any) {
	b, _ := json.Marshal(v)
	e.raw(b)
}

// streamedLogprobs holds the log probabilities of the tokens sampled since
// the last chunk, for the next one: a chunk's text may lag its tokens (text
// is held back while it may begin a stop string), so a chunk carries the
// entries of the tokens sampled since the one before, and the last chunk
// the rest; together they are the unstreamed answer's.
type streamedLogprobs struct {
	s       *Server
	chat    bool
	pending []TokenLogprob
	offset  int // text_offset of the next token (text completions)
}

func (l *streamedLogprobs) add(lp TokenLogprob) { l.pending = append(l.pending, lp) }

// attach sets the chunk's choice's logprobs to the pending entries, in
// OpenAI's shape: chat's {"content": [...]}, a text completion's parallel
// lists with text offsets counted on from the last chunk's.
func (l *streamedLogprobs) attach(chunk map[string]any) map[string]any {
	if len(l.pending) == 0 {
		return chunk
	}
	res := &Result{Logprobs: l.pending}
	var lp any
	if l.chat {
		lp = l.s.chatLogprobs(res)
	} else {
		m := l.s.completionLogprobs(res).(map[string]any)
		for i, off := range m["text_offset"].([]int) {
			m["text_offset"].([]int)[i] = l.offset + off
		}
		for _, e := range l.pending {
			l.offset += len(l.s.e.Tok.TokenBytes(e.ID))
		}
		lp = m
	}
	chunk["choices"].([]any)[0].(map[string]any)["logprobs"] = lp
	l.pending = nil
	return chunk
}

func (e *sse) raw(b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.w.Write([]byte("data: "))
	e.w.Write(b)
	e.w.Write([]byte("\n\n"))
	if e.fl != nil {
		e.fl.Flush()
	}
}
