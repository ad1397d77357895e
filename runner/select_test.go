package runner

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
)

// TestVotesHandMade: 3 tokens over 6 loaded ranks, k = 2 votes each.
func TestVotesHandMade(t *testing.T) {
	act := []float32{
		0.1, -5, 0.2, 3, 0, 0, // token 0: ranks 1 (|-5|) and 3
		1, 1, 1, 0, 0, 2, // token 1: rank 5, then a tie among 0, 1, 2: rank 0 wins
		0, 0, 0, 0, 9, -8, // token 2: ranks 4 and 5
	}
	counts := make([]float64, 6)
	votes(act, 6, 2, counts, make([]uint32, 12))
	if want := []float64{1, 1, 0, 1, 1, 2}; !slices.Equal(counts, want) {
		t.Fatalf("votes %v, want %v", counts, want)
	}
	// δN = 2 static ranks, φN = 4: the two secondary ranks with most votes among 2..5:
	// rank 5 (2 votes), then the tie between 3 and 4 goes to the lower rank, 3.
	if got := chooseRanks(counts, 2, 4, 6); !slices.Equal(got, []int{0, 1, 3, 5}) {
		t.Fatalf("decode set %v, want [0 1 3 5]", got)
	}
	// Static ranks are kept even with no votes at all.
	if got := chooseRanks(make([]float64, 6), 3, 3, 6); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("decode set %v, want the static ranks", got)
	}
	keys := []uint32{3, 1, 4, 1, 5, 9, 2, 6}
	if v := kthLargest(keys, 3, make([]uint32, len(keys))); v != 5 {
		t.Fatalf("3rd largest %v, want 5", v)
	}
}

// TestKthLargestKey: the radix select against a sort, over random scores
// with many ties, negative ones and zeros of
// both signs, for every k; the keys order as the scores do.
func TestKthLargestKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 7, 300} {
		scores := make([]float32, n)
		for i := range scores {
			switch rng.IntN(4) {
			case 0:
				scores[i] = float32(rng.IntN(5)) - 2 // ties
			case 1:
				scores[i] = float32(math.Copysign(0, rng.NormFloat64())) // ±0
			default:
				scores[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
			}
		}
		keys := make([]uint32, n)
		for i, v := range scores {
			keys[i] = scoreKey(v)
		}
		sorted := slices.Clone(scores)
		slices.SortFunc(sorted, func(a, b float32) int { return -cmp.Compare(a, b) })
		for k := 1; k <= n; k++ {
			got := kthLargest(slices.Clone(keys), k, make([]uint32, n))
			if got != scoreKey(sorted[k-1]) {
				t.Fatalf("n=%d k=%d: key %#x, want that of %g (%#x)", n, k, got, sorted[k-1], scoreKey(sorted[k-1]))
			}
		}
		for i := range scores {
			for j := range scores {
				if (scores[i] < scores[j]) != (keys[i] < keys[j]) {
					t.Fatalf("keys of %g and %g order otherwise", scores[i], scores[j])
				}
			}
		}
	}
}

func greedySession(t *testing.T, m *Model, sel *Selection, prompt []int, n int) ([]int, *Session) {
	t.Helper()
	return greedyWorkers(t, m, sel, prompt, n, 2)
}

