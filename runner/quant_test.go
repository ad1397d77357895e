package runner

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

// TestQuantizedGreedy: the tiny model's greedy continuation at Q8_0 matches
// bf16 for the first 16 tokens on most golden prompts; Q4_0 is reported.
func TestQuantizedGreedy(t *testing.T) {
	cases := readGolden(t, "../testdata/tinyllama/golden.json")
	all := len(cases)
	if testing.Short() { // under emulation (make test-arm64): two prompts, every path
		cases = cases[:2]
	}
	pool := kernels.NewPool(2)
	defer pool.Close()
	for _, c := range []struct {
		dtype, dense string
		minMatch     int
	}{{"q8_0", "", 4}, {"q4_0", "", 0}, {"q4_0", "bf16", 0}} {
		for _, intDot := range []bool{false, true} {
			restore := kernels.Use(kernels.Active().WithIntegerPath(intDot))
			m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: c.dtype, DenseDType: c.dense}), 1)
			matched, prefix := 0, 0
			for _, g := range cases {
				got := greedy(t, m, pool, g.InputIDs, 16)
				if slices.Equal(got, g.Greedy32[:16]) {
					matched++
				}
				for i := range got {
					if got[i] != g.Greedy32[i] {
						break
					}
					prefix++
				}
			}
			restore()
			t.Logf("%s (dense %q, integer dots %v): %d of %d golden prompts match bf16 for 16 greedy tokens; %d of %d tokens before the first divergence",
				c.dtype, c.dense, intDot, matched, len(cases), prefix, 16*len(cases))
			if want := c.minMatch * len(cases) / all; matched < want {
				t.Errorf("%s: only %d of %d prompts match for 16 tokens, want ≥ %d", c.dtype, matched, len(cases), want)
			}
		}
	}
}

// TestBF16RoundedActivations: the opt-in VDPBF16PS decode path (activations
// rounded to BF16 once per token, as llama.cpp's BF16 path) against the
// exact path on the golden prompts: greedy tokens for 32 steps and the
// largest logit difference of the first decode step, reported; at least 4
// of the 5 prompts must keep the golden's first 16 greedy tokens.
func TestBF16RoundedActivations(t *testing.T) {
	var rounded *kernels.Table
	for _, tb := range kernels.Tables() {
		if r := tb.WithBF16Rounding(true); r.Ops(format.BF16).ActDot {
			rounded = r
		}
	}
	if rounded == nil {
		t.Log("no table with VDPBF16PS dots on this CPU: nothing to compare")
		return
	}
	cases := readGolden(t, "../testdata/tinyllama/golden.json")
	pool := kernels.NewPool(2)
	defer pool.Close()
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	matched, same32, maxDiff := 0, 0, 0.0
	for _, g := range cases {
		exact := greedy(t, m, pool, g.InputIDs, 32)
		restore := kernels.Use(rounded)
		got := greedy(t, m, pool, g.InputIDs, 32)
		// First decode step's logits, both paths.
		s, _ := m.NewState(pool, len(g.InputIDs)+2)
		s.ForwardBatch(g.InputIDs, 0, Pass{})
		lr, _ := s.Forward(exact[0], len(g.InputIDs))
		lr = slices.Clone(lr)
		restore()
		s2, _ := m.NewState(pool, len(g.InputIDs)+2)
		s2.ForwardBatch(g.InputIDs, 0, Pass{})
		le, _ := s2.Forward(exact[0], len(g.InputIDs))
		maxDiff = max(maxDiff, maxAbsDiff(lr, le))
		if slices.Equal(got[:16], g.Greedy32[:16]) {
			matched++
		}
		if slices.Equal(got, exact) {
			same32++
		}
	}
	t.Logf("BF16-rounded activations (%s): %d of %d golden prompts keep 16 greedy tokens, %d of %d equal the exact path for 32; first decode step max |Δ logit| %.3g",
		rounded.Name, matched, len(cases), same32, len(cases), maxDiff)
	if matched < 4 {
		t.Errorf("only %d of %d prompts keep the golden greedy tokens with rounded activations", matched, len(cases))
	}
}

// TestInt8Down: the integer path's int8 down projection (Ops.Axpy8Act: the
// coefficients h·d rounded to int8 per block, as llama.cpp rounds the down
// projection's input to Q8) against the same path with the down projection
// in float, on the golden prompts with Q4_0, Q8_0 and Q4_K packs: greedy tokens for 32
// steps and the largest logit difference of the first decode step,
// reported; the rounding must keep at least as many prompts on the
// golden's first 16 greedy tokens as the float down projection does.
func TestInt8Down(t *testing.T) {
	for _, dt := range []format.DType{format.Q4_0, format.Q8_0, format.Q4_K} {
		t.Run(dt.String(), func(t *testing.T) { testInt8Down(t, dt) })
	}
}

