package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
)

// Selection configures SelectInfer's per-prompt computation. Fractions are
// of N, the neurons of a layer, as the command line gives them; Counts
// turns them into numbers of neurons once (format.Count), and everything
// after compares counts.
type Selection struct {
	Phi   float64 // φ: fraction of N computed per decode token; ≥ γ computes all loaded
	Alpha float64 // α: fraction of the loaded ranks each prompt token votes for
	Base  float64 // δ: fraction of N that is static
	// Compact copies the dynamic records into one per-prompt buffer, so decode
	// reads two contiguous runs per layer instead of gathering single records.
	Compact bool
	Method  Method
}

// Method is how a decode token's neurons are chosen.
type Method int

const (
	// MethodAuto is MethodRouter where the pack has routers, else MethodPaper.
	MethodAuto Method = iota
	// MethodPaper is SelectInfer: each prompt token votes for its top α loaded
	// ranks by |h|, and every decode token computes the static ranks and
	// the most-voted others.
	MethodPaper
	// MethodRouter: every decode token scores the layer's groups of consecutive
	// ranks with the pack's router from its FFN input and computes, after
	// a static part, the best-scored groups (packs routed by sipack route).
	// It matches or beats per-token gate selection and the other vote
	// statistics at the paper's speed (docs/accuracy.md).
	MethodRouter
)

// Methods names the methods in order, as --select takes them.
var Methods = []string{"auto", "paper", "router"}

