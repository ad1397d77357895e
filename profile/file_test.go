package profile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
)

func TestProfileRoundTripAndErrors(t *testing.T) {
	p := &Profile{Format: FileFormat, Version: 1, Task: "qa", Prompts: 2, Tokens: 10, GenTokens: 3,
		ModelHash: strings.Repeat("ab", 32), Layers: 2, Neurons: 3, Sums: [][]float64{{1, 2, 3}, {0, 0.5, 7}}}
	path := filepath.Join(t.TempDir(), "p.prof")
	if err := Write(path, p); err != nil {
		t.Fatal(err)
	}
	q, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if q.Sums[1][2] != 7 || q.Task != "qa" || q.Tokens != 10 {
		t.Fatalf("read back %+v", q)
	}
	if sc := q.Scores(); sc[0][2] != 0.3 {
		t.Fatalf("score %v, want Σ/tokens = 0.3", sc[0][2])
	}
	if cc := format.Concentration([]float64{4, 3, 2, 1}, []float64{0.25, 0.5, 1}); cc[0] != 0.4 || cc[1] != 0.7 || cc[2] != 1 {
		t.Fatalf("concentration %v", cc)
	}
	other := *q
	other.ModelHash = strings.Repeat("cd", 32)
	if _, err := Merge(q, &other); err == nil {
		t.Fatal("merge of two models accepted")
	}
	for _, c := range []struct{ js, want string }{
		{`{"format":"x"}`, "not a sipack profile"},
		{`{"format":"sipack-profile","version":2}`, "version 2"},
		{`{"format":"sipack-profile","version":1,"layers":1,"neurons":2,"tokens":1,"sums":[[1]]}`, "layer 0 has 1 sums"},
		{`{"format":"sipack-profile","version":1,"layers":1,"neurons":1,"tokens":1,"sums":[[-1]]}`, "not a finite non-negative"},
		{`{"format":"sipack-profile","version":1,"layers":1,"neurons":1,"tokens":0,"sums":[[1]]}`, "token count"},
		{`{"format":"sipack-profile","version":1,"layers":1,"neurons":1,"tokens":1,"model_hash":"zz","sums":[[1]]}`, "64 hex digits"},
		{`{"format":`, "unexpected EOF"},
	} {
		if _, err := Parse("x.prof", strings.NewReader(c.js)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.prof") {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"format":"sipack-profile","version":1,"task":"qa","prompts":1,"tokens":3,"layers":1,"neurons":2,"sums":[[1,2]]}`))
	f.Add([]byte(`{"format":"sipack-profile","version":2,"continue":"stop","task":"qa","prompts":1,"tokens":3,"gen_tokens":4,"layers":1,"neurons":2,"sums":[[1,2]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse("f", strings.NewReader(string(b)))
		if err != nil {
			return
		}
		p.Scores()
		p.Followed()
		if _, err := Merge(p, p); err != nil {
			t.Fatalf("a profile does not merge with itself: %v", err)
		}
		for _, s := range p.Sums {
			format.Concentration(s, []float64{0.3})
		}
	})
}
