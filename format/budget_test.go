package format

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// steepBudgets gives layer 0 one and a half times the pack-wide fraction
// up to all of it, layer 1 the rest: min(1, 1.5F) and 2F − min(1, 1.5F).
func steepBudgets(idx *Index) {
	for i := range idx.SparseLayers {
		b := make([]float32, BudgetSteps+1)
		for j := range b {
			F := float64(j) / BudgetSteps
			first := min(1, 1.5*F)
			if i == 0 {
				b[j] = float32(first)
			} else {
				b[j] = float32(2*F - first)
			}
		}
		idx.SparseLayers[i].Budget = b
	}
}

// TestLayerBands: every band holds L·B records, each layer's boundaries
// rise to n, and a layer never gets fewer at a later boundary.
func TestLayerBands(t *testing.T) {
	idx := &Index{SparseLayers: make([]SparseLayer, 2)}
	steepBudgets(idx)
	b := [][]float32{idx.SparseLayers[0].Budget, idx.SparseLayers[1].Budget}
	if got := LayerBands(b, 40, 8); !slices.Equal(got[0], []int{0, 12, 24, 36, 40, 40}) || !slices.Equal(got[1], []int{0, 4, 8, 12, 24, 40}) {
		t.Fatalf("bands of 8 over 40: %v", got)
	}
	// Budgets whose shares round badly: three layers, a band of 7 over 50.
	odd := make([][]float32, 3)
	for i := range odd {
		odd[i] = make([]float32, BudgetSteps+1)
		for j := range odd[i] {
			F := float64(j) / BudgetSteps
			odd[i][j] = float32([]float64{math.Sqrt(F), F, 0}[i])
		}
	}
	odd[2] = make([]float32, BudgetSteps+1)
	for j := range odd[2] {
		F := float64(j) / BudgetSteps
		odd[2][j] = float32(max(0, min(1, 3*F-math.Sqrt(F)-F)))
	}
	odd[2][BudgetSteps] = 1
	c := LayerBands(odd, 50, 7)
	for k := 1; k < len(c[0]); k++ {
		sum := 0
		for si := range c {
			if c[si][k] < c[si][k-1] || c[si][k] > 50 {
				t.Fatalf("layer %d falls or overflows at boundary %d: %v", si, k, c[si])
			}
			sum += c[si][k]
		}
		if want := 3 * min(50, 7*k); sum != want {
			t.Fatalf("boundary %d holds %d records, want %d", k, sum, want)
		}
	}
}

