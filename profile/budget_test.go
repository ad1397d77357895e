package profile

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
)

// calibrated is a profile of three layers with sensitivity curves: layer 0
// loses much when cut (as the tiny model's first layer does), layers 1 and
// 2 little, layer 2 least.
func calibrated() *Profile {
	p := &Profile{Format: FileFormat, Version: 1, Task: "t", Prompts: 4, Tokens: 100, Layers: 3, Neurons: 10,
		Sums: [][]float64{make([]float64, 10), make([]float64, 10), make([]float64, 10)}}
	p.SensitivityFractions = slices.Clone(CalibrationFractions)
	p.SensitivityDense, p.SensitivityPrompts = 1.4, 4
	for _, scale := range []float64{2, 0.05, 0.01} {
		c := make([]float64, len(CalibrationFractions))
		for i, f := range CalibrationFractions {
			c[i] = 1.4 + scale*(1-f)*(1-f) // convex, dense at f = 1
		}
		p.Sensitivity = append(p.Sensitivity, c)
	}
	return p
}

// TestBudgets: every layer's budget rises from 0 to 1 in BudgetSteps+1
// steps; at every step the layers share the pack-wide fraction's total;
// each keeps the floor; the sensitive layer gets the most.
func TestBudgets(t *testing.T) {
	p := calibrated()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Budgets(p, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for l, row := range b {
		if len(row) != format.BudgetSteps+1 || row[0] != 0 || row[format.BudgetSteps] != 1 {
			t.Fatalf("layer %d: %d steps from %v to %v, want %d from 0 to 1", l, len(row), row[0], row[len(row)-1], format.BudgetSteps+1)
		}
		for j := 1; j < len(row); j++ {
			F := float64(j) / format.BudgetSteps
			if row[j] < row[j-1] {
				t.Fatalf("layer %d falls at step %d", l, j)
			}
			if float64(row[j]) < BudgetFloor*F-1e-6 {
				t.Fatalf("layer %d at F = %.3f: %v, below the floor %v", l, F, row[j], BudgetFloor*F)
			}
		}
	}
	for j := range b[0] {
		F := float64(j) / format.BudgetSteps
		if sum := float64(b[0][j] + b[1][j] + b[2][j]); math.Abs(sum-3*F) > 1e-5 {
			t.Fatalf("F = %.3f: shares add up to %v, want %v", F, sum, 3*F)
		}
	}
	j := format.BudgetSteps * 3 / 10
	if !(b[0][j] > b[1][j] && b[1][j] >= b[2][j]) {
		t.Fatalf("shares at F ≈ 0.3: %v %v %v; want the sensitive layer first, then layer 1", b[0][j], b[1][j], b[2][j])
	}
	// Only some layers sparse: the others take no part.
	if b2, err := Budgets(p, []int{1, 2}); err != nil || len(b2) != 2 || b2[0][j] < b2[1][j] {
		t.Fatalf("budgets of layers 1 and 2: %v, %v", b2, err)
	}
	p.Sensitivity = nil
	if _, err := Budgets(p, []int{0}); err == nil || !strings.Contains(err.Error(), "--calibrate") {
		t.Fatalf("no curves: error %v, want one naming --calibrate", err)
	}
}

// TestHull: a point above the chord between its neighbours is dropped, the
// slopes fall, and a rise in loss counts as no gain.
func TestHull(t *testing.T) {
	h := hull([]point{{0, 10}, {0.25, 4}, {0.5, 3.5}, {0.75, 1}, {1, 0.9}})
	want := []hullSegment{{0, 0.25, 24}, {0.25, 0.75, 6}, {0.75, 1, 0.4}}
	if len(h) != len(want) {
		t.Fatalf("hull %v, want %v", h, want)
	}
	for i := range h {
		if math.Abs(h[i].lo-want[i].lo) > 1e-12 || math.Abs(h[i].hi-want[i].hi) > 1e-12 || math.Abs(h[i].slope-want[i].slope) > 1e-9 {
			t.Fatalf("hull %v, want %v", h, want)
		}
	}
	h = hull([]point{{0, 1}, {0.5, 1.2}, {1, 1.5}})
	if len(h) == 0 || h[0].lo != 0 || h[len(h)-1].hi != 1 {
		t.Fatalf("rising loss: %v, want segments from 0 to 1", h)
	}
	for _, s := range h {
		if s.slope != 0 {
			t.Fatalf("rising loss: %v, want no gain anywhere", h)
		}
	}
}

// TestSensitivityValidatedAndMerged: malformed curves are refused; a merge
// of two calibrations of the same fractions weighs each by its prompts,
// and of different ones keeps none.
func TestSensitivityValidatedAndMerged(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(p *Profile)
	}{
		{"a layer short", func(p *Profile) { p.Sensitivity[1] = p.Sensitivity[1][:3] }},
		{"layers missing", func(p *Profile) { p.Sensitivity = p.Sensitivity[:2] }},
		{"NaN", func(p *Profile) { p.Sensitivity[0][0] = math.NaN() }},
		{"fractions falling", func(p *Profile) { p.SensitivityFractions[2] = 0.1 }},
		{"fraction 1", func(p *Profile) { p.SensitivityFractions[8] = 1 }},
		{"fractions without curves", func(p *Profile) { p.Sensitivity = nil }},
	} {
		p := calibrated()
		c.edit(p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "sensitivity") {
			t.Errorf("%s: error %v, want a sensitivity error", c.name, err)
		}
	}
	a, b := calibrated(), calibrated()
	a.Sums[0][0], b.Sums[0][0] = 1, 2
	b.SensitivityPrompts = 12
	b.SensitivityDense = 2.2
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.SensitivityPrompts != 16 || math.Abs(m.SensitivityDense-(0.25*1.4+0.75*2.2)) > 1e-12 || m.Validate() != nil {
		t.Fatalf("merged calibration: %d prompts, dense %v, want 16 and the prompt-weighted mean", m.SensitivityPrompts, m.SensitivityDense)
	}
	b.SensitivityFractions[0] = 0.05
	if m, _ = Merge(a, b); m.Sensitivity != nil || m.SensitivityFractions != nil {
		t.Fatal("merge of calibrations over different fractions kept one")
	}
}
