package profile

import (
	"context"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// RouterOptions configures FitRouters.
type RouterOptions struct {
	Group int          // ranks per routed group (G); 0: DefaultGroup of the model's record rows
	Rank  int          // rank of each layer's router (≤ H; at most the groups); 0: DefaultRank
	Ridge float64      // ridge λ as a fraction of XᵀX's mean diagonal; 0: 1e-3
	DType format.DType // of U and V: F32, BF16, F16 or Q8_0
	// Cluster, if > 0, first reorders each window of Cluster groups of
	// ranks so that each group holds neurons that fire together
	// (clusterOrder, over the first clusterTexts texts; the window's groups
	// then best ranked first); the routers' Order carries it to
	// format.WithRouters. Off by default: on the tiny model windows of 8
	// groups lower held-out perplexity by 2 % but held-out BLEU by 8 %;
	// coarse groups need it most.
	Cluster int
	// Threads runs the model; Progress, if set, is told after each text.
	Threads  int
	Progress func(done, total int)
}

// DefaultGroup is the routed group of a layer of n neurons unless told
// otherwise: the largest power of two at most n/64, at least 8 — 64 to 127
// groups a layer, whatever the dtype: 8 for the tiny model, 128 for a 1B
// model's 8192. On the tiny model's held-out half 64-96 groups a layer met
// both translate targets and 32 did not; on the 1B shape groups of 128
// decode at 0.99-1.00 of the paper's selection for q4_0 and 0.97-0.98 for
// bf16, against 0.92-0.94 for groups of 32 (`sirun bench --select
// paper,router` on routed packs).
func DefaultGroup(n int) int {
	g := 8
	for 2*g <= n/64 {
		g *= 2
	}
	return g
}

// DefaultRank is a router's rank for hidden size h unless told otherwise:
// h/32, at least 32 (a multiple of 32 for q8_0 where h is).
func DefaultRank(h int) int { return max(32, h/32) }

// routerChunk is the most tokens one forward pass of FitRouters takes.
const routerChunk = 64

// FitRouters fits each sparse layer's group router on texts run on m
// (loaded whole, every rank): a linear map from the FFN's normed input x
// of every counted position (the token before Text.From on, the positions
// that predict the counted tokens: a decode token's) to the Σ|h| of each
// group of opt.Group consecutive ranks, by ridge regression with a bias,
// then cut to opt.Rank by reduced-rank regression (the fitted values'
// top principal directions): V·(U·x + b). It returns the routers in
// sparse-layer order, encoded for format.WithRouters, and the group.
func FitRouters(ctx context.Context, m *runner.Model, texts []Text, opt RouterOptions) ([]format.Router, int, error) {
	c := &m.Config
	H, N, G := c.HiddenSize, c.IntermediateSize, opt.Group
	if G == 0 {
		G = DefaultGroup(N)
	}
	if G < 1 || G > N {
		return nil, 0, fmt.Errorf("router group must be in [1, %d], got %d", N, G)
	}
	groups := (N + G - 1) / G
	rank := opt.Rank
	if rank == 0 {
		rank = DefaultRank(H)
	}
	if rank < 1 || rank > H {
		return nil, 0, fmt.Errorf("router rank must be in [1, %d], got %d", H, rank)
	}
	rank = min(rank, groups)
	if !(opt.Ridge >= 0) {
		return nil, 0, fmt.Errorf("router ridge must be ≥ 0, got %v", opt.Ridge)
	}
	switch opt.DType {
	case format.F32, format.BF16, format.F16:
	case format.Q8_0:
		if opt.Rank%format.QK != 0 {
			return nil, 0, fmt.Errorf("a q8_0 router's rank must be a multiple of %d (its V rows hold rank values), got %d", format.QK, opt.Rank)
		}
		if rank -= rank % format.QK; rank == 0 { // cut to the groups
			return nil, 0, fmt.Errorf("a q8_0 router needs at least %d groups to rank, got %d of %d ranks; use a smaller group or another dtype", format.QK, groups, G)
		}
	default:
		return nil, 0, fmt.Errorf("routers are stored as f32, bf16, f16 or q8_0, not %v", opt.DType)
	}
	longest, err := checkTexts("router", texts, c.MaxPositionEmbeddings)
	if err != nil {
		return nil, 0, err
	}
	// sparse lists the sparse layers, in the pack's order (a layer's
	// place in it is m.Pack.SparseIndex's).
	var sparse []int
	for l := range m.Layers {
		if m.Layers[l].Sparse {
			if m.Layers[l].Ranks != N {
				return nil, 0, fmt.Errorf("router: layer %d has %d of %d ranks loaded; fit on the whole pack", l, m.Layers[l].Ranks, N)
			}
			sparse = append(sparse, l)
		}
	}
	if kernels.Active().PrefillBF16 { // as profiling: the exact path
		defer kernels.Use(kernels.Active().WithBF16Prefill(false))()
	}
	pool := kernels.NewPool(max(1, opt.Threads))
	defer pool.Close()
	s, err := m.NewState(pool, longest)
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()

	want := func(l int) bool { return m.Layers[l].Sparse }
	sidx := func(l int) int { si, _ := m.Pack.SparseIndex(l); return si }
	// order[si], with clustering, is the new rank order of sparse layer
	// si (new rank → rank), and pos[si] its inverse; the groups are runs
	// of G in the new order.
	order, pos := make([][]int, len(sparse)), make([][]int, len(sparse))
	for si := range sparse {
		pos[si] = make([]int, N)
		for r := range pos[si] {
			pos[si][r] = r
		}
	}
	if opt.Cluster < 0 {
		return nil, 0, fmt.Errorf("router cluster window must be ≥ 0 groups, got %d", opt.Cluster)
	}
	if opt.Cluster > 0 {
		W := min(opt.Cluster*G, N)
		// The Gram matrices of |h| over each window of W ranks.
		grams := make([][]*mat.SymDense, len(sparse))
		for si := range sparse {
			for lo := 0; lo < N; lo += W {
				grams[si] = append(grams[si], mat.NewSymDense(min(W, N-lo), nil))
			}
		}
		ct := texts[:min(len(texts), clusterTexts)]
		err := eachCounted(ctx, s, ct, H, want, nil, func(l int, _, act []float32, rows, ranks int) {
			a := make([]float64, rows*ranks)
			for i, v := range act[:rows*ranks] {
				a[i] = math.Abs(float64(v))
			}
			A := mat.NewDense(rows, ranks, a)
			for w, g := range grams[sidx(l)] {
				lo := w * W
				sub := A.Slice(0, rows, lo, lo+g.SymmetricDim())
				g.SymRankK(g, 1, sub.T())
			}
		})
		if err != nil {
			return nil, 0, err
		}
		for si := range sparse {
			order[si] = make([]int, 0, N)
			for w, g := range grams[si] {
				// The window's groups, best ranked first (by their
				// members' mean rank): a prefix that cuts the window
				// keeps what the task's order put first, as near as
				// whole groups can.
				co := clusterOrder(g, G)
				var gs [][]int
				for lo := 0; lo < len(co); lo += G {
					gs = append(gs, co[lo:min(lo+G, len(co))])
				}
				mean := func(g []int) float64 {
					var s float64
					for _, i := range g {
						s += float64(i)
					}
					return s / float64(len(g))
				}
				sort.SliceStable(gs, func(a, b int) bool { return mean(gs[a]) < mean(gs[b]) })
				for _, g := range gs {
					for _, i := range g {
						order[si] = append(order[si], w*W+i)
					}
				}
			}
			for nr, r := range order[si] {
				pos[si][r] = nr
			}
		}
	}

	n := H + 1 // x and a constant 1
	xtx, xty := make([]*mat.SymDense, len(sparse)), make([]*mat.Dense, len(sparse))
	for si := range sparse {
		xtx[si], xty[si] = mat.NewSymDense(n, nil), mat.NewDense(n, groups, nil)
	}
	var tmp mat.Dense
	err = eachCounted(ctx, s, texts, H, want, opt.Progress, func(l int, x, act []float32, rows, ranks int) {
		xs := make([]float64, rows*n)
		for i := range rows {
			row := xs[i*n : (i+1)*n]
			for j, v := range x[i*H : (i+1)*H] {
				row[j] = float64(v)
			}
			row[H] = 1
		}
		si := sidx(l)
		ys, p := make([]float64, rows*groups), pos[si]
		for i := range rows {
			y := ys[i*groups : (i+1)*groups]
			for r, v := range act[i*ranks : (i+1)*ranks] {
				y[p[r]/G] += math.Abs(float64(v))
			}
		}
		X, Y := mat.NewDense(rows, n, xs), mat.NewDense(rows, groups, ys)
		xtx[si].SymRankK(xtx[si], 1, X.T())
		tmp.Reset()
		tmp.Mul(X.T(), Y)
		xty[si].Add(xty[si], &tmp)
	})
	if err != nil {
		return nil, 0, err
	}
	routers := make([]format.Router, len(sparse))
	for si, l := range sparse {
		u, b, v, err := solveRouter(xtx[si], xty[si], rank, opt.Ridge)
		if err != nil {
			return nil, 0, fmt.Errorf("router of layer %d: %w", l, err)
		}
		routers[si] = format.Router{Layer: l, Rank: rank, DType: opt.DType, U: encode(u, rank, opt.DType), B: encode(b, 1, format.F32), V: encode(v, groups, opt.DType), Order: order[si]}
	}
	return routers, G, nil
}

// clusterTexts is how many of the texts clustering reads.
const clusterTexts = 100

// eachCounted runs texts through s (a state as long as the longest) in
// chunks of routerChunk tokens and calls on, for every layer want accepts
// and every chunk holding counted positions (a text's From − 1 on), with
// their FFN inputs (rows, H) and activations (rows, ranks) in rank order;
// progress, if set, is told after each text.
func eachCounted(ctx context.Context, s *runner.State, texts []Text, H int, want func(int) bool, progress func(done, total int), on func(l int, x, act []float32, rows, ranks int)) error {
	var xin []float32
	for ti, t := range texts {
		for off := 0; off < len(t.Tokens)-1; off += routerChunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			end := min(off+routerChunk, len(t.Tokens)-1)
			first := max(0, t.From-1-off) // the chunk's first counted position
			if first >= end-off {
				// Nothing counted here, but the cache must hold it.
				if _, err := s.ForwardBatch(t.Tokens[off:end], off, runner.Pass{}); err != nil {
					return err
				}
				continue
			}
			rows := end - off - first
			pass := runner.Pass{
				OnFFNInput: func(l int, x []float32) {
					if want(l) {
						xin = append(xin[:0], x[first*H:(first+rows)*H]...)
					}
				},
				OnAct: func(l int, act []float32, ranks int) {
					if want(l) {
						on(l, xin, act[first*ranks:(first+rows)*ranks], rows, ranks)
					}
				},
			}
			if _, err := s.ForwardBatch(t.Tokens[off:end], off, pass); err != nil {
				return err
			}
		}
		if progress != nil {
			progress(ti+1, len(texts))
		}
	}
	return nil
}

