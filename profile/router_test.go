package profile_test

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/testutil"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/manifests"
	"github.com/sipack/sipack/profile"
	"github.com/sipack/sipack/runner"
)

// TestSolveRouterRecoversLowRank: targets that are a rank-3 linear map of
// the inputs plus a bias come back exactly at rank 3, and measurably worse
// at rank 2.
func TestSolveRouterRecoversLowRank(t *testing.T) {
	const rows, H, groups, r = 400, 12, 9, 3
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := mat.NewDense(H+1, r, nil), mat.NewDense(r, groups, nil)
	for _, m := range []*mat.Dense{a, b} {
		rr, cc := m.Dims()
		for i := range rr {
			for j := range cc {
				m.Set(i, j, rng.NormFloat64())
			}
		}
	}
	x := mat.NewDense(rows, H+1, nil)
	for i := range rows {
		for j := range H {
			x.Set(i, j, rng.NormFloat64())
		}
		x.Set(i, H, 1)
	}
	var w, y mat.Dense
	w.Mul(a, b)
	y.Mul(x, &w)
	xtx := mat.NewSymDense(H+1, nil)
	xtx.SymRankK(xtx, 1, x.T())
	var xty mat.Dense
	xty.Mul(x.T(), &y)
	worst := func(rank int) float64 {
		u, bias, v, err := profile.SolveRouter(xtx, &xty, rank, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		var e float64
		for i := range rows {
			z := make([]float64, rank)
			for k := range rank {
				z[k] = float64(bias[k])
				for j := range H {
					z[k] += float64(u[k*H+j]) * x.At(i, j)
				}
			}
			for g := range groups {
				var p float64
				for k := range rank {
					p += float64(v[g*rank+k]) * z[k]
				}
				e = max(e, math.Abs(p-y.At(i, g))/(1+math.Abs(y.At(i, g))))
			}
		}
		return e
	}
	if e := worst(3); e > 1e-3 {
		t.Fatalf("rank 3 of a rank-3 map: worst relative error %g", e)
	}
	if e := worst(2); e < 1e-2 {
		t.Fatalf("rank 2 of a rank-3 map: worst relative error %g, a truncation should show", e)
	}
}

// TestFitRoutersChooses: routers fitted on 60 translate prompts and their
// references pick, on 20 others, groups that hold more of each decode
// position's Σ|h| than the best static choice of as many groups could (the
// groups holding the most over all those positions, chosen knowing them)
// — in every sparse layer.
func TestFitRoutersChooses(t *testing.T) {
	m := testutil.LoadModel(t, testutil.PackOf(t, "../testdata/tinyllama", convert.Options{}), 1)
	man, err := manifests.Load("translate")
	if err != nil {
		t.Fatal(err)
	}
	texts, err := profile.TaskTexts(m, man, profile.TaskOptions{MaxPrompts: 80, GenTokens: 24, Continue: "reference", Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 80 {
		t.Fatalf("%d texts, want 80", len(texts))
	}
	const G = 8
	routers, group, err := profile.FitRouters(context.Background(), m, texts[:60], profile.RouterOptions{Group: G, Rank: 16, DType: format.F32, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if group != G || len(routers) != 6 || routers[0].Rank != 16 || len(routers[0].U) != 4*16*256 || len(routers[0].V) != 4*96*16 {
		t.Fatalf("group %d, %d routers, rank %d, %d and %d bytes", group, len(routers), routers[0].Rank, len(routers[0].U), len(routers[0].V))
	}
	f32 := func(b []byte) []float32 {
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out
	}
	const H, groups, k = 256, 96, 24 // a quarter of the groups
	var routed [6]float64
	var totals [6][groups]float64
	pool := kernels.NewPool(1)
	defer pool.Close()
	for _, tx := range texts[60:] {
		s, err := m.NewState(pool, len(tx.Tokens))
		if err != nil {
			t.Fatal(err)
		}
		var xin []float32
		_, err = s.ForwardBatch(tx.Tokens, 0, runner.Pass{
			OnFFNInput: func(l int, x []float32) { xin = append(xin[:0], x...) },
			OnAct: func(l int, act []float32, n int) {
				u, b, v := f32(routers[l].U), f32(routers[l].B), f32(routers[l].V)
				for pos := tx.From - 1; pos < len(tx.Tokens); pos++ {
					mass := make([]float64, groups)
					for r, h := range act[pos*n : (pos+1)*n] {
						mass[r/G] += math.Abs(float64(h))
					}
					z := make([]float64, 16)
					for q := range z {
						z[q] = float64(b[q])
						for j := range H {
							z[q] += float64(u[q*H+j]) * float64(xin[pos*H+j])
						}
					}
					score := make([]float64, groups)
					for g := range score {
						for q := range z {
							score[g] += float64(v[g*16+q]) * z[q]
						}
					}
					for range k { // the k best-scored groups
						best := 0
						for g := range score {
							if score[g] > score[best] {
								best = g
							}
						}
						routed[l] += mass[best]
						score[best] = math.Inf(-1)
					}
					for g, v := range mass {
						totals[l][g] += v
					}
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	for l := range 6 {
		best := slices.Clone(totals[l][:])
		slices.SortFunc(best, func(a, b float64) int { return cmp.Compare(b, a) })
		var static float64
		for _, v := range best[:k] {
			static += v
		}
		t.Logf("layer %d: routed groups hold %.3g of Σ|h|, the best static %d groups %.3g", l, routed[l], k, static)
		if !(routed[l] > 1.02*static) {
			t.Errorf("layer %d: the router's groups hold %.4g, the best static groups %.4g", l, routed[l], static)
		}
	}
	// Bad options.
	for _, o := range []profile.RouterOptions{{Group: 769, DType: format.F32}, {Group: 8, Rank: 257, DType: format.F32}, {Group: 8, DType: format.Q4_0}, {Group: 8, Rank: 40, DType: format.Q8_0}, {Group: 8, Ridge: -1, DType: format.F32}} {
		if _, _, err := profile.FitRouters(context.Background(), m, texts[:2], o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestDefaultGroup: a power of two, at most a 64th of the layer, at least
// 8, whatever the records' bytes.
func TestDefaultGroup(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{768, 8},     // the tiny model: n/64 = 12
		{8192, 128},  // a 1B model (Llama 3.2 1B): 64 groups
		{5632, 64},   // TinyLlama 1.1B: n/64 = 88, 88 groups
		{14336, 128}, // Llama 3.1 8B: n/64 = 224, 112 groups
		{1024, 16},   // exactly a 64th
		{64, 8},      // never below 8
	} {
		if got := profile.DefaultGroup(c.n); got != c.want {
			t.Errorf("DefaultGroup(%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestClusterOrder: neurons that fire in four planted sets, shuffled across
// a window, come back as groups of one set each.
func TestClusterOrder(t *testing.T) {
	const n, G, rows = 32, 8, 400
	rng := rand.New(rand.NewPCG(9, 9))
	set := rng.Perm(n) // neuron i belongs to set set[i] % 4
	a := mat.NewDense(rows, n, nil)
	for r := range rows {
		on := rng.IntN(4) // the set firing at this position
		for i := range n {
			v := 0.05 * rng.Float64()
			if set[i]%4 == on {
				v += 1 + rng.Float64()
			}
			a.Set(r, i, v)
		}
	}
	g := mat.NewSymDense(n, nil)
	g.SymRankK(g, 1, a.T())
	order := profile.ClusterOrder(g, G)
	if len(order) != n {
		t.Fatalf("order of %d neurons, want %d", len(order), n)
	}
	seen := map[int]bool{}
	for lo := 0; lo < n; lo += G {
		for _, i := range order[lo : lo+G] {
			if seen[i] {
				t.Fatalf("neuron %d twice in %v", i, order)
			}
			seen[i] = true
			if set[i]%4 != set[order[lo]]%4 {
				t.Fatalf("group %d mixes sets: %v", lo/G, order[lo:lo+G])
			}
		}
	}
}
