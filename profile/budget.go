package profile

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/sipack/sipack/format"
)

// BudgetFloor is the share of a pack-wide fraction F that every sparse
// layer keeps whatever its sensitivity: the layer budgets hand out the
// other (1 − BudgetFloor)·F of each layer by sensitivity. A floor keeps
// the allocation from trusting a few noisy calibration points with whole
// layers: without one, a layer whose curve is flat at the calibration's
// resolution would get no neurons at all at small F (the value is tuned on
// the tiny model's tuning half).
const BudgetFloor = 2.0 / 3

// Budgets turns the profile's sensitivity curves (Calibrate) into layer
// budgets for the sparse layers, in their order: per layer BudgetSteps+1
// fractions of its N, nondecreasing from 0 to 1, the layer's share of a
// pack-wide fraction F = j/BudgetSteps (format.SparseLayer.Budget).
//
// For each F, every layer gets BudgetFloor·F, and the rest of the pack's
// F·L goes greedily to the steepest loss decrease per neuron: each
// layer's curve (the loss against its loaded fraction, from 0 neurons —
// extrapolated — through the calibrated fractions to 1 = dense) is
// replaced by its lower convex hull, whose segments are taken in order of
// decreasing slope across layers. Where rounding or the floor lets a
// layer's share fall as F rises, it is held at its share at the smaller F
// (the shares must nest: δ ≤ φ ≤ γ in every layer).
func Budgets(p *Profile, sparse []int) ([][]float32, error) {
	if p.Sensitivity == nil {
		return nil, fmt.Errorf("profile of %s has no sensitivity curves (sipack profile --calibrate)", p.Task)
	}
	type segment struct {
		layer int // position in sparse
		hullSegment
	}
	var segs []segment
	for i, l := range sparse {
		if l < 0 || l >= len(p.Sensitivity) {
			return nil, fmt.Errorf("sparse layer %d outside the profile's %d layers", l, len(p.Sensitivity))
		}
		for _, s := range hull(curve(p.SensitivityFractions, p.Sensitivity[l], p.SensitivityDense)) {
			segs = append(segs, segment{i, s})
		}
	}
	// Steepest first; ties by layer, then by position, so the order is
	// deterministic and each layer's segments stay in order.
	slices.SortStableFunc(segs, func(a, b segment) int { return cmp.Compare(b.slope, a.slope) })
	L := len(sparse)
	out := make([][]float32, L)
	for i := range out {
		out[i] = make([]float32, format.BudgetSteps+1)
	}
	share := make([]float64, L)
	for j := 1; j <= format.BudgetSteps; j++ {
		F := float64(j) / format.BudgetSteps
		floor := BudgetFloor * F
		for i := range share {
			share[i] = floor
		}
		left := (F - floor) * float64(L)
		for _, s := range segs {
			if left <= 0 {
				break
			}
			// The part of the segment above the floor.
			w := max(0, s.hi-max(s.lo, floor))
			take := min(w, left, 1-share[s.layer])
			share[s.layer] += take
			left -= take
		}
		for i := range share {
			v := min(1, share[i])
			if j == format.BudgetSteps {
				v = 1
			}
			out[i][j] = float32(max(v, float64(out[i][j-1])))
		}
	}
	return out, nil
}

// hullSegment is one piece of a layer's convexified loss curve: from
// fraction lo to hi the loss falls by slope per unit fraction.
type hullSegment struct{ lo, hi, slope float64 }

type point struct{ f, loss float64 }

// curve is a layer's calibration as points from fraction 0 to 1: the
// loss at 0 neurons extrapolated linearly from the first two calibrated
// fractions (and no lower than the first), dense at 1.
func curve(fr, loss []float64, dense float64) []point {
	pts := make([]point, 0, len(fr)+2)
	y0 := loss[0]
	if len(fr) > 1 && fr[1] > fr[0] {
		y0 = max(loss[0], loss[0]+(loss[0]-loss[1])*fr[0]/(fr[1]-fr[0]))
	}
	pts = append(pts, point{0, y0})
	for i := range fr {
		pts = append(pts, point{fr[i], loss[i]})
	}
	return append(pts, point{1, dense})
}

// hull is the lower convex hull of pts (ascending f) as segments, their
// slopes (loss decrease per unit fraction) nonincreasing; a rise in loss
// is clamped to a zero slope.
func hull(pts []point) []hullSegment {
	var h []point
	for _, p := range pts {
		for len(h) >= 2 {
			a, b := h[len(h)-2], h[len(h)-1]
			// Drop b if it lies on or above the line from a to p.
			if (b.loss-a.loss)*(p.f-a.f) >= (p.loss-a.loss)*(b.f-a.f) {
				h = h[:len(h)-1]
				continue
			}
			break
		}
		h = append(h, p)
	}
	segs := make([]hullSegment, 0, len(h)-1)
	for i := 1; i < len(h); i++ {
		a, b := h[i-1], h[i]
		if b.f <= a.f {
			continue
		}
		s := (a.loss - b.loss) / (b.f - a.f)
		if !(s > 0) || math.IsInf(s, 0) {
			s = 0
		}
		segs = append(segs, hullSegment{lo: a.f, hi: b.f, slope: s})
	}
	return segs
}
