package runner

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
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
	// Method is how prompt tokens score the secondary ranks: "" or
	// "paper" (SelectInfer: each token votes for its top α by |h|; scores
	// are vote counts), "mass" (each token adds |h| normalised by its
	// Σ|h|: magnitude instead of membership), "l2" (GRIFFIN's
	// prompt-level statistic: each token's h normalised to unit L2 norm,
	// squares summed over tokens) or "signed" (CoreInfer's token-wise core
	// neurons: each token votes for its top α by h itself, the largest
	// positive activations, and the scores are how often a rank was among
	// them — the prompt's frequency), or "gate" (no prompt votes: every
	// decode token dots every loaded neuron's gate row with its input and
	// computes up and down for the Counts.Gate neurons of largest
	// |silu(gate·x)|, as CATS and TEAL do for dense models; φ is then the
	// token's budget in records' bytes, the gate rows of all loaded
	// neurons included), or "hybrid" (the gate's choice after a static
	// base: the first Counts.Base ranks computed whole every token — δN,
	// at most half of the neurons the gate's budget computes — and the
	// gate's choice among the other loaded ranks; the same bytes and the
	// same number of neurons as "gate", fewer of them scattered), or
	// "router" (no prompt votes: every decode token scores the layer's
	// groups of consecutive ranks with the pack's router from its FFN
	// input and computes, after the static base, the best-scored groups of
	// the other loaded ranks up to φN; the pack must have routers, sipack
	// route), or "auto" (For: "router" where the model's pack has routers
	// and the selection neither re-selects nor takes the "layer" budget,
	// else "paper" — sirun's default: a pack routed by sipack route runs
	// its router, any other the paper's votes).
	Method string
	// Budget is how δ and φ are spread over the sparse layers (what each
	// loads, γ, is the pack's layout): "" or "auto" (the pack's layer
	// budgets where it has them, else uniform), "pack" (the pack's layer
	// budgets, which it must have: each layer's share by the sensitivity
	// the profile calibrated, format.Pack.LayerShares), "uniform" (⌊δN⌋
	// and ⌊φN⌋ in every layer, capped at what it loaded, as SelectInfer) or "layer"
	// (the static neurons only, the same total layer by layer from the task
	// profile: the next static neuron goes to the layer whose next rank
	// holds the largest share of its layer's profile mass, so layers whose
	// mass is concentrated in few neurons give static neurons to layers
	// where it is spread; not with layer budgets).
	Budget string
	// Reselect, if > 0, re-selects during decode: every Reselect-th token
	// after a plan is computed over every loaded neuron (a step at γ, not
	// φ), its activations vote with the prompt's, ReselectWeight votes
	// each, and the plan is made again — the decode set follows what is
	// generated, not only the prompt (Session.Step).
	Reselect       int
	ReselectWeight float64 // votes a re-selection token casts (0: 1, as a prompt token)
}

// Methods are the selection methods Selection.Method accepts.
var Methods = []string{"auto", "paper", "mass", "l2", "signed", "gate", "hybrid", "router"}

// For returns the selection m runs: an "auto" one as "router" where m's
// pack has routers (sipack route) and the selection takes no re-selection
// and no "layer" budget (the router chooses every token's neurons itself),
// else as "paper"; any other as it is (nil stays nil).
func (s *Selection) For(m *Model) *Selection {
	if s == nil || s.Method != "auto" {
		return s
	}
	c := *s
	c.Method = "paper"
	if m.RouterGroup > 0 && s.Reselect == 0 && s.Budget != "layer" {
		c.Method = "router"
	}
	return &c
}

// ParseMethod splits a method as sirun bench's --select names it,
// METHOD or METHOD/BUDGET (paper/uniform: the paper's votes with the
// budget uniform), into Selection.Method and Selection.Budget.
func ParseMethod(s string) (method, budget string, err error) {
	method, budget, _ = strings.Cut(s, "/")
	if !slices.Contains(Methods, method) {
		return "", "", fmt.Errorf("unknown method %q (want one of %v, optionally /BUDGET)", method, Methods)
	}
	if budget != "" && !slices.Contains(Budgets, budget) {
		return "", "", fmt.Errorf("unknown budget %q in %q (want one of %v)", budget, s, Budgets)
	}
	return method, budget, nil
}

// Gated reports whether the method chooses each decode token's neurons by
// their gates ("gate", "hybrid"): no prompt votes, backend.Gater's FFN.
func (s *Selection) Gated() bool { return s.Method == "gate" || s.Method == "hybrid" }

