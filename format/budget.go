package format

import (
	"cmp"
	"fmt"
	"slices"
)

// BudgetSteps is the resolution of SparseLayer.Budget: its values are at
// pack-wide fractions 0, 1/BudgetSteps, …, 1.
const BudgetSteps = 64

// FlagLayerBands is the preamble flag of a pack whose sparse layers have
// layer budgets: its bands hold each layer's share of the ranks, not B of
// every layer (§5, LayerBands). Readers that do not know it refuse the
// pack, as they must any unknown flag.
const FlagLayerBands = 1

// BudgetAt is a layer budget's share of the pack-wide fraction f: linear
// between its steps, 1 from f = 1 on.
func BudgetAt(b []float32, f float64) float64 {
	if f >= 1 {
		return 1
	}
	x := max(0, f) * BudgetSteps
	j := min(int(x), BudgetSteps-1)
	return float64(b[j]) + (float64(b[j+1])-float64(b[j]))*(x-float64(j))
}

// LayerBands is where the band boundaries fall in each layer of a pack
// with layer budgets: out[si][b] is the first rank of the si-th sparse
// layer in band b, for b = 0 … ⌈n/bandRanks⌉, so band b holds that
// layer's ranks [out[si][b], out[si][b+1]). At every boundary b·B (B =
// bandRanks) the layers hold their budgets' shares of the pack-wide
// fraction b·B/n, floor(n·share) each, then rounded so that they add up
// to exactly L·b·B — every band holds L·B records, as a uniform pack's
// does — never falling below the boundary before or rising above n: the
// missing ranks go to the layers whose shares lost most to the floor, the
// excess comes off those that lost least. The last boundary is n in every
// layer.
func LayerBands(budgets [][]float32, n, bandRanks int) [][]int {
	L, K := len(budgets), (n+bandRanks-1)/bandRanks
	out := make([][]int, L)
	for si := range out {
		out[si] = make([]int, K+1)
		out[si][K] = n
	}
	frac := make([]float64, L)
	order := make([]int, L)
	for b := 1; b < K; b++ {
		f := float64(b*bandRanks) / float64(n)
		total := 0
		for si := range budgets {
			s := float64(n) * BudgetAt(budgets[si], f)
			c := min(n, max(out[si][b-1], int(s)))
			out[si][b], frac[si] = c, s-float64(c)
			total += c
		}
		want := L * b * bandRanks
		for si := range order {
			order[si] = si
		}
		// Most lost to the floor first (ties: the lower layer).
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(frac[y], frac[x]) })
		for total < want {
			moved := false
			for _, si := range order {
				if total < want && out[si][b] < n {
					out[si][b]++
					total++
					moved = true
				}
			}
			if !moved {
				break // cannot happen: want ≤ L·n
			}
		}
		for total > want {
			moved := false
			for i := L - 1; i >= 0; i-- {
				si := order[i]
				if total > want && out[si][b] > out[si][b-1] {
					out[si][b]--
					total--
					moved = true
				}
			}
			if !moved {
				break // cannot happen: the boundary before adds up to less
			}
		}
	}
	return out
}

// checkBudgets checks an index's layer budgets (§3): every sparse layer
// has one or none does; each has BudgetSteps+1 values in [0, 1], rising,
// the last 1; and their bands give every layer at least one rank in the
// first band, so that any load holds some of every layer. It returns those
// bands (LayerBands; nil without budgets or a band size).
func checkBudgets(idx *Index) ([][]int, error) {
	var budgets [][]float32
	for _, sl := range idx.SparseLayers {
		if (sl.Budget != nil) != (idx.SparseLayers[0].Budget != nil) {
			return nil, fmt.Errorf("layer budgets must be given for every sparse layer or none (layer %d)", sl.Layer)
		}
		if sl.Budget == nil {
			continue
		}
		if len(sl.Budget) != BudgetSteps+1 {
			return nil, fmt.Errorf("layer %d budget must have %d steps, has %d", sl.Layer, BudgetSteps+1, len(sl.Budget))
		}
		for j, v := range sl.Budget {
			if !(v >= 0 && v <= 1) || (j > 0 && v < sl.Budget[j-1]) {
				return nil, fmt.Errorf("layer %d budget must rise from 0 to 1 (step %d: %v)", sl.Layer, j, v)
			}
		}
		if sl.Budget[BudgetSteps] != 1 {
			return nil, fmt.Errorf("layer %d budget must end at 1, ends at %v", sl.Layer, sl.Budget[BudgetSteps])
		}
		budgets = append(budgets, sl.Budget)
	}
	if budgets == nil || idx.BandNeurons <= 0 || idx.Config.IntermediateSize <= 0 {
		return nil, nil
	}
	bands := LayerBands(budgets, idx.Config.IntermediateSize, idx.BandNeurons)
	for si, c := range bands {
		if len(c) > 1 && c[1] < 1 {
			return nil, fmt.Errorf("layer %d budget leaves it no rank in the first band", idx.SparseLayers[si].Layer)
		}
	}
	return bands, nil
}
