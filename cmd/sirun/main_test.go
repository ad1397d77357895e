package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/cmd/internal/clitest"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

var bin, pack string

// TestMain builds sirun and a pack of the tiny model once.
func TestMain(m *testing.M) {
	var dir string
	var err error
	if bin, dir, err = clitest.Build("sirun"); err != nil {
		panic(err)
	}
	// Verified packs are remembered in the user's cache: the tests' own.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	pack = filepath.Join(dir, "tiny.sip")
	if _, err := convert.Convert(context.Background(), convert.Options{ModelDir: "../../testdata/tinyllama", Output: pack}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, bin, stdin, args...)
}

func goldenGreedy(t *testing.T) (prompt string, ids, greedy []int, text string) {
	raw, err := os.ReadFile("../../testdata/tinyllama/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Prompt   string `json:"prompt"`
			InputIDs []int  `json:"input_ids"`
			Greedy   []int  `json:"greedy_32"`
			Text     string `json:"greedy_32_text"`
		} `json:"cases"`
	}
	json.Unmarshal(raw, &g)
	c := g.Cases[1] // "In the beginning"
	return c.Prompt, c.InputIDs, c.Greedy, c.Text
}

func TestGenerateMatchesGolden(t *testing.T) {
	prompt, ids, greedy, text := goldenGreedy(t)
	idsJSON, _ := json.Marshal(ids)
	out, errOut, code := run(t, "", pack, "--prompt-ids", string(idsJSON), "-n", "32", "--temperature", "0", "--output-ids", "--ignore-eos")
	var got []int
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || !slices.Equal(got, greedy) {
		t.Fatalf("--output-ids (%d): %q, want %v\n%s", code, out, greedy, errOut)
	}
	// The same through text in, text out, and the subcommand spelling.
	out, errOut, code = run(t, "", "generate", pack, "-p", prompt, "-n", "32", "--temp", "0", "--ignore-eos")
	if code != 0 || strings.TrimSuffix(out, "\n") != text {
		t.Fatalf("text (%d): %q, want %q\n%s", code, out, text, errOut)
	}
	for _, want := range []string{"prompt", "tok/s", "time to first token", "peak RSS"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
	}
	// A prompt file gives the same.
	f := filepath.Join(t.TempDir(), "p.txt")
	os.WriteFile(f, []byte(prompt), 0o644)
	out2, _, _ := run(t, "", pack, "-f", f, "-n", "32", "--temp", "0", "--ignore-eos", "-q")
	if out2 != out {
		t.Fatalf("-f gave %q, -p gave %q", out2, out)
	}
}

func TestSeedReproducible(t *testing.T) {
	a, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "42", "-q")
	b, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "42", "-q")
	c, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "24", "--seed", "43", "-q")
	if a != b || a == c {
		t.Fatalf("seed 42 twice: %q / %q; seed 43: %q", a, b, c)
	}
}

