package cpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// bands builds n F32 records of hidden size H in blocks of B (the way a
// sparse layer's loaded bands arrive), record r filled with r+1.
func bands(n, B, H int) ([][]byte, [][]byte) {
	rec := 3 * 4 * H
	var blocks, recs [][]byte
	for lo := 0; lo < n; lo += B {
		var b []byte
		for r := lo; r < min(lo+B, n); r++ {
			one := bytes.Repeat([]byte{byte(r + 1)}, rec)
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
	const n, B, H = 50, 8, 4
	blocks, recs := bands(n, B, H)
	d := New()
	all, err := d.Records(blocks, format.F32, H)
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
				if !bytes.Equal(r.at(i), recs[rank]) {
					t.Fatalf("compact %v: record %d is not rank %d", compact, i, rank)
				}
			}
			if !compact {
				for _, b := range r.blocks {
					if len(b)/r.rec > B {
						t.Fatalf("a run of %d records crosses a band of %d", len(b)/r.rec, B)
					}
				}
			}
		}
	}
	for _, bad := range [][]int{{3, 2}, {1, 1}, {-1}, {n}} {
		if _, err := e.Gather(all, bad, 0, true); err == nil {
			t.Errorf("decode set %v accepted", bad)
		}
	}
	if _, err := d.Records([][]byte{make([]byte, 7)}, format.F32, H); err == nil {
		t.Error("a block that is not whole records accepted")
	}
}
