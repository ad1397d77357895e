// Package server runs a pack for chat and completions: Engine and Slot (the
// one adapter over the runner, engine.go), the interactive multi-turn chat
// of sirun chat (Conversation), and an OpenAI-compatible HTTP server
// (GET /v1/models, POST /v1/chat/completions and /v1/completions, streamed
// as server-sent events, GET /health).
//
// The server has --parallel slots, each with its own KV cache and
// selection; a request waits for a slot in a bounded queue and gets 503 when
// the queue is full. Every request is prefilled from the start, so its
// prompt alone votes its decode set. A client that disconnects cancels its
// generation; Serve drains in-flight requests when its context ends.
//
// It refuses, with an OpenAI-style JSON error and a 4xx status, bodies over
// MaxBodyBytes, JSON nested deeper than maxDepth, malformed JSON, missing or
// wrongly typed fields, unknown roles, out-of-range sampling values, and
// prompts or max_tokens beyond the context. It refuses to listen on a
// non-loopback address without an API key.
package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server.
type Options struct {
	Parallel int    // slots
	Queue    int    // requests that may wait for a slot; beyond them: 503
	APIKey   string // required as "Authorization: Bearer KEY" when set
	Model    string // the model id /v1/models reports
	// MaxBodyBytes caps a request body (default 1 MiB).
	MaxBodyBytes int64
	Log          *log.Logger // nil: no request log
}

// maxDepth caps the nesting of a request's JSON.
const maxDepth = 32

// Server is the HTTP server over an engine's slots.
type Server struct {
	e       *Engine
	opt     Options
	slots   chan *Slot
	waiting chan struct{} // one token per request queued or running
	all     []*Slot
	seq     atomic.Uint64
	created int64

	// Test hooks: called in the slot before generation, for each piece of
	// text generated, and with each result.
	beforeGenerate func(ctx context.Context)
	onText         func(ctx context.Context)
	onResult       func(*Result)
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
	s := &Server{e: e, opt: opt, slots: make(chan *Slot, opt.Parallel),
		waiting: make(chan struct{}, opt.Parallel+opt.Queue), created: time.Now().Unix()}
	for range opt.Parallel {
		sl, err := e.NewSlot()
		if err != nil {
			s.Close()
			return nil, err
		}
		s.all = append(s.all, sl)
		s.slots <- sl
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
	mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chatCompletions))
	mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/v1/models", "/v1/chat/completions", "/v1/completions":
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", fmt.Sprintf("%s does not take %s", r.URL.Path, r.Method))
			return
		}
		writeError(w, http.StatusNotFound, "not_found_error", "unknown_url", fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
	})
	return mux
}

// apiError is an OpenAI-style error body.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var e apiError
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, code
	writeJSON(w, status, e)
}

func badRequest(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", msg)
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
			writeError(w, http.StatusUnauthorized, "authentication_error", "invalid_api_key", "missing or wrong API key (Authorization: Bearer KEY)")
			return
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "slots_idle": len(s.slots), "slots_total": s.opt.Parallel})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": s.opt.Model, "object": "model", "created": s.created, "owned_by": "sipack",
	}}})
}

// readBody reads a capped body and checks its nesting; it answers the
// error itself and returns nil.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) []byte {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", fmt.Sprintf("request body over %d bytes", s.opt.MaxBodyBytes))
		} else {
			badRequest(w, "reading the body: "+err.Error())
		}
		return nil
	}
	if d := jsonDepth(body); d > maxDepth {
		badRequest(w, fmt.Sprintf("JSON nested %d deep, at most %d", d, maxDepth))
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

// decode unmarshals a body strictly enough to name the bad field.
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("field %q: got JSON %s, want %s", te.Field, te.Value, te.Type)
		case errors.As(err, &se):
			return fmt.Errorf("malformed JSON at byte %d: %v", se.Offset, err)
		case errors.Is(err, io.EOF):
			return fmt.Errorf("empty body: want a JSON object")
		}
		return fmt.Errorf("malformed JSON: %v", err)
	}
	if dec.More() {
		return fmt.Errorf("malformed JSON: data after the object")
	}
	return nil
}

// acquire waits for a slot. It answers 503 itself when the queue is full and
// returns nil when the client went away first.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) *Slot {
	select {
	case s.waiting <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "server_error", "queue_full",
			fmt.Sprintf("all %d slots busy and %d requests waiting; try again", s.opt.Parallel, s.opt.Queue))
		return nil
	}
	select {
	case sl := <-s.slots:
		return sl
	case <-r.Context().Done():
		<-s.waiting
		return nil
	}
}

func (s *Server) release(sl *Slot) {
	s.slots <- sl
	<-s.waiting
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
