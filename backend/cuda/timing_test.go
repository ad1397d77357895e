//go:build cuda || cudaemu

package cuda

import (
	"strings"
	"testing"

	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// Kernel timing (sirun bench --ops --device cuda): every launch of a
// decode step is timed, under its kernel's name, with the bytes it reads,
// and the graphs setting comes back when timing stops.
func TestKernelTimes(t *testing.T) {
	path := tinyPack(t)
	p, err := format.Open(path, format.OpenOptions{Gamma: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := runner.Load(p, d)
	if err != nil {
		t.Fatal(err)
	}
	graphs := d.graphs
	d.TimeKernels(true)
	pool := kernels.NewPool(1)
	defer pool.Close()
	prompt := []int{4094, 17, 250}
	const steps = 3
	s, err := m.NewState(pool, len(prompt)+steps+1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits, err := s.ForwardBatch(prompt, 0, runner.Pass{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.KernelTimes(); err != nil { // the prefill's
		t.Fatal(err)
	}
	before := d.Counters()
	for i := range steps {
		if logits, err = s.Forward(runner.Argmax(logits), len(prompt)+i); err != nil {
			t.Fatal(err)
		}
	}
	times, err := d.KernelTimes()
	if err != nil {
		t.Fatal(err)
	}
	done := d.Counters().Sub(before)
	if done.Graphs != 0 {
		t.Errorf("%d graph replays while timing", done.Graphs)
	}
	// The bytes the step's weights are: the attention matrices and the
	// output through sip_matvec_fused, the records' gate and up rows
	// through sip_ffn_gateup_norm and their down rows through the partial sums.
	c := p.Index.Config
	var dense int64
	for _, ti := range p.Index.DenseTensors {
		for _, suf := range []string{".wq", ".wk", ".wv", ".wo"} {
			if strings.HasSuffix(ti.Name, suf) {
				dense += int64(ti.Length)
			}
		}
		if ti.Name == "output" {
			dense += int64(ti.Length)
		}
	}
	rowB, _ := format.BF16.RowBytes(c.HiddenSize)
	recs := int64(c.NumLayers * c.IntermediateSize * rowB)
	want := map[string]int64{
		cudaplan.KMatVecFused:    steps * dense,
		cudaplan.KFFNGateUpNorm:  steps * 2 * recs,
		cudaplan.KFFNDownPartial: steps * recs,
	}
	launches := 0
	for name, kt := range times {
		if _, ok := cudaplan.Signatures[name]; !ok {
			t.Errorf("a time for %q, no kernel of ours", name)
		}
		if kt.Launches < 1 || kt.Time <= 0 {
			t.Errorf("%s: %d launches in %v", name, kt.Launches, kt.Time)
		}
		launches += kt.Launches
		if w, ok := want[name]; ok && kt.Bytes != w {
			t.Errorf("%s read %d bytes in %d steps, want %d", name, kt.Bytes, steps, w)
		}
		t.Logf("%-24s %3d launches %9v %8d bytes", name, kt.Launches, kt.Time, kt.Bytes)
	}
	for name := range want {
		if _, ok := times[name]; !ok {
			t.Errorf("no time for %s", name)
		}
	}
	if int64(launches) != done.Launches {
		t.Errorf("%d launches timed, %d launched", launches, done.Launches)
	}
	d.TimeKernels(false)
	if d.graphs != graphs {
		t.Errorf("graphs %v after timing, %v before", d.graphs, graphs)
	}
	if again, err := d.KernelTimes(); err != nil || len(again) != 0 {
		t.Errorf("after timing stopped: %v, %v", again, err)
	}
}
