package runner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// cacheTurn is what one request of a cached conversation computed.
type cacheTurn struct {
	kept   int         // prompt tokens taken from the cache
	tokens []int       // greedy tokens
	logits [][]float32 // the logits each token was chosen from
	plan   Plan
}

// turn runs prompt on ss as a server slot does: truncate to what the cache
// can give (Cached), start the rest, then n greedy tokens, the last one
// left pending.
func turn(t *testing.T, ss *Session, sel *Selection, prompt []int, n int) cacheTurn {
	t.Helper()
	var c cacheTurn
	c.kept = ss.Cached(prompt, sel)
	ss.Truncate(c.kept)
	ss.Sel = sel
	logits, err := ss.Start(prompt[c.kept:])
	if err != nil {
		t.Fatal(err)
	}
	c.plan = ss.Plan
	for i := range n {
		tok := Argmax(logits)
		c.tokens, c.logits = append(c.tokens, tok), append(c.logits, slices.Clone(logits))
		ss.History = append(ss.History, tok)
		if i < n-1 {
			if logits, err = ss.Next(tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	return c
}

// TestCachedMatchesCold: a conversation's request that takes Cached(prompt)
// tokens from its session's cache and starts the rest computes what an
// empty session starting the whole prompt computes — the same decode plan,
// greedy tokens and logits — for prompts that extend the conversation,
// diverge in it, shrink it and repeat it, under the paper's votes, the
// router and every loaded neuron. Cached keeps the common prefix within the
// prefilled part (a selecting plan's decode steps are not a prompt's, so
// the last answer is prefilled again), under votes back to the last vote
// mark, and leaves at least one token to prefill unless the prompt ends
// where the last prefill did (a repeat: nothing is prefilled, and its
// logits are the first time's to the bit). The logits agree to 1e-4
// on the exact path; the BF16-rounded prefill rounds by batch size, as
// TestSessionMultiTurnMatchesOneShot says, and agrees to about 1e-2.
func TestCachedMatchesCold(t *testing.T) {
	exactPath(t)
	path, _ := routedPack(t, 8)
	m := loadModel(t, path, 0.7)
	pool := newPool(2)
	defer pool.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	toks := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = 3 + rng.IntN(m.Config.VocabSize-3)
		}
		return out
	}
	const answer = 6 // tokens a turn generates; the first answer-1 run through Next
	p1, u2, u3, other := toks(40), toks(25), toks(9), toks(4)
	sels := []struct {
		name string
		sel  *Selection
	}{
		{"paper", &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true, Method: MethodPaper}},
		{"router", &Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: MethodRouter}},
		{"dense", nil},
	}
	for _, s := range sels {
		newSession := func() *Session {
			ss, err := m.NewSession(pool, 256, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
			if err != nil {
				t.Fatal(err)
			}
			return ss
		}
		// The conversation so far: p1, its answer, then p2 and its answer.
		converse := func() (*Session, []int, cacheTurn) {
			ss := newSession()
			a1 := turn(t, ss, s.sel, p1, answer)
			p2 := slices.Concat(p1, a1.tokens, u2)
			return ss, p2, turn(t, ss, s.sel, p2, answer)
		}
		check := func(what string, got cacheTurn, prompt []int, kept int) {
			t.Helper()
			want := turn(t, newSession(), s.sel, prompt, answer)
			name := fmt.Sprintf("%s, %s", s.name, what)
			if got.kept != kept {
				t.Errorf("%s: %d of %d prompt tokens from the cache, want %d", name, got.kept, len(prompt), kept)
			}
			if !slices.Equal(got.tokens, want.tokens) {
				t.Errorf("%s: greedy tokens %v, a cold session's %v", name, got.tokens, want.tokens)
			}
			for i := range min(len(got.logits), len(want.logits)) {
				if d := maxAbsDiff(got.logits[i], want.logits[i]); d > 1e-4 {
					t.Errorf("%s: token %d's logits differ from a cold session's by %g", name, i, d)
				}
			}
			for l := range want.plan {
				g, w := got.plan[l], want.plan[l]
				if (g == nil) != (w == nil) || g != nil && (!slices.Equal(g.Ranks, w.Ranks) || g.Static != w.Static || g.Route != w.Route) {
					t.Errorf("%s: layer %d's decode set differs from a cold session's", name, l)
				}
			}
		}
		// What the cache keeps of p2 (after p1 and its answer) and of a
		// prompt whose common prefix with the conversation is n tokens.
		votes := s.name == "paper"
		decoded := 0 // the answer's tokens a dense plan ran: a prompt's keys and values
		if s.sel == nil {
			decoded = answer - 1
		}
		prefix := func(n int) int {
			if votes {
				return len(p1) // the mark at p1's end: the last at or before n
			}
			return n
		}

		_, p2, t2 := converse()
		check("extend", t2, p2, len(p1)+decoded)

		ss, p2, t2 := converse()
		p3 := slices.Concat(p2, t2.tokens, u3)
		kept := len(p2) + decoded
		check("extend again", turn(t, ss, s.sel, p3, answer), p3, kept)

		ss, p2, _ = converse()
		q := slices.Concat(p2[:len(p1)+3], other)
		check("diverge", turn(t, ss, s.sel, q, answer), q, prefix(len(p1)+3))

		ss, p2, _ = converse()
		q = p2[:len(p2)-2]
		check("shrink", turn(t, ss, s.sel, q, answer), q, prefix(len(q)-1))

		// The same prompt again starts from its prefill's logits: those of
		// the first time to the bit.
		ss, p2, t2 = converse()
		again := turn(t, ss, s.sel, p2, answer)
		check("repeat", again, p2, len(p2))
		if !slices.Equal(again.logits[0], t2.logits[0]) || !slices.Equal(again.tokens, t2.tokens) {
			t.Errorf("%s, repeat: the logits or tokens differ from the first time's", s.name)
		}
	}
}

