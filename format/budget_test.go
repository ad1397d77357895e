package format

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// steepBudgets gives layer 0 twice the pack-wide fraction up to all of it,
// layer 1 the rest: Budget₀(F) = min(1, 2F), Budget₁(F) = max(0, 2F − 1),
// which add up to 2F.
func steepBudgets(idx *Index) {
	for i := range idx.SparseLayers {
		b := make([]float32, BudgetSteps+1)
		for j := range b {
			F := float64(j) / BudgetSteps
			if i == 0 {
				b[j] = float32(min(1, 2*F))
			} else {
				b[j] = float32(max(0, 2*F-1))
			}
		}
		idx.SparseLayers[i].Budget = b
	}
}

// TestLayerBudgets: budgets survive the write and the read; LayerCount is
// each layer's share uncapped; LayerShares caps a layer at the loaded
// ranks and hands its excess to the other layer at the same total, nests
// as the fraction grows, and without budgets is Count capped.
func TestLayerBudgets(t *testing.T) {
	path, err := writeSmallWith(t.TempDir(), nil, 8, steepBudgets)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(path, OpenOptions{Gamma: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.HasBudgets() || p.LoadedRanks != 16 {
		t.Fatalf("budgets %v, loaded %d; want budgets and 16 ranks (γ0.4 of 40)", p.HasBudgets(), p.LoadedRanks)
	}
	want := &Index{SparseLayers: make([]SparseLayer, 2)}
	steepBudgets(want)
	for i := range want.SparseLayers {
		if !slices.Equal(p.Index.SparseLayers[i].Budget, want.SparseLayers[i].Budget) {
			t.Fatalf("layer %d budget read back as %v", i, p.Index.SparseLayers[i].Budget)
		}
	}
	if a, b := p.LayerCount(0, 0.25), p.LayerCount(1, 0.25); a != 20 || b != 0 {
		t.Fatalf("uncapped shares of 0.25: %d, %d; want 20, 0", a, b)
	}
	// 0.25 of two layers of 40 is 20 neurons; layer 0 stops at the 16
	// loaded, layer 1 takes the other 4 (its budget at F' = 0.55).
	if got := p.LayerShares(0.25, 16); !slices.Equal(got, []int{16, 4}) {
		t.Fatalf("shares of 0.25 within 16 loaded: %v, want [16 4]", got)
	}
	if got := p.LayerShares(0.4, 16); !slices.Equal(got, []int{16, 16}) {
		t.Fatalf("shares of φ = γ: %v, want every loaded rank", got)
	}
	if got := p.LayerShares(1, 16); !slices.Equal(got, []int{16, 16}) {
		t.Fatalf("shares of 1: %v, want every loaded rank", got)
	}
	prev := []int{0, 0}
	for j := 0; j <= 40; j++ {
		f := float64(j) / 100
		got := p.LayerShares(f, 16)
		if got[0]+got[1] < 2*Count(f, 40)-2 || got[0]+got[1] > 2*Count(f, 40)+2 {
			t.Fatalf("shares of %v add up to %d, want about %d", f, got[0]+got[1], 2*Count(f, 40))
		}
		if got[0] < prev[0] || got[1] < prev[1] {
			t.Fatalf("shares of %v (%v) below those of a smaller fraction (%v)", f, got, prev)
		}
		prev = got
	}

	plain := writeSmall(t, t.TempDir(), nil, 8)
	q, err := Open(plain, OpenOptions{Gamma: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.HasBudgets() || !slices.Equal(q.LayerShares(0.3, 16), []int{12, 12}) || !slices.Equal(q.LayerShares(0.5, 16), []int{16, 16}) {
		t.Fatalf("without budgets: shares %v and %v, want Count capped", q.LayerShares(0.3, 16), q.LayerShares(0.5, 16))
	}
}

// TestLayerBudgetsValidated: a budget that does not rise from 0 to 1 in
// BudgetSteps+1 steps, or that only some sparse layers have, is refused
// with what is wrong.
func TestLayerBudgetsValidated(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(b [][]float32) [][]float32
		want string
	}{
		{"short", func(b [][]float32) [][]float32 { b[1] = b[1][:BudgetSteps]; return b }, "steps"},
		{"falls", func(b [][]float32) [][]float32 { b[0][10] = 0.9; return b }, "rise"},
		{"NaN", func(b [][]float32) [][]float32 { b[1][3] = float32(math.NaN()); return b }, "rise"},
		{"stops short of 1", func(b [][]float32) [][]float32 { b[1][BudgetSteps] = 0.99; return b }, "end at 1"},
		{"one layer only", func(b [][]float32) [][]float32 { b[1] = nil; return b }, "every sparse layer or none"},
	} {
		path, err := writeSmallWith(t.TempDir(), nil, 8, func(idx *Index) {
			steepBudgets(idx)
			var b [][]float32
			for _, sl := range idx.SparseLayers {
				b = append(b, sl.Budget)
			}
			for i, v := range c.edit(b) {
				idx.SparseLayers[i].Budget = v
			}
		})
		if err == nil {
			var p *Pack
			if p, err = Open(path, OpenOptions{}); err == nil {
				p.Close()
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
