//go:build cuda || cudaemu

package devicecheck

// The runner on the GPU: the tiny trained model and the archcheck models
// against the PyTorch goldens (logits and FFN activations within 1e-3 in
// f32 math, greedy ids identical), and the SelectInfer path (γ 0.7, φ 0.4)
// and the quantised packs against the CPU path. Needs a GPU; the data is
// found under $SIPACK_TESTDATA (default ../testdata).

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/backend/cuda"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/filecache"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

func testdata(parts ...string) string {
	root := os.Getenv("SIPACK_TESTDATA")
	if root == "" {
		root = "../testdata"
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

type goldenCase struct {
	InputIDs    []int       `json:"input_ids"`
	PromptIDs   []int       `json:"prompt_ids"`
	LastLogits  []float32   `json:"last_logits"`
	AllLogits   [][]float32 `json:"all_logits"`
	FFNAct      [][]float32 `json:"ffn_act"`
	FFNAct1     [][]float32 `json:"ffn_act_layer1"`
	FFNActLayer int         `json:"ffn_act_layer"`
	Greedy32    []int       `json:"greedy_32"`
	GreedyIDs   []int       `json:"greedy_ids"`
}

func (c *goldenCase) ids() []int {
	if c.InputIDs != nil {
		return c.InputIDs
	}
	return c.PromptIDs
}

func (c *goldenCase) greedy() []int {
	if c.Greedy32 != nil {
		return c.Greedy32
	}
	return c.GreedyIDs
}

func readGolden(t *testing.T, path string) []goldenCase {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g.Cases
}

// packOf returns a pack of the model in dir converted with opt, shared by
// every test of this run that asks for the same options (no test changes
// one).
func packOf(t *testing.T, dir string, opt convert.Options) string {
	t.Helper()
	path, ok := packs.Pack(t, dir, opt)
	if !ok {
		t.Fatal("packOf: options with pointers have no key")
	}
	return path
}

// packs are packOf's and routedPack's files, removed by TestMain.
var packs = filecache.Cache{Ext: ".sip"}

func TestMain(m *testing.M) {
	code := m.Run()
	packs.Remove()
	os.Exit(code)
}

func openPack(t *testing.T, path string, gamma float64) *format.Pack {
	t.Helper()
	p, err := format.Open(path, format.OpenOptions{Gamma: gamma})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// onGPU loads p onto the first GPU.
func onGPU(t *testing.T, p *format.Pack) *runner.Model { return onGPUWith(t, p, nil) }

// onGPUWith is onGPU with set applied to the device first.
func onGPUWith(t *testing.T, p *format.Pack, set func(*cuda.Device)) *runner.Model {
	t.Helper()
	d, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(d)
	}
	m, err := runner.Load(p, d)
	if err != nil {
		d.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("%s on %s: %d weight bytes on the device", filepath.Base(p.Path), d.Name(), d.ResidentBytes())
	return m
}

func onCPU(t *testing.T, p *format.Pack) *runner.Model {
	t.Helper()
	m, err := runner.Load(p, cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d
}

// greedy runs a batched prefill then n−1 decode steps, argmax each.
func greedy(t *testing.T, m *runner.Model, pool *kernels.Pool, prompt []int, n int) []int {
	t.Helper()
	s, err := m.NewState(pool, min(m.Config.MaxPositionEmbeddings, len(prompt)+n))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits, err := s.ForwardBatch(prompt, 0, runner.Pass{})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := 0; i < n; i++ {
		tok := runner.Argmax(logits)
		out = append(out, tok)
		if i == n-1 {
			break
		}
		if logits, err = s.Forward(tok, len(prompt)+i); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkGolden: every case's logits (last and every position) and FFN
// activations within tol of PyTorch's, and the greedy ids identical.
func checkGolden(t *testing.T, m *runner.Model, cases []goldenCase, tol float64) {
	t.Helper()
	pool := kernels.NewPool(1)
	defer pool.Close()
	var maxLast, maxAll, maxAct float64
	for ci, c := range cases {
		s, err := m.NewState(pool, m.Config.MaxPositionEmbeddings)
		if err != nil {
			t.Fatal(err)
		}
		actWant, actLayer := c.FFNAct, c.FFNActLayer
		if c.FFNAct1 != nil {
			actWant, actLayer = c.FFNAct1, 1
		}
		var act [][]float32
		pass := runner.Pass{All: true}
		if actWant != nil {
			pass.OnAct = func(l int, a []float32, ranks int) {
				if l != actLayer {
					return
				}
				si, _ := m.Pack.SparseIndex(l)
				perm := m.Pack.Index.SparseLayers[si].Perm
				for tt := 0; tt < len(a)/ranks; tt++ {
					row := make([]float32, m.Config.IntermediateSize)
					for r := 0; r < ranks; r++ {
						row[perm[r]] = a[tt*ranks+r]
					}
					act = append(act, row)
				}
			}
		}
		ids := c.ids()
		all, err := s.ForwardBatch(ids, 0, pass)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		V := m.Config.VocabSize
		d := maxAbsDiff(all[(len(ids)-1)*V:], c.LastLogits)
		maxLast = max(maxLast, d)
		if d > tol {
			t.Errorf("case %d: last logits differ by %g > %g", ci, d, tol)
		}
		for pos, want := range c.AllLogits {
			d := maxAbsDiff(all[pos*V:(pos+1)*V], want)
			maxAll = max(maxAll, d)
			if d > tol {
				t.Errorf("case %d: logits at position %d differ by %g > %g", ci, pos, d, tol)
			}
		}
		if actWant != nil && len(act) != len(actWant) {
			t.Errorf("case %d: %d FFN activation rows, want %d", ci, len(act), len(actWant))
		}
		for pos := 0; pos < min(len(act), len(actWant)); pos++ {
			d := maxAbsDiff(act[pos], actWant[pos])
			maxAct = max(maxAct, d)
			if d > tol {
				t.Errorf("case %d: layer-%d FFN activations at position %d differ by %g > %g", ci, actLayer, pos, d, tol)
			}
		}
		want := c.greedy()
		if cuda.Emulated {
			want = want[:min(len(want), 3)] // the CPU emulator is slow
		}
		if got := greedy(t, m, pool, ids, len(want)); !slices.Equal(got, want) {
			t.Errorf("case %d: greedy ids\n got %v\nwant %v", ci, got, want)
		}
	}
	t.Logf("max |Δ| vs PyTorch: last logits %.2e, all logits %.2e, FFN activations %.2e", maxLast, maxAll, maxAct)
}

// TestGoldenGPU: the tiny model's bf16, f32 and f16 packs and the
// archcheck models (tied embeddings with llama3 RoPE scaling; Qwen2 with
// qkv bias) reproduce PyTorch on the GPU, the prefill's GEMMs on the exact
// path (float32 on the CUDA cores).
func TestGoldenGPU(t *testing.T) {
	cases := func(path string) []goldenCase {
		c := readGolden(t, path)
		if cuda.Emulated {
			return c[:1]
		}
		return c
	}
	dtypes := []string{"", "f32", "f16"}
	if cuda.Emulated {
		dtypes = dtypes[:1]
	}
	for _, dt := range dtypes {
		t.Run("tinyllama-"+dt, func(t *testing.T) {
			p := openPack(t, packOf(t, testdata("tinyllama"), convert.Options{DType: dt}), 1)
			checkGolden(t, onGPUWith(t, p, exactGEMM), cases(testdata("tinyllama", "golden.json")), 1e-3)
		})
	}
	for _, d := range []string{"llama32-tied", "qwen2-bias"} {
		t.Run(d, func(t *testing.T) {
			dir := testdata("archcheck", d)
			p := openPack(t, packOf(t, dir, convert.Options{}), 1)
			checkGolden(t, onGPUWith(t, p, exactGEMM), cases(filepath.Join(dir, "golden.json")), 1e-3)
		})
	}
}

func exactGEMM(d *cuda.Device) { d.SetExactGEMM(true) }

// TestGoldenTensorCores: with the prefill's GEMMs on the tensor cores (the
// default), every golden prompt keeps PyTorch's greedy tokens and the
// logits stay within 0.25 of PyTorch's, the bound the CPU's BF16 prefill
// is held to (TestGoldenRoundedPrefill in runner).
func TestGoldenTensorCores(t *testing.T) {
	for _, c := range []struct{ name, dir string }{
		{"tinyllama", testdata("tinyllama")},
		{"llama32-tied", testdata("archcheck", "llama32-tied")},
		{"qwen2-bias", testdata("archcheck", "qwen2-bias")},
	} {
		t.Run(c.name, func(t *testing.T) {
			cases := readGolden(t, filepath.Join(c.dir, "golden.json"))
			if cuda.Emulated {
				cases = cases[:1]
			}
			p := openPack(t, packOf(t, c.dir, convert.Options{}), 1)
			checkGolden(t, onGPU(t, p), cases, 0.25)
		})
	}
}

// generate runs a greedy session with the selection and returns the ids
// and the decode plan's ranks.
func generate(t *testing.T, m *runner.Model, sel *runner.Selection, prompt []int, n int) ([]int, [][]int) {
	t.Helper()
	pool := kernels.NewPool(2)
	defer pool.Close()
	ss, err := m.NewSession(pool, min(m.Config.MaxPositionEmbeddings, len(prompt)+n+1), runner.SamplerConfig{Temperature: 0, TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.S.Close()
	ss.Sel = sel
	var ids []int
	if _, err := ss.Generate(prompt, runner.GenerateOptions{MaxTokens: n, OnToken: func(id int) { ids = append(ids, id) }}); err != nil {
		t.Fatal(err)
	}
	var ranks [][]int
	for _, lp := range ss.Plan {
		if lp != nil {
			ranks = append(ranks, lp.Ranks)
		}
	}
	return ids, ranks
}

// TestSelectionMatchesCPU: at γ 0.7, φ 0.4 (δ 0.3, α 0.2) the GPU's greedy
// continuation of every golden prompt is the CPU's, with the paper's
// selection and with the router's (scores and choice on the device); how many of the paper's decode sets' ranks agree is logged (the votes come from activations that differ in the last
// bits, so a tie may fall the other way).
func TestSelectionMatchesCPU(t *testing.T) {
	dtypes, cases, n := []string{"", "q8_0", "q4_0"}, 5, 24
	if cuda.Emulated {
		dtypes, cases, n = []string{"q4_0"}, 1, 4
	}
	for _, dt := range dtypes {
		t.Run("tinyllama-"+dt, func(t *testing.T) {
			path := packOf(t, testdata("tinyllama"), convert.Options{DType: dt, BaseFraction: 0.3})
			gpu := onGPU(t, openPack(t, path, 0.7))
			cpu := onCPU(t, openPack(t, path, 0.7))
			// The GPU computes block types with float dots, as the generic
			// table does; the integer Q8 path would be a different rounding.
			restore := kernels.Use(&kernels.Generic)
			defer restore()
			// The router: scores and choice on the device (sip_route).
			routed := routedPack(t, path)
			gpuR := onGPU(t, openPack(t, routed, 0.7))
			cpuR := onCPU(t, openPack(t, routed, 0.7))
			same, total := 0, 0
			golden := readGolden(t, testdata("tinyllama", "golden.json"))
			for ci, c := range golden[:min(cases, len(golden))] {
				rsel := &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: runner.MethodRouter}
				if g, w := gen(t, gpuR, rsel, c.ids(), n), gen(t, cpuR, rsel, c.ids(), n); !slices.Equal(g, w) {
					t.Errorf("case %d, router: greedy ids at γ0.7 φ0.4\ngpu %v\ncpu %v", ci, g, w)
				}
				sel := &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}
				g, gr := generate(t, gpu, sel, c.ids(), n)
				w, wr := generate(t, cpu, sel, c.ids(), n)
				if !slices.Equal(g, w) {
					t.Errorf("case %d: greedy ids at γ0.7 φ0.4\ngpu %v\ncpu %v", ci, g, w)
				}
				for l := range min(len(gr), len(wr)) {
					set := map[int]bool{}
					for _, r := range wr[l] {
						set[r] = true
					}
					for _, r := range gr[l] {
						if set[r] {
							same++
						}
					}
					total += len(wr[l])
				}
			}
			t.Logf("decode sets: %d of %d ranks the same on GPU and CPU", same, total)
		})
	}
}

// gen is generate's ids alone.
func gen(t *testing.T, m *runner.Model, sel *runner.Selection, prompt []int, n int) []int {
	ids, _ := generate(t, m, sel, prompt, n)
	return ids
}

// routedPack writes path's pack with routers fitted (on the CPU) on 20
// translate prompts and their references, as sipack route does.
func routedPack(t *testing.T, path string) string {
	t.Helper()
	return packs.Get(t, "routed "+path, func(out string) {
		// Fitted with the CPU's preferred kernels, whichever table the
		// test compares with.
		defer kernels.Use(kernels.Tables()[len(kernels.Tables())-1])()
		p := openPack(t, path, 1)
		m := onCPU(t, p)
		man, err := manifests.Load("translate")
		if err != nil {
			t.Fatal(err)
		}
		texts, err := profile.TaskTexts(m, man, profile.TaskOptions{MaxPrompts: 20, GenTokens: 16, Continue: "reference", Jobs: 1})
		if err != nil {
			t.Fatal(err)
		}
		routers, group, err := profile.FitRouters(context.Background(), m, texts, profile.RouterOptions{DType: format.Q8_0, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := format.WithRouters(context.Background(), p, group, routers, out); err != nil {
			t.Fatal(err)
		}
	})
}

// TestGraphsMatch: with decode steps replayed as CUDA graphs
// (SIPACK_CUDA_GRAPH=1) the greedy continuation at γ0.7 φ0.4 is the one
// without.
func TestGraphsMatch(t *testing.T) {
	path := packOf(t, testdata("tinyllama"), convert.Options{BaseFraction: 0.3})
	sel := &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Compact: true}
	cases, n := 3, 24
	if cuda.Emulated {
		cases, n = 1, 3
	}
	golden := readGolden(t, testdata("tinyllama", "golden.json"))
	plain := onGPU(t, openPack(t, path, 0.7))
	plain.Dev.(*cuda.Device).SetGraphs(false)
	graphs := onGPU(t, openPack(t, path, 0.7))
	graphs.Dev.(*cuda.Device).SetGraphs(true)
	for ci, c := range golden[:min(cases, len(golden))] {
		w, _ := generate(t, plain, sel, c.ids(), n)
		g, _ := generate(t, graphs, sel, c.ids(), n)
		if !slices.Equal(g, w) {
			t.Errorf("case %d: greedy ids with graphs\n%v\nwithout\n%v", ci, g, w)
		}
	}
}
