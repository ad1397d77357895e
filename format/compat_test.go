package format_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// TestOlderPacksRunTheSame: the tiny model written as a version 1 pack
// (interleaved records), a version 2 pack (gate rows, then up | down pairs),
// a version 3 pack (gate, up and down rows in three runs) and as writers
// write it now (version 4 for bf16 and f16: the down rows by tiles) loads
// and runs the same, in bf16 (the
// checkpoint's dtype) and converted to f16: at γ 0.7 the logits of a
// prompt and of 12 greedy tokens, with the paper's selection, are bit for
// bit equal on one thread (the same arithmetic on other addresses).
func TestOlderPacksRunTheSame(t *testing.T) {
	for _, dt := range []string{"bf16", "f16"} {
		t.Run(dt, func(t *testing.T) {
			var paths []string
			for _, major := range []uint16{1, 2, 3, 0} { // 0: the writer's choice
				restore := format.SetWriteMajor(major)
				paths = append(paths, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3, DType: dt}))
				restore()
			}
			prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
			for _, method := range []runner.Method{runner.MethodPaper} {
				var logits [4][]float32
				var ids [4][]int
				for i, path := range paths {
					m := testutil.LoadModel(t, path, 0.7)
					if got, want := m.Pack.Preamble.Major, []uint16{1, 2, 3, 4}[i]; got != want {
						t.Fatalf("pack %d: version %d", i+1, got)
					}
					pool := kernels.NewPool(1)
					ss, err := m.NewSession(pool, 64, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
					if err != nil {
						t.Fatal(err)
					}
					ss.Sel = &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: method, Compact: true}
					if _, err := ss.Generate(prompt, runner.GenerateOptions{MaxTokens: 12, OnToken: func(id int) { ids[i] = append(ids[i], id) }}); err != nil {
						t.Fatal(err)
					}
					logits[i] = slices.Clone(ss.S.Logits)
					pool.Close()
				}
				for i := 1; i < 4; i++ {
					if !slices.Equal(ids[0], ids[i]) || !slices.Equal(logits[0], logits[i]) {
						t.Fatalf("%s: version 1 and %d packs differ:\n%v\n%v", method, []uint16{1, 2, 3, 4}[i], ids[0], ids[i])
					}
				}
			}
		})
	}
}

// TestTileGroupsRunTheSame: the tiny model in bf16 with routers added
// (format.WithRouters, groups of 8 ranks) is written by tile groups of 8
// (version 5) and, with that turned off, tiled by whole blocks (version
// 4); both verify, hold the same records, and decode the same prompt and
// 12 greedy tokens to the same logits, bit for bit on one thread, with the
// router's and the paper's selection — as converted, and with
// uneven layer budgets (layer bands: a layer's share of a band starts at
// any rank, so its first and last tile groups are cut).
func TestTileGroupsRunTheSame(t *testing.T) {
	t.Run("bands", func(t *testing.T) {
		tileGroupsRunTheSame(t, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3}), false)
	})
	t.Run("layer-bands", func(t *testing.T) {
		raw, err := os.ReadFile("../testdata/tinyllama/config.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg, _, err := convert.ParseConfig("config.json", raw)
		if err != nil {
			t.Fatal(err)
		}
		sparse := convert.SparseLayers(cfg, nil)
		order := convert.RandomOrder(sparse, cfg.IntermediateSize, 7)
		order.BaseFraction = 0.3
		order.Budgets = map[int][]float32{}
		L := float64(len(sparse))
		for i, l := range sparse {
			b := make([]float32, format.BudgetSteps+1)
			for j := range b {
				F := float64(j) / format.BudgetSteps
				first := min(1, 1.7*F) // layer 0 loads more, the others share the rest
				if i == 0 {
					b[j] = float32(first)
				} else {
					b[j] = float32((L*F - first) / (L - 1))
				}
			}
			order.Budgets[l] = b
		}
		tileGroupsRunTheSame(t, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{BaseFraction: 0.3, Order: order}), true)
	})
}

func tileGroupsRunTheSame(t *testing.T, src string, layerBands bool) {
	p, err := format.Open(src, format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const G, rank = 8, 4
	c := &p.Index.Config
	rng := rand.New(rand.NewPCG(8, 9))
	f32 := func(n int) []byte {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		return b
	}
	var rs []format.Router
	for _, sl := range p.Index.SparseLayers {
		rs = append(rs, format.Router{Layer: sl.Layer, Rank: rank, DType: format.F32, U: f32(rank * c.HiddenSize), B: f32(rank), V: f32((c.IntermediateSize + G - 1) / G * rank)})
	}
	var paths [2]string
	for i, groups := range []bool{true, false} {
		paths[i] = filepath.Join(t.TempDir(), "routed.sip")
		restore := format.SetRouteTileGroups(groups)
		err := format.WithRouters(context.Background(), p, G, rs, paths[i])
		restore()
		if err != nil {
			t.Fatal(err)
		}
	}
	prompt := []int{4094, 476, 25, 1312, 317, 3676, 271, 2025, 520, 334, 1892, 276, 306, 592, 349, 477, 25}
	var models [2]*runner.Model
	for i, path := range paths {
		models[i] = testutil.LoadModel(t, path, 0.7)
		pk := models[i].Pack
		if major, tg := pk.Preamble.Major, pk.Index.TileGroup; major != []uint16{5, 4}[i] || tg != []int{G, 0}[i] {
			t.Fatalf("pack %d: version %d, tile group %d", i, major, tg)
		}
		if _, err := pk.Verify(); err != nil {
			t.Fatal(err)
		}
		if pk.HasBudgets() != layerBands {
			t.Fatalf("pack %d: layer budgets %v, want %v", i, pk.HasBudgets(), layerBands)
		}
	}
	for si := range p.Index.SparseLayers {
		for r := 0; r < models[0].Pack.LoadedRanks; r += 5 {
			if a, b := models[0].Pack.Record(si, r), models[1].Pack.Record(si, r); !slices.Equal(a, b) {
				t.Fatalf("sparse layer %d rank %d: the records differ", si, r)
			}
		}
	}
	for _, method := range []runner.Method{runner.MethodRouter, runner.MethodPaper} {
		var logits [2][]float32
		var ids [2][]int
		for i, m := range models {
			pool := kernels.NewPool(1)
			ss, err := m.NewSession(pool, 64, runner.SamplerConfig{TopP: 1, RepetitionPenalty: 1})
			if err != nil {
				t.Fatal(err)
			}
			ss.Sel = &runner.Selection{Phi: 0.4, Alpha: 0.2, Base: 0.3, Method: method}
			if _, err := ss.Generate(prompt, runner.GenerateOptions{MaxTokens: 12, OnToken: func(id int) { ids[i] = append(ids[i], id) }}); err != nil {
				t.Fatal(err)
			}
			logits[i] = slices.Clone(ss.S.Logits)
			pool.Close()
		}
		if !slices.Equal(ids[0], ids[1]) || !slices.Equal(logits[0], logits[1]) {
			t.Fatalf("%s: tile groups and whole tiles decode differently:\n%v\n%v", method, ids[0], ids[1])
		}
	}
}