// greedyWorkers is greedySession on a pool of the given number of workers
// (one: every sum in one order, the same from run to run).
func greedyWorkers(t *testing.T, m *Model, sel *Selection, prompt []int, n, workers int) ([]int, *Session) {
	t.Helper()
	pool := kernels.NewPool(workers)
	t.Cleanup(pool.Close)
	ss, err := m.NewSession(pool, 128, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	ss.Sel = sel
	var out []int
	if _, err := ss.Generate(prompt, GenerateOptions{MaxTokens: n, OnToken: func(id int) { out = append(out, id) }}); err != nil {
		t.Fatal(err)
	}
	return out, ss
}

func TestSelectionEndToEnd(t *testing.T) {
	path := packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	full := loadModel(t, path, 1)
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	dense, _ := greedySession(t, full, nil, prompt, decodeTokens(24))
	// φ = γ = 1 computes everything: the dense path token for token.
	same, ss := greedySession(t, full, &Selection{Phi: 1, Alpha: 0.2, Base: 0.3}, prompt, decodeTokens(24))
	if !slices.Equal(dense, same) || ss.Plan != nil {
		t.Fatalf("φ = γ = 1 differs from dense:\n%v\n%v", dense, same)
	}
	// φ = γ < 1 also computes all that is loaded.
	part := loadModel(t, path, 0.7)
	a, _ := greedySession(t, part, nil, prompt, decodeTokens(24))
	b, ss := greedySession(t, part, &Selection{Phi: 0.7, Alpha: 0.2, Base: 0.3}, prompt, decodeTokens(24))
	if !slices.Equal(a, b) || ss.Plan != nil {
		t.Fatal("φ = γ = 0.7 differs from computing all loaded neurons")
	}
	// φ = 0.4: every sparse layer's decode set has ⌊0.4·768⌋ = 307 ranks, the
	// 230 static ones included, and decode computes exactly those.
	for _, compact := range []bool{false, true} {
		sel := &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: compact}
		ids, ss := greedySession(t, part, sel, prompt, decodeTokens(24))
		for l, lp := range ss.Plan {
			if len(lp.Ranks) != 307 {
				t.Fatalf("layer %d: %d ranks, want 307", l, len(lp.Ranks))
			}
			for r := 0; r < 230; r++ {
				if lp.Ranks[r] != r {
					t.Fatalf("layer %d: static rank %d missing", l, r)
				}
			}
			if lp.Ranks[306] >= 537 {
				t.Fatalf("layer %d: selected rank %d is not loaded", l, lp.Ranks[306])
			}
		}
		computed := map[int]int{}
		onAct := func(l int, act []float32, n int) { computed[l] = n }
		ss.S.ForwardBatch([]int{ids[len(ids)-1]}, ss.Pos, Pass{Plan: ss.Plan, OnAct: onAct})
		for l := 0; l < 6; l++ {
			if computed[l] != 307 {
				t.Fatalf("decode computed %d records in layer %d, want 307", computed[l], l)
			}
		}
		if compact {
			gathered, _ := greedySession(t, part, &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3}, prompt, decodeTokens(24))
			if !slices.Equal(gathered, ids) {
				t.Fatalf("compacted and gathered decode differ:\n%v\n%v", gathered, ids)
			}
		}
	}
}

func TestSelectionValidate(t *testing.T) {
	const N, loaded = 768, 537 // γ = 0.7
	for _, sel := range []Selection{
		{Phi: 0.2, Alpha: 0.2, Base: 0.3}, // φ < δ
		{Phi: 0.8, Alpha: 0.2, Base: 0.3}, // φ > γ
		{Phi: 0.5, Alpha: 0, Base: 0.3},   // α = 0
		{Phi: 0.5, Alpha: 1.5, Base: 0.3}, // α > 1
		{Phi: 0, Alpha: 0.2, Base: 0},     // φ = 0
	} {
		if err := sel.Validate(N, loaded); err == nil {
			t.Errorf("%+v at %d of %d loaded accepted", sel, loaded, N)
		}
	}
	for _, sel := range []Selection{
		{Phi: 1, Alpha: 0.2, Base: 0.3},                     // all loaded
		{Phi: 0.7, Alpha: 0.2, Base: 0.3},                   // φ = γ: ⌊0.7·768⌋ = 537, the loaded count
		{Phi: 0.3, Alpha: 0.2, Base: float64(float32(0.3))}, // φ = δ, δ as the pack stores it (float32)
	} {
		if err := sel.Validate(N, loaded); err != nil {
			t.Errorf("%+v at %d of %d loaded refused: %v", sel, loaded, N, err)
		}
	}
	if c := (&Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3}).Counts(N, loaded); c != (Counts{Loaded: 537, Base: 230, Compute: 307, Vote: 107}) {
		t.Errorf("counts %+v", c)
	}
}