func TestInteractive(t *testing.T) {
	out, errOut, code := run(t, "And God said\nSpanish: Y dijo Dios\n", pack, "-i", "-p", "In the beginning", "-n", "8", "--temp", "0")
	if code != 0 || strings.Count(out, "\n") < 3 || strings.Count(errOut, "> ") < 2 {
		t.Fatalf("interactive (%d): stdout %q\nstderr %s", code, out, errOut)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	b, _ := os.ReadFile(pack)
	trunc := filepath.Join(dir, "t.sip")
	os.WriteFile(trunc, b[:len(b)-4096], 0o644)
	corrupt := filepath.Join(dir, "c.sip")
	c := append([]byte(nil), b...)
	c[len(c)-100] ^= 0xff
	os.WriteFile(corrupt, c, 0o644)
	long := strings.Repeat("In the beginning ", 400)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{trunc, "-p", "x"}, "truncated"},
		{[]string{corrupt, "-p", "x", "--verify"}, "BLAKE3 mismatch"},
		{[]string{pack, "-p", long}, "longer than the context"},
		{[]string{pack, "-p", "x", "-n", "-3"}, "-n must be ≥ 0"},
		{[]string{pack, "-p", "x", "--gamma", "1.5"}, "--gamma must be in (0, 1]"},
		{[]string{pack, "-p", "x", "--gamma", "0"}, "--gamma must be in (0, 1]"},
		{[]string{pack, "-p", "x", "--top-p", "0"}, "--top-p"},
		{[]string{pack, "-p", "x", "--ctx", "100000"}, "--ctx-size must be in [1, 512]"},
		{[]string{pack, "--prompt-ids", "[1,99999]"}, "outside the vocabulary"},
		{[]string{pack, "--prompt-ids", "nope"}, "JSON array"},
		{[]string{pack, "-p", "x", "--frobnicate"}, "unknown flag --frobnicate ("},
		{[]string{pack, "-p", "x", "--temprature", "0"}, "did you mean --temperature?"},
		{[]string{"-m", pack, pack, "-p", "x"}, "give the pack once"},
		{[]string{pack}, "no prompt"},
		{[]string{filepath.Join(dir, "none.sip"), "-p", "x"}, "no such file"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, "", c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sirun %v: exit %d, stderr %q; want non-zero and %q", c.args, code, errOut, c.want)
		}
	}
	// A far-off flag gets no hint, and flags without a pack one line, not the help.
	for _, args := range [][]string{{pack, "-p", "x", "--frobnicate"}, {"--temp", "0.5"}} {
		out, errOut, code := run(t, "", args...)
		if code == 0 || strings.Contains(errOut, "did you mean") || strings.Contains(out+errOut, "USAGE:") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("sirun %v: exit %d, stdout %d bytes, stderr %q; want one line", args, code, len(out), errOut)
		}
	}
	// Without --verify too: a pack is checked the first time it runs.
	if _, errOut, code := run(t, "", corrupt, "-p", "x", "-n", "1", "-q"); code == 0 || !strings.Contains(errOut, "BLAKE3 mismatch") {
		t.Errorf("a pack with a flipped weight ran on its first load (exit %d): %s", code, errOut)
	}
}

// TestVerifiedOnce: a pack's loaded bytes are hashed on its first run and
// not again until the file changes; a change made after a good run is
// caught on the next; --verify hashes every time; a cache that cannot be
// written only costs the check every run.
func TestVerifiedOnce(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	b, _ := os.ReadFile(pack)
	p := filepath.Join(dir, "p.sip")
	os.WriteFile(p, b, 0o644)
	checks := func(args ...string) int {
		t.Helper()
		_, errOut, code := run(t, "", append([]string{p, "-p", "x", "-n", "1"}, args...)...)
		if code != 0 {
			t.Fatalf("sirun %v (%d): %s", args, code, errOut)
		}
		return strings.Count(errOut, "against their BLAKE3 hashes")
	}
	if n := checks(); n != 1 {
		t.Fatalf("first run checked %d times, want 1", n)
	}
	if n := checks(); n != 0 {
		t.Fatalf("second run checked again")
	}
	if n := checks("--verify"); n != 1 {
		t.Fatalf("--verify did not check")
	}
	if n := checks("--gamma", "0.5"); n != 0 {
		t.Fatalf("a smaller γ than the one checked was checked again")
	}
	// Damage the file in place, as a disk or a careless tool would.
	f, _ := os.OpenFile(p, os.O_RDWR, 0)
	f.WriteAt([]byte{0x5a}, int64(len(b)-100))
	f.Close()
	if _, errOut, code := run(t, "", p, "-p", "x", "-n", "1"); code == 0 || !strings.Contains(errOut, "BLAKE3 mismatch") {
		t.Fatalf("a pack changed after a good run ran unchecked (exit %d): %s", code, errOut)
	}
	os.WriteFile(p, b, 0o644)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(p, "cannot")) // below a regular file
	if n := checks(); n != 1 {
		t.Fatalf("with no cache: checked %d times, want 1", n)
	}
	if n := checks(); n != 1 {
		t.Fatalf("with no cache the second run was not checked")
	}
}

