package profile

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// RouterOptions configures FitRouters.
type RouterOptions struct {
	Group int          // ranks per routed group (G); 0: DefaultGroup of the model's record rows
	Rank  int          // rank of each layer's router (≤ H; at most the groups); 0: DefaultRank
	Ridge float64      // ridge λ as a fraction of XᵀX's mean diagonal; 0: 1e-3
	DType format.DType // of U and V: F32, BF16 or F16
	// Threads runs the model; Progress, if set, is told after each text.
	Threads  int
	Progress func(done, total int)
}

// DefaultGroup is the routed group of a layer of n neurons whose records'
// rows are rowBytes long, unless told otherwise: a power of two whose gate
// rows come to 128 KiB (a decode token reads a chosen group as two runs,
// each starting cold: on the 1B shape with 2 threads, q4_0 groups of 32,
// 64 and 128 decoded at 0.91, 0.95 and 0.98 of the paper's selection, bf16
// groups of 32 on the pairs layout at 0.99; docs/selection.md, twelfth
// screen), halved while it exceeds n/64 (a group then stays a 64th of the
// layer or less), and at least 8: 8 for the tiny model, 32 for a 1B
// model's bf16 records, 128 for its q4_0 ones.
func DefaultGroup(n, rowBytes int) int {
	g := 8
	for g*rowBytes < 128<<10 {
		g *= 2
	}
	for g > 8 && g > n/64 {
		g /= 2
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
		rb, _ := m.RecDType.RowBytes(H)
		G = DefaultGroup(N, rb)
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
		if rank%format.QK != 0 {
			return nil, 0, fmt.Errorf("a q8_0 router's rank must be a multiple of %d (its V rows hold rank values), got %d", format.QK, rank)
		}
	default:
		return nil, 0, fmt.Errorf("routers are stored as f32, bf16, f16 or q8_0, not %v", opt.DType)
	}
	if len(texts) == 0 {
		return nil, 0, fmt.Errorf("router: no texts")
	}
	longest := 0
	for i, t := range texts {
		if t.From < 1 || t.From >= len(t.Tokens) {
			return nil, 0, fmt.Errorf("router text %d: counts from token %d of %d", i, t.From, len(t.Tokens))
		}
		longest = max(longest, len(t.Tokens))
	}
	if longest > c.MaxPositionEmbeddings {
		return nil, 0, fmt.Errorf("router: a text of %d tokens exceeds the model's context of %d", longest, c.MaxPositionEmbeddings)
	}
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

	n := H + 1 // x and a constant 1
	xtx := make(map[int]*mat.SymDense, len(sparse))
	xty := make(map[int]*mat.Dense, len(sparse))
	for _, l := range sparse {
		xtx[l], xty[l] = mat.NewSymDense(n, nil), mat.NewDense(n, groups, nil)
	}
	var xs []float64 // (rows, n) of the current chunk's counted positions
	var tmp mat.Dense
	for ti, t := range texts {
		for off := 0; off < len(t.Tokens)-1; off += routerChunk {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			end := min(off+routerChunk, len(t.Tokens)-1)
			first := max(0, t.From-1-off) // the chunk's first counted position
			if first >= end-off {
				// Nothing counted here, but the cache must hold it.
				if _, err := s.ForwardBatch(t.Tokens[off:end], off, runner.Pass{}); err != nil {
					return nil, 0, err
				}
				continue
			}
			rows := end - off - first
			pass := runner.Pass{
				OnFFNInput: func(l int, x []float32) {
					if xtx[l] == nil {
						return
					}
					xs = slices.Grow(xs[:0], rows*n)[:rows*n]
					for i := range rows {
						row := xs[i*n : (i+1)*n]
						for j, v := range x[(first+i)*H : (first+i+1)*H] {
							row[j] = float64(v)
						}
						row[H] = 1
					}
				},
				OnAct: func(l int, act []float32, ranks int) {
					if xtx[l] == nil {
						return
					}
					ys := make([]float64, rows*groups)
					for i := range rows {
						h := act[(first+i)*ranks : (first+i+1)*ranks]
						y := ys[i*groups : (i+1)*groups]
						for r, v := range h {
							y[r/G] += math.Abs(float64(v))
						}
					}
					X, Y := mat.NewDense(rows, n, xs), mat.NewDense(rows, groups, ys)
					xtx[l].SymRankK(xtx[l], 1, X.T())
					tmp.Reset()
					tmp.Mul(X.T(), Y)
					xty[l].Add(xty[l], &tmp)
				},
			}
			if _, err := s.ForwardBatch(t.Tokens[off:end], off, pass); err != nil {
				return nil, 0, err
			}
		}
		if opt.Progress != nil {
			opt.Progress(ti+1, len(texts))
		}
	}
	routers := make([]format.Router, len(sparse))
	for si, l := range sparse {
		u, b, v, err := solveRouter(xtx[l], xty[l], rank, opt.Ridge)
		if err != nil {
			return nil, 0, fmt.Errorf("router of layer %d: %w", l, err)
		}
		routers[si] = format.Router{Layer: l, Rank: rank, DType: opt.DType, U: encode(u, rank, opt.DType), B: encode(b, 1, format.F32), V: encode(v, groups, opt.DType)}
	}
	return routers, G, nil
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

// encode writes xs, rows rows, in dt (F32, BF16, F16 or Q8_0), little-endian.
func encode(xs []float32, rows int, dt format.DType) []byte {
	switch dt {
	case format.Q8_0:
		cols := len(xs) / rows
		rb, _ := dt.RowBytes(cols)
		out := make([]byte, rows*rb)
		for i := range rows {
			kernels.QuantizeRow(out[i*rb:(i+1)*rb], dt, xs[i*cols:(i+1)*cols])
		}
		return out
	case format.BF16, format.F16:
		out := make([]byte, 2*len(xs))
		for i, x := range xs {
			h := kernels.F32ToBF16(x)
			if dt == format.F16 {
				h = kernels.F32ToF16(x)
			}
			binary.LittleEndian.PutUint16(out[2*i:], h)
		}
		return out
	}
	out := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}