// TestFastAndGenericKernelsAgree: greedy text of the tiny model is identical
// on every kernel table this CPU runs and on the pure-Go reference, dense
// and selective, on the exact path (the BF16 prefill GEMM rounds the
// activations on purpose: TestGoldenRoundedPrefill checks it keeps the
// golden prompts' greedy tokens).
func TestFastAndGenericKernelsAgree(t *testing.T) {
	if len(kernels.Tables()) == 1 {
		t.Logf("no fast table on this CPU: comparing the reference with itself")
	}
	path := packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	m := loadModel(t, path, 0.7)
	prompt := []int{4094, 784, 25, 1994, 1345, 283, 260, 2265, 1546, 877, 386, 3699, 924, 780, 25}
	for _, sel := range []*Selection{nil, {Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}} {
		restore := kernels.Use(&kernels.Generic)
		generic, _ := greedySession(t, m, sel, prompt, decodeTokens(32))
		restore()
		for _, tb := range kernels.Tables()[1:] {
			restore := kernels.Use(tb.WithBF16Prefill(false).WithBF16Rounding(false))
			fast, _ := greedySession(t, m, sel, prompt, decodeTokens(32))
			restore()
			if !slices.Equal(fast, generic) {
				t.Fatalf("selection %+v: table %s %v, generic %v", sel, tb.Name, fast, generic)
			}
		}
	}
	// The block types' and K-quants' integer path end to end, with a
	// prompt long enough for the prefill's integer GEMM tile (Ops.PanelAct)
	// where a table has one: the same greedy tokens as the reference's
	// integer dots. One worker, so neither side's sums depend on how a
	// pool's workers happened to split the records.
	long := slices.Concat(prompt, prompt, prompt)
	for _, dtype := range []string{"q4_0", "q4_k_m"} {
		qm := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: dtype, BaseFraction: 0.3}), 0.7)
		for _, sel := range []*Selection{nil, {Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}} {
			refs := map[string][]int{} // a reference's tokens, by its name: tables share references
			for _, tb := range kernels.Tables()[1:] {
				for _, int8Down := range []bool{false, true} {
					// The reference of this table's integer path (its int8
					// down projection too, where it has one and takes it).
					tb := tb.WithInt8Down(int8Down)
					ref := tb.IntegerReference()
					if int8Down && !ref.Int8Down {
						continue // no int8 down in this table: the run above
					}
					generic, ok := refs[ref.Name]
					if !ok {
						restore := kernels.Use(ref)
						generic, _ = greedyWorkers(t, qm, sel, long, decodeTokens(16), 1)
						restore()
						refs[ref.Name] = generic
					}
					restore := kernels.Use(tb.WithIntegerPath(true))
					fast, _ := greedyWorkers(t, qm, sel, long, decodeTokens(16), 1)
					restore()
					if !slices.Equal(fast, generic) {
						t.Fatalf("%s, %d-token prompt, selection %+v: table %s %v, generic %v", dtype, len(long), sel, tb.Name, fast, generic)
					}
				}
			}
		}
	}
}

// newSelSession prefills prompt with sel and plans, without decoding.
func newSelSession(t *testing.T, m *Model, sel *Selection, prompt []int) *Session {
	pool := newPool(1)
	t.Cleanup(pool.Close)
	ss, err := m.NewSession(pool, 64, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	ss.Sel = sel
	if _, err := ss.Start(prompt); err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestVotesOverPool: a prompt's top-α votes counted over the pool's
// threads (tokens split between workers, counts summed) are the votes
// counted on one thread.
func TestVotesOverPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const T, ranks = 37, 500
	act := make([]float32, T*ranks)
	for i := range act {
		act[i] = float32(rng.NormFloat64())
	}
	pool := kernels.NewPool(3)
	defer pool.Close()
	serial := &Votes{cs: LayerCounts{{Vote: 100}}, counts: [][]float64{make([]float64, ranks)}, scratch: make([]uint32, 2*ranks)}
	serial.Add(0, act, ranks)
	par := &Votes{cs: LayerCounts{{Vote: 100}}, counts: [][]float64{make([]float64, ranks)}, scratch: make([]uint32, 2*ranks), pool: pool}
	par.Add(0, act, ranks)
	par.Add(0, act[:5*ranks], ranks) // a short prompt takes the serial path
	serial.Add(0, act[:5*ranks], ranks)
	if !slices.Equal(serial.counts[0], par.counts[0]) {
		t.Fatalf("votes over the pool differ from one thread's")
	}
	var total float64
	for _, n := range par.counts[0] {
		total += n
	}
	if total != float64((T+5)*100) {
		t.Fatalf("%v votes cast, want %d", total, (T+5)*100)
	}
}

// TestChooseRanksMatchesStableSort: the threshold selection against its
// definition (the ranks after the static prefix stably sorted by count, the
// first nf − nb taken), over random counts with many ties.
func TestChooseRanksMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for it := 0; it < 2000; it++ {
		nl := 1 + rng.IntN(40)
		counts := make([]float64, nl)
		for i := range counts {
			counts[i] = float64(rng.IntN(4)) // many ties
		}
		nb := rng.IntN(nl + 1)
		var static []int
		for r := 0; r < nb; r++ {
			static = append(static, r)
		}
		nd := rng.IntN(nl+2) - 1
		var sec []int
		for r := 0; r < nl; r++ {
			if !slices.Contains(static, r) {
				sec = append(sec, r)
			}
		}
		slices.SortStableFunc(sec, func(a, b int) int { return cmp.Compare(counts[b], counts[a]) })
		want := append(slices.Clone(static), sec[:max(0, min(nd, len(sec)))]...)
		slices.Sort(want)
		if got := chooseRanks(counts, nb, nb+nd, nl); !slices.Equal(got, want) {
			t.Fatalf("counts %v static %v nd %d: %v, want %v", counts, static, nd, got, want)
		}
	}
}

