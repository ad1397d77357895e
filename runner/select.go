package runner

import (
	"fmt"
	"math"
	"sort"
)

// Selection configures SelectInfer's per-prompt computation. Fractions are
// of N, the neurons of a layer: ranks [0, ⌊δN⌋) are static (always
// computed), and the decode set grows to ⌊φN⌋ ranks with the secondary ranks
// that the prompt's tokens voted for most.
type Selection struct {
	Phi   float64 // φ: fraction of N computed per decode token; ≥ γ computes all loaded
	Alpha float64 // α: fraction of the loaded ranks each prompt token votes for
	Base  float64 // δ: fraction of N that is static
	// Compact copies the dynamic records into one per-prompt buffer, so decode
	// reads two contiguous runs per layer instead of gathering single records.
	Compact bool
}

// Validate checks δ ≤ φ ≤ γ and α in (0, 1].
func (s *Selection) Validate(gamma float64) error {
	switch {
	case !(s.Alpha > 0 && s.Alpha <= 1):
		return fmt.Errorf("--alpha must be in (0, 1], got %v", s.Alpha)
	case !(s.Base >= 0 && s.Base <= 1):
		return fmt.Errorf("base fraction δ must be in [0, 1], got %v", s.Base)
	case !(s.Phi > 0 && s.Phi <= 1):
		return fmt.Errorf("--phi must be in (0, 1], got %v", s.Phi)
	case s.Phi < s.Base-1e-6: // δ is stored as float32
		return fmt.Errorf("--phi %v is below the base fraction δ = %v: the static neurons alone exceed it", s.Phi, s.Base)
	case s.Phi > gamma+1e-6 && s.Phi < 1:
		return fmt.Errorf("--phi %v exceeds --gamma %v: cannot compute neurons that are not loaded (use --phi ≤ γ, or 1 for all loaded)", s.Phi, gamma)
	}
	return nil
}

// LayerPlan is the decode set of one sparse layer: the records computed per
// decode token, as blocks of contiguous records.
type LayerPlan struct {
	Ranks  []int    // selected ranks, ascending
	Blocks [][]byte // records to compute
}

// Plan holds one LayerPlan per layer (nil: the layer computes all it has).
type Plan []*LayerPlan

// votes counts, per loaded rank, how many prompt tokens had it among their
// top-k |h|. act is (T, ranks).
func votes(act []float32, ranks, k int, counts []int32, scratch []float32) {
	T := len(act) / ranks
	for t := 0; t < T; t++ {
		row := act[t*ranks : (t+1)*ranks]
		abs := scratch[:ranks]
		for i, v := range row {
			abs[i] = float32(math.Abs(float64(v)))
		}
		thr := kthLargest(append(scratch[ranks:ranks], abs...), k)
		// Vote for everything above the threshold, then for ties in rank order.
		left := k
		for i, v := range abs {
			if v > thr {
				counts[i]++
				left--
			}
		}
		for i, v := range abs {
			if left == 0 {
				break
			}
			if v == thr {
				counts[i]++
				left--
			}
		}
	}
}

// kthLargest returns the k-th largest value of x (1-based), reordering x.
func kthLargest(x []float32, k int) float32 {
	lo, hi, want := 0, len(x)-1, k-1
	for lo < hi {
		// Median of three as pivot; partition descending.
		mid := lo + (hi-lo)/2
		if x[mid] > x[lo] {
			x[mid], x[lo] = x[lo], x[mid]
		}
		if x[hi] > x[lo] {
			x[hi], x[lo] = x[lo], x[hi]
		}
		if x[mid] > x[hi] {
			x[mid], x[hi] = x[hi], x[mid]
		}
		pivot := x[hi]
		i := lo
		for j := lo; j < hi; j++ {
			if x[j] > pivot {
				x[i], x[j] = x[j], x[i]
				i++
			}
		}
		x[i], x[hi] = x[hi], x[i]
		switch {
		case i == want:
			return x[i]
		case i < want:
			lo = i + 1
		default:
			hi = i - 1
		}
	}
	return x[want]
}

// chooseRanks returns the decode set: static ranks [0, nb) and the nf−nb
// secondary ranks in [nb, nl) with the most votes (ties: lower rank first),
// ascending.
func chooseRanks(counts []int32, nb, nf, nl int) []int {
	out := make([]int, 0, nf)
	for r := 0; r < min(nb, nl); r++ {
		out = append(out, r)
	}
	sec := make([]int, 0, nl-nb)
	for r := nb; r < nl; r++ {
		sec = append(sec, r)
	}
	sort.SliceStable(sec, func(a, b int) bool { return counts[sec[a]] > counts[sec[b]] })
	if n := nf - len(out); n < len(sec) {
		sec = sec[:max(0, n)]
	}
	out = append(out, sec...)
	sort.Ints(out)
	return out
}

// blocksFor turns selected ranks into record blocks: runs of consecutive
// ranks in one band become one block; with compact, every record outside the
// static prefix is copied into buf, one block.
func (m *Model) blocksFor(l int, ranks []int, nb int, compact bool, buf []byte) ([][]byte, []byte) {
	p := m.Pack
	si, _ := p.SparseIndex(l)
	B := p.Index.BandNeurons
	rec := int(p.Index.RecordBytes)
	var blocks [][]byte
	i := 0
	if compact {
		// Static prefix as band runs, then one buffer for the rest.
		for i < len(ranks) && ranks[i] < nb {
			j := i
			for j+1 < len(ranks) && ranks[j+1] < nb && ranks[j+1] == ranks[j]+1 && ranks[j+1]/B == ranks[i]/B {
				j++
			}
			blocks = append(blocks, p.RecordRange(si, ranks[i], ranks[j]+1))
			i = j + 1
		}
		rest := ranks[i:]
		need := len(rest) * rec
		if cap(buf) < need {
			buf = make([]byte, need)
		}
		buf = buf[:need]
		for k, r := range rest {
			copy(buf[k*rec:], p.Record(si, r))
		}
		if need > 0 {
			blocks = append(blocks, buf)
		}
		return blocks, buf
	}
	for i < len(ranks) {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 && ranks[j+1]/B == ranks[i]/B {
			j++
		}
		blocks = append(blocks, p.RecordRange(si, ranks[i], ranks[j]+1))
		i = j + 1
	}
	return blocks, buf
}
