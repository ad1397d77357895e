package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipack/sipack/cmd/internal/clitest"
)

var bin string

// TestMain builds the sipack binary once; the tests run it as a user would.
func TestMain(m *testing.M) {
	var dir string
	var err error
	if bin, dir, err = clitest.Build("sipack"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Run(t, bin, "", args...)
}

const tiny = "../../testdata/tinyllama"

func TestConvertInspectVerifyTokenize(t *testing.T) {
	pack := filepath.Join(t.TempDir(), "tiny.sip")
	// Flags after the positional argument work, as in llama.cpp's tools.
	if _, errOut, code := run(t, "convert", tiny, "-o", pack); code != 0 {
		t.Fatalf("convert failed (%d): %s", code, errOut)
	}
	out, _, code := run(t, "inspect", pack)
	if code != 0 || !strings.Contains(out, "LlamaForCausalLM") || !strings.Contains(out, "γ=0.70") {
		t.Fatalf("inspect (%d):\n%s", code, out)
	}
	out, _, code = run(t, "verify", pack)
	if code != 0 || !strings.Contains(out, "all hashes match") {
		t.Fatalf("verify (%d):\n%s", code, out)
	}
	for _, src := range []string{pack, tiny, filepath.Join(tiny, "tokenizer.json")} {
		out, _, code = run(t, "tokenize", "--tokenizer", src, "In the beginning")
		var ids []int
		if code != 0 || json.Unmarshal([]byte(out), &ids) != nil || !slices.Equal(ids, []int{4094, 3709, 260, 3652}) {
			t.Fatalf("tokenize -t %s (%d): %q", src, code, out)
		}
	}
}

func TestBadInputExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	notPack := filepath.Join(dir, "x.sip")
	os.WriteFile(notPack, []byte("definitely not a pack"), 0o644)
	good := filepath.Join(dir, "good.sip")
	if _, e, code := run(t, "convert", "-q", tiny, "-o", good); code != 0 {
		t.Fatal(e)
	}
	b, _ := os.ReadFile(good)
	truncated := filepath.Join(dir, "trunc.sip")
	os.WriteFile(truncated, b[:len(b)/2], 0o644)
	flipped := filepath.Join(dir, "flip.sip")
	b[len(b)-5] ^= 1
	os.WriteFile(flipped, b, 0o644)

	cases := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", notPack}, notPack + ": not a .sip pack (looks like: text)"},
		{[]string{"verify", truncated}, "truncated"},
		{[]string{"verify", flipped}, "band 11 BLAKE3 mismatch"},
		{[]string{"inspect", filepath.Join(dir, "missing.sip")}, "no such file"},
		{[]string{"convert", dir, "-o", filepath.Join(dir, "o.sip")}, "no such file"},
		{[]string{"convert", tiny, "--dtype", "q2", "-o", filepath.Join(dir, "o.sip")}, `unknown dtype "q2"`},
		{[]string{"convert", tiny, "--band", "-3", "-o", filepath.Join(dir, "o.sip")}, "--band must be at least 1"},
		{[]string{"convert", tiny, "--layout", "diagonal", "-o", filepath.Join(dir, "o.sip")}, `--layout: unknown band layout "diagonal"`},
		{[]string{"convert"}, "exactly one MODEL_DIR"},
		{[]string{"tokenize", "--tokenizer", notPack, "x"}, ""},
		{[]string{"frobnicate"}, ""},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code == 0 {
			t.Errorf("sipack %v exited 0", c.args)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("sipack %v: stderr %q does not mention %q", c.args, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.sip")); err == nil {
		t.Error("failed convert left o.sip")
	}
	// inspect reads only the header, so it describes a truncated pack and says so.
	if out, e, code := run(t, "inspect", truncated); code != 0 || !strings.Contains(out, "cut short") {
		t.Errorf("inspect of a truncated pack (%d): %s%s", code, out, e)
	}
}

func TestProfileAndRankedConvert(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	prof := filepath.Join(dir, "qa.prof")
	if _, e, code := run(t, "profile", "--task", "qa", tiny, "-o", prof, "--max-prompts", "3", "--gen-tokens", "4", "-q"); code != 0 {
		t.Fatal(e)
	}
	out, _, code := run(t, "profile", "show", prof)
	if code != 0 || !strings.Contains(out, "task qa, 3 prompts") || !strings.Contains(out, "| 5 |") {
		t.Fatalf("show (%d): %s", code, out)
	}
	// A second profile over other prompts merges.
	prof2 := filepath.Join(dir, "qa2.prof")
	run(t, "profile", "--task", "qa", tiny, "-o", prof2, "--max-prompts", "2", "--gen-tokens", "4", "--seed", "5", "-q")
	merged := filepath.Join(dir, "m.prof")
	if _, e, code := run(t, "profile", "merge", prof, prof2, "-o", merged); code != 0 {
		t.Fatal(e)
	}
	out, _, _ = run(t, "profile", "show", merged)
	if !strings.Contains(out, "5 prompts") {
		t.Fatalf("merged: %s", out)
	}
	png := filepath.Join(dir, "p.png")
	if _, e, code := run(t, "profile", "plot", "-o", png, prof, prof2); code != 0 {
		t.Fatal(e)
	}
	if b, _ := os.ReadFile(png); len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatal("plot is not a PNG")
	}
	pack := filepath.Join(dir, "qa.sip")
	if _, e, code := run(t, "convert", tiny, "--route", "none", "--profile", prof, "--secondary", "self", "-o", pack, "-q"); code != 0 {
		t.Fatal(e)
	}
	out, _, _ = run(t, "inspect", pack)
	for _, want := range []string{"rank order      profile (task qa, 3 prompts", "concentration", "layer 5"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	// A task name profiles on the fly (with secondary = all tasks) and caches.
	pack2 := filepath.Join(dir, "tr.sip")
	_, e, code := run(t, "convert", tiny, "--route", "none", "--profile", "translate", "--max-prompts", "2", "-o", pack2)
	if code != 0 || !strings.Contains(e, "cached profile") {
		t.Fatalf("on-the-fly convert (%d): %s", code, e)
	}
	// Only the task's own profile is calibrated (the layer budgets read
	// it), not the secondary ones.
	cached, _ := filepath.Glob(filepath.Join(dir, "cache", "sipack", "*", "*.prof"))
	var names []string
	for _, f := range cached {
		names = append(names, filepath.Base(f))
	}
	slices.Sort(names)
	if want := []string{"lm-p2-s0.prof", "qa-p2-s0.prof", "translate-p2-s0-c16-f32.prof"}; !slices.Equal(names, want) {
		t.Errorf("cached profiles %q, want %q", names, want)
	}
	_, e, _ = run(t, "convert", tiny, "--route", "none", "--profile", "translate", "--max-prompts", "2", "-o", pack2)
	if !strings.Contains(e, "using cached profile") {
		t.Fatalf("second convert did not use the cache: %s", e)
	}
	out, _, _ = run(t, "inspect", pack2)
	if !strings.Contains(out, "secondary       mean of normalised profiles of [translate lm qa]") && !strings.Contains(out, "[lm qa translate]") {
		t.Errorf("inspect: secondary tasks missing:\n%s", out)
	}
	// Profiles of the answers only: shown, refused in a merge with greedy
	// ones, named in a ranked pack, cached apart from the greedy ones.
	profStop := filepath.Join(dir, "qa-stop.prof")
	if _, e, code := run(t, "profile", "--task", "qa", tiny, "-o", profStop, "--max-prompts", "3", "--gen-tokens", "4", "--continue", "stop", "-q"); code != 0 {
		t.Fatal(e)
	}
	out, _, _ = run(t, "profile", "show", profStop)
	if !strings.Contains(out, "up to the task's stop string") {
		t.Errorf("show of a stop profile: %s", out)
	}
	if _, e, code := run(t, "profile", "merge", prof, profStop, "-o", filepath.Join(dir, "mixed.prof")); code == 0 || !strings.Contains(e, "followed their prompts differently") {
		t.Errorf("a greedy and a stop profile merged (%d): %s", code, e)
	}
	packStop := filepath.Join(dir, "qa-stop.sip")
	if _, e, code := run(t, "convert", tiny, "--route", "none", "--profile", profStop, "--secondary", "self", "-o", packStop, "-q"); code != 0 {
		t.Fatal(e)
	}
	if out, _, _ = run(t, "inspect", packStop); !strings.Contains(out, "rank order      profile+stop (task qa") {
		t.Errorf("inspect of a stop-ranked pack:\n%s", out)
	}
	if _, e, code := run(t, "profile", "--task", "qa", tiny, "-o", filepath.Join(dir, "x.prof"), "--continue", "sideways", "-q"); code == 0 || !strings.Contains(e, "sideways") {
		t.Errorf("an unknown --continue was accepted (%d): %s", code, e)
	}
	// Random order.
	pack3 := filepath.Join(dir, "rnd.sip")
	if _, e, code := run(t, "convert", tiny, "--order", "random", "--seed", "3", "-o", pack3, "-q"); code != 0 {
		t.Fatal(e)
	}
	out, _, _ = run(t, "inspect", pack3)
	if !strings.Contains(out, "rank order      random") || !strings.Contains(out, "random seed     3") {
		t.Errorf("inspect random: %s", out)
	}
}

func TestProfileBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"prompt": "ok"}`+"\n"+`{"prompt": broken}`+"\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	man := filepath.Join(dir, "half.json")
	os.WriteFile(man, []byte(`{"name": "half"}`), 0o644)
	// A profile of another model: the archcheck llama.
	other := filepath.Join(dir, "other.prof")
	if _, e, code := run(t, "profile", "--task", "lm", "../../testdata/archcheck/llama32-tied", "-o", other, "--max-prompts", "1", "--gen-tokens", "1", "-q"); code != 0 {
		t.Fatal(e)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"profile", "--task", "nosuch", tiny}, `unknown task "nosuch"`},
		{[]string{"profile", "--task", man, tiny}, "missing fields: template, metric"},
		{[]string{"profile", "--task", "qa", "--data", empty, tiny, "-o", filepath.Join(dir, "x.prof")}, "empty.jsonl: no rows"},
		{[]string{"profile", "--task", "qa", "--data", bad, tiny, "-o", filepath.Join(dir, "x.prof")}, "bad.jsonl:2"},
		{[]string{"profile", tiny}, "needs --task"},
		{[]string{"convert", tiny, "--profile", other, "-o", filepath.Join(dir, "x.sip")}, "of another model"},
		{[]string{"convert", tiny, "--profile", other, "--base", "0", "-o", filepath.Join(dir, "x.sip")}, "--base must be in (0, 1]"},
		{[]string{"convert", tiny, "--profile", other, "--base", "1.5", "-o", filepath.Join(dir, "x.sip")}, "--base must be in (0, 1]"},
		{[]string{"convert", tiny, "--band", "100000", "-o", filepath.Join(dir, "x.sip")}, "band size 100000 out of range"},
		{[]string{"convert", tiny, "--profile", filepath.Join(dir, "none.prof"), "-o", filepath.Join(dir, "x.sip")}, "no such file"},
		{[]string{"convert", tiny, "--order", "sideways", "-o", filepath.Join(dir, "x.sip")}, "unknown --order"},
		{[]string{"profile", "merge", other, "-o", filepath.Join(dir, "x.prof")}, "at least two"},
	}
	for _, c := range cases {
		_, errOut, code := run(t, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sipack %v: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "x.*")); len(left) != 0 {
		t.Errorf("%v left behind", left)
	}
}

// TestSIGINTLeavesNoOutput interrupts a long profile run and a convert with
// SIGINT and checks that no file with the final name, and no temporary
// file, is left; a second run succeeds.
func TestSIGINTLeavesNoOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "p.prof")
	cmd := exec.Command(bin, "profile", "--task", "translate", tiny, "-o", out, "--max-prompts", "400", "--gen-tokens", "64", "-q")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if err == nil {
		t.Fatal("interrupted profile exited 0")
	}
	if !strings.Contains(stderr.String(), "interrupted; no profile written") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("interrupted profile left %v", entries)
	}
	if _, e, code := run(t, "profile", "--task", "translate", tiny, "-o", out, "--max-prompts", "1", "--gen-tokens", "1", "-q"); code != 0 {
		t.Fatal(e)
	}
}

// TestDiskFull simulates a full disk with a file-size limit (ulimit -f):
// convert fails with a clear error and leaves no pack and no temporary file.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.sip")
	cmd := exec.Command("bash", "-c", `ulimit -f 4096 && exec "$0" "$@"`, bin, "convert", "-q", tiny, "-o", out)
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("convert under a 4 MiB file-size limit succeeded")
	}
	if !strings.Contains(string(b), "file too large") || !strings.Contains(string(b), ".x.sip.sipack-tmp-") {
		t.Errorf("error does not say what happened: %s", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("failed convert left %v", entries)
	}
}

// TestPlotBenchAndSynthFlags: `sipack plot bench` draws sirun bench --json
// lines and names the file and line of one that is not; synth refuses bad
// flags before writing anything (a real synth writes 2.5 GB: not here).
func TestPlotBenchAndSynthFlags(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "b.jsonl")
	os.WriteFile(lines, []byte(`{"pack":"/x/synth-1b-bf16.sip","dtype":"bf16","bandwidth_gbs":40,"dense_tok_s":15,"dense_bytes_per_token":2500000000,`+
		`"grid":[{"gamma":0.7,"phi":0.4,"tok_s":25,"bytes_per_token":1500000000},{"gamma":0.7,"phi":0.6,"tok_s":20,"bytes_per_token":1900000000}]}`+"\n"), 0o644)
	png := filepath.Join(dir, "b.png")
	if _, e, code := run(t, "plot", "bench", "-o", png, lines); code != 0 {
		t.Fatalf("plot bench (%d): %s", code, e)
	}
	if b, _ := os.ReadFile(png); len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatal("plot bench wrote no PNG")
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("\n{\"pack\": 3}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plot", "bench", "-o", png, bad}, "bad.jsonl:2"},
		{[]string{"plot", "bench", "-o", png, filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{[]string{"plot", "bench", "-o", png}, "at least one"},
		{[]string{"synth", "--dtype", "bf16"}, "output"},
		{[]string{"synth", "--dtype", "q3_k", "-o", filepath.Join(dir, "x.sip"), "--dir", filepath.Join(dir, "ck")}, "q3_k"},
		{[]string{"synth", "-o", filepath.Join(dir, "x.sip"), "extra"}, "no arguments"},
	} {
		if _, errOut, code := run(t, c.args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sipack %v: exit %d, stderr %q; want %q", c.args, code, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ck")); err == nil {
		t.Error("synth with a bad --dtype wrote the checkpoint anyway")
	}
}

// TestConvertLayout: --layout writes the band layout asked for (the pack's
// version says which), and a q8_0 pack is tiled by default. (That the
// layouts compute the same is the kernels' and format's tests.)
func TestConvertLayout(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ layout, version string }{{"", "v4."}, {"pairs", "v2."}, {"runs", "v3."}, {"tiled", "v4."}} {
		pack := filepath.Join(dir, "l"+c.layout+".sip")
		args := []string{"convert", "-q", tiny, "--dtype", "q8_0", "-o", pack}
		if c.layout != "" {
			args = append(args, "--layout", c.layout)
		}
		if _, e, code := run(t, args...); code != 0 {
			t.Fatalf("convert --layout %q (%d): %s", c.layout, code, e)
		}
		out, e, code := run(t, "inspect", pack)
		if code != 0 || !strings.Contains(out, "format          "+c.version) {
			t.Fatalf("--layout %q: inspect (%d) does not say %s:\n%s%s", c.layout, code, c.version, out, e)
		}
	}
}

// TestLayerBudgetCLI: a profile calibrates by default and shows its
// curves; a pack converted from it carries layer budgets (inspect lists
// them) unless --layer-budget uniform; an uncalibrated profile converts
// uniformly under auto and is refused under sensitivity, naming
// --calibrate; an unknown --layer-budget is refused. The calibration's
// progress ends at its total.
func TestLayerBudgetCLI(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "tr.prof")
	t.Setenv("SIPACK_PROGRESS_EVERY", "1ns") // a progress line per step off a terminal
	_, e, code := run(t, "profile", "--task", "translate", tiny, "-o", prof, "--max-prompts", "3", "--gen-tokens", "4", "--calibrate", "2")
	if code != 0 {
		t.Fatal(e)
	}
	var last string
	for _, l := range strings.Split(e, "\n") {
		if strings.HasPrefix(l, "calibrate translate: ") {
			last = l
		}
	}
	if m := regexp.MustCompile(`: (\d+) / (\d+) \(100 %\)`).FindStringSubmatch(last); m == nil || m[1] != m[2] {
		t.Fatalf("the calibration's last progress line %q: not done / total at 100 %%\n%s", last, e)
	}
	if out, _, _ := run(t, "profile", "show", prof); !strings.Contains(out, "sensitivity: loss per token of the text after 2 prompts") || !strings.Contains(out, "| 90 % |") {
		t.Fatalf("show of a calibrated profile:\n%s", out)
	}
	budget := filepath.Join(dir, "b.sip")
	if _, e, code := run(t, "convert", tiny, "--route", "none", "--profile", prof, "--secondary", "self", "-o", budget, "-q"); code != 0 {
		t.Fatal(e)
	}
	if out, _, _ := run(t, "inspect", budget); !strings.Contains(out, "layer budgets") {
		t.Errorf("inspect of a budgeted pack lacks its budgets:\n%s", out)
	}
	uniform := filepath.Join(dir, "u.sip")
	if _, e, code := run(t, "convert", tiny, "--route", "none", "--profile", prof, "--secondary", "self", "--layer-budget", "uniform", "-o", uniform, "-q"); code != 0 {
		t.Fatal(e)
	}
	if out, _, _ := run(t, "inspect", uniform); strings.Contains(out, "layer budgets") {
		t.Errorf("--layer-budget uniform wrote budgets:\n%s", out)
	}
	plain := filepath.Join(dir, "p.prof")
	if _, e, code := run(t, "profile", "--task", "translate", tiny, "-o", plain, "--max-prompts", "2", "--gen-tokens", "2", "--calibrate", "0", "-q"); code != 0 {
		t.Fatal(e)
	}
	if out, _, _ := run(t, "profile", "show", plain); !strings.Contains(out, "not calibrated") {
		t.Errorf("show of an uncalibrated profile:\n%s", out)
	}
	auto := filepath.Join(dir, "a.sip")
	if _, e, code := run(t, "convert", tiny, "--route", "none", "--profile", plain, "--secondary", "self", "-o", auto); code != 0 || !strings.Contains(e, "layer budgets: uniform") {
		t.Errorf("auto with an uncalibrated profile (%d): %s", code, e)
	}
	bad := filepath.Join(dir, "bad.sip")
	if _, e, code := run(t, "convert", tiny, "--profile", plain, "--secondary", "self", "--layer-budget", "sensitivity", "-o", bad, "-q"); code == 0 || !strings.Contains(e, "--calibrate") {
		t.Errorf("--layer-budget sensitivity without curves (%d): %s", code, e)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a refused convert left its output")
	}
	if _, e, code := run(t, "convert", tiny, "--profile", prof, "--secondary", "self", "--layer-budget", "sideways", "-o", bad, "-q"); code == 0 || !strings.Contains(e, "sideways") {
		t.Errorf("an unknown --layer-budget was accepted (%d): %s", code, e)
	}
}

// TestRouteCLI: sipack route writes a copy of the pack with routers that
// inspect and verify accept, leaves the input as it was, and refuses bad
// options without leaving an output behind.
// TestConvertRoute: convert --route TASK writes what convert and then route
// --task TASK write (the routers fitted on 8 prompts: quick), and leaves no
// other file; a bad task is refused before converting, with nothing written.
func TestConvertRoute(t *testing.T) {
	dir := t.TempDir()
	plain, routed, both := filepath.Join(dir, "plain.sip"), filepath.Join(dir, "routed.sip"), filepath.Join(dir, "both.sip")
	if _, e, code := run(t, "convert", tiny, "-o", plain, "-q"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "route", "--task", "translate", "--max-prompts", "8", plain, "-o", routed, "-q"); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := run(t, "convert", tiny, "-o", both, "--route", "translate", "--max-prompts", "8"); code != 0 || !strings.Contains(e, "wrote "+both+": routers of rank 32 over groups of 8 ranks") {
		t.Fatalf("convert --route (%d): %s", code, e)
	}
	want, _ := os.ReadFile(routed)
	if got, err := os.ReadFile(both); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("convert --route wrote %d bytes (%v), not route's %d", len(got), err, len(want))
	}
	// A ranked pack is routed on its profile's task unless --route none.
	prof := filepath.Join(dir, "tr.prof")
	if _, e, code := run(t, "profile", "--task", "translate", tiny, "-o", prof, "--max-prompts", "4", "--gen-tokens", "4", "--calibrate", "0", "-q"); code != 0 {
		t.Fatal(e)
	}
	ranked, unrouted := filepath.Join(dir, "ranked.sip"), filepath.Join(dir, "unrouted.sip")
	if _, e, code := run(t, "convert", tiny, "--profile", prof, "--secondary", "self", "--max-prompts", "8", "-o", ranked); code != 0 || !strings.Contains(e, "wrote "+ranked+": routers of rank 32") {
		t.Fatalf("convert --profile (%d) did not route: %s", code, e)
	}
	if _, e, code := run(t, "convert", tiny, "--profile", prof, "--secondary", "self", "--route", "none", "-o", unrouted); code != 0 || strings.Contains(e, "routers") {
		t.Fatalf("convert --profile --route none (%d): %s", code, e)
	}
	for _, c := range []struct {
		pack   string
		routed bool
	}{{ranked, true}, {unrouted, false}} {
		if out, e, code := run(t, "inspect", c.pack); code != 0 || strings.Contains(out, "over groups of 8 ranks") != c.routed {
			t.Fatalf("inspect %s (%d): routers %v wanted:\n%s%s", c.pack, code, c.routed, out, e)
		}
	}
	// --max-prompts caps the routers' prompts too: a quick conversion is quick.
	if _, e, code := run(t, "convert", tiny, "--route", "translate", "--max-prompts", "5", "-o", unrouted, "--force"); code != 0 || !strings.Contains(e, " of 5 texts") {
		t.Fatalf("convert --route --max-prompts 5 (%d): %s", code, e)
	}
	os.Remove(prof)
	os.Remove(ranked)
	os.Remove(unrouted)
	bad := filepath.Join(dir, "bad.sip")
	if _, e, code := run(t, "convert", tiny, "-o", bad, "--route", "nope"); code == 0 || !strings.Contains(e, "nope") {
		t.Fatalf("convert --route nope: exit %d, %q", code, e)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"both.sip", "plain.sip", "routed.sip"}) {
		t.Fatalf("files left: %v", names)
	}
}

func TestRouteCLI(t *testing.T) {
	dir := t.TempDir()
	pack, routed := filepath.Join(dir, "tiny.sip"), filepath.Join(dir, "routed.sip")
	if _, e, code := run(t, "convert", tiny, "-o", pack, "-q"); code != 0 {
		t.Fatal(e)
	}
	before, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	_, e, code := run(t, "route", "--task", "translate", pack, "-o", routed, "--max-prompts", "20", "--gen-tokens", "16")
	if code != 0 || !strings.Contains(e, "routers of rank 32 over groups of 8 ranks in 6 layers (q8_0") {
		t.Fatalf("route (%d): %s", code, e)
	}
	out, _, code := run(t, "inspect", routed)
	if code != 0 || !strings.Contains(out, "routers         rank 32 over groups of 8 ranks, q8_0") {
		t.Fatalf("inspect (%d): %s", code, out)
	}
	if out, _, code := run(t, "verify", routed); code != 0 || !strings.Contains(out, "all hashes match") {
		t.Fatalf("verify (%d): %s", code, out)
	}
	if after, _ := os.ReadFile(pack); !bytes.Equal(before, after) {
		t.Fatal("route changed its input")
	}
	// Greedy continuations and other sizes.
	other := filepath.Join(dir, "g16.sip")
	if _, e, code := run(t, "route", "--task", "lm", pack, "-o", other, "--max-prompts", "4", "--gen-tokens", "8", "--continue", "greedy", "--group", "16", "--rank", "8", "--dtype", "bf16", "--cluster", "4", "-q"); code != 0 {
		t.Fatal(e)
	}
	if out, _, _ := run(t, "inspect", other); !strings.Contains(out, "rank 8 over groups of 16 ranks, bf16") {
		t.Fatalf("inspect: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"route", pack, "-o", filepath.Join(dir, "x.sip")}, "task"},
		{[]string{"route", "--task", "translate", pack}, "output"},
		{[]string{"route", "--task", "translate", pack, "-o", pack}, pack},
		{[]string{"route", "--task", "translate", pack, "-o", filepath.Join(dir, "x.sip"), "--dtype", "q4_0"}, "--dtype"},
		{[]string{"route", "--task", "translate", pack, "-o", filepath.Join(dir, "x.sip"), "--rank", "40"}, "multiple of 32"},
		{[]string{"route", "--task", "translate", pack, "-o", filepath.Join(dir, "x.sip"), "--group", "769", "--max-prompts", "2"}, "group"},
		{[]string{"route", "--task", "translate", tiny, "-o", filepath.Join(dir, "x.sip")}, tiny},
		{[]string{"route", "--task", "translate", pack, "-o", filepath.Join(dir, "x.sip"), "--cluster", "-1", "--max-prompts", "2"}, "cluster"},
		{[]string{"route", "--task", "translate", filepath.Join(dir, "none.sip"), "-o", filepath.Join(dir, "x.sip")}, "none.sip"},
	} {
		_, e, code := run(t, c.args...)
		if code == 0 || !strings.Contains(e, c.want) {
			t.Errorf("%v: exit %d, %q (want an error naming %q)", c.args, code, e, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.sip")); err == nil {
		t.Fatal("a refused route left its output")
	}
}

// TestHelp: every command's help states each default once and lists no
// boolean's "(default: false)".
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"", "convert", "profile", "route", "slice", "inspect", "verify", "tokenize", "template", "synth", "plot"} {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("sipack %v: exit %d: %s", args, code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Count(l, "(default:") > 1 || strings.Contains(l, "(default: false)") {
				t.Errorf("sipack %v: %q", args, strings.TrimSpace(l))
			}
		}
	}
}

// TestUnknownCommand: a mistyped command is one line with the nearest
// command, a far-off one without a hint; both exit non-zero.
func TestUnknownCommand(t *testing.T) {
	for _, c := range []struct{ cmd, want, not string }{
		{"conver", `unknown command "conver"; did you mean convert? (see sipack --help)`, ""},
		{"frobnicate", `unknown command "frobnicate" (see sipack --help)`, "did you mean"},
	} {
		out, errOut, code := run(t, c.cmd)
		if code == 0 || !strings.Contains(errOut, c.want) || (c.not != "" && strings.Contains(errOut, c.not)) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("sipack %s: exit %d, stdout %q, stderr %q; want one line %q", c.cmd, code, out, errOut, c.want)
		}
	}
}
