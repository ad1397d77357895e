package runner

import (
	"slices"
	"testing"
)

// TestMakeRoom: a session that shifts its context holds what a fresh
// session holds after a prompt of the kept tokens — the same next logits,
// bit for bit — and a generation that runs past the context shifts and
// goes on instead of stopping.
func TestMakeRoom(t *testing.T) {
	m := loadModel(t, packOf(t, "../testdata/tinyllama", convertOptions()), 1)
	pool := newPool(1)
	defer pool.Close()
	greedy := SamplerConfig{TopP: 1, RepetitionPenalty: 1}
	a, err := m.NewSession(pool, 40, greedy)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{1, 450, 996, 310, 278, 3186}
	st, err := a.Generate(prompt, GenerateOptions{MaxTokens: 90, Shift: true, Keep: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st.GeneratedTokens != 90 || st.Dropped == 0 || st.StopReason != "length" {
		t.Fatalf("generated %d, dropped %d, stop %q: want 90 tokens past a 40-token context", st.GeneratedTokens, st.Dropped, st.StopReason)
	}
	if !slices.Equal(a.History[:3], prompt[:3]) {
		t.Fatalf("history starts %v, want the kept %v", a.History[:3], prompt[:3])
	}
	// Force one more shift and compare with a fresh session on the kept tokens.
	if _, err := a.MakeRoom(3, a.S.Ctx-a.Pos+1); err != nil {
		t.Fatal(err)
	}
	kept := slices.Clone(a.History[:a.Pos])
	next := a.Pending()[0]
	a.Plan = nil
	got, err := a.Next(next)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewSession(pool, 40, greedy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Start(kept); err != nil {
		t.Fatal(err)
	}
	want, err := b.Next(next)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("after the shift the logits differ from a fresh session's on the kept tokens (max |Δ| %g)", maxAbsDiff(got, want))
	}
	// Without Shift the same generation stops at the context.
	c, _ := m.NewSession(pool, 40, greedy)
	if st, err := c.Generate(prompt, GenerateOptions{MaxTokens: 90}); err != nil || st.StopReason != "context" {
		t.Fatalf("without Shift: %v, stop %q; want the context stop", err, st.StopReason)
	}
	// A prompt that cannot fit even after dropping all but the kept tokens.
	if _, err := a.Generate(make([]int, 39), GenerateOptions{MaxTokens: 1, Shift: true, Keep: 3}); err == nil {
		t.Fatal("a 39-token prompt after 3 kept tokens fit a 40-token context")
	}
}
