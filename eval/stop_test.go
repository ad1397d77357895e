package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/eval"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/manifests"
)

// TestEvalHonoursManifestStop: the same translate rows under a manifest
// whose stop string is "e" give hypotheses without an "e" and fewer tokens,
// where the built-in stop ("\n") gives hypotheses with one. An eval that
// ignored the manifest's stop field would give the same output for both.
func TestEvalHonoursManifestStop(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	dir := t.TempDir()
	manifest := func(name, stop string) *manifests.Manifest {
		path := filepath.Join(dir, name+".json")
		js := `{"name": "` + name + `", "template": "{prompt}", "metric": "bleu", "max_new_tokens": 40, "stop": [` + stop + `]}`
		if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		man, err := manifests.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return man
	}
	data, err := filepath.Abs("../manifests/data/translate.eval.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	run := func(man *manifests.Manifest) *eval.Result {
		r, err := eval.Run(context.Background(), m, man, eval.Options{Data: data, Limit: 6, Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	newline, e := run(manifest("nl", `"\n"`)), run(manifest("e", `"e"`))
	withE := 0
	for i := range newline.Hyps {
		if strings.Contains(newline.Hyps[i], "e") {
			withE++
		}
		if strings.Contains(e.Hyps[i], "e") {
			t.Errorf("row %d: stop \"e\" yet the hypothesis is %q", i+1, e.Hyps[i])
		}
	}
	if withE == 0 {
		t.Fatalf("no hypothesis under stop \"\\n\" contains an e (%q): the test proves nothing", newline.Hyps)
	}
	if e.Tokens >= newline.Tokens {
		t.Errorf("stop \"e\" generated %d tokens, stop \"\\n\" %d: generation did not stop early", e.Tokens, newline.Tokens)
	}
}

// TestEvalReferencePrefix: a perplexity manifest's reference_prefix goes
// before each reference, so trimmed references with prefix " " score as
// references stored with their space, and unlike trimmed ones without it.
func TestEvalReferencePrefix(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, testutil.Tiny, convert.Options{}), 1)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := func(sp string) string {
		return `{"prompt": "Question: Who built the ark?\nAnswer:", "reference": "` + sp + `Noah"}` + "\n" +
			`{"prompt": "Question: What is the first book?\nAnswer:", "reference": "` + sp + `Genesis"}` + "\n"
	}
	score := func(prefix, data string) float64 {
		t.Helper()
		man, err := manifests.Load(write("m.json", `{"name": "m", "template": "{prompt}", "metric": "perplexity", "reference_prefix": "`+prefix+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		r, err := eval.Run(context.Background(), m, man, eval.Options{Data: data, Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r.Score
	}
	trimmed, spaced := write("trimmed.jsonl", rows("")), write("spaced.jsonl", rows(" "))
	withPrefix, stored, without := score(" ", trimmed), score("", spaced), score("", trimmed)
	if withPrefix != stored {
		t.Fatalf("trimmed references with prefix \" \" score %g, stored with the space %g", withPrefix, stored)
	}
	if withPrefix == without {
		t.Fatalf("the prefix changed nothing (%g)", without)
	}
	t.Logf("answer perplexity: with the space %.2f, without %.2f", withPrefix, without)
}