// TestLayerBudgets: budgets survive the write and the read; every record
// of every layer is where its band share put it (the small pack's records
// name their neuron); γ loads the same bands as without budgets and each
// layer its share of them; LayerShares gives δ and φ within what each
// layer loaded, a capped layer's excess to the other, at the same total,
// nested; a slice keeps the records; without budgets it is Count capped.
func TestLayerBudgets(t *testing.T) {
	dir := t.TempDir()
	path, err := writeSmallWith(dir, nil, 8, steepBudgets)
	if err != nil {
		t.Fatal(err)
	}
	full, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	want := &Index{SparseLayers: make([]SparseLayer, 2)}
	steepBudgets(want)
	for si, sl := range full.Index.SparseLayers {
		if !slices.Equal(sl.Budget, want.SparseLayers[si].Budget) {
			t.Fatalf("layer %d budget read back as %v", si, sl.Budget)
		}
		for r := 0; r < 40; r++ {
			if got := full.Record(si, r)[0]; got != byte(sl.Layer*100+int(sl.Perm[r])) {
				t.Fatalf("layer %d rank %d holds neuron %d's record", sl.Layer, r, got)
			}
		}
	}
	if !full.HasBudgets() || full.Preamble.Flags != FlagLayerBands || !slices.Equal(full.LayerRanks, []int{40, 40}) {
		t.Fatalf("budgets %v, flags %d, ranks %v", full.HasBudgets(), full.Preamble.Flags, full.LayerRanks)
	}
	if _, err := full.Verify(); err != nil {
		t.Fatal(err)
	}
	p, err := Open(path, OpenOptions{Gamma: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// γ0.4 of 40 is 16 ranks, two bands of 8: layer 0 takes 24 of their
	// 32 records, layer 1 8.
	if p.LoadedBands != 2 || !slices.Equal(p.LayerRanks, []int{24, 8}) {
		t.Fatalf("γ0.4: %d bands, layer ranks %v; want 2 bands, [24 8]", p.LoadedBands, p.LayerRanks)
	}
	if n := len(p.LayerBlocks(0, 24)); n != 2 {
		t.Fatalf("layer 0's 24 ranks in %d blocks, want one per band", n)
	}
	for si, n := range p.LayerRanks {
		got := 0
		for _, b := range p.LayerBlocks(si, n) {
			got += b.N
		}
		if got != n {
			t.Fatalf("layer %d's blocks hold %d records, want its %d ranks", si, got, n)
		}
	}
	for _, c := range []struct {
		f      float64
		loaded []int
		want   []int
	}{
		{0.25, []int{24, 8}, []int{15, 5}},
		{0.3, []int{24, 8}, []int{18, 6}},
		{0.3, []int{16, 8}, []int{16, 8}}, // layer 0 stopped at 16: layer 1 takes 2 more
		{0.4, []int{24, 8}, []int{24, 8}},
		{1, []int{24, 8}, []int{24, 8}},
	} {
		if got := p.LayerShares(c.f, c.loaded); !slices.Equal(got, c.want) {
			t.Errorf("shares of %v within %v: %v, want %v", c.f, c.loaded, got, c.want)
		}
	}
	prev := []int{0, 0}
	for j := 0; j <= 40; j++ {
		f := float64(j) / 100
		got := p.LayerShares(f, p.LayerRanks)
		if s := got[0] + got[1]; s < min(32, 2*Count(f, 40)) || s > min(32, 2*Count(f, 40))+2 {
			t.Fatalf("shares of %v add up to %d, want about %d", f, s, 2*Count(f, 40))
		}
		if got[0] < prev[0] || got[1] < prev[1] {
			t.Fatalf("shares of %v (%v) below those of a smaller fraction (%v)", f, got, prev)
		}
		prev = got
	}
	sliced := dir + "/sliced.sip"
	if err := Slice(t.Context(), p, sliced); err != nil {
		t.Fatal(err)
	}
	q, err := Open(sliced, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if !slices.Equal(q.LayerRanks, []int{24, 8}) {
		t.Fatalf("the γ0.4 slice loads %v, want [24 8]", q.LayerRanks)
	}
	for si, sl := range q.Index.SparseLayers {
		for r := 0; r < q.LayerRanks[si]; r++ {
			if got := q.Record(si, r)[0]; got != byte(sl.Layer*100+int(sl.Perm[r])) {
				t.Fatalf("slice: layer %d rank %d holds neuron %d's record", sl.Layer, r, got)
			}
		}
	}

	plain := writeSmall(t, t.TempDir(), nil, 8)
	u, err := Open(plain, OpenOptions{Gamma: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.HasBudgets() || u.Preamble.Flags != 0 || !slices.Equal(u.LayerRanks, []int{16, 16}) ||
		!slices.Equal(u.LayerShares(0.3, u.LayerRanks), []int{12, 12}) || !slices.Equal(u.LayerShares(0.5, u.LayerRanks), []int{16, 16}) {
		t.Fatalf("without budgets: flags %d, ranks %v, shares %v and %v", u.Preamble.Flags, u.LayerRanks, u.LayerShares(0.3, u.LayerRanks), u.LayerShares(0.5, u.LayerRanks))
	}
}

// TestLayerBudgetsValidated: a budget that does not rise from 0 to 1 in
// BudgetSteps+1 steps, that only some sparse layers have, that leaves a
// layer no rank in the first band, or a flag without budgets, is refused
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
		{"no rank in the first band", func(b [][]float32) [][]float32 {
			for j := range b[1] {
				F := float64(j) / BudgetSteps
				b[0][j], b[1][j] = float32(min(1, 2*F)), float32(max(0, 2*F-1))
			}
			return b
		}, "no rank in the first band"},
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

// TestLayerBandsFlag: the layer-bands flag without budgets, budgets
// without the flag, and an unknown flag bit are refused.
func TestLayerBandsFlag(t *testing.T) {
	dir := t.TempDir()
	withFlag := func(src string, flags uint32) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p, err := parsePreamble(b[:PreambleSize], int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		p.Flags = flags
		copy(b, p.MarshalBinary())
		out := filepath.Join(dir, fmt.Sprintf("f%d-%s", flags, filepath.Base(filepath.Dir(src))))
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	plain := writeSmall(t, t.TempDir(), nil, 8)
	budgeted, err := writeSmallWith(t.TempDir(), nil, 8, steepBudgets)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"flag without budgets", withFlag(plain, FlagLayerBands), "must come together"},
		{"budgets without flag", withFlag(budgeted, 0), "must come together"},
		{"unknown flag", withFlag(budgeted, FlagLayerBands|4), "unknown flags"},
	} {
		p, err := Open(c.path, OpenOptions{})
		if err == nil {
			p.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}
