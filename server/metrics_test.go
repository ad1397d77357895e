package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetrics: GET /metrics parses as Prometheus' text format (expfmt, the
// exposition parser Prometheus itself uses) and counts what the server did:
// requests and failed ones, prompt and generated tokens, the slots, and
// the last request's selection; without Options.Metrics it is a 501.
func TestMetrics(t *testing.T) {
	ts := startServer(t, Options{Parallel: 2, Metrics: true}, nil)
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(ts.url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r map[string]any
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	code, r := post(`{"prompt": "In the beginning", "max_tokens": 6, "temperature": 0, "ignore_eos": true, "phi": 0.4}`)
	if code != 200 {
		t.Fatalf("completion: %d %v", code, r)
	}
	usage := r["usage"].(map[string]any)
	if code, _ := post(`{"prompt": 5}`); code != 400 {
		t.Fatalf("bad request: %d", code)
	}
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Legacy validation: the strictest names, what every Prometheus scrapes.
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	get := func(name string) float64 {
		f, ok := fams["sirun_"+name]
		if !ok || len(f.Metric) != 1 {
			t.Fatalf("no metric sirun_%s", name)
		}
		if m := f.Metric[0]; m.Counter != nil {
			return m.Counter.GetValue()
		} else if m.Gauge != nil {
			return m.Gauge.GetValue()
		}
		t.Fatalf("sirun_%s is neither counter nor gauge", name)
		return 0
	}
	loaded := float64(ts.e.LoadedRecords())
	for _, c := range []struct {
		name string
		want float64
	}{
		{"requests_total", 2}, {"requests_failed_total", 1}, {"generations_total", 1},
		{"prompt_tokens_total", usage["prompt_tokens"].(float64)}, {"tokens_predicted_total", 6},
		{"slots_total", 2}, {"slots_busy", 0}, {"requests_waiting", 0}, {"ffn_records_loaded", loaded},
	} {
		if got := get(c.name); got != c.want {
			t.Errorf("sirun_%s = %v, want %v", c.name, got, c.want)
		}
	}
	if rec, phi := get("ffn_records_per_token"), get("ffn_phi"); rec <= 0 || rec >= loaded || phi < 0.35 || phi > 0.45 {
		t.Errorf("the last request computed %v of %v records (φ %v); want φ about 0.4", rec, loaded, phi)
	}
	if get("tokens_predicted_seconds_total") <= 0 || get("predicted_tokens_seconds") <= 0 {
		t.Error("no decode time or speed")
	}

	off := startServer(t, Options{Parallel: 1}, nil)
	resp2, err := http.Get(off.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotImplemented {
		t.Fatalf("/metrics without Options.Metrics: %d, want 501", resp2.StatusCode)
	}
}
