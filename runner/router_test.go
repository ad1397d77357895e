package runner

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
)

// routedPack writes the tiny model (δ 0.3) with hand-made f32 routers of
// rank 4 over groups of G ranks, and returns the path and the routers as
// floats: u (4, H), b (4), v (groups, 4) per sparse layer.
func routedPack(t *testing.T, G int) (string, map[int][3][]float32) {
	t.Helper()
	src := packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	p, err := format.Open(src, format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := &p.Index.Config
	H, groups, rank := c.HiddenSize, (c.IntermediateSize+G-1)/G, 4
	rng := rand.New(rand.NewPCG(3, 4))
	f32 := func(xs []float32) []byte {
		b := make([]byte, 4*len(xs))
		for i, x := range xs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		return b
	}
	floats := map[int][3][]float32{}
	var rs []format.Router
	for _, sl := range p.Index.SparseLayers {
		u, b, v := make([]float32, rank*H), make([]float32, rank), make([]float32, groups*rank)
		for _, xs := range [][]float32{u, b, v} {
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
		}
		floats[sl.Layer] = [3][]float32{u, b, v}
		rs = append(rs, format.Router{Layer: sl.Layer, Rank: rank, DType: format.F32, U: f32(u), B: f32(b), V: f32(v)})
	}
	out := filepath.Join(t.TempDir(), "routed.sip")
	if err := format.WithRouters(context.Background(), p, G, rs, out); err != nil {
		t.Fatal(err)
	}
	return out, floats
}

// TestRouterSelection: a decode step by the router computes the static
// ranks and the groups an independent float64 evaluation of V·(U·x + b)
// from the step's own FFN input ranks highest, and its logits are those of
// the same ranks gathered by hand; a pack without routers is refused.
func TestRouterSelection(t *testing.T) {
	exactPath(t)
	const G = 8
	path, floats := routedPack(t, G)
	m := loadModel(t, path, 0.7)
	if m.RouterGroup != G {
		t.Fatalf("router group %d, want %d", m.RouterGroup, G)
	}
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	sel := &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: MethodRouter}
	// 307 computed of 537 loaded; the static part at most a quarter of
	// them (76 of δN = 230), rounded up to whole groups: 80, and 28 groups
	// of 8 (224) chosen per token.
	if k := sel.Counts(768, 537); k.Base != 76 || k.Compute != 307 {
		t.Fatalf("counts %+v, want Base 76, Compute 307", k)
	}
	ss := newSelSession(t, m, sel, prompt)
	for l, lp := range ss.Plan {
		if lp == nil || lp.Static != 80 || lp.Route != 28 || lp.Records.Len() != 537 {
			t.Fatalf("layer %d: plan %+v, want Static 80, Route 28 over all 537 loaded", l, lp)
		}
	}
	if got, want := ss.Plan.Active(m), 6*(80+28*G); got != want {
		t.Fatalf("active records %d, want %d", got, want)
	}
	// U 4×256, V 96×4 in f32 and a bias of 4, in each of the 6 layers.
	if got, want := ss.Plan.RouterBytes(m), uint64(6*(4*256*4+96*4*4+4*4)); got != want {
		t.Fatalf("router bytes %d, want %d", got, want)
	}
	H := m.Config.HiddenSize
	for step, tok := range []int{306, 25, 1312} {
		want := make([][]int, 6)
		onIn := func(l int, x []float32) {
			f := floats[l]
			u, b, v := f[0], f[1], f[2]
			z := make([]float64, 4)
			for k := range z {
				z[k] = float64(b[k])
				for j := range H {
					z[k] += float64(u[k*H+j]) * float64(x[j])
				}
			}
			first, last := 80/G, (537+G-1)/G
			var gs []int
			score := map[int]float64{}
			for g := first; g < last; g++ {
				for k := range z {
					score[g] += float64(v[g*4+k]) * z[k]
				}
				gs = append(gs, g)
			}
			sort.SliceStable(gs, func(i, j int) bool { return score[gs[i]] > score[gs[j]] })
			for r := range 80 {
				want[l] = append(want[l], r)
			}
			for _, g := range gs[:28] {
				for r := g * G; r < min(537, (g+1)*G); r++ {
					want[l] = append(want[l], r)
				}
			}
			slices.Sort(want[l])
		}
		computed := make([]int, 6)
		routed, err := ss.S.ForwardBatch([]int{tok}, ss.Pos, Pass{Plan: ss.Plan, OnFFNInput: onIn, OnAct: func(l int, _ []float32, n int) { computed[l] = n }})
		if err != nil {
			t.Fatal(err)
		}
		routed = slices.Clone(routed)
		plan := make(Plan, 6)
		for l := range plan {
			if computed[l] != len(want[l]) {
				t.Fatalf("step %d layer %d: computed %d records, want %d", step, l, computed[l], len(want[l]))
			}
			recs, err := ss.S.ex.Gather(m.Layers[l].FFN, want[l], 0, false)
			if err != nil {
				t.Fatal(err)
			}
			plan[l] = &LayerPlan{Ranks: want[l], Records: recs}
		}
		ref, err := ss.S.ForwardBatch([]int{tok}, ss.Pos, Pass{Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(ref, routed); d > 1e-4 {
			t.Fatalf("step %d: routed logits differ from its ranks gathered by %g", step, d)
		}
		if _, err := ss.Next(tok); err != nil {
			t.Fatal(err)
		}
	}
	// Greedy decoding runs through Session.Generate's path.
	if got, _ := greedySession(t, m, sel, prompt, 12); len(got) != 12 {
		t.Fatalf("router decoded %v", got)
	}
	// A pack without routers, and options the router takes none of.
	plain := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3}), 0.7)
	pool := newPool(1)
	defer pool.Close()
	ps, err := plain.NewSession(pool, 64, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	ps.Sel = sel
	if _, err := ps.Start(prompt); err == nil || !strings.Contains(err.Error(), "no routers") {
		t.Fatalf("router on a pack without routers: %v", err)
	}
}

// TestAutoSelection: MethodAuto (sirun's default) runs the router on a
// routed pack — the same tokens — and the paper's votes on a pack without
// routers; For leaves the caller's selection as it was.
func TestAutoSelection(t *testing.T) {
	exactPath(t)
	path, _ := routedPack(t, 8)
	routed := loadModel(t, path, 0.7)
	plain := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3}), 0.7)
	auto := &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: MethodAuto}
	for _, c := range []struct {
		m    *Model
		want Method
	}{{routed, MethodRouter}, {plain, MethodPaper}} {
		s := *auto
		if got := s.For(c.m); got.Method != c.want || s.Method != MethodAuto {
			t.Errorf("auto on a pack with router group %d: %v (the caller's now %v), want %v", c.m.RouterGroup, got.Method, s.Method, c.want)
		}
	}
	if paper := (&Selection{Method: MethodPaper}); paper.For(routed) != paper || (*Selection)(nil).For(routed) != nil {
		t.Error("For changed a selection that is not auto")
	}
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	for _, c := range []struct {
		m    *Model
		want Method
	}{{routed, MethodRouter}, {plain, MethodPaper}} {
		s := *auto
		got, ss := greedyWorkers(t, c.m, &s, prompt, decodeTokens(12), 1)
		want, _ := greedyWorkers(t, c.m, &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: c.want}, prompt, decodeTokens(12), 1)
		if !slices.Equal(got, want) || ss.Sel.Method != c.want {
			t.Errorf("auto on a pack with router group %d: %v (as %v), want %v's %v", c.m.RouterGroup, got, ss.Sel.Method, c.want, want)
		}
	}
}