// TestTruncate: Truncate drops the cache past n with the pending token, the
// vote marks past n and the last prefill's logits if they lie past n;
// Cached of an empty session is 0, and a session keeps at most maxMarks
// marks.
func TestTruncate(t *testing.T) {
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convertOptions()), 0.7)
	pool := newPool(1)
	defer pool.Close()
	ss, err := m.NewSession(pool, 128, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	sel := &Selection{Phi: 0.4, Alpha: 0.2, Method: MethodPaper}
	prompt := []int{1, 450, 996, 310, 278, 3186, 11, 285}
	if n := ss.Cached(prompt, sel); n != 0 {
		t.Fatalf("an empty session has %d tokens cached", n)
	}
	ss.Sel = sel
	for i := range maxMarks + 3 {
		if _, err := ss.Start(prompt[i%len(prompt) : i%len(prompt)+1]); err != nil {
			t.Fatal(err)
		}
	}
	if len(ss.marks) != maxMarks || ss.marks[0].pos != 4 || ss.marks[maxMarks-1].pos != maxMarks+3 {
		t.Fatalf("%d marks from %d, want %d ending at %d", len(ss.marks), ss.marks[0].pos, maxMarks, maxMarks+3)
	}
	ss.History = append(ss.History, 7) // a pending token
	if n := ss.Cached(ss.History[:ss.Pos], sel); n != ss.Pos {
		t.Fatalf("the prompt of the cache: %d of %d tokens cached, want all (the last prefill's logits are kept)", n, ss.Pos)
	}
	ss.Truncate(6)
	if ss.Pos != 6 || len(ss.History) != 6 || len(ss.Pending()) != 0 || ss.exact != 6 || ss.marks[len(ss.marks)-1].pos != 6 || len(ss.tail) != 0 {
		t.Fatalf("after Truncate(6): Pos %d, history %d, pending %v, exact %d, last mark %d, %d logits kept", ss.Pos, len(ss.History), ss.Pending(), ss.exact, ss.marks[len(ss.marks)-1].pos, len(ss.tail))
	}
	if n := ss.Cached(ss.History, sel); n != 5 {
		t.Fatalf("after Truncate(6), the first 6 tokens: %d cached, want 5 (no logits kept at 6)", n)
	}
	if _, err := ss.Start(nil); err == nil {
		t.Fatal("an empty prompt without kept logits started")
	}
	ss.Truncate(100)
	if ss.Pos != 6 {
		t.Fatalf("Truncate past Pos moved it to %d", ss.Pos)
	}
}
