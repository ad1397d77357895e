package format

import (
	"context"
	"fmt"
)

// Router is one sparse layer's group router (§3, v1.5), encoded: U
// [Rank, H] and V [⌈N/group⌉, Rank] in DType (F32, BF16 or F16), the
// bias B [Rank] as F32 little-endian. A decode token scores the layer's
// groups of ranks as V·(U·x + B), x the FFN's normed input.
type Router struct {
	Layer int
	Rank  int
	DType DType
	U, B  []byte
	V     []byte
	// Order, if not nil, reorders the layer's ranks first (the groups are
	// runs of the new order): new rank r is old rank Order[r], a
	// permutation of [0, N). (profile.FitRouters keeps every rank within
	// its aligned window of a few groups, so the order by the task's
	// profile moves by less than a window.)
	Order []int
}

// WithRouters writes the pack p (opened with every rank it holds) to out
// with the given routers, one per sparse layer in order, over groups of
// group ranks; routers p already had are replaced. A tiled pack's band
// blocks are written by tile groups of the router's group (version 5), so
// that a routed group's down rows are one run. Everything else is copied
// as it is; every hash is recomputed (the routers', the bands' of a pack
// tiled anew) or kept.
func WithRouters(ctx context.Context, p *Pack, group int, routers []Router, out string) error {
	src := p.Index
	if p.LoadedRanks < src.RanksPresent {
		return fmt.Errorf("sip: %s: loaded %d of the %d ranks it holds; open it whole to add routers", p.Path, p.LoadedRanks, src.RanksPresent)
	}
	if len(routers) != len(src.SparseLayers) {
		return fmt.Errorf("sip: %d routers for %d sparse layers", len(routers), len(src.SparseLayers))
	}
	idx := *src
	idx.DenseTensors = append([]TensorInfo(nil), src.DenseTensors...)
	idx.SparseLayers = append([]SparseLayer(nil), src.SparseLayers...)
	idx.RouterGroup, idx.Routers = group, nil
	if p.Layout() == Tiled && routeTileGroups {
		idx.TileGroup = group // planLayout writes none where it is a band or more
	}
	spec := &WriteSpec{Index: &idx, Major: p.Preamble.Major}
	if err := spec.copyTensors(p); err != nil { // the dense tensors
		return err
	}
	c := &idx.Config
	groups := (c.IntermediateSize + group - 1) / group
	for si, r := range routers {
		if r.Layer != src.SparseLayers[si].Layer {
			return fmt.Errorf("sip: router %d is for layer %d, sparse layer %d is %d", si, r.Layer, si, src.SparseLayers[si].Layer)
		}
		nu, nb, nv := RouterNames(r.Layer)
		ts := []TensorInfo{
			{Name: nu, DType: r.DType, Shape: []int{r.Rank, c.HiddenSize}},
			{Name: nb, DType: F32, Shape: []int{r.Rank}},
			{Name: nv, DType: r.DType, Shape: []int{groups, r.Rank}},
		}
		for j, data := range [][]byte{r.U, r.B, r.V} {
			if n, ok := TensorBytes(ts[j].DType, ts[j].Shape); !ok || n != len(data) {
				return fmt.Errorf("sip: router tensor %q: %d bytes for shape %v in %v", ts[j].Name, len(data), ts[j].Shape, ts[j].DType)
			}
			spec.Dense = append(spec.Dense, bytesSource(data))
		}
		idx.Routers = append(idx.Routers, ts...)
		if r.Order != nil {
			sl := &idx.SparseLayers[si]
			if err := checkOrder(r.Order, c.IntermediateSize); err != nil {
				return fmt.Errorf("sip: router of layer %d: %w", r.Layer, err)
			}
			perm := make([]uint32, len(sl.Perm))
			for nr, or := range r.Order {
				perm[nr] = sl.Perm[or]
			}
			sl.Perm = perm
			if sl.TaskScore != nil {
				score := make([]float32, len(sl.TaskScore))
				for nr, or := range r.Order {
					score[nr] = sl.TaskScore[or]
				}
				sl.TaskScore = score
			}
		}
	}
	spec.Records = p.recordSource()
	return WritePack(ctx, out, spec)
}

// routeTileGroups is whether WithRouters tiles a tiled pack's blocks by the
// router's groups; tests turn it off to compare with the layout before.
var routeTileGroups = true

// checkOrder checks that order is a permutation of [0, n).
func checkOrder(order []int, n int) error {
	if len(order) != n {
		return fmt.Errorf("rank order of %d entries for %d ranks", len(order), n)
	}
	seen := make([]bool, n)
	for _, r := range order {
		if r < 0 || r >= n || seen[r] {
			return fmt.Errorf("rank order is not a permutation of [0, %d): %d", n, r)
		}
		seen[r] = true
	}
	return nil
}
