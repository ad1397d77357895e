package constrain

import (
	"bytes"
	"encoding/json"
	"math/bits"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sipack/sipack/constrain/schematest"
	"github.com/sipack/sipack/tokenizer"
)

// loadVocab reads a tokenizer.json into token bytes by id, special (added)
// tokens left out as the server leaves them out.
func loadVocab(t testing.TB, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	tk, err := tokenizer.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Added []struct {
			ID      int  `json:"id"`
			Special bool `json:"special"`
		} `json:"added_tokens"`
	}
	json.Unmarshal(raw, &doc)
	toks := make([][]byte, tk.VocabSize())
	for id := range toks {
		toks[id] = tk.TokenBytes(id)
	}
	for _, a := range doc.Added {
		if a.Special && a.ID < len(toks) {
			toks[a.ID] = nil
		}
	}
	return toks
}

// naiveMask is the mask by definition: each token fed to a copy of the state.
func naiveMask(m *Matcher, toks [][]byte, mask []uint64) {
	clear(mask)
	for id, b := range toks {
		if len(b) == 0 {
			continue
		}
		r := rec{stack: append([]frame(nil), m.r.stack...)}
		live := true
		for _, c := range b {
			if live = r.step(c); !live {
				break
			}
		}
		if live {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
}

// TestRandomWalks: on random schemas, random generations through the masks
// (a token drawn among those allowed, EOS when the value may end) always
// end in JSON that validates; at every step the trie walk's mask is the
// mask by definition, token by token.
func TestRandomWalks(t *testing.T) {
	toks := loadVocab(t, "../testdata/tinyllama/tokenizer.json")
	v := NewVocab(toks)
	rng := rand.New(rand.NewPCG(7, 11))
	mask := make([]uint64, (len(toks)+63)/64)
	want := make([]uint64, len(mask))
	steps := 0
	for i := range 48 {
		var schema []byte
		var g *Grammar
		var sch *jsonschema.Schema
		if i%8 == 7 {
			g, schema = JSONObject(), []byte(`{"type": "object"}`)
		} else {
			schema, _ = json.Marshal(schematest.Schema(rng, schematest.Options{Depth: 2, MaxProps: 3, MaxItems: 3, MaxLen: 8}))
			var err error
			if g, err = Compile(schema); err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
		}
		sch = schematest.Validator(t, schema)
		for range 2 {
			m := g.Matcher(v)
			var out []byte
			for n := 0; ; n++ {
				if n > 600 {
					t.Fatalf("%s: no end after %d tokens: %q", schema, n, out)
				}
				count := m.Fill(mask)
				if i%4 == 0 { // the check by definition is slow: every fourth schema
					naiveMask(m, toks, want)
					for w := range mask {
						if d := mask[w] ^ want[w]; d != 0 {
							id := w*64 + bits.TrailingZeros64(d)
							t.Fatalf("%s after %q: token %d %q: trie walk %v, by definition %v",
								schema, out, id, toks[id], mask[w]&(d&-d) != 0, want[w]&(d&-d) != 0)
						}
					}
				}
				if m.CanEnd() && (count == 0 || rng.IntN(3) == 0) {
					break
				}
				if count == 0 {
					t.Fatalf("%s after %q: no token allowed and the value is not complete", schema, out)
				}
				id := pick(rng, mask, count, toks, i%8 == 7)
				if !m.Accept(id) {
					t.Fatalf("%s after %q: allowed token %q refused", schema, out, toks[id])
				}
				out = append(out, toks[id]...)
				steps++
				if m.Done() {
					break
				}
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("%s: output %q does not parse: %v", schema, out, err)
			}
			if testing.Verbose() && steps < 400 {
				t.Logf("%s\n  %s", schema, out)
			}
			if err := sch.Validate(inst); err != nil {
				t.Fatalf("%s: output %q does not validate: %v", schema, out, err)
			}
		}
	}
	t.Logf("%d tokens generated", steps)
}

// pick draws an allowed token: uniformly, or for free-form JSON (which has
// no end of its own) one that closes something half the time, when any does.
func pick(rng *rand.Rand, mask []uint64, count int, toks [][]byte, closing bool) int {
	var ids []int
	for w, x := range mask {
		for ; x != 0; x &= x - 1 {
			ids = append(ids, w*64+bits.TrailingZeros64(x))
		}
	}
	if closing && rng.IntN(2) == 0 {
		var closers []int
		for _, id := range ids {
			if bytes.ContainsAny(toks[id], `"}]`) {
				closers = append(closers, id)
			}
		}
		if len(closers) > 0 {
			return closers[rng.IntN(len(closers))]
		}
	}
	return ids[rng.IntN(len(ids))]
}