// TestRunsAreReproducible: the same prompt decoded twice gives the same
// logits to the bit, for the dense path and the paper's plan (the FFN's per-worker sums are dealt by Pool.RunStatic; with chunks
// claimed as workers came free, every step differed in its last bits from
// one run to the next).
func TestRunsAreReproducible(t *testing.T) {
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convert.Options{DType: "q4_0", BaseFraction: 0.3}), 0.7)
	prompt := []int{4094, 784, 25, 1994, 1345, 283, 260, 2265, 1546, 877, 386, 3699, 924, 780, 25}
	for _, sel := range []*Selection{nil, {Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}} {
		var first [][]float32
		for run := 0; run < 8; run++ {
			pool := kernels.NewPool(2)
			ss, err := m.NewSession(pool, 128, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
			if err != nil {
				t.Fatal(err)
			}
			ss.Sel = sel
			var steps [][]float32
			logits, err := ss.Start(prompt)
			if err != nil {
				t.Fatal(err)
			}
			steps = append(steps, slices.Clone(logits))
			for i := 0; i < 6; i++ {
				l, err := ss.Next(100 + i)
				if err != nil {
					t.Fatal(err)
				}
				steps = append(steps, slices.Clone(l))
			}
			pool.Close()
			if run == 0 {
				first = steps
				continue
			}
			for s := range steps {
				for i := range steps[s] {
					if math.Float32bits(steps[s][i]) != math.Float32bits(first[s][i]) {
						t.Fatalf("selection %+v, run %d, step %d, logit %d: %v, first run %v", sel, run, s, i, steps[s][i], first[s][i])
					}
				}
			}
		}
	}
}

// TestPrefillInBatches: a prompt run in batches (Session.Start's
// micro-batches, here of 16 tokens, the last one short) gives the logits,
// the votes' decode plan and the greedy tokens of the same prompt in one
// batch.
func TestPrefillInBatches(t *testing.T) {
	path := packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	m := loadModel(t, path, 0.7)
	rng := rand.New(rand.NewPCG(7, 8))
	prompt := make([]int, 60)
	for i := range prompt {
		prompt[i] = rng.IntN(m.Config.VocabSize - 2)
	}
	run := func(batch int) ([]float32, Plan, []int) {
		pool := kernels.NewPool(2)
		defer pool.Close()
		ss, err := m.NewSession(pool, 128, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
		if err != nil {
			t.Fatal(err)
		}
		ss.Sel, ss.batch = &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3}, batch
		logits, err := ss.Start(prompt)
		if err != nil {
			t.Fatal(err)
		}
		logits = slices.Clone(logits)
		if ss.S.logitRows != 1 {
			t.Errorf("a prompt's logits buffer holds %d rows, want its last token's only", ss.S.logitRows)
		}
		var ids []int
		tok := Argmax(logits)
		for i := 0; i < 16; i++ {
			ids = append(ids, tok)
			l, err := ss.Next(tok)
			if err != nil {
				t.Fatal(err)
			}
			tok = Argmax(l)
		}
		return logits, ss.Plan, ids
	}
	l1, p1, ids1 := run(0)
	l16, p16, ids16 := run(16)
	if d := maxAbsDiff(l1, l16); d > 1e-3 {
		t.Errorf("logits in batches of 16 differ from one batch by %g", d)
	}
	for l := range p1 {
		if !slices.Equal(p1[l].Ranks, p16[l].Ranks) {
			t.Errorf("layer %d: the plan from batched votes differs", l)
		}
	}
	if !slices.Equal(ids1, ids16) {
		t.Errorf("greedy tokens differ:\n%v\n%v", ids1, ids16)
	}
}

