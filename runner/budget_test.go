package runner

import (
	"os"
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
)

// budgetPack converts the tiny model in a random rank order (δ 0.3) with
// each sparse layer's budget from share(layer position, F), or none.
func budgetPack(t *testing.T, share func(i int, F float64) float64) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/tinyllama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := convert.ParseConfig("config.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	sparse := convert.SparseLayers(cfg, nil)
	order := convert.RandomOrder(sparse, cfg.IntermediateSize, 7)
	order.BaseFraction = 0.3
	if share != nil {
		order.Budgets = map[int][]float32{}
		for i, l := range sparse {
			b := make([]float32, format.BudgetSteps+1)
			for j := range b {
				b[j] = float32(share(i, float64(j)/format.BudgetSteps))
			}
			order.Budgets[l] = b
		}
	}
	return packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3, Order: order})
}

// TestLayerBudgetsSelect: budgets that give every layer the pack-wide
// fraction select and decode exactly as a pack without budgets; budgets
// that give the first layer twice its share make each layer's loaded,
// static and decode sets its share of γ, δ and φ (the first layer loading
// all it has), at the same totals and the same bands, and the plan holds
// them.
func TestLayerBudgetsSelect(t *testing.T) {
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	sel := &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3}
	plain := loadModel(t, budgetPack(t, nil), 0.7)
	even := loadModel(t, budgetPack(t, func(_ int, F float64) float64 { return F }), 0.7)
	if !even.Pack.HasBudgets() {
		t.Fatal("pack written without its budgets")
	}
	want, _ := greedySession(t, plain, sel, prompt, 16)
	got, _ := greedySession(t, even, sel, prompt, 16)
	if !slices.Equal(got, want) {
		t.Fatalf("even budgets decode\n%v\nwithout budgets\n%v", got, want)
	}
	N, loaded := plain.Config.IntermediateSize, plain.Pack.LoadedRanks
	uniform := sel.Counts(N, loaded)
	for l, c := range sel.LayerCounts(even) {
		if even.Layers[l].Sparse && c != uniform {
			t.Fatalf("layer %d: even budgets count %+v, want %+v", l, c, uniform)
		}
	}

	L := len(even.Pack.Index.SparseLayers)
	steep := loadModel(t, budgetPack(t, func(i int, F float64) float64 {
		first := min(1, 2*F)
		if i == 0 {
			return first
		}
		return (float64(L)*F - first) / float64(L-1)
	}), 0.7)
	for l, L := range steep.Layers {
		if L.Sparse && L.FFN.Len() != L.Ranks {
			t.Fatalf("layer %d: %d records resident for %d ranks", l, L.FFN.Len(), L.Ranks)
		}
	}
	cs := sel.LayerCounts(steep)
	var compute, base, load int
	for l, c := range cs {
		if !steep.Layers[l].Sparse {
			continue
		}
		si, _ := steep.Pack.SparseIndex(l)
		compute += c.Compute
		base += c.Base
		load += c.Loaded
		if c.Loaded != steep.Pack.LayerRanks[si] || c.Base > c.Compute || c.Compute > c.Loaded {
			t.Fatalf("layer %d: %+v, want δ ≤ φ ≤ its %d loaded", l, c, steep.Pack.LayerRanks[si])
		}
	}
	first := cs[steep.Pack.Index.SparseLayers[0].Layer]
	if first.Loaded != N || first.Base != format.Count(0.6, N) || first.Compute != format.Count(0.8, N) {
		t.Fatalf("first layer: %+v, want all %d loaded (2·0.7 ≥ 1), δ's share 2·0.3 (%d), φ's 2·0.4 (%d)", first, N, format.Count(0.6, N), format.Count(0.8, N))
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{{"loaded ranks", load, L * loaded}, {"decode sets", compute, L * uniform.Compute}, {"static sets", base, L * uniform.Base}} {
		if d := c.got - c.want; d < -L || d > L {
			t.Fatalf("%s add up to %d records, want %d (±1 a layer)", c.what, c.got, c.want)
		}
	}
	if steep.Pack.LoadedBands != plain.Pack.LoadedBands {
		t.Fatalf("budgets map %d bands at γ0.7, without %d: the same bytes", steep.Pack.LoadedBands, plain.Pack.LoadedBands)
	}
	_, ss := greedySession(t, steep, sel, prompt, 8)
	for l, c := range cs {
		lp := ss.Plan[l]
		if !steep.Layers[l].Sparse {
			continue
		}
		if len(lp.Ranks) != c.Compute {
			t.Fatalf("layer %d: plan of %d ranks, want %d", l, len(lp.Ranks), c.Compute)
		}
		for r := 0; r < c.Base; r++ {
			if lp.Ranks[r] != r {
				t.Fatalf("layer %d: static rank %d not in the plan", l, r)
			}
		}
	}
	if got, want := ss.Plan.Active(steep), compute; got != want {
		t.Fatalf("plan computes %d records a token, want %d", got, want)
	}
}
