package cpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
)

// bands builds n F32 records of hidden size H in blocks of B (the way a
// sparse layer's loaded bands arrive), record r's gate, up and down rows
// filled with r+1, r+101 and r+201.
func bands(n, B, H int) ([][]byte, [][]byte) {
	rec := 3 * 4 * H
	var blocks, recs [][]byte
	for lo := 0; lo < n; lo += B {
		var b []byte
		for r := lo; r < min(lo+B, n); r++ {
			row := rec / 3 // gate, up and down rows told apart
			one := append(append(bytes.Repeat([]byte{byte(r + 1)}, row), bytes.Repeat([]byte{byte(r + 101)}, row)...), bytes.Repeat([]byte{byte(r + 201)}, row)...)
			recs = append(recs, one)
			b = append(b, one...)
		}
		blocks = append(blocks, b)
	}
	return blocks, recs
}

// TestGather: a decode set, compacted or gathered in place, holds exactly
// the selected records in order; runs never cross a band; bad sets are
// refused.
func TestGather(t *testing.T) {
	for _, l := range []format.Layout{format.Interleaved, format.Pairs, format.Runs, format.Tiled} {
		// The same bytes as F32 records and as BF16 ones of twice the
		// width: the compact copy is laid out as each dtype's bands are
		// written (format.LayoutFor: pairs, three runs).
		testGather(t, l, format.F32)
		testGather(t, l, format.BF16)
	}
}

// testGather runs TestGather over bands as version 1 packs lay them out
// (interleaved records), as version 2 packs do (gate rows, then up | down
// pairs) or as version 3 packs do (gate, up and down rows in three runs).
func testGather(t *testing.T, l format.Layout, dt format.DType) {
	const n, B, H = 50, 8, 4
	raw, recs := bands(n, B, H)
	blocks := make([]format.RecordBlock, len(raw))
	for i, b := range raw {
		blocks[i] = format.PutBlock(make([]byte, 3*4*H*B), b, B, 4*H, l, format.TileBytes(dt), format.TileGroups{})
	}
	d := New()
	all, err := d.Records(blocks, dt, 4*H/dt.Size())
	if err != nil {
		t.Fatal(err)
	}
	e := d.NewExecOn(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		static := rng.IntN(20)
		var ranks []int
		for r := 0; r < n; r++ {
			if r < static || rng.IntN(3) == 0 {
				ranks = append(ranks, r)
			}
		}
		for _, compact := range []bool{false, true} {
			g, err := e.Gather(all, ranks, static, compact)
			if err != nil {
				t.Fatal(err)
			}
			r := g.(*records)
			if r.Len() != len(ranks) {
				t.Fatalf("compact %v: %d records, want %d", compact, r.Len(), len(ranks))
			}
			for i, rank := range ranks {
				b, j := r.at(i)
				got := make([]byte, r.rec)
				b.CopyRecord(got, j)
				if !bytes.Equal(got, recs[rank]) {
					t.Fatalf("layout %d compact %v: record %d is not rank %d", l, compact, i, rank)
				}
			}
			if !compact {
				for _, b := range r.blocks {
					if b.N > B {
						t.Fatalf("a run of %d records crosses a band of %d", b.N, B)
					}
				}
			}
		}
	}
	// Whole groups of G: the same records as Gather of the ranks they hold,
	// in storage reused from the set before.
	var reuse backend.Records
	for trial := 0; trial < 50; trial++ {
		G := 1 + rng.IntN(6)
		static := rng.IntN(20)
		var groups []int32
		var ranks []int
		for r := range static {
			ranks = append(ranks, r)
		}
		for g := static / G; g*G < n; g++ {
			if (g+1)*G > static && rng.IntN(3) == 0 {
				groups = append(groups, int32(g))
				for r := max(static, g*G); r < min(n, (g+1)*G); r++ {
					ranks = append(ranks, r)
				}
			}
		}
		got, err := e.GatherGroups(all, static, G, groups, reuse)
		if err != nil {
			t.Fatal(err)
		}
		reuse = got
		want, _ := e.Gather(all, ranks, static, false)
		r, w := got.(*records), want.(*records)
		if r.Len() != w.Len() || len(r.blocks) != len(w.blocks) {
			t.Fatalf("groups %v of %d over %d static: %d records in %d runs, Gather %d in %d", groups, G, static, r.Len(), len(r.blocks), w.Len(), len(w.blocks))
		}
		for i, rank := range ranks {
			b, j := r.at(i)
			rec := make([]byte, r.rec)
			b.CopyRecord(rec, j)
			if !bytes.Equal(rec, recs[rank]) {
				t.Fatalf("groups %v of %d: record %d is not rank %d", groups, G, i, rank)
			}
		}
	}
	for _, bad := range [][]int32{{3, 2}, {1, 1}, {-1}, {n}} {
		if _, err := e.GatherGroups(all, 4, 4, bad, nil); err == nil {
			t.Errorf("groups %v accepted", bad)
		}
	}
	for _, bad := range [][]int{{3, 2}, {1, 1}, {-1}, {n}} {
		if _, err := e.Gather(all, bad, 0, true); err == nil {
			t.Errorf("decode set %v accepted", bad)
		}
	}
	if _, err := d.Records([]format.RecordBlock{format.InterleavedBlock(make([]byte, 3*8*H), 8*H)}, format.F32, H); err == nil {
		t.Error("a block of rows of another width accepted")
	}
}