// clusterOrder orders the n neurons of a window whose |h| Gram matrix is
// g so that each run of G holds neurons that fire together: recursive
// balanced bisection (at a multiple of G near the middle) along the top
// principal component of the neurons' |h| vectors, each scaled to unit
// length and centred over the set being split, found by power iteration
// on their Gram matrix (MoEfication's clustering, by another route).
func clusterOrder(g *mat.SymDense, G int) []int {
	n := g.SymmetricDim()
	c := make([]float64, n*n) // the unit vectors' Gram matrix
	for i := range n {
		for j := range n {
			if d := g.At(i, i) * g.At(j, j); d > 0 {
				c[i*n+j] = g.At(i, j) / math.Sqrt(d)
			}
		}
	}
	var rec func(ids []int) []int
	rec = func(ids []int) []int {
		m := len(ids)
		if m <= G {
			return ids
		}
		// Centred Gram: K_ab = c_ab − r_a − r_b + t.
		r := make([]float64, m)
		var t float64
		for a, i := range ids {
			for _, j := range ids {
				r[a] += c[i*n+j]
			}
			r[a] /= float64(m)
			t += r[a] / float64(m)
		}
		u, v := make([]float64, m), make([]float64, m)
		for a := range u {
			u[a] = float64((a*7919)%13) - 6
		}
		for range 30 {
			var norm float64
			for a, i := range ids {
				var d float64
				for b, j := range ids {
					d += (c[i*n+j] - r[a] - r[b] + t) * u[b]
				}
				v[a] = d
				norm += d * d
			}
			norm = math.Sqrt(norm) + 1e-300
			for a := range u {
				u[a] = v[a] / norm
			}
		}
		idx := make([]int, m)
		for a := range idx {
			idx[a] = a
		}
		sort.SliceStable(idx, func(x, y int) bool { return u[idx[x]] < u[idx[y]] })
		half := max(G, m/G/2*G)
		left, right := make([]int, 0, half), make([]int, 0, m-half)
		for k, a := range idx {
			if k < half {
				left = append(left, ids[a])
			} else {
				right = append(right, ids[a])
			}
		}
		return append(rec(left), rec(right)...)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return rec(ids)
}

// solveRouter solves the ridge regression (XᵀX + λI)W = XᵀY, W (n, groups)
// with the bias in its last row, then projects W onto the top rank
// eigenvectors Vr of the fitted values' Gram matrix WᵀXᵀXW: W Vr Vrᵀ.
// It returns U = (W Vr)[:H]ᵀ (rank, H), b = (W Vr)[H] (rank) and Vr
// (groups, rank), row-major.
func solveRouter(xtx *mat.SymDense, xty *mat.Dense, rank int, ridge float64) (u, b, v []float32, err error) {
	n, groups := xty.Dims()
	if ridge == 0 {
		ridge = 1e-3
	}
	tr := 0.0
	for i := range n {
		tr += xtx.At(i, i)
	}
	if tr == 0 {
		return nil, nil, nil, fmt.Errorf("no positions to fit on")
	}
	a := mat.NewSymDense(n, nil)
	a.CopySym(xtx)
	lambda := ridge * tr / float64(n)
	for i := range n {
		a.SetSym(i, i, a.At(i, i)+lambda)
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return nil, nil, nil, fmt.Errorf("XᵀX + λI is not positive definite")
	}
	var w mat.Dense
	if err := ch.SolveTo(&w, xty); err != nil {
		return nil, nil, nil, err
	}
	var xw, gram mat.Dense
	xw.Mul(xtx, &w)
	gram.Mul(w.T(), &xw)
	sym := mat.NewSymDense(groups, nil)
	for i := range groups {
		for j := i; j < groups; j++ {
			sym.SetSym(i, j, (gram.At(i, j)+gram.At(j, i))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, nil, nil, fmt.Errorf("eigendecomposition failed")
	}
	var vecs mat.Dense
	eig.VectorsTo(&vecs) // ascending eigenvalues: the last columns are the top ones
	vr := vecs.Slice(0, groups, groups-rank, groups)
	var wv mat.Dense
	wv.Mul(&w, vr) // (n, rank)
	H := n - 1
	u, b, v = make([]float32, rank*H), make([]float32, rank), make([]float32, groups*rank)
	for k := range rank {
		for j := range H {
			u[k*H+j] = float32(wv.At(j, k))
		}
		b[k] = float32(wv.At(H, k))
	}
	for g := range groups {
		for k := range rank {
			v[g*rank+k] = float32(vr.At(g, k))
		}
	}
	return u, b, v, nil
}

// encode writes xs, rows rows, in dt (F32, BF16, F16 or Q8_0), little-endian,
// as the converter encodes a row (convert.EncodeF32).
func encode(xs []float32, rows int, dt format.DType) []byte {
	cols := len(xs) / rows
	rb, _ := dt.RowBytes(cols)
	out := make([]byte, rows*rb)
	for i := range rows {
		convert.EncodeF32(out[i*rb:(i+1)*rb], dt, xs[i*cols:(i+1)*cols])
	}
	return out
}