// TestInteractiveContextShift: an interactive session longer than its
// context drops its oldest turns and goes on, and says so; every turn is
// answered and the exit is 0.
func TestInteractiveContextShift(t *testing.T) {
	turns := strings.Repeat("And God said, Let there be light\n", 8)
	out, errOut, code := run(t, turns, pack, "-i", "-p", "In the beginning", "-n", "24", "--temp", "0", "--ignore-eos", "--ctx", "64")
	if code != 0 || strings.Count(out, "\n") < 9 || !strings.Contains(errOut, "was full: dropped the oldest") || strings.Contains(errOut, "does not fit") {
		t.Fatalf("interactive past the context (%d): stdout %q\nstderr %s", code, out, errOut)
	}
	// A turn that cannot fit at all fails, and the exit says so.
	long := strings.Repeat("In the beginning ", 40) + "\n"
	if _, errOut, code := run(t, long, pack, "-i", "-p", "In", "-n", "4", "--ctx", "64"); code == 0 || !strings.Contains(errOut, "do not fit the context") {
		t.Fatalf("an interactive turn longer than the context (%d): %s", code, errOut)
	}
}

func TestEvalAndSelectionFlags(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "", "eval", "--task", "qa", pack, "--limit", "6", "--json", "-q", "--gamma", "0.7", "--phi", "0.4")
	if code != 0 {
		t.Fatalf("eval (%d): %s", code, errOut)
	}
	var res struct {
		Metric string             `json:"metric"`
		Score  float64            `json:"score"`
		N      int                `json:"n"`
		Phi    float64            `json:"phi"`
		Extra  map[string]float64 `json:"extra"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Metric != "qa" || res.N != 6 || res.Phi != 0.4 {
		t.Fatalf("eval json %q: %+v %v", out, res, err)
	}
	if _, ok := res.Extra["token_f1"]; !ok {
		t.Fatalf("qa eval lacks token F1: %+v", res)
	}
	// Against the same pack computed whole, with the bootstrap's intervals:
	// the ratio is the two scores', the intervals hold what they bound.
	out, errOut, code = run(t, "", "eval", "--task", "translate", pack, "--limit", "12", "--json", "-q", "--gamma", "0.5", "--phi", "0.3", "--baseline", pack, "--bootstrap", "200")
	var vs struct {
		Score     float64    `json:"score"`
		CI        [2]float64 `json:"ci95"`
		Ratio     float64    `json:"ratio"`
		RatioCI   [2]float64 `json:"ratio_ci95"`
		Bootstrap int        `json:"bootstrap"`
		Baseline  struct {
			Score float64 `json:"score"`
		} `json:"baseline"`
	}
	if err := json.Unmarshal([]byte(out), &vs); err != nil || code != 0 {
		t.Fatalf("eval --baseline --bootstrap (%d): %q %v\n%s", code, out, err, errOut)
	}
	if vs.Baseline.Score <= 0 || vs.Ratio != vs.Score/vs.Baseline.Score || vs.Bootstrap != 200 ||
		!(vs.CI[0] <= vs.Score && vs.Score <= vs.CI[1] && vs.CI[0] < vs.CI[1]) || !(vs.RatioCI[0] <= vs.Ratio && vs.Ratio <= vs.RatioCI[1]) {
		t.Fatalf("eval --baseline --bootstrap: %+v", vs)
	}
	out, _, code = run(t, "", "eval", "--task", "translate", pack, "--limit", "12", "-q", "--baseline", pack, "--bootstrap", "50")
	if code != 0 || !strings.Contains(out, "every neuron): 100.0 %, 95 % interval 100.0 – 100.0 % (paired)") {
		t.Fatalf("eval of a pack against itself whole (%d): %q", code, out)
	}
	// --baseline-selected runs the baseline at the same γ and φ: the same
	// pack scores exactly what the sparse run does (not the whole pack's
	// score, which differs at γ0.5 φ0.3 on these rows).
	if vs.Score == vs.Baseline.Score {
		t.Fatalf("γ0.5 φ0.3 scores %v, as the whole pack: no difference to test against", vs.Score)
	}
	out, _, code = run(t, "", "eval", "--task", "translate", pack, "--limit", "12", "-q", "--gamma", "0.5", "--phi", "0.3", "--baseline", pack, "--baseline-selected", "--bootstrap", "50")
	if code != 0 || !strings.Contains(out, "the same selection): 100.0 %, 95 % interval 100.0 – 100.0 % (paired)") {
		t.Fatalf("eval of a pack against itself at the same selection (%d): %q", code, out)
	}
	out, _, code = run(t, "", "perplexity", pack, "../../testdata/tinyllama/heldout/ppl_en_ruth_web.txt", "--json")
	var ppl struct {
		PPL    float64 `json:"ppl"`
		Tokens int     `json:"tokens"`
	}
	json.Unmarshal([]byte(out), &ppl)
	// The reference evaluator: 43.002 over 3608 tokens (512-token windows with bos).
	if code != 0 || ppl.Tokens != 3608 || ppl.PPL < 42.99 || ppl.PPL > 43.02 {
		t.Fatalf("Ruth perplexity (%d): %q", code, out)
	}
	// A memory budget picks a γ and says which.
	_, errOut, code = run(t, "", pack, "-p", "x", "-n", "2", "--mem-budget", "36MiB")
	if code != 0 || !strings.Contains(errOut, "loading γ =") {
		t.Fatalf("--mem-budget (%d): %s", code, errOut)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{pack, "-p", "x", "--gamma", "-1"}, "--gamma must be in (0, 1]"},
		{[]string{pack, "-p", "x", "--gamma", "0.5", "--phi", "0.6"}, "exceeds the 384 loaded (γ = 0.50)"},
		{[]string{pack, "-p", "x", "--mem-budget", "1MiB"}, "memory budget 1.0 MiB is below the least this run needs"},
		{[]string{pack, "-p", "x", "--mem-budget", "lots"}, "cannot parse size"},
		{[]string{pack, "-p", "x", "--select", "gate"}, "unknown selection \"gate\""},
		{[]string{"eval", "--task", "summarize", pack}, "no eval data"},
		{[]string{"eval", pack}, "needs --task"},
		{[]string{"eval", "--task", "qa", "--data", filepath.Join(dir, "none.jsonl"), pack}, "no such file"},
		{[]string{"perplexity", pack}, "needs PACK and FILE"},
		{[]string{"eval", "--task", "qa", "--bootstrap", "-1", pack}, "--bootstrap must be ≥ 0"},
		{[]string{"eval", "--task", "qa", "--baseline-selected", pack}, "--baseline-selected needs --baseline PACK"},
		{[]string{"eval", "--task", "qa", "--limit", "2", "--baseline", filepath.Join(dir, "none.sip"), pack}, "none.sip"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, "", c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sirun %v: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// TestReadsStayInThePrefix: a pack cut right after the γ = 0.5 prefix runs
// at γ = 0.5, and above it fails with an error saying what it holds.
func TestReadsStayInThePrefix(t *testing.T) {
	b, _ := os.ReadFile(pack)
	// 768 neurons, bands of 64: γ = 0.5 is 384 ranks = 6 bands of 576 KiB after the FFN offset.
	p := filepath.Join(t.TempDir(), "cut.sip")
	const ffnOff, band = 6725632, 589824
	os.WriteFile(p, b[:ffnOff+6*band], 0o644)
	out, errOut, code := run(t, "", p, "-p", "In the beginning", "-n", "8", "--temp", "0", "--gamma", "0.5", "--verify")
	full, _, _ := run(t, "", pack, "-p", "In the beginning", "-n", "8", "--temp", "0", "--gamma", "0.5")
	if code != 0 || out != full {
		t.Fatalf("cut pack at γ 0.5 (%d): %q vs %q\n%s", code, out, full, errOut)
	}
	_, errOut, code = run(t, "", p, "-p", "x", "--gamma", "0.7")
	if code == 0 || !strings.Contains(errOut, "truncated: the file holds whole bands for 384 of 768 ranks (γ ≤ 0.500)") {
		t.Fatalf("cut pack at γ 0.7 (%d): %s", code, errOut)
	}
}

// TestBenchRunsOnAPack: `sirun bench --json PACK` prints one JSON object
// with the fields the design names, consistent with each other; bad flags
// are refused. (Speed is never asserted: this only checks that it runs.)
func TestBenchRunsOnAPack(t *testing.T) {
	// The pack twice: the second report compares itself with the first's
	// dense decode, round by round.
	// --prefill counts with --quick (it once capped the prompt at 64).
	out, errOut, code := run(t, "", "bench", "--quick", "--json", "--rounds", "2", "--tokens", "2", "--prefill", "72", "--threads", "2", pack, pack)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one JSON line per pack, got %q", out)
	}
	var second struct {
		FirstPack    string  `json:"first_pack"`
		DenseVsFirst float64 `json:"dense_vs_first_dense"`
		Grid         []struct {
			VsFirst float64 `json:"speedup_vs_first_dense"`
		} `json:"grid"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second.FirstPack != pack || second.DenseVsFirst <= 0 || len(second.Grid) != 1 || second.Grid[0].VsFirst <= 0 {
		t.Fatalf("cross-pack ratios missing: %+v", second)
	}
	out = lines[0]
	var r struct {
		BandwidthGBs       float64 `json:"bandwidth_gbs"`
		Threads            int     `json:"threads"`
		DenseTokS          float64 `json:"dense_tok_s"`
		DenseBoundFraction float64 `json:"dense_bound_fraction"`
		DenseBytes         uint64  `json:"dense_bytes_per_token"`
		PrefillTokS        float64 `json:"prefill_tok_s"`
		PrefillColdTokS    float64 `json:"prefill_cold_tok_s"`
		PrefillTokens      int     `json:"prefill_tokens"`
		DecodeDepth        int     `json:"decode_depth"`
		DType              string  `json:"dtype"`
		Rounds             int     `json:"rounds"`
		Grid               []struct {
			Gamma, Phi    float64
			TokS          float64 `json:"tok_s"`
			BytesPerToken uint64  `json:"bytes_per_token"`
			BoundFraction float64 `json:"bound_fraction"`
			BandwidthGBs  float64 `json:"bandwidth_gbs"`
		} `json:"grid"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bench --json output %q: %v", out, err)
	}
	if r.Threads != 2 || r.Rounds != 2 || r.BandwidthGBs <= 0 || r.DenseTokS <= 0 || r.DenseBoundFraction <= 0 || r.PrefillTokS <= 0 || r.PrefillColdTokS <= 0 {
		t.Fatalf("implausible report: %+v", r)
	}
	if r.DecodeDepth != 16 {
		t.Fatalf("decode after a %d-token prompt, want 16 by default", r.DecodeDepth)
	}
	if r.PrefillTokens != 72 || r.DType != "bf16" {
		t.Fatalf("prefill of %d tokens (want the 72 asked for), dtype %q", r.PrefillTokens, r.DType)
	}
	if len(r.Grid) != 1 || r.Grid[0].Gamma != 0.7 || r.Grid[0].Phi != 0.4 {
		t.Fatalf("quick grid: %+v", r.Grid)
	}
	if g := r.Grid[0]; g.TokS <= 0 || g.BytesPerToken == 0 || g.BytesPerToken >= r.DenseBytes || g.BandwidthGBs <= 0 || g.BandwidthGBs > r.BandwidthGBs+1e-9 {
		t.Fatalf("grid point %+v against dense bytes %d, bandwidth %g", g, r.DenseBytes, r.BandwidthGBs)
	}
	// Packs are given, never built: sirun carries no converter.
	if _, errOut, code := run(t, "", "bench", "--quick"); code == 0 || !strings.Contains(errOut, "sipack synth") {
		t.Errorf("bench without a pack: exit %d, %q", code, errOut)
	}
	// --depth: the decode figures follow a prompt of that many tokens;
	// beyond the model's context it is refused, naming both.
	out, errOut, code = run(t, "", "bench", "--quick", "--json", "--rounds", "1", "--tokens", "2", "--prefill", "8", "--depth", "100", "--threads", "2", pack)
	if code != 0 || !strings.Contains(out, `"decode_depth":100`) {
		t.Fatalf("bench --depth 100: exit %d, %q, %s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", "bench", "--quick", "--depth", "1000000", pack); code == 0 || !strings.Contains(errOut, "context") {
		t.Errorf("bench --depth 1000000: exit %d, %q", code, errOut)
	}
	for _, bad := range [][]string{{"--rounds", "0"}, {"--tokens", "0"}, {"--threads", "0"}, {"--prefill", "0"}, {"--depth", "-1"}} {
		if _, errOut, code := run(t, "", append([]string{"bench", "--quick"}, append(bad, pack)...)...); code == 0 || !strings.Contains(errOut, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("bench %v: exit %d, %q", bad, code, errOut)
		}
	}
}

// TestBenchComparesMethods: `sirun bench --select paper,router` measures
// both at every sparse point in the same rounds and gives each against the
// first (1 for the first itself); a method named twice, or unknown, is
// refused.
func TestBenchComparesMethods(t *testing.T) {
	out, errOut, code := run(t, "", "bench", "--quick", "--json", "--select", "paper,router", "--rounds", "2", "--tokens", "2", "--prefill", "8", "--threads", "2", routedPack(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Grid []struct {
			Gamma, Phi float64
			TokS       float64 `json:"tok_s"`
			Select     string  `json:"select"`
			VsFirst    float64 `json:"vs_first_select"`
		} `json:"grid"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil {
		t.Fatalf("bench --json output %q: %v", out, err)
	}
	if len(r.Grid) != 2 || r.Grid[0].Select != "paper" || r.Grid[1].Select != "router" {
		t.Fatalf("want a paper and a router figure at γ0.7 φ0.4, got %+v", r.Grid)
	}
	for _, g := range r.Grid {
		if g.Gamma != 0.7 || g.Phi != 0.4 || g.TokS <= 0 || g.VsFirst <= 0 {
			t.Fatalf("figure %+v", g)
		}
	}
	if r.Grid[0].VsFirst != 1 {
		t.Fatalf("the first method against itself: %g", r.Grid[0].VsFirst)
	}
	// The second against the first: a ratio of two timings, never exactly
	// 1. (How it is computed — the median of the per-round ratios — is
	// bench's TestFinishRatiosWithinRounds, on fixed timings: two rounds
	// of real timings on a loaded machine can put it anywhere against the
	// ratio of the medians.)
	if v := r.Grid[1].VsFirst; v == 1 {
		t.Fatalf("router against paper exactly %g", v)
	}
	for _, bad := range []string{"paper,paper", "paper,bogus", "paper,"} {
		if _, errOut, code := run(t, "", "bench", "--quick", "--select", bad, pack); code == 0 || !strings.Contains(errOut, "--select") {
			t.Errorf("bench --select %s: exit %d, %q", bad, code, errOut)
		}
	}
}

// TestNoMmapAndMlock: --no-mmap (the prefix read into memory) and --mlock
// give the golden greedy tokens, dense and at γ 0.7 φ 0.4 the same as the
// mapped load; `bench --load mmap,no-mmap` measures a pack both ways in the
// same rounds (the second against the first), and a bad --load is refused.
func TestNoMmapAndMlock(t *testing.T) {
	_, ids, greedy, _ := goldenGreedy(t)
	idsJSON, _ := json.Marshal(ids)
	args := []string{pack, "--prompt-ids", string(idsJSON), "-n", "32", "--temperature", "0", "--output-ids", "--ignore-eos"}
	out, errOut, code := run(t, "", append(args, "--no-mmap", "--mlock")...)
	var got []int
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || !slices.Equal(got, greedy) {
		t.Fatalf("--no-mmap --mlock (%d): %q, want %v\n%s", code, out, greedy, errOut)
	}
	sparse := append(args, "--gamma", "0.7", "--phi", "0.4")
	mapped, _, _ := run(t, "", sparse...)
	read, errOut, code := run(t, "", append(sparse, "--no-mmap")...)
	if code != 0 || read != mapped {
		t.Fatalf("γ0.7 φ0.4 --no-mmap (%d): %q, mapped %q\n%s", code, read, mapped, errOut)
	}
	// The summary says how the prefix was loaded and, on Linux, how much
	// of it lies in 2 MiB pages.
	huge := ""
	if runtime.GOOS == "linux" {
		huge = `, \d+ % in 2 MiB pages`
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{{nil, "MiB mapped"}, {[]string{"--no-mmap"}, "MiB read into memory"}, {[]string{"--mlock"}, "MiB mapped, locked"}} {
		_, errOut, _ := run(t, "", append([]string{pack, "-p", "x", "-n", "1"}, c.flags...)...)
		want := regexp.MustCompile(regexp.QuoteMeta(c.want) + huge + `\)`)
		if !want.MatchString(errOut) && !strings.Contains(errOut, "--mlock: cannot lock") {
			t.Errorf("%v: the load line does not match %q:\n%s", c.flags, want, errOut)
		}
	}

	out, errOut, code = run(t, "", "bench", "--quick", "--json", "--load", "mmap,no-mmap", "--rounds", "2", "--tokens", "2", "--prefill", "8", pack)
	if code != 0 {
		t.Fatalf("bench --load (%d): %s", code, errOut)
	}
	var loads []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Load      string  `json:"load"`
			FirstLoad string  `json:"first_load"`
			Dense     float64 `json:"dense_tok_s"`
			VsFirst   float64 `json:"dense_vs_first_dense"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Dense <= 0 || r.FirstLoad != "mmap" || r.VsFirst <= 0 {
			t.Fatalf("bench --load line %q: %v", l, err)
		}
		loads = append(loads, r.Load)
	}
	if !slices.Equal(loads, []string{"mmap", "no-mmap"}) {
		t.Fatalf("bench --load mmap,no-mmap reported %v", loads)
	}
	for _, bad := range []string{"mmap,mmap", "mmap,copy", ""} {
		if _, errOut, code := run(t, "", "bench", "--quick", "--load", bad, pack); code == 0 || !strings.Contains(errOut, "--load") {
			t.Errorf("bench --load %q: exit %d, %q", bad, code, errOut)
		}
	}
}

// routedPack is the test pack with routers fitted on 30 translate prompts.
func routedPack(t *testing.T) string {
	t.Helper()
	p, err := format.Open(pack, format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m, err := runner.Load(p, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	man, err := manifests.Load("translate")
	if err != nil {
		t.Fatal(err)
	}
	texts, err := profile.TaskTexts(m, man, profile.TaskOptions{MaxPrompts: 30, GenTokens: 16, Continue: "reference", Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	routers, group, err := profile.FitRouters(context.Background(), m, texts, profile.RouterOptions{DType: format.Q8_0, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	routed := filepath.Join(t.TempDir(), "routed.sip")
	if err := format.WithRouters(context.Background(), p, group, routers, routed); err != nil {
		t.Fatal(err)
	}
	return routed
}

// TestRouterCLI: a pack with routers (fitted in process, as sipack route
// does) decodes, evaluates and benchmarks with --select router; a pack
// without them is refused with a message naming it.
func TestRouterCLI(t *testing.T) {
	routed := routedPack(t)
	out, errOut, code := run(t, "", "eval", "--task", "translate", routed, "--limit", "6", "--json", "-q", "--gamma", "0.7", "--phi", "0.4", "--select", "router")
	var res struct {
		Score float64 `json:"score"`
		N     int     `json:"n"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.N != 6 {
		t.Fatalf("eval --select router (%d): %q %s", code, out, errOut)
	}
	// The default (--select auto) runs a routed pack's router.
	out2, errOut, code := run(t, "", "eval", "--task", "translate", routed, "--limit", "6", "--json", "-q", "--gamma", "0.7", "--phi", "0.4")
	var res2 struct {
		Score float64 `json:"score"`
	}
	if code != 0 || json.Unmarshal([]byte(out2), &res2) != nil || res2.Score != res.Score {
		t.Fatalf("eval by default on a routed pack (%d): %q %s, want --select router's score %v", code, out2, errOut, res.Score)
	}
	gen, errOut, code := run(t, "", routed, "-p", "In the beginning", "-n", "6", "--gamma", "0.7", "--phi", "0.4", "--select", "router", "--temp", "0")
	if code != 0 || gen == "" {
		t.Fatalf("generate --select router (%d): %q %s", code, gen, errOut)
	}
	if def, errOut, code := run(t, "", routed, "-p", "In the beginning", "-n", "6", "--gamma", "0.7", "--phi", "0.4", "--temp", "0"); code != 0 || def != gen || !strings.Contains(errOut, "sirun: router     each decode token") {
		t.Fatalf("generate by default on a routed pack (%d): %q %s, want --select router's %q and the router's summary line", code, def, errOut, gen)
	}
	out, errOut, code = run(t, "", "bench", "--quick", "--json", "--select", "paper,router", "--rounds", "1", "--tokens", "2", "--prefill", "8", "--threads", "2", routed)
	if code != 0 || !strings.Contains(out, `"select":"router"`) {
		t.Fatalf("bench --select paper,router (%d): %q %s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "bench", "--quick", "--json", "--rounds", "1", "--tokens", "2", "--prefill", "8", "--threads", "2", routed)
	if code != 0 || !strings.Contains(out, `"select":"router"`) {
		t.Fatalf("bench by default on a routed pack (%d): %q %s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", pack, "-p", "x", "-n", "2", "--gamma", "0.7", "--phi", "0.4", "--select", "router"); code == 0 || !strings.Contains(errOut, "has no routers") || !strings.Contains(errOut, filepath.Base(pack)) {
		t.Fatalf("router on a pack without routers: exit %d, %q", code, errOut)
	}
}

// TestHelp: every command's help states each default once (a usage text
// that names its own default sets DefaultText), lists no boolean's
// "(default: false)", and sirun --help fits one 50-line screen.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"", "chat", "serve", "eval", "bench", "perplexity"} {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		out, errOut, code := run(t, "", args...)
		if code != 0 {
			t.Fatalf("sirun %v: exit %d: %s", args, code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Count(l, "(default:") > 1 || strings.Contains(l, "(default: false)") {
				t.Errorf("sirun %v: %q", args, strings.TrimSpace(l))
			}
		}
		if n := strings.Count(out, "\n"); cmd == "" && n > 50 {
			t.Errorf("sirun --help is %d lines, over one screen of 50", n)
		}
	}
}
