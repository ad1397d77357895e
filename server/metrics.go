package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// metrics are the server's counters in Prometheus' text format (GET
// /metrics with sirun serve --metrics, as llama-server's --metrics).
type metrics struct {
	requests, failed atomic.Uint64 // HTTP requests answered; those with a 4xx or 5xx

	mu                          sync.Mutex
	generations                 uint64  // generations finished
	promptTokens, prefilled     uint64  // prompt tokens; those run through the model
	generated                   uint64  // tokens generated
	prefillSec, decodeSec       float64 // time in prefill and in decode
	lastTokS                    float64 // the last generation's decode tok/s
	lastRecords, lastPhiRecords float64 // the last generation's FFN records per token, and as φ
}

// record adds one generation's figures.
func (m *metrics) record(res *Result, n float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.generations++
	m.promptTokens += uint64(res.PromptTokens)
	m.prefilled += uint64(res.PrefilledTokens)
	m.generated += uint64(res.CompletionTokens)
	m.prefillSec += res.Prefill.Seconds()
	m.decodeSec += res.Decode.Seconds()
	if d := res.Decode.Seconds(); d > 0 && res.CompletionTokens > 1 {
		m.lastTokS = float64(res.CompletionTokens-1) / d
	}
	m.lastRecords = float64(res.ActiveRecords)
	if n > 0 {
		m.lastPhiRecords = float64(res.ActiveRecords) / n
	}
}

// generate runs a request on a slot and counts it.
func (s *Server) generate(r *http.Request, sl *Slot, gen Request) (*Result, error) {
	res, err := sl.Generate(r.Context(), gen)
	if err == nil {
		m := s.e.opt.Model
		s.metrics.record(res, float64(m.Config.IntermediateSize*len(m.Layers)))
	}
	return res, err
}

// serveMetrics writes the counters; without --metrics it answers 501, as
// llama-server does.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if !s.opt.Metrics {
		writeError(w, http.StatusNotImplemented, "not_supported_error", "metrics_disabled", "", "this server does not serve metrics: start sirun serve with --metrics")
		return
	}
	m := &s.metrics
	m.mu.Lock()
	vals := []struct {
		name, kind, help string
		v                float64
	}{
		{"requests_total", "counter", "HTTP requests answered", float64(m.requests.Load())},
		{"requests_failed_total", "counter", "HTTP requests answered with a 4xx or 5xx status", float64(m.failed.Load())},
		{"generations_total", "counter", "generations finished", float64(m.generations)},
		{"prompt_tokens_total", "counter", "prompt tokens of the generations", float64(m.promptTokens)},
		{"prompt_tokens_prefilled_total", "counter", "prompt tokens run through the model (the rest came from a slot's cache)", float64(m.prefilled)},
		{"tokens_predicted_total", "counter", "tokens generated", float64(m.generated)},
		{"prompt_seconds_total", "counter", "time spent in prefill", m.prefillSec},
		{"tokens_predicted_seconds_total", "counter", "time spent in decode", m.decodeSec},
		{"predicted_tokens_seconds", "gauge", "the last generation's decode speed, tokens per second", m.lastTokS},
		{"ffn_records_per_token", "gauge", "FFN neuron records the last generation computed per decode token, all layers", m.lastRecords},
		{"ffn_phi", "gauge", "those records as a fraction of all FFN neurons (φ)", m.lastPhiRecords},
		{"ffn_records_loaded", "gauge", "FFN neuron records loaded (γ's prefix), all layers", float64(s.e.LoadedRecords())},
		{"slots_total", "gauge", "slots (requests generated at once)", float64(len(s.all))},
		{"slots_busy", "gauge", "slots generating now", float64(len(s.all) - len(s.idle))},
		{"requests_waiting", "gauge", "requests waiting for a slot", float64(max(0, len(s.waiting)-(len(s.all)-len(s.idle))))},
	}
	m.mu.Unlock()
	var b strings.Builder
	for _, v := range vals {
		fmt.Fprintf(&b, "# HELP sirun_%s %s\n# TYPE sirun_%s %s\nsirun_%s %g\n", v.name, v.help, v.name, v.kind, v.name, v.v)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