func (m Method) String() string {
	if int(m) < len(Methods) {
		return Methods[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod reads a method's name.
func ParseMethod(s string) (Method, error) {
	if i := slices.Index(Methods, s); i >= 0 {
		return Method(i), nil
	}
	return 0, fmt.Errorf("unknown selection %q (want one of %s)", s, strings.Join(Methods, ", "))
}

// For returns the selection m runs: a MethodAuto one as MethodRouter where
// m's pack has routers, else as MethodPaper; any other as it is (nil stays nil).
func (s *Selection) For(m *Model) *Selection {
	if s == nil || s.Method != MethodAuto {
		return s
	}
	c := *s
	c.Method = MethodPaper
	if m.RouterGroup > 0 {
		c.Method = MethodRouter
	}
	return &c
}

// Counts is a selection in neurons per sparse layer.
type Counts struct {
	Loaded  int // ranks loaded (the γ prefix)
	Base    int // static ranks [0, Base): ⌊δN⌋, at most Loaded
	Compute int // ranks computed per decode token: ⌊φN⌋, at most Loaded
	Vote    int // ranks each prompt token votes for: ⌊α·Loaded⌋, at least 1
}

// Counts fixes the selection's numbers for layers of n neurons with loaded
// ranks in memory.
func (s *Selection) Counts(n, loaded int) Counts {
	return s.counts(loaded, format.Count(s.Base, n), format.Count(s.Phi, n))
}

// counts fixes the selection's numbers for a layer with loaded ranks in
// memory whose δ and φ come to base and compute neurons.
func (s *Selection) counts(loaded, base, compute int) Counts {
	c := Counts{
		Loaded:  loaded,
		Base:    min(loaded, base),
		Compute: min(loaded, compute),
		Vote:    max(1, format.Count(s.Alpha, loaded)),
	}
	if s.Method == MethodRouter && c.Selecting() {
		// The router chooses the rest per token: its static part is at most
		// a quarter of what a token computes (tuned on the tasks' tuning halves).
		c.Base = min(c.Base, c.Compute/4)
	}
	return c
}

// LayerCounts is a selection in neurons per layer (zero for dense layers).
type LayerCounts []Counts

// LayerCounts fixes the selection's numbers for each sparse layer of m: δ
// and φ as the pack's layer budgets share them out over the loaded ranks
// (format.Pack.LayerShares; Counts in every layer of a pack without them).
func (s *Selection) LayerCounts(m *Model) LayerCounts {
	p := m.Pack
	loaded := make([]int, len(p.Index.SparseLayers))
	for l := range m.Layers {
		if si, ok := p.SparseIndex(l); ok {
			loaded[si] = m.Layers[l].Ranks
		}
	}
	base, compute := p.LayerShares(s.Base, loaded), p.LayerShares(s.Phi, loaded)
	cs := make(LayerCounts, len(m.Layers))
	for l := range m.Layers {
		if si, ok := p.SparseIndex(l); ok && m.Layers[l].Sparse {
			cs[l] = s.counts(m.Layers[l].Ranks, base[si], compute[si])
		}
	}
	return cs
}

// Selecting reports whether any layer computes fewer ranks than it loaded.
func (cs LayerCounts) Selecting() bool {
	for _, c := range cs {
		if c.Selecting() {
			return true
		}
	}
	return false
}

// Validate checks α in (0, 1], δ ≤ φ ≤ γ as counts of the n neurons of a
// layer with loaded of them in memory.
func (s *Selection) Validate(n, loaded int) error {
	switch {
	case !(s.Alpha > 0 && s.Alpha <= 1):
		return fmt.Errorf("α must be in (0, 1], got %v", s.Alpha)
	case s.Method < MethodAuto || s.Method > MethodRouter:
		return fmt.Errorf("unknown selection %v", s.Method)
	case !(s.Base >= 0 && s.Base <= 1):
		return fmt.Errorf("base fraction δ must be in [0, 1], got %v", s.Base)
	case !(s.Phi > 0 && s.Phi <= 1):
		return fmt.Errorf("--phi must be in (0, 1], got %v", s.Phi)
	case format.Count(s.Phi, n) < format.Count(s.Base, n):
		return fmt.Errorf("--phi %.2f (%d of %d neurons) is below the pack's static fraction δ = %.2f (%d): the static neurons alone exceed it",
			s.Phi, format.Count(s.Phi, n), n, s.Base, format.Count(s.Base, n))
	case format.Count(s.Phi, n) > loaded && s.Phi < 1:
		return fmt.Errorf("--phi %.2f (%d of %d neurons) exceeds the %d loaded (γ = %.2f): cannot compute neurons that are not loaded (use --phi ≤ γ, or 1 for all loaded)",
			s.Phi, format.Count(s.Phi, n), n, loaded, float64(loaded)/float64(n))
	}
	return nil
}

// Selecting reports whether the selection computes fewer ranks than are loaded.
func (c Counts) Selecting() bool { return c.Compute < c.Loaded }

// LayerPlan is the decode set of one sparse layer.
type LayerPlan struct {
	Ranks   []int           // selected ranks, ascending
	Records backend.Records // their records on the device
	// Route, if > 0, is the router's plan: Records are all loaded ranks
	// (Ranks is nil) and a decode token computes the first Static of them
	// and the Route groups of Model.RouterGroup ranks after them that its
	// router scores highest.
	Static, Route int
}

// Plan holds one LayerPlan per layer (nil: the layer computes all it has).
type Plan []*LayerPlan

// Active is the number of FFN records a decode token computes with the
// plan, all layers of m.
func (p Plan) Active(m *Model) int {
	n := 0
	for l := range m.Layers {
		n += p.LayerActive(m, l)
	}
	return n
}

// LayerActive is Active for layer l alone.
func (p Plan) LayerActive(m *Model, l int) int {
	switch {
	case p != nil && p[l] != nil && p[l].Route > 0:
		return min(m.Layers[l].Ranks, p[l].Static+p[l].Route*m.RouterGroup)
	case p != nil && p[l] != nil:
		return len(p[l].Ranks)
	}
	return m.Layers[l].Ranks
}

// RouterBytes is the bytes of the routers a decode token reads with the
// plan (its router layers' U, bias and V), beyond its records.
func (p Plan) RouterBytes(m *Model) uint64 {
	var n uint64
	for l, lp := range p {
		if lp != nil && lp.Route > 0 && m.Layers[l].Router != nil {
			R := m.Layers[l].Router
			n += uint64(R.U.Bytes() + R.V.Bytes() + 4*R.B.Len())
		}
	}
	return n
}

// Votes counts, per sparse layer and loaded rank, how many prompt tokens
// had the rank among their top α by |h| (k = Counts.Vote).
type Votes struct {
	cs      LayerCounts
	counts  [][]float64 // (layer, loaded ranks); nil for dense layers
	scratch []uint32
	device  []int32 // one layer's votes as a backend.Voter counts them
	// pool, if set, splits a prompt's tokens over its threads for the
	// top-α votes (one selection per token and layer: 4096 of them in a
	// 256-token prompt of a 16-layer model, else a tenth of its prefill
	// on one thread); part and wscratch are the workers' counts and scratch.
	pool     backend.Pool
	part     []float64
	wscratch []uint32
}

// NewVotes starts an empty count for model m with counts cs.
func NewVotes(m *Model, cs LayerCounts) *Votes {
	most := 0
	for _, c := range cs {
		most = max(most, c.Loaded)
	}
	v := &Votes{cs: cs, counts: make([][]float64, len(m.Layers)), scratch: make([]uint32, 2*most)}
	for l := range m.Layers {
		if m.Layers[l].Sparse {
			v.counts[l] = make([]float64, cs[l].Loaded)
		}
	}
	return v
}

// addDevice adds one layer's votes counted by the device.
func (v *Votes) addDevice(layer int, voter backend.Voter) {
	c := v.counts[layer]
	if cap(v.device) < len(c) {
		v.device = make([]int32, len(c))
	}
	d := v.device[:len(c)]
	clear(d)
	voter.Vote(d, v.cs[layer].Vote)
	for i, n := range d {
		c[i] += float64(n)
	}
}

// Add counts one layer's activations act (T, ranks): every token's top-α
// votes, over the pool's threads when there are tokens enough (each worker
// counts its tokens apart, the counts summed after).
func (v *Votes) Add(layer int, act []float32, ranks int) {
	c := v.counts[layer]
	if c == nil {
		return
	}
	k := v.cs[layer].Vote
	T := len(act) / ranks
	if v.pool == nil || v.pool.Workers() < 2 || T < 8 {
		votes(act, ranks, k, c, v.scratch)
		return
	}
	W := v.pool.Workers()
	if len(v.part) < W*ranks {
		v.part, v.wscratch = make([]float64, W*ranks), make([]uint32, W*2*ranks)
	}
	part := v.part[:W*ranks]
	clear(part)
	v.pool.RunStatic(T, func(lo, hi, w int) {
		votes(act[lo*ranks:hi*ranks], ranks, k, part[w*ranks:(w+1)*ranks], v.wscratch[w*2*ranks:(w+1)*2*ranks])
	})
	for w := 0; w < W; w++ {
		for i, n := range part[w*ranks : (w+1)*ranks] {
			c[i] += n
		}
	}
}

// Plan turns the votes into the decode plan: per sparse layer the static
// ranks and the most-voted secondary ones, up to its Compute, gathered on
// the model's device by ex.
func (v *Votes) Plan(m *Model, ex backend.Exec, cs LayerCounts, compact bool) (Plan, error) {
	plan := make(Plan, len(m.Layers))
	for l, counts := range v.counts {
		if counts == nil {
			continue
		}
		c := cs[l]
		ranks := chooseRanks(counts, c.Base, c.Compute, c.Loaded)
		recs, err := ex.Gather(m.Layers[l].FFN, ranks, c.Base, compact)
		if err != nil {
			return nil, err
		}
		plan[l] = &LayerPlan{Ranks: ranks, Records: recs}
	}
	return plan, nil
}

// routerPlan is the router's plan: every sparse layer that selects computes
// its base rounded up to whole groups, then as many whole groups of the
// other loaded ranks as φ's count leaves room for, chosen per token.
func routerPlan(m *Model, ex backend.Exec, cs LayerCounts) (Plan, error) {
	plan := make(Plan, len(m.Layers))
	G := m.RouterGroup
	for l := range m.Layers {
		c := cs[l]
		if !m.Layers[l].Sparse || !c.Selecting() {
			continue
		}
		static := min(c.Loaded, (c.Base+G-1)/G*G)
		route := max(0, c.Compute-static) / G
		if route == 0 {
			// Nothing to route: the static ranks alone.
			ranks := make([]int, min(c.Compute, c.Loaded))
			for r := range ranks {
				ranks[r] = r
			}
			recs, err := ex.Gather(m.Layers[l].FFN, ranks, len(ranks), false)
			if err != nil {
				return nil, err
			}
			plan[l] = &LayerPlan{Ranks: ranks, Records: recs}
			continue
		}
		plan[l] = &LayerPlan{Records: m.Layers[l].FFN, Static: static, Route: route}
	}
	return plan, nil
}

// votes counts, per loaded rank, how many prompt tokens had it among their
// top-k |h|. act is (T, ranks); scratch holds 2·ranks. The scores are
// compared as order-preserving keys (scoreKey), the k-th largest found by a
// radix select over their bytes: a few branch-free passes over a token's
// ranks, where a quickselect's comparisons mispredict.
func votes(act []float32, ranks, k int, counts []float64, scratch []uint32) {
	T := len(act) / ranks
	keys, buf := scratch[:ranks], scratch[ranks:2*ranks]
	for t := 0; t < T; t++ {
		for i, v := range act[t*ranks : (t+1)*ranks] {
			keys[i] = scoreKey(float32(math.Abs(float64(v))))
		}
		thr := kthLargest(keys, k, buf)
		// Vote for everything above the threshold, then for ties in rank order.
		left := k
		for i, key := range keys {
			if key > thr {
				counts[i]++
				left--
			}
		}
		for i, key := range keys {
			if left == 0 {
				break
			}
			if key == thr {
				counts[i]++
				left--
			}
		}
	}
}

// scoreKey maps a score to a uint32 that orders as the score does (−0 as
// +0, so the two tie as the floats do).
func scoreKey(v float32) uint32 {
	b := math.Float32bits(v + 0)
	if b&0x80000000 != 0 {
		return ^b
	}
	return b | 0x80000000
}

// chooseRanks returns the decode set: static ranks [0, nb) and the nf−nb
// secondary ranks in [nb, nl) with the most votes (ties: lower rank first),
// ascending. The (nf−nb)-th largest count comes from a sort of the counts
// alone; then one pass in rank order takes every rank above it and the
// lowest ranks equal to it (a stable sort of the ranks by count was 10 ms
// of a 1B plan).
func chooseRanks(counts []float64, nb, nf, nl int) []int {
	nb = min(nb, nl)
	out := make([]int, nb, max(nb, nf))
	for r := range out {
		out[r] = r
	}
	nd := max(0, min(nf-nb, nl-nb))
	if nd == 0 {
		return out
	}
	vals := slices.Clone(counts[nb:nl])
	slices.Sort(vals)
	kth := vals[len(vals)-nd]
	ties := nd // how many equal to kth may still join
	for _, v := range vals[len(vals)-nd:] {
		if v > kth {
			ties--
		}
	}
	for r := nb; r < nl; r++ {
		c := counts[r]
		if c < kth || (c == kth && ties == 0) {
			continue
		}
		if c == kth {
			ties--
		}
		out = append(out, r)
	}
	return out
}

// RanksPlan is the plan that computes, in each layer l with ranks[l] set,
// those of its loaded ranks (ascending), and every loaded rank in the
// others: a restriction of the model for measuring what layers are worth
// (profile.Calibrate).
func (s *State) RanksPlan(ranks [][]int) (Plan, error) {
	plan := make(Plan, len(s.m.Layers))
	for l, rs := range ranks {
		if rs == nil {
			continue
		}
		recs, err := s.ex.Gather(s.m.Layers[l].FFN, rs, 0, false)
		if err != nil {
			return nil, err
		}
		plan[l] = &LayerPlan{Ranks: rs, Records: recs}
	}
	return plan, nil
}
