//go:build cuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/sipack/sipack/runner"
)

// TestArgmax: sip_argmax against runner.Argmax, the CPU's greedy choice:
// ties to the lower index (within a thread's stride and across threads),
// -Inf rows, NaN never chosen unless first, +Inf, ±0, every length class of
// the block (under, at and over 256, a vocabulary); and the finite flag.
func TestArgmax(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(9, 9))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	type tc struct {
		name string
		x    []float32
	}
	var cases []tc
	for _, n := range pick([]int{1, 2, 255, 256, 257, 1000, 32000, 128256}, []int{1, 2, 255, 256, 257, 1000, 5000}) {
		cases = append(cases, tc{"random", randVec(rng, n)})
		x := randVec(rng, n)
		x[n-1] = 100
		cases = append(cases, tc{"last", x})
		if n >= 3 {
			// Ties at indices that different threads and strides own.
			for _, at := range [][]int{{n - 1, n / 2, 1}, {n - 1, 0}, {n / 2, n/2 + 1}, {n - 1, n - 1 - 256%n}} {
				x := randVec(rng, n)
				for _, i := range at {
					x[i] = 7
				}
				cases = append(cases, tc{"ties", x})
			}
			x = randVec(rng, n)
			x[0], x[n/2], x[n-1] = nan, 50, 50
			cases = append(cases, tc{"nan first", x})
			x = randVec(rng, n)
			x[n/2], x[n-1] = nan, 50
			cases = append(cases, tc{"nan", x})
			x = randVec(rng, n)
			x[n/3], x[n-1] = inf, inf
			cases = append(cases, tc{"+inf", x})
			x = make([]float32, n)
			for i := range x {
				x[i] = float32(math.Copysign(0, float64(rng.IntN(2)-1)))
			}
			cases = append(cases, tc{"±0", x})
		}
		x = make([]float32, n)
		for i := range x {
			x[i] = -inf
		}
		cases = append(cases, tc{"all -inf", x})
		if n > 1 {
			y := append([]float32(nil), x...)
			y[n-1] = -1e30
			cases = append(cases, tc{"-inf but last", y})
			y = append([]float32(nil), x...)
			y[n/2] = nan
			cases = append(cases, tc{"-inf and nan", y})
		}
		x = make([]float32, n)
		for i := range x {
			x[i] = nan
		}
		cases = append(cases, tc{"all nan", x})
	}
	for _, c := range cases {
		g, _ := p.bufs(t, c.x)
		got, fin := p.ge.Argmax(g)
		if err := p.ge.Err(); err != nil {
			t.Fatal(err)
		}
		want, wantFin := runner.Argmax(c.x), true
		for _, v := range c.x {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				wantFin = false
			}
		}
		if got != want || fin != wantFin {
			t.Errorf("%s, n=%d: argmax %d (finite %v), want %d (%v)", c.name, len(c.x), got, fin, want, wantFin)
		}
	}
}

// TestTopK: sip_topk against a sort: the k largest values (ties: the lower
// index) in index order, for k from 1 to the most it returns, rows under
// and over the block's 1024 threads with many ties, −0 beside +0, and the
// finite flag.
func TestTopK(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(15, 15))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range pick([]int{1, 5, 300, 1024, 1500, 32000, 128256}, []int{1, 5, 300, 1024, 1500, 5000}) {
		for _, k := range []int{1, 2, 40, 256} {
			if k > n {
				continue
			}
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.IntN(60)-30) / 8
				if x[i] == 0 && rng.IntN(2) == 0 {
					x[i] = float32(math.Copysign(0, -1))
				}
			}
			bad := n > 2 && rng.IntN(3) == 0
			if bad {
				x[rng.IntN(n)] = []float32{nan, inf, -inf}[rng.IntN(3)]
			}
			g, _ := p.bufs(t, x)
			ids, vals := make([]int32, k), make([]float32, k)
			fin := p.ge.TopK(g, ids, vals)
			if err := p.ge.Err(); err != nil {
				t.Fatal(err)
			}
			if fin == bad {
				t.Errorf("n=%d k=%d: finite %v with a non-finite value planted: %v", n, k, fin, bad)
			}
			if bad {
				continue
			}
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool { return x[order[a]] > x[order[b]] })
			want := order[:k]
			sort.Ints(want)
			for i := range k {
				if int(ids[i]) != want[i] || vals[i] != x[want[i]] {
					t.Fatalf("n=%d k=%d: candidate %d is %d (%g), want %d (%g)", n, k, i, ids[i], vals[i], want[i], x[want[i]])
				}
			}
		}
	}
}
