package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/sipack/sipack/backend"
)

// TestRunRefusesBadOptions: every out-of-range option is refused by name
// before anything is measured (the FMA peak alone takes a while).
func TestRunRefusesBadOptions(t *testing.T) {
	good := Options{Threads: 1, Tokens: 1, Rounds: 1, Prefill: 1}
	for _, c := range []struct {
		paths []string
		edit  func(*Options)
		want  string
	}{
		{nil, func(*Options) {}, "no packs"},
		{[]string{"p.sip"}, func(o *Options) { o.Threads = 0 }, "threads"},
		{[]string{"p.sip"}, func(o *Options) { o.Rounds = 0 }, "rounds"},
		{[]string{"p.sip"}, func(o *Options) { o.Tokens = -1 }, "tokens"},
		{[]string{"p.sip"}, func(o *Options) { o.Prefill = 0 }, "prefill"},
	} {
		o := good
		c.edit(&o)
		if _, err := Run(c.paths, o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", o, err, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestFinishRatiosWithinRounds: a report's ratios are medians of the
// per-round ratios (not ratios of medians): against the dense figure, the
// first pack's dense, and the first selection method at the same point.
func TestFinishRatiosWithinRounds(t *testing.T) {
	fig := func(gamma, phi float64, method string, tokS ...float64) *benchFigure {
		bw := make([]float64, len(tokS))
		for i := range bw {
			bw[i] = 1e10
		}
		return &benchFigure{gamma: gamma, phi: phi, method: method, tokS: tokS, bw: bw, bytes: 1e9}
	}
	first := &packBench{path: "a.sip", r: &Report{}, figures: []*benchFigure{fig(1, 1, "", 10, 20, 30)}}
	dense := fig(1, 1, "", 5, 10, 40)
	paper := fig(0.7, 0.4, "paper", 15, 40, 60)
	router := fig(0.7, 0.4, "router", 12, 20, 66)
	router.firstSel = paper
	pb := &packBench{path: "b.sip", r: &Report{}, figures: []*benchFigure{dense, paper, router}}
	pb.finish(first)
	r := pb.r
	// dense ÷ first's dense per round: 0.5, 0.5, 1.333 → 0.5 (the ratio of medians would be 0.5 too).
	if r.DenseVsFirst != 0.5 || r.DenseTokS != 10 {
		t.Errorf("dense: %v against the first pack, %v tok/s", r.DenseVsFirst, r.DenseTokS)
	}
	if len(r.Grid) != 2 {
		t.Fatalf("grid %+v", r.Grid)
	}
	// paper ÷ dense per round: 3, 4, 1.5 → 3 (the ratio of medians: 40/10 = 4).
	if g := r.Grid[0]; g.SpeedupDense != 3 || g.VsFirstSelect != 0 || g.Select != "paper" {
		t.Errorf("paper: %+v", g)
	}
	// router ÷ paper per round: 0.8, 0.5, 1.1 → 0.8 (the ratio of medians: 20/40 = 0.5).
	if g := r.Grid[1]; g.VsFirstSelect != 0.8 || g.TokS != 20 || g.Select != "router" {
		t.Errorf("router: %+v", g)
	}
}

// A GPU step's kernel table: by time, GB/s of the bytes read, the share of
// the step, and what lies outside the kernels.
func TestWriteKernels(t *testing.T) {
	b := &OpBreakdown{Step: 100 * time.Microsecond, Kernels: map[string]backend.KernelTime{
		"sip_matvec_fused":  {Launches: 13, Time: 40 * time.Microsecond, Bytes: 80_000_000},
		"sip_reduce_splits": {Launches: 6, Time: 5 * time.Microsecond},
		"sip_ffn_gateup":    {Launches: 6, Time: 50 * time.Microsecond, Bytes: 50_000_000},
	}}
	var w strings.Builder
	writeKernels(&w, "x.sip", 16, b)
	out := w.String()
	for _, want := range []string{
		"| sip_ffn_gateup | 6 | 50.0 | 1000.0 | 50.0 % |",
		"| sip_matvec_fused | 13 | 40.0 | 2000.0 | 40.0 % |",
		"| sip_reduce_splits | 6 | 5.0 | – | 5.0 % |",
		"| outside the kernels (launching, waits, the host) | | 5.0 | | 5.0 % |",
		"0.10 ms a step (10000.00 tok/s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "sip_ffn_gateup") > strings.Index(out, "sip_matvec_fused") {
		t.Errorf("not by time:\n%s", out)
	}
}