// PerToken reports whether the method chooses each decode token's
// neurons itself (gate, hybrid, router): the prompt casts no votes.
func (s *Selection) PerToken() bool { return s.Gated() || s.Method == "router" }

// Budgets are the static budgets Selection.Budget accepts.
var Budgets = []string{"auto", "pack", "uniform", "layer"}

// Counts is a selection in neurons per sparse layer.
type Counts struct {
	Loaded  int // ranks loaded (the γ prefix)
	Base    int // static ranks [0, Base): ⌊δN⌋, at most Loaded
	Compute int // ranks computed per decode token: ⌊φN⌋, at most Loaded
	Vote    int // ranks each prompt token votes for: ⌊α·Loaded⌋, at least 1
	// Gate is, for the "gate" method, the neurons a decode token computes
	// whole after the gate rows of all Loaded: a token then reads the bytes
	// of Loaded/3 + 2·Gate/3 records, Compute's worth, so Gate is
	// ⌊(3·Compute − Loaded)/2⌋, and Base is 0. For "hybrid", the static
	// Base ranks are part of those ⌊(3·Compute − Loaded)/2⌋ (δN cut to half
	// of them) and Gate is the rest: Base + (Loaded − Base)/3 + 2·Gate/3 records'
	// bytes, the same. Zero for the other methods.
	Gate int
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
	if s.Method == "router" && c.Selecting() {
		// The router chooses the rest per token: its static part at most
		// a quarter of what a token computes (the twelfth screen, tuning half).
		c.Base = min(c.Base, c.Compute/4)
	}
	if s.Gated() && c.Selecting() {
		c.Gate = max(0, (3*c.Compute-c.Loaded)/2)
		c.Base = 0 // the gate: none static
		if s.Method == "hybrid" {
			c.Base = min(base, c.Gate/2)
			c.Gate -= c.Base
		}
	}
	return c
}

// LayerCounts is a selection in neurons per layer (zero for dense layers).
type LayerCounts []Counts