// TestResumeAtLayer: a pass resumed at layer l from the residual stream a
// whole pass saw entering l (Pass.OnInput, Pass.From) gives the same
// logits, bit for bit, as running every layer, for a second chunk of a
// sequence too (the resumed pass's own cache entries of the first chunk),
// under a plan that cuts a layer after l; logits from a token on are the
// tail of all of them; a bad resume or first row is an error.
func TestResumeAtLayer(t *testing.T) {
	path := packOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3})
	m := loadModel(t, path, 1)
	pool := kernels.NewPool(2)
	defer pool.Close()
	s, err := m.NewState(pool, 64)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	toks := make([]int, 40)
	for i := range toks {
		toks[i] = rng.IntN(m.Config.VocabSize - 2)
	}
	chunks := [][2]int{{0, 24}, {24, 40}}
	L, H := m.Config.NumLayers, m.Config.HiddenSize
	ranks := make([][]int, L)
	ranks[4] = []int{0, 5, 9, 100, 700}
	plan, err := s.RanksPlan(ranks)
	if err != nil {
		t.Fatal(err)
	}
	// inputs[chunk][layer] of the whole pass without a plan.
	inputs := make([][][]float32, len(chunks))
	for ci, ch := range chunks {
		inputs[ci] = make([][]float32, L)
		if _, err := s.ForwardBatch(toks[ch[0]:ch[1]], ch[0], Pass{OnInput: func(l int, x []float32) { inputs[ci][l] = slices.Clone(x) }}); err != nil {
			t.Fatal(err)
		}
		if inputs[ci][0] == nil || len(inputs[ci][L-1]) != (ch[1]-ch[0])*H {
			t.Fatalf("chunk %d: OnInput saw %d floats entering the last layer", ci, len(inputs[ci][L-1]))
		}
	}
	whole := make([][]float32, len(chunks))
	for ci, ch := range chunks {
		l, err := s.ForwardBatch(toks[ch[0]:ch[1]], ch[0], Pass{All: true, Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		whole[ci] = slices.Clone(l)
	}
	for _, from := range []int{1, 3, 4} {
		for ci, ch := range chunks {
			l, err := s.ForwardBatch(toks[ch[0]:ch[1]], ch[0], Pass{All: true, Plan: plan, From: from, Input: inputs[ci][from]})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l, whole[ci]) {
				t.Errorf("resumed at layer %d, chunk %d: logits differ from the whole pass by %g", from, ci, maxAbsDiff(l, whole[ci]))
			}
		}
	}
	// The logits from a token on are the tail of all of them.
	V := m.Config.VocabSize
	tail, err := s.ForwardBatch(toks[0:24], 0, Pass{All: true, Plan: plan, LogitsFrom: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Within float error, not to the bit: 14 rows may take other GEMM tiles
	// than 24 (AVX2's remainder tiles sum in another order).
	if len(tail) != 14*V || maxAbsDiff(tail, whole[0][10*V:]) > 1e-4 {
		t.Errorf("logits from token 10: %d floats, not the last 14 rows of all (%g)", len(tail), maxAbsDiff(tail, whole[0][10*V:]))
	}
	// Resuming past the cut layer misses it: the logits must differ.
	l, err := s.ForwardBatch(toks[24:40], 24, Pass{All: true, Plan: plan, From: 5, Input: inputs[1][5]})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(l, whole[1]) {
		t.Error("resumed after the cut layer, the logits equal the cut pass's")
	}
	for _, bad := range []Pass{{From: L, Input: inputs[0][1]}, {From: -1}, {From: 2, Input: inputs[0][2][:H]}, {All: true, LogitsFrom: 24}, {All: true, LogitsFrom: -1}} {
		if _, err := s.ForwardBatch(toks[0:24], 0, bad); err == nil {
			t.Errorf("resume at %d with %d floats: no error", bad.From, len(bad.Input))
		}
	}
}
