package manifests

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

func TestTokenize13a(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello, world.", []string{"Hello", ",", "world", "."}},
		{"3.14 and 1,000 stay", []string{"3.14", "and", "1,000", "stay"}},
		{"a-b 12-3 (x) \"q\"", []string{"a-b", "12", "-", "3", "(", "x", ")", "\"", "q", "\""}},
		{"it's &amp; done!", []string{"it's", "&", "done", "!"}}, // the apostrophe (0x27) is outside every 13a class
	} {
		if got := Tokenize13a(c.in); !slices.Equal(got, c.want) {
			t.Errorf("13a(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestBLEUHandComputed: hyp "the cat sat on the mat" vs ref "the cat is on
// the mat": 1-grams 5/6, 2-grams 3/5, 3-grams 1/4, 4-grams 0/3 → smoothed
// 100/(2·3); equal lengths, BP = 1.
func TestBLEUHandComputed(t *testing.T) {
	b := CorpusBLEU([]string{"the cat sat on the mat"}, []string{"the cat is on the mat"})
	want := math.Exp((math.Log(500.0/6) + math.Log(60) + math.Log(25) + math.Log(100.0/6)) / 4)
	if math.Abs(b.Score-want) > 1e-9 || b.HypLen != 6 || b.RefLen != 6 {
		t.Fatalf("BLEU %+v, want %g", b, want)
	}
	// Brevity: a 4-token hyp of a 6-token ref, every n-gram matching:
	// precisions 100, BP = exp(1 − 6/4).
	b = CorpusBLEU([]string{"the cat is on"}, []string{"the cat is on the mat"})
	if want := 100 * math.Exp(1-6.0/4); math.Abs(b.Score-want) > 1e-9 {
		t.Fatalf("brevity case %+v, want %g", b, want)
	}
	// Too short for any 4-gram: precision 0, BLEU 0 (as sacreBLEU).
	if b := CorpusBLEU([]string{"the cat"}, []string{"the cat is on the mat"}); b.Score != 0 {
		t.Fatalf("2-token hyp scored %v", b.Score)
	}
	if b := CorpusBLEU([]string{"x"}, []string{"y z"}); b.Score != 0 {
		t.Fatalf("no overlap scored %v", b.Score)
	}
}

// TestBLEUReproducesReference scores PyTorch's dense hypotheses with our
// BLEU: the reference evaluator reported 6.1286 (31.88/9.54/3.18/1.46, 8780/7494).
func TestBLEUReproducesReference(t *testing.T) {
	f, err := os.Open("../testdata/tinyllama/translate_es_en.eval.dense_outputs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hyps, refs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Hyp, Reference string }
		json.Unmarshal(sc.Bytes(), &r)
		hyps, refs = append(hyps, r.Hyp), append(refs, r.Reference)
	}
	b := CorpusBLEU(hyps, refs)
	if math.Abs(b.Score-6.128626853364634) > 1e-9 || b.HypLen != 8780 || b.RefLen != 7494 || math.Abs(b.Precisions[0]-31.879271070615033) > 1e-9 {
		t.Fatalf("BLEU %+v, want 6.1286", b)
	}
}

func TestQAAndRouge(t *testing.T) {
	if ExactMatch(" Samuel.", "samuel") != 1 || ExactMatch("1 Samuel", "Samuel") != 0 {
		t.Fatal("exact match")
	}
	if f := TokenF1("the first book", "first book of kings"); math.Abs(f-2*(2.0/3)*(2.0/4)/((2.0/3)+(2.0/4))) > 1e-12 {
		t.Fatalf("F1 %v", f)
	}
	// LCS("a b c d e", "a c e f") = 3: P 3/5, R 3/4.
	if r := RougeL("a b c d e", "A c e f"); math.Abs(r-2*0.6*0.75/1.35) > 1e-12 {
		t.Fatalf("ROUGE-L %v", r)
	}
	if RougeL("", "a") != 0 || TokenF1("", "") != 1 {
		t.Fatal("empty cases")
	}
}