// LayerCounts fixes the selection's numbers for each sparse layer of m: δ
// and φ as the pack's layer budgets share them out over the loaded ranks
// (format.Pack.LayerShares; Counts in every layer of a pack without them).
// Budget "uniform" or "layer" take Counts in every layer whatever the
// pack (capped at what each layer loaded). On a pack with budgets the
// gated methods dot each layer's own loaded gate rows and compute the
// same Base and Gate whole records in every layer (those of the mean
// loaded count): the same bytes as uniform counts.
func (s *Selection) LayerCounts(m *Model) LayerCounts {
	p := m.Pack
	loaded := make([]int, len(p.Index.SparseLayers))
	for l := range m.Layers {
		if si, ok := p.SparseIndex(l); ok {
			loaded[si] = m.Layers[l].Ranks
		}
	}
	var base, compute []int
	if s.Budget == "uniform" || s.Budget == "layer" {
		N := m.Config.IntermediateSize
		base, compute = make([]int, len(loaded)), make([]int, len(loaded))
		for i := range base {
			base[i], compute[i] = format.Count(s.Base, N), format.Count(s.Phi, N)
		}
	} else {
		base, compute = p.LayerShares(s.Base, loaded), p.LayerShares(s.Phi, loaded)
	}
	cs := make(LayerCounts, len(m.Layers))
	for l := range m.Layers {
		if si, ok := p.SparseIndex(l); ok && m.Layers[l].Sparse {
			cs[l] = s.counts(m.Layers[l].Ranks, base[si], compute[si])
		}
	}
	if s.Gated() && p.HasBudgets() {
		// The gate's choice, the same in every layer: each layer reads the
		// gate rows of what it loaded, then Base + Gate whole records, as
		// uniform counts of the mean loaded give them — the same bytes in
		// all, Σ (loaded/3 + …) being the uniform sum.
		total := 0
		for _, n := range loaded {
			total += n
		}
		u := s.Counts(m.Config.IntermediateSize, total/max(1, len(loaded)))
		for l := range cs {
			if c := &cs[l]; m.Layers[l].Sparse && c.Selecting() {
				c.Base = min(u.Base, c.Loaded)
				c.Gate = max(0, min(u.Gate, c.Loaded-c.Base))
			}
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
		return fmt.Errorf("--alpha must be in (0, 1], got %v", s.Alpha)
	case s.Method != "" && !slices.Contains(Methods, s.Method):
		return fmt.Errorf("--select must be one of %v, got %q", Methods, s.Method)
	case s.Reselect < 0 || s.ReselectWeight < 0:
		return fmt.Errorf("--reselect and its weight must be ≥ 0, got %d and %v", s.Reselect, s.ReselectWeight)
	case s.Budget != "" && !slices.Contains(Budgets, s.Budget):
		return fmt.Errorf("--budget must be one of %v, got %q", Budgets, s.Budget)
	case !(s.Base >= 0 && s.Base <= 1):
		return fmt.Errorf("base fraction δ must be in [0, 1], got %v", s.Base)
	case !(s.Phi > 0 && s.Phi <= 1):
		return fmt.Errorf("--phi must be in (0, 1], got %v", s.Phi)
	case s.PerToken() && (s.Reselect > 0 || s.Budget == "layer"):
		return fmt.Errorf("--select %s chooses every token's neurons itself: it takes no --reselect or --budget", s.Method)
	case s.Gated() && format.Count(s.Phi, n) < loaded && s.Counts(n, loaded).Gate < 1:
		return fmt.Errorf("--select %s at --phi %.2f: a token reads the gate rows of all %d loaded neurons (a third of their records, γ/3 = %.2f) before any up and down rows, which leaves nothing of φ's budget to compute; use --phi > γ/3",
			s.Method, s.Phi, loaded, float64(loaded)/float64(n)/3)
	case !s.Gated() && format.Count(s.Phi, n) < format.Count(s.Base, n):
		return fmt.Errorf("--phi %.2f (%d of %d neurons) is below the base fraction δ = %.2f (%d): the static neurons alone exceed it",
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
	// Gate, if > 0, is the "gate" method's plan: Records are all loaded
	// ranks (Ranks is nil) and a decode token computes the first Static of
	// them and the Gate of the others with the largest |silu(gate·x)|
	// (backend.Gater).
	Gate, Static int
	// Route, if > 0, is the "router" method's plan: Records are all loaded
	// ranks and a decode token computes the first Static of them and the
	// Route groups of Model.RouterGroup ranks after them that its router
	// scores highest.
	Route int
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
	case p != nil && p[l] != nil && p[l].Gate > 0:
		// Static whole records, the gate rows of every other loaded
		// rank, whole records for Gate.
		return p[l].Static + (m.Layers[l].Ranks-p[l].Static+2*p[l].Gate+1)/3
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

// Votes scores, per sparse layer and loaded rank, what the prompt's tokens
// say of it (Selection.Method): by default how many tokens had the rank
// among their top-k |h| (k = Counts.Vote).
type Votes struct {
	cs      LayerCounts
	method  string
	weight  float64     // votes a token casts (SetWeight; 1 by default)
	static  [][]int     // per layer: the static ranks, where the budget is per layer (else [0, Base))
	counts  [][]float64 // (layer, loaded ranks); nil for dense layers
	scratch []uint32
	device  []int32 // one layer's votes as a backend.Voter counts them
	// pool, if set, splits a prompt's tokens over its threads for the
	// top-α votes (one selection per token and layer: 4096 of them in a
	// 256-token prompt of a 16-layer model, else a tenth of its prefill
	// on one thread); part and wscratch are the workers' counts and scratch.
	pool     *kernels.Pool
	part     []float64
	wscratch []uint32
}

// NewVotes starts an empty count for model m with counts cs and the
// selection's method.
func NewVotes(m *Model, cs LayerCounts, method string) *Votes {
	most := 0
	for _, c := range cs {
		most = max(most, c.Loaded)
	}
	v := &Votes{cs: cs, method: method, counts: make([][]float64, len(m.Layers)), scratch: make([]uint32, 2*most)}
	for l := range m.Layers {
		if m.Layers[l].Sparse {
			v.counts[l] = make([]float64, cs[l].Loaded)
		}
	}
	return v
}

// countsTopK reports whether the scores are SelectInfer's vote counts,
// which a backend.Voter can count where the activations are.
func (v *Votes) countsTopK() bool { return v.method == "" || v.method == "paper" }

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
		c[i] += v.w() * float64(n)
	}
}

// Add scores one layer's activations act (T, ranks).
func (v *Votes) Add(layer int, act []float32, ranks int) {
	c := v.counts[layer]
	if c == nil {
		return
	}
	switch v.method {
	case "mass", "l2":
		for t := 0; t < len(act)/ranks; t++ {
			row := act[t*ranks : (t+1)*ranks]
			var norm float64
			for _, h := range row {
				if v.method == "mass" {
					norm += math.Abs(float64(h))
				} else {
					norm += float64(h) * float64(h)
				}
			}
			if norm == 0 {
				continue
			}
			for i, h := range row {
				if v.method == "mass" {
					c[i] += v.w() * math.Abs(float64(h)) / norm
				} else {
					c[i] += v.w() * float64(h) * float64(h) / norm
				}
			}
		}
	default:
		v.topK(act, ranks, v.cs[layer].Vote, c, v.method == "signed")
	}
}

// topK adds every token's top-α votes to c, over the pool's threads when
// there are tokens enough: each worker counts its tokens apart (the
// tokens dealt by RunStatic, so the magnitude methods' float sums are the
// same from run to run), and the counts are summed after.
func (v *Votes) topK(act []float32, ranks, k int, c []float64, signed bool) {
	T := len(act) / ranks
	if v.pool == nil || v.pool.Workers() < 2 || T < 8 {
		votes(act, ranks, k, v.w(), c, v.scratch, signed)
		return
	}
	W := v.pool.Workers()
	if len(v.part) < W*ranks {
		v.part, v.wscratch = make([]float64, W*ranks), make([]uint32, W*2*ranks)
	}
	part := v.part[:W*ranks]
	clear(part)
	v.pool.RunStatic(T, func(lo, hi, w int) {
		votes(act[lo*ranks:hi*ranks], ranks, k, v.w(), part[w*ranks:(w+1)*ranks], v.wscratch[w*2*ranks:(w+1)*2*ranks], signed)
	})
	for w := 0; w < W; w++ {
		for i, n := range part[w*ranks : (w+1)*ranks] {
			c[i] += n
		}
	}
}

// SetWeight sets the votes each token casts from now on (w > 0).
func (v *Votes) SetWeight(w float64) { v.weight = w }

// w is the votes a token casts (an unset weight is 1).
func (v *Votes) w() float64 {
	if v.weight == 0 {
		return 1
	}
	return v.weight
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
		ranks, prefix := chooseRanks(counts, c.Base, c.Compute, c.Loaded), c.Base
		if v.static != nil {
			// The layer's own static set; the dynamic count stays.
			ranks = chooseAround(counts, v.static[l], c.Compute-c.Base, c.Loaded)
			prefix = 0
			for prefix < len(v.static[l]) && v.static[l][prefix] == prefix {
				prefix++
			}
		}
		recs, err := ex.Gather(m.Layers[l].FFN, ranks, prefix, compact)
		if err != nil {
			return nil, err
		}
		plan[l] = &LayerPlan{Ranks: ranks, Records: recs}
	}
	return plan, nil
}

// gatePlan is the gated methods' plan: every sparse layer computes its
// first Base ranks and Gate of the other loaded ranks per token, chosen by
// their gates.
func gatePlan(m *Model, cs LayerCounts) Plan {
	plan := make(Plan, len(m.Layers))
	for l := range m.Layers {
		if m.Layers[l].Sparse {
			plan[l] = &LayerPlan{Records: m.Layers[l].FFN, Gate: cs[l].Gate, Static: cs[l].Base}
		}
	}
	return plan
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
// top-k |h| (signed: top-k h). act is (T, ranks); scratch holds 2·ranks.
// The scores are compared as order-preserving keys (scoreKey), the k-th
// largest found by a radix select over their bytes: a few branch-free
// passes over a token's ranks, where a quickselect's comparisons mispredict.
func votes(act []float32, ranks, k int, w float64, counts []float64, scratch []uint32, signed bool) {
	T := len(act) / ranks
	keys, buf := scratch[:ranks], scratch[ranks:2*ranks]
	for t := 0; t < T; t++ {
		for i, v := range act[t*ranks : (t+1)*ranks] {
			if !signed {
				v = float32(math.Abs(float64(v)))
			}
			keys[i] = scoreKey(v)
		}
		thr := kernels.KthLargest(keys, k, buf)
		// Vote for everything above the threshold, then for ties in rank order.
		left := k
		for i, key := range keys {
			if key > thr {
				counts[i] += w
				left--
			}
		}
		for i, key := range keys {
			if left == 0 {
				break
			}
			if key == thr {
				counts[i] += w
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

// chooseAround returns the decode set of a given static set (ascending)
// and the nd ranks in [0, nl) outside it with the most votes (ties: lower
// rank first), ascending. The nd-th largest count comes from a sort of the
// counts alone; then one pass in rank order takes every rank above it and
// the lowest ranks equal to it (a stable sort of the ranks by count was 10
// ms of a 1B plan).
func chooseAround(counts []float64, static []int, nd, nl int) []int {
	in := make([]bool, nl)
	for _, r := range static {
		in[r] = true
	}
	vals := make([]float64, 0, nl-len(static))
	for r := 0; r < nl; r++ {
		if !in[r] {
			vals = append(vals, counts[r])
		}
	}
	nd = max(0, min(nd, len(vals)))
	out := make([]int, 0, len(static)+nd)
	if nd == 0 {
		return append(out, static...)
	}
	slices.Sort(vals)
	kth := vals[len(vals)-nd]
	ties := nd // how many equal to kth may still join
	for _, v := range vals[len(vals)-nd:] {
		if v > kth {
			ties--
		}
	}
	si := 0
	for r := 0; r < nl; r++ {
		if in[r] {
			continue
		}
		c := counts[r]
		if c < kth || (c == kth && ties == 0) {
			continue
		}
		if c == kth {
			ties--
		}
		for si < len(static) && static[si] < r {
			out = append(out, static[si])
			si++
		}
		out = append(out, r)
	}
	return append(out, static[si:]...)
}

// chooseRanks returns the decode set: static ranks [0, nb) and the nf−nb
// secondary ranks in [nb, nl) with the most votes (ties: lower rank first),
// ascending.
func chooseRanks(counts []float64, nb, nf, nl int) []int {
	static := make([]int, min(nb, nl))
	for r := range static {
		static[r] = r
	}
	return chooseAround(counts, static, nf-len(static), nl)
}

// LayerStatic is the "layer" static budget: the sparse layers' c.Base
// static neurons each, pooled and handed out again one at a time to the
// layer whose best remaining loaded rank (by the pack's task scores) holds
// the largest share of its layer's task-profile mass; each layer keeps room
// for its c.Compute − c.Base dynamic ranks within the c.Loaded loaded. It
// returns each sparse layer's static ranks, ascending (nil for dense
// layers): the task's best among the loaded, which past the pack's static
// prefix [0, δN) lie in the secondary order's ranks.
func LayerStatic(m *Model, c Counts) ([][]int, error) {
	type layer struct {
		l     int
		order []int // loaded ranks by task score, best first
		gain  []float64
		k     int
	}
	var ls []*layer
	for l := range m.Layers {
		if !m.Layers[l].Sparse {
			continue
		}
		si, _ := m.Pack.SparseIndex(l)
		sc := m.Pack.Index.SparseLayers[si].TaskScore
		if len(sc) < c.Loaded {
			return nil, fmt.Errorf("--budget layer needs the task profile's scores in the pack: layer %d has %d of %d", l, len(sc), c.Loaded)
		}
		var tot float64
		for _, v := range sc {
			tot += float64(v)
		}
		if !(tot > 0) {
			return nil, fmt.Errorf("--budget layer: layer %d's task scores sum to %v", l, tot)
		}
		x := &layer{l: l, order: make([]int, c.Loaded), gain: make([]float64, c.Loaded)}
		for r := range x.order {
			x.order[r] = r
		}
		sort.SliceStable(x.order, func(a, b int) bool { return sc[x.order[a]] > sc[x.order[b]] })
		for i, r := range x.order {
			x.gain[i] = float64(sc[r]) / tot
		}
		ls = append(ls, x)
	}
	room := c.Loaded - (c.Compute - c.Base) // the most static ranks a layer can take
	for left := c.Base * len(ls); left > 0; left-- {
		var best *layer
		for _, x := range ls {
			if x.k >= room {
				continue
			}
			// Ties go to the layer with fewer static ranks so far.
			if best == nil || x.gain[x.k] > best.gain[best.k] || (x.gain[x.k] == best.gain[best.k] && x.k < best.k) {
				best = x
			}
		}
		if best == nil {
			break // every layer full: cannot happen while Base ≤ room
		}
		best.k++
	}
	static := make([][]int, len(m.Layers))
	for _, x := range ls {
		static[x.l] = slices.Sorted(slices.Values(x.order[:x.k]))
	}
	return static, nil
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
