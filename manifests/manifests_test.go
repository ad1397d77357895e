package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltins(t *testing.T) {
	names := Builtin()
	if strings.Join(names, ",") != "lm,qa,summarize,translate" {
		t.Fatalf("built-in tasks %v", names)
	}
	want := map[string]struct {
		metric string
		rows   int
	}{"translate": {"bleu", 500}, "qa": {"qa", 500}, "lm": {"perplexity", 500}}
	for name, w := range want {
		m, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Metric != w.metric || m.GenTokens != 128 {
			t.Errorf("%s: metric %s gen %d", name, m.Metric, m.GenTokens)
		}
		rows, _, err := m.ReadRows("train", "")
		if err != nil || len(rows) != w.rows {
			t.Errorf("%s: %d train rows, %v", name, len(rows), err)
		}
		if _, _, err := m.ReadRows("eval", ""); err != nil {
			t.Errorf("%s eval: %v", name, err)
		}
	}
	s, _ := Load("summarize")
	if _, _, err := s.ReadRows("train", ""); err == nil || !strings.Contains(err.Error(), "--data") {
		t.Errorf("summarize without data: %v", err)
	}
	rows, _, err := s.ReadRows("eval", "testdata/summarize.jsonl")
	if err != nil || len(rows) != 4 {
		t.Fatalf("hand-written summarize rows: %d, %v", len(rows), err)
	}
	if got := s.Apply(rows[0].Prompt); !strings.HasPrefix(got, "Text: ") || !strings.HasSuffix(got, "\nSummary:") {
		t.Errorf("template applied: %q", got)
	}
}

func TestUserManifest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(`{"prompt": "Q: 1+1?\nA:", "reference": "2"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "math.json"), []byte(`{"name": "math", "template": "{prompt}", "train": "rows.jsonl", "eval": "rows.jsonl", "metric": "qa"}`), 0o644)
	for _, ref := range []string{filepath.Join(dir, "math.json"), "math"} {
		m, err := Load(ref, dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Stop) != 1 || m.Stop[0] != "\n" {
			t.Fatalf("%s: no stop field gives stop %q, want the newline", ref, m.Stop)
		}
		if len(m.Stop) != 1 || m.Stop[0] != "\n" {
			t.Fatalf("%s: no stop field gives stop %q, want the newline", ref, m.Stop)
		}
		rows, _, err := m.ReadRows("train", "")
		if err != nil || len(rows) != 1 || rows[0].Reference != "2" {
			t.Fatalf("%s: rows %v, %v", ref, rows, err)
		}
	}
}

func TestBadManifestsAndData(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`{"template": "{prompt}"}`, "missing fields: name, metric"},
		{`{"name": "x", "template": "no slot", "metric": "qa"}`, "has no {prompt}"},
		{`{"name": "x", "template": "{prompt}", "metric": "accuracy"}`, `unknown metric "accuracy"`},
		{`{"name": "x", "template": "{prompt}", "metric": "qa", "colour": 1}`, "unknown field"},
		{`{"name": `, "unexpected EOF"},
		{`{"name": "x", "template": "{prompt}", "metric": "qa", "stop": ["\n", ""]}`, "stop string 2 is empty"},
	} {
		if _, err := Parse("m.json", []byte(c.js)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "m.json") {
			t.Errorf("%s: %v, want %q", c.js, err, c.want)
		}
	}
	if _, err := Load("nosuchtask"); err == nil || !strings.Contains(err.Error(), "unknown task") {
		t.Errorf("unknown task: %v", err)
	}
	for _, c := range []struct{ data, want string }{
		{"", "no rows"},
		{"\n\n", "no rows"},
		{`{"prompt": "a"}` + "\n" + `{"prompt": "b"` + "\n", "d.jsonl:2"},
		{`{"reference": "a"}`, `d.jsonl:1: row has no "prompt"`},
		{`[1, 2]`, "d.jsonl:1"},
	} {
		if _, err := ParseRows("d.jsonl", strings.NewReader(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Builtin() {
		b, _ := builtin.ReadFile(n + ".json")
		f.Add(b, []byte(`{"prompt":"x","reference":"y"}`))
	}
	f.Fuzz(func(t *testing.T, manifest, rows []byte) {
		if m, err := Parse("f.json", manifest); err == nil {
			m.Apply("p")
		}
		ParseRows("f.jsonl", strings.NewReader(string(rows)))
	})
}
