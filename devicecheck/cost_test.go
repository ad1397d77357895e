//go:build cuda || cudaemu

package devicecheck

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/backend/cuda"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// TestDecodeCost holds what one greedy decode token of the tiny model
// costs the device, with CUDA graphs and without: one wait, at most 16
// bytes read back (the argmax on the device, not the logits), nothing
// uploaded (the argmax feeds the next step), and 3 + 6 launches a layer
// (99 on the 1B shape's 16 layers). The tokens are the CPU's.
// A routed token (γ0.7 φ0.4) also waits once and uploads nothing: the
// router chooses and gathers its groups on the device.
func TestDecodeCost(t *testing.T) {
	path := packOf(t, testdata("tinyllama"), convert.Options{})
	golden := readGolden(t, testdata("tinyllama", "golden.json"))
	prompt, n := golden[0].ids(), 6
	restore := kernels.Use(&kernels.Generic)
	defer restore()
	pool := kernels.NewPool(1)
	defer pool.Close()
	cpuM := onCPU(t, openPack(t, path, 1))
	want := gen(t, cpuM, nil, prompt, n)
	for _, graphs := range []bool{true, false} {
		m := onGPU(t, openPack(t, path, 1))
		d := m.Dev.(*cuda.Device)
		d.SetGraphs(graphs)
		layers := len(m.Layers)
		ss, err := m.NewSession(pool, len(prompt)+n+1, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
		if err != nil {
			t.Fatal(err)
		}
		logits, err := ss.Start(prompt)
		if err != nil {
			t.Fatal(err)
		}
		got := []int{runner.Argmax(logits)}
		var costs []cuda.Counters
		for len(got) < n {
			before := d.Counters()
			tok, err := ss.NextArgmax(got[len(got)-1])
			if err != nil {
				t.Fatal(err)
			}
			costs = append(costs, d.Counters().Sub(before))
			got = append(got, tok)
		}
		// The logits' path, as a sampler that needs them takes, for the log.
		before := d.Counters()
		if _, err := ss.Next(got[len(got)-1]); err != nil {
			t.Fatal(err)
		}
		withLogits := d.Counters().Sub(before)
		ss.S.Close()
		if !slices.Equal(got, want) {
			t.Errorf("graphs %v: greedy ids %v, the CPU's %v", graphs, got, want)
		}
		for i, c := range costs {
			// The first decode token follows the prefill, whose logits the
			// host read: its token id and position are uploaded (two waits).
			syncs, up := int64(1), int64(0)
			if i == 0 {
				syncs, up = 3, 8
			}
			if c.DtoH > 16 || c.Syncs > syncs || c.HtoD > up {
				t.Errorf("graphs %v, decode token %d: %d bytes read back, %d uploaded, %d waits; want ≤ 16, ≤ %d, ≤ %d", graphs, i+1, c.DtoH, c.HtoD, c.Syncs, up, syncs)
			}
			// The step's launches: embed, argmax, the final norm with the
			// lm head, and 6 a layer (norm with q, k and v; RoPE, KV append
			// and attention; o_proj with its add; norm with gate-up; down
			// partial sums; their reduction with its add).
			if c.Launches > int64(3+6*layers) {
				t.Errorf("graphs %v, decode token %d: %d launches, want ≤ %d", graphs, i+1, c.Launches, 3+6*layers)
			}
			if graphs && i > 0 && c.Graphs != 1 {
				t.Errorf("decode token %d: %d graph replays, want 1 (the step replayed)", i+1, c.Graphs)
			}
		}
		last := costs[len(costs)-1]
		t.Logf("graphs %v, %d layers, vocabulary %d: a greedy decode token: %d launches (%d graph replays), %d waits, %d bytes read back, %d bytes uploaded in %d copies; reading the logits instead: %d waits, %d bytes read back",
			graphs, layers, m.Config.VocabSize, last.Launches, last.Graphs, last.Syncs, last.DtoH, last.HtoD, last.HtoDOps, withLogits.Syncs, withLogits.DtoH)
	}
	// The router's decode tokens.
	routed := routedPack(t, packOf(t, testdata("tinyllama"), convert.Options{BaseFraction: 0.3}))
	m := onGPU(t, openPack(t, routed, 0.7))
	d := m.Dev.(*cuda.Device)
	ss, err := m.NewSession(pool, len(prompt)+n+1, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.S.Close()
	ss.Sel = &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: runner.MethodRouter}
	logits, err := ss.Start(prompt)
	if err != nil {
		t.Fatal(err)
	}
	tok := runner.Argmax(logits)
	var last cuda.Counters
	for i := 0; i < n; i++ {
		before := d.Counters()
		if tok, err = ss.NextArgmax(tok); err != nil {
			t.Fatal(err)
		}
		last = d.Counters().Sub(before)
		if i > 0 && (last.HtoD != 0 || last.Syncs > 1 || last.DtoH > 16) {
			t.Errorf("routed decode token %d: %d bytes uploaded, %d waits, %d bytes read back; want 0, ≤ 1, ≤ 16", i+1, last.HtoD, last.Syncs, last.DtoH)
		}
	}
	t.Logf("a routed greedy decode token (γ0.7 φ0.4): %d launches (%d graph replays), %d waits, %d bytes read back, %d uploaded",
		last.Launches, last.Graphs, last.Syncs, last.DtoH, last.HtoD)

	// Sampled decode tokens (the default sampler, seeded): the top 40 come
	// back, not the logits; the host's token goes up (4 bytes). The tokens
	// are the CPU's.
	cfg := runner.DefaultSampler()
	cfg.Seed = 7
	sample := func(m *runner.Model, d *cuda.Device) ([]int, []cuda.Counters) {
		ss, err := m.NewSession(pool, len(prompt)+n+1, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.S.Close()
		var ids []int
		var costs []cuda.Counters
		var before cuda.Counters
		opt := runner.GenerateOptions{MaxTokens: n, OnToken: func(id int) {
			if d != nil {
				c := d.Counters()
				if len(ids) > 0 {
					costs = append(costs, c.Sub(before))
				}
				before = c
			}
			ids = append(ids, id)
		}}
		if _, err := ss.Generate(prompt, opt); err != nil {
			t.Fatal(err)
		}
		return ids, costs
	}
	gm := onGPU(t, openPack(t, path, 1))
	wantS, _ := sample(cpuM, nil)
	gotS, costs := sample(gm, gm.Dev.(*cuda.Device))
	if !slices.Equal(gotS, wantS) {
		t.Errorf("sampled ids: gpu %v, cpu %v", gotS, wantS)
	}
	for i, c := range costs[1:] {
		if c.DtoH > 8*40+4 || c.HtoD > 4 || c.Syncs > 2 {
			t.Errorf("sampled decode token %d: %d bytes read back, %d uploaded, %d waits; want ≤ 324, ≤ 4, ≤ 2", i+2, c.DtoH, c.HtoD, c.Syncs)
		}
	}
	c := costs[len(costs)-1]
	t.Logf("a sampled decode token (top-k 40): %d launches, %d waits, %d bytes read back, %d uploaded", c.Launches, c.Syncs, c.DtoH, c.HtoD)
}