func testInt8Down(t *testing.T, dt format.DType) {
	int8Table := kernels.Active().WithIntegerPath(true).WithInt8Down(true)
	if int8Table.Ops(dt).Axpy8Act == nil {
		t.Logf("table %s has no %v int8 down projection: nothing to compare", int8Table.Name, dt)
		return
	}
	exactTable := int8Table.WithInt8Down(false)
	cases := readGolden(t, "../testdata/tinyllama/golden.json")
	pool := kernels.NewPool(2)
	defer pool.Close()
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: dt.String()}), 1)
	matched, matchedExact, same32, maxDiff := 0, 0, 0, 0.0
	for _, g := range cases {
		var toks [2][]int
		var logits [2][]float32
		for i, tb := range []*kernels.Table{exactTable, int8Table} {
			restore := kernels.Use(tb)
			toks[i] = greedy(t, m, pool, g.InputIDs, 32)
			s, _ := m.NewState(pool, len(g.InputIDs)+2)
			s.ForwardBatch(g.InputIDs, 0, Pass{})
			l, _ := s.Forward(g.Greedy32[0], len(g.InputIDs))
			logits[i] = slices.Clone(l)
			restore()
		}
		maxDiff = max(maxDiff, maxAbsDiff(logits[0], logits[1]))
		if slices.Equal(toks[1][:16], g.Greedy32[:16]) {
			matched++
		}
		if slices.Equal(toks[0][:16], g.Greedy32[:16]) {
			matchedExact++
		}
		if slices.Equal(toks[0], toks[1]) {
			same32++
		}
	}
	t.Logf("int8 down projection (%s): %d of %d golden prompts keep 16 greedy tokens (float down %d), %d of %d equal the float down for 32; first decode step max |Δ logit| %.3g",
		int8Table.Name, matched, len(cases), matchedExact, same32, len(cases), maxDiff)
	if matched < matchedExact {
		t.Errorf("the int8 down projection keeps %d golden prompts, the float one %d", matched, matchedExact)
	}
	if maxDiff == 0 {
		t.Errorf("the int8 and float down projections gave the same logits: the int8 one did not run")
	}
}

// TestKQuantGreedy: a q4_k_m pack of the tiny model (hidden 256: one
// super-block a row) runs end to end on the float and integer paths and
// stays near the bf16 pack: the first decode step's logits within 1.0 of
// bf16's on every golden prompt, and at least as many prompts keep the
// golden's 16 greedy tokens as a q4_0 pack keeps. Each dense matrix has the
// mix's dtype (Q6_K for the output matrix and layers 2 and 5's V).
func TestKQuantGreedy(t *testing.T) {
	cases := readGolden(t, "../testdata/tinyllama/golden.json")
	pool := kernels.NewPool(2)
	defer pool.Close()
	bf16 := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	q40 := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: "q4_0"}), 1)
	kq := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: "q4_k_m"}), 1)
	if kq.RecDType != format.Q4_K {
		t.Fatalf("q4_k_m records are %v, want q4_k", kq.RecDType)
	}
	// What bench and inspect call the pack: the --dtype it was converted as.
	if a, b := kq.Pack.DTypeName(), q40.Pack.DTypeName(); a != "q4_k_m" || b != "q4_0" {
		t.Errorf("dtype names %q and %q, want q4_k_m and q4_0", a, b)
	}
	want := map[string]format.DType{"output": format.Q6_K, "layers.2.wv": format.Q6_K, "layers.5.wv": format.Q6_K,
		"layers.0.wv": format.Q4_K, "layers.3.wq": format.Q4_K, "tok_embeddings": format.Q4_K}
	for _, ti := range kq.Pack.Index.DenseTensors {
		if dt, ok := want[ti.Name]; ok && ti.DType != dt {
			t.Errorf("q4_k_m %s is %v, want %v", ti.Name, ti.DType, dt)
		}
	}
	logits := func(m *Model, prompt []int, next int) []float32 {
		s, err := m.NewState(pool, len(prompt)+2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ForwardBatch(prompt, 0, Pass{}); err != nil {
			t.Fatal(err)
		}
		l, err := s.Forward(next, len(prompt))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(l)
	}
	for _, intDot := range []bool{false, true} {
		restore := kernels.Use(kernels.Active().WithIntegerPath(intDot))
		matched, matchedQ40, maxDiff, maxDiffQ40 := 0, 0, 0.0, 0.0
		for _, g := range cases {
			if slices.Equal(greedy(t, kq, pool, g.InputIDs, 16), g.Greedy32[:16]) {
				matched++
			}
			if slices.Equal(greedy(t, q40, pool, g.InputIDs, 16), g.Greedy32[:16]) {
				matchedQ40++
			}
			ref := logits(bf16, g.InputIDs, g.Greedy32[0])
			maxDiff = max(maxDiff, maxAbsDiff(logits(kq, g.InputIDs, g.Greedy32[0]), ref))
			maxDiffQ40 = max(maxDiffQ40, maxAbsDiff(logits(q40, g.InputIDs, g.Greedy32[0]), ref))
		}
		restore()
		t.Logf("q4_k_m (integer dots %v): %d of %d golden prompts keep 16 greedy tokens (q4_0 %d); first decode step max |Δ logit| against bf16 %.3g (q4_0 %.3g)",
			intDot, matched, len(cases), matchedQ40, maxDiff, maxDiffQ40)
		if matched < matchedQ40 {
			t.Errorf("q4_k_m keeps %d golden prompts, q4_0 %d", matched, matchedQ40)
		}
		if maxDiff > 1.0 {
			t.Errorf("q4_k_m logits differ from bf16's by up to %.3g, want ≤ 1.0", maxDiff)
		}
	}
}
