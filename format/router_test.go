package format

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// f32Bytes encodes xs as little-endian float32.
func f32Bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func smallRouters(c *ModelConfig, layers []int, group, rank int) []Router {
	groups := (c.IntermediateSize + group - 1) / group
	var rs []Router
	for _, l := range layers {
		u, b, v := make([]float32, rank*c.HiddenSize), make([]float32, rank), make([]float32, groups*rank)
		for i := range u {
			u[i] = float32(l*1000 + i)
		}
		for i := range b {
			b[i] = float32(-i)
		}
		for i := range v {
			v[i] = float32(i) / 7
		}
		rs = append(rs, Router{Layer: l, Rank: rank, DType: F32, U: f32Bytes(u), B: f32Bytes(b), V: f32Bytes(v)})
	}
	return rs
}

// TestRouters: a pack with routers added keeps every other byte's meaning,
// verifies, hands the routers back, keeps them through a slice, and an old
// pack (none) stays as it was; bad routers are refused on write and on open.
func TestRouters(t *testing.T) {
	dir := t.TempDir()
	path := writeSmall(t, dir, map[int]bool{1: true}, 8)
	p, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.Index.Routers) != 0 || p.Index.RouterGroup != 0 {
		t.Fatalf("a pack without routers reads %d routers, group %d", len(p.Index.Routers), p.Index.RouterGroup)
	}
	var sparse []int
	for _, sl := range p.Index.SparseLayers {
		sparse = append(sparse, sl.Layer)
	}
	c := &p.Index.Config
	rs := smallRouters(c, sparse, 4, 3)
	out := filepath.Join(dir, "routed.sip")
	if err := WithRouters(context.Background(), p, 4, rs, out); err != nil {
		t.Fatal(err)
	}
	q, err := Open(out, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Verify(); err != nil {
		t.Fatal(err)
	}
	if q.Index.RouterGroup != 4 || len(q.Index.Routers) != 3*len(sparse) {
		t.Fatalf("group %d, %d router tensors", q.Index.RouterGroup, len(q.Index.Routers))
	}
	for i, l := range sparse {
		nu, nb, nv := RouterNames(l)
		for j, name := range []string{nu, nb, nv} {
			_, data, ok := q.Tensor(name)
			want := [][]byte{rs[i].U, rs[i].B, rs[i].V}[j]
			if !ok || !bytesEqual(data, want) {
				t.Fatalf("router tensor %q: %v, bytes equal %v", name, ok, bytesEqual(data, want))
			}
		}
	}
	for _, ti := range p.Index.DenseTensors {
		_, a, _ := p.Tensor(ti.Name)
		_, b, ok := q.Tensor(ti.Name)
		if !ok || !bytesEqual(a, b) {
			t.Fatalf("dense tensor %q changed", ti.Name)
		}
	}
	for r := 0; r < p.LoadedRanks; r++ {
		if !bytesEqual(p.Record(0, r), q.Record(0, r)) {
			t.Fatalf("record %d changed", r)
		}
	}

	firstU, _, _ := RouterNames(sparse[0])

	// A slice keeps them.
	half, err := Open(out, OpenOptions{Gamma: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	sliced := filepath.Join(dir, "sliced.sip")
	if err := Slice(context.Background(), half, sliced); err != nil {
		t.Fatal(err)
	}
	half.Close()
	s, err := Open(sliced, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, data, ok := s.Tensor(firstU); !ok || !bytesEqual(data, rs[0].U) {
		t.Fatal("the slice lost the routers")
	}
	s.Close()

	// A flipped router byte fails verification.
	st, _ := os.ReadFile(out)
	ti, _, _ := q.Tensor(firstU)
	st[ti.Offset+5] ^= 1
	bad := filepath.Join(dir, "bad.sip")
	os.WriteFile(bad, st, 0o644)
	b, err := Open(bad, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(); !errors.Is(err, ErrChecksum) {
		t.Fatalf("flipped router byte: %v", err)
	}
	b.Close()

	// Wrong shapes or counts are refused when written and when opened.
	short := smallRouters(c, sparse, 4, 3)
	short[0].V = short[0].V[:8]
	if err := WithRouters(context.Background(), p, 4, short, filepath.Join(dir, "x.sip")); err == nil {
		t.Fatal("a short V was written")
	}
	if err := WithRouters(context.Background(), p, 4, rs[:len(rs)-1], filepath.Join(dir, "y.sip")); err == nil {
		t.Fatal("routers for too few layers were written")
	}
	for name, edit := range map[string]func(*Index){
		"group without routers": func(idx *Index) { idx.Routers = nil },
		"no group":              func(idx *Index) { idx.RouterGroup = 0 },
		"rank above H":          func(idx *Index) { idx.Routers[0].Shape = []int{idx.Config.HiddenSize + 1, idx.Config.HiddenSize} },
		"V of other groups":     func(idx *Index) { idx.RouterGroup = 3 },
		"misnamed":              func(idx *Index) { idx.Routers[1].Name = "layers.0.router_x" },
		"a bf16 bias":           func(idx *Index) { idx.Routers[1].DType = BF16 },
		"outside the dense section": func(idx *Index) {
			idx.Routers[2].Offset = q.Preamble.DenseOff + q.Preamble.DenseLen
		},
		"overlapping a dense tensor": func(idx *Index) { idx.Routers[0].Offset = idx.DenseTensors[0].Offset },
		"one tensor short":           func(idx *Index) { idx.Routers = idx.Routers[1:] },
	} {
		idx := *q.Index
		idx.Routers = append([]TensorInfo(nil), q.Index.Routers...)
		edit(&idx)
		if err := (&Pack{Path: out, Preamble: q.Preamble, Index: &idx}).validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// An Order reorders the ranks: new rank r holds old rank Order[r]'s
	// record and neuron; a bad one is refused.
	ordered := smallRouters(c, sparse, 4, 3)
	n := c.IntermediateSize
	for i := range ordered {
		ordered[i].Order = make([]int, n)
		for r := range n {
			ordered[i].Order[r] = (r/8)*8 + 7 - r%8 // reversed within runs of 8
		}
	}
	re := filepath.Join(dir, "reordered.sip")
	if err := WithRouters(context.Background(), p, 4, ordered, re); err != nil {
		t.Fatal(err)
	}
	o, err := Open(re, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for r := range n {
		old := ordered[0].Order[r]
		if !bytesEqual(o.Record(0, r), p.Record(0, old)) || o.Index.SparseLayers[0].Perm[r] != p.Index.SparseLayers[0].Perm[old] {
			t.Fatalf("new rank %d does not hold old rank %d", r, old)
		}
	}
	notPerm := smallRouters(c, sparse, 4, 3)
	notPerm[0].Order = make([]int, n) // all zero: not a permutation
	if err := WithRouters(context.Background(), p, 4, notPerm, filepath.Join(dir, "z.sip")); err == nil {
		t.Fatal("a rank order that is not a permutation was written")
	}
	for _, f := range []string{"x.sip", "y.sip", "z.sip"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("%s left behind", f)
		}
	}
}
