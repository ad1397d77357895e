package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// exactPath runs the test on the float path: the BF16-rounded prefill
// rounds a batch's activations by its size, so a prompt prefilled in two
// pieces differs from one prefilled whole in the last bits.
func exactPath(t *testing.T) {
	t.Cleanup(kernels.Use(kernels.Active().WithBF16Prefill(false).WithBF16Rounding(false)))
}

// routedTiny is the tiny model with random routers over groups of 8 ranks
// (the bytes and kernels of fitted ones).
func routedTiny(t *testing.T) *runner.Model {
	t.Helper()
	p := tinyModel.Pack
	c := &p.Index.Config
	const G, rank = 8, 4
	H, groups := c.HiddenSize, (c.IntermediateSize+G-1)/G
	rng := rand.New(rand.NewPCG(3, 4))
	f32 := func(n int) []byte {
		b := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		return b
	}
	var rs []format.Router
	for _, sl := range p.Index.SparseLayers {
		rs = append(rs, format.Router{Layer: sl.Layer, Rank: rank, DType: format.F32, U: f32(rank * H), B: f32(rank), V: f32(groups * rank)})
	}
	out := filepath.Join(t.TempDir(), "routed.sip")
	if err := format.WithRouters(context.Background(), p, G, rs, out); err != nil {
		t.Fatal(err)
	}
	rp, err := format.Open(out, format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rp.Close() })
	m, err := runner.Load(rp, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPromptCacheMatchesCold: a slot that serves a conversation's requests
// from its cache answers each as a fresh slot does — the same greedy tokens,
// log probabilities (the logits) and decode set — for prompts that extend
// the conversation, diverge in it, shrink it and repeat it, under the
// paper's votes, the router and every loaded neuron; it prefills only what
// the cache lacks: past the common prefix, the last answer where the decode
// computed a selection, and under votes back to the last prompt's end; a
// repeated prompt nothing, and it answers as the first time to the bit.
func TestPromptCacheMatchesCold(t *testing.T) {
	exactPath(t)
	tok := tinyModel.Tokenizer
	p1 := tok.Encode("In the beginning God created the heaven and the earth. And the earth was without form, and void;", true)
	u2 := tok.Encode(" and darkness was upon the face of the deep. And the Spirit of God moved", false)
	u3 := tok.Encode(" And God said, Let there be light", false)
	other := tok.Encode(" Once upon a time", false)
	const answer = 6 // tokens a request generates: the first answer-1 decoded into the cache
	for _, c := range []struct {
		name string
		m    *runner.Model
		sel  *runner.Selection
	}{
		{"paper", tinyModel, &runner.Selection{Phi: 0.4, Alpha: 0.2, Compact: true, Method: runner.MethodPaper}},
		{"router", routedTiny(t), &runner.Selection{Phi: 0.4, Alpha: 0.2, Method: runner.MethodRouter}},
		{"dense", tinyModel, nil},
	} {
		e, err := NewEngine(EngineOptions{Model: c.m, Gamma: 1, Selection: c.sel, Ctx: 256, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		newSlot := func() *Slot {
			sl, err := e.NewSlot()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sl.Close)
			return sl
		}
		run := func(sl *Slot, prompt []int) *Result {
			res, err := sl.Generate(t.Context(), Request{Prompt: prompt, MaxTokens: answer, IgnoreEOS: true, Logprobs: true, TopLogprobs: 3})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		// The conversation so far: p1 and its answer, p2 and its answer.
		converse := func() (*Slot, []int, *Result) {
			sl := newSlot()
			p2 := slices.Concat(p1, run(sl, p1).Tokens, u2)
			return sl, p2, run(sl, p2)
		}
		check := func(what string, sl *Slot, prompt []int, got *Result, kept int) {
			t.Helper()
			cold := newSlot()
			want := run(cold, prompt)
			name := fmt.Sprintf("%s, %s", c.name, what)
			if got.PrefilledTokens != len(prompt)-kept || want.PrefilledTokens != len(prompt) {
				t.Errorf("%s: prefilled %d of %d prompt tokens, want %d", name, got.PrefilledTokens, len(prompt), len(prompt)-kept)
			}
			if !slices.Equal(got.Tokens, want.Tokens) || got.ActiveRecords != want.ActiveRecords {
				t.Errorf("%s: tokens %v (%d records a token), a fresh slot's %v (%d)", name, got.Tokens, got.ActiveRecords, want.Tokens, want.ActiveRecords)
			}
			for i := range min(len(got.Logprobs), len(want.Logprobs)) {
				g, w := got.Logprobs[i], want.Logprobs[i]
				d := math.Abs(g.Logprob - w.Logprob)
				for j := range min(len(g.Top), len(w.Top)) {
					if g.Top[j].ID != w.Top[j].ID {
						d = math.Inf(1)
					}
					d = max(d, math.Abs(g.Top[j].Logprob-w.Top[j].Logprob))
				}
				if d > 1e-4 {
					t.Errorf("%s: token %d's log probabilities differ from a fresh slot's by %g", name, i, d)
				}
			}
			for l, w := range cold.ss.Plan {
				g := sl.ss.Plan[l]
				if (g == nil) != (w == nil) || g != nil && (!slices.Equal(g.Ranks, w.Ranks) || g.Static != w.Static || g.Route != w.Route) {
					t.Errorf("%s: layer %d's decode set differs from a fresh slot's", name, l)
				}
			}
		}
		decoded := 0 // the answer's tokens that computed every loaded neuron
		if c.sel == nil {
			decoded = answer - 1
		}
		prefix := func(n int) int { // what the cache gives a prompt sharing n tokens with p2
			if c.name == "paper" {
				return len(p1) // the votes' mark at p1's end
			}
			return n
		}

		sl, p2, r2 := converse()
		check("extend", sl, p2, r2, len(p1)+decoded)

		sl, p2, r2 = converse()
		p3 := slices.Concat(p2, r2.Tokens, u3)
		check("extend again", sl, p3, run(sl, p3), len(p2)+decoded)

		sl, p2, _ = converse()
		q := slices.Concat(p2[:len(p1)+3], other)
		check("diverge", sl, q, run(sl, q), prefix(len(p1)+3))

		sl, p2, _ = converse()
		q = p2[:len(p2)-2]
		check("shrink", sl, q, run(sl, q), prefix(len(q)-1))

		// The same prompt again: nothing to prefill, the first answer.
		sl, p2, r2 = converse()
		again := run(sl, p2)
		check("repeat", sl, p2, again, len(p2))
		if !slices.Equal(again.Tokens, r2.Tokens) || !slices.EqualFunc(again.Logprobs, r2.Logprobs, func(a, b TokenLogprob) bool { return a.ID == b.ID && a.Logprob == b.Logprob }) {
			t.Errorf("%s, repeat: the answer differs from the first time's", c.name)
		}
	}
}

// TestSlotChoice: a request takes the free slot whose cache gives it the
// most tokens, if more than a tenth of its prompt; of equals, or when no
// slot gives that much, the least recently used one.
func TestSlotChoice(t *testing.T) {
	srv, err := New(newEngine(t, 256), Options{Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tok := tinyModel.Tokenizer
	a := tok.Encode("In the beginning God created the heaven and the earth.", true)
	b := tok.Encode("And the earth was without form, and void; and darkness was upon the face of the deep.", true)
	take := func(prompt []int) *Slot {
		srv.waiting <- struct{}{}
		<-srv.idle
		return srv.take(&Request{Prompt: prompt})
	}
	serve := func(prompt []int) *Slot {
		sl := take(prompt)
		if _, err := sl.Generate(t.Context(), Request{Prompt: prompt, MaxTokens: 4}); err != nil {
			t.Fatal(err)
		}
		srv.release(sl)
		return sl
	}
	sa := serve(a) // every slot empty: the first, as all are unused
	sb := serve(b) // a shares only BOS with b: the least recently used, not sa
	if sa == sb {
		t.Fatal("a prompt sharing only BOS took the other conversation's slot")
	}
	// The third slot is now the least recently used; a's continuation goes
	// to a's slot all the same, and b's to b's.
	if got := serve(slices.Concat(a, tok.Encode(" And God said", false))); got != sa {
		t.Fatal("a's next turn did not find a's slot")
	}
	if got := serve(slices.Concat(b, tok.Encode(" And God said", false))); got != sb {
		t.Fatal("b's next turn did not find b's slot")
	}
	// A new conversation takes the slot unused so far, then the least
	// recently used (sa), not the most recent (sb).
	sc := serve(tok.Encode("Once upon a time there was a little girl who lived in a village.", true))
	if sc == sa || sc == sb {
		t.Fatal("a new conversation evicted a cached one while a slot was unused")
	}
	if got := serve(tok.Encode("The quick brown fox jumps over the lazy dog, again and again.", true)); got != sa {
		t.Fatal("a new conversation did not take the least recently used slot")
	}
}

// TestPromptCacheOverHTTP: two conversations sent in turns to a server of
// two slots each find their own slot's cache: a second turn prefills only
// its new tokens.
func TestPromptCacheOverHTTP(t *testing.T) {
	var mu sync.Mutex
	var results []*Result
	ts := startServer(t, Options{Parallel: 2}, func(s *Server) {
		s.onResult = func(r *Result) {
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		}
	})
	c := ts.client()
	send := func(prompt string) (string, *Result) {
		res, err := c.Completions.New(t.Context(), openai.CompletionNewParams{
			Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(8), Temperature: openai.Float(0),
		})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return res.Choices[0].Text, results[len(results)-1]
	}
	a1 := "In the beginning God created the heaven and the earth."
	b1 := "And the earth was without form, and void; and darkness was upon the face of the deep."
	ta, ra := send(a1)
	tb, rb := send(b1)
	if ra.PrefilledTokens != ra.PromptTokens || rb.PrefilledTokens != rb.PromptTokens {
		t.Fatalf("first turns prefilled %d of %d and %d of %d", ra.PrefilledTokens, ra.PromptTokens, rb.PrefilledTokens, rb.PromptTokens)
	}
	for _, turn := range []struct {
		prompt string
		before *Result
	}{{a1 + ta + " And God said", ra}, {b1 + tb + " And God said", rb}} {
		_, r := send(turn.prompt)
		if r.PrefilledTokens >= r.PromptTokens-turn.before.PromptTokens {
			t.Errorf("%q: prefilled %d of %d tokens; the first turn had %d", turn.prompt, r.PrefilledTokens, r.PromptTokens, turn.before.PromptTokens)
		}
	}
}

// TestStreamedLogprobs: streamed chat and text completions carry the log
// probabilities a plain request gives, in OpenAI's shape, read through the
// official SDK: chat's per-chunk content entries and the legacy parallel
// lists with text offsets counted on across chunks; the tokens of a stop
// string, whose text is never sent, come with the last chunk.
func TestStreamedLogprobs(t *testing.T) {
	exactPath(t)
	ts := startServer(t, Options{Parallel: 1}, nil)
	c := ts.client()
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-4 }

	p := chatParams("Who made the heaven and the earth?", 16)
	p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(3)
	plain, err := c.Chat.Completions.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	text := plain.Choices[0].Message.Content
	if len(text) < 8 {
		t.Fatalf("answer %q too short to cut at a stop string", text)
	}
	for _, stop := range []string{"", text[len(text)/2 : len(text)/2+3]} {
		q := p
		if stop != "" {
			q.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
		}
		plain, err := c.Chat.Completions.New(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		want := plain.Choices[0].Logprobs.Content
		stream := c.Chat.Completions.NewStreaming(t.Context(), q)
		var got []openai.ChatCompletionTokenLogprob
		var b strings.Builder
		chunks := 0
		for stream.Next() {
			ch := stream.Current()
			if len(ch.Choices) > 0 {
				b.WriteString(ch.Choices[0].Delta.Content)
				if n := len(ch.Choices[0].Logprobs.Content); n > 0 {
					got = append(got, ch.Choices[0].Logprobs.Content...)
					chunks++
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if b.String() != plain.Choices[0].Message.Content || len(got) != len(want) || len(want) == 0 || chunks < 2 {
			t.Fatalf("stop %q: streamed %q with %d entries in %d chunks, plain %q with %d", stop, b.String(), len(got), chunks, plain.Choices[0].Message.Content, len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Token != w.Token || !slices.Equal(g.Bytes, w.Bytes) || !near(g.Logprob, w.Logprob) || len(g.TopLogprobs) != 3 || len(w.TopLogprobs) != 3 {
				t.Fatalf("stop %q: entry %d streamed %+v, plain %+v", stop, i, g, w)
			}
			for j := range w.TopLogprobs {
				if g.TopLogprobs[j].Token != w.TopLogprobs[j].Token || !near(g.TopLogprobs[j].Logprob, w.TopLogprobs[j].Logprob) {
					t.Fatalf("stop %q: entry %d's alternative %d streamed %+v, plain %+v", stop, i, j, g.TopLogprobs[j], w.TopLogprobs[j])
				}
			}
		}
	}

	prompt, _, _ := golden(t)
	cp := openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
		MaxTokens: openai.Int(12), Temperature: openai.Float(0), Logprobs: openai.Int(2),
	}
	res, err := c.Completions.New(t.Context(), cp)
	if err != nil {
		t.Fatal(err)
	}
	want := res.Choices[0].Logprobs
	stream := c.Completions.NewStreaming(t.Context(), cp)
	var got openai.CompletionChoiceLogprobs
	var b strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		b.WriteString(ch.Choices[0].Text)
		lp := ch.Choices[0].Logprobs
		got.Tokens = append(got.Tokens, lp.Tokens...)
		got.TokenLogprobs = append(got.TokenLogprobs, lp.TokenLogprobs...)
		got.TopLogprobs = append(got.TopLogprobs, lp.TopLogprobs...)
		got.TextOffset = append(got.TextOffset, lp.TextOffset...)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if b.String() != res.Choices[0].Text || !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.TextOffset, want.TextOffset) ||
		len(got.TokenLogprobs) != len(want.TokenLogprobs) || len(got.TopLogprobs) != len(want.TopLogprobs) || len(want.Tokens) != 12 {
		t.Fatalf("streamed %q %+v, plain %q %+v", b.String(), got, res.Choices[0].Text, want)
	}
	for i := range want.TokenLogprobs {
		if !near(got.TokenLogprobs[i], want.TokenLogprobs[i]) || len(got.TopLogprobs[i]) != len(want.TopLogprobs[i]) {
			t.Fatalf("token %d: streamed %v %v, plain %v %v", i, got.TokenLogprobs[i], got.TopLogprobs[i], want.TokenLogprobs[i], want.TopLogprobs[i])
		}
		for k, v := range want.TopLogprobs[i] {
			if !near(got.TopLogprobs[i][k], v) {
				t.Fatalf("token %d: alternative %q streamed %v, plain %v", i, k, got.TopLogprobs[i][k], v)
			}
		}
	}
}
