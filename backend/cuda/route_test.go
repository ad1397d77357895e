//go:build cuda || cudaemu

package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// TestRouteGroups: sip_route's table against an independent reference: the
// k groups of largest score (ties: lower group first, −0 as +0, scores
// drawn from a few values so ties are common), ascending, each group's
// records above the static prefix, the rest of each group's G entries the
// zero record. Static prefixes inside a group, a partial last group, k = 0
// and k = n; a reused table keeps its storage.
func TestRouteGroups(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(12, 12))
	const H = 32
	for _, nall := range []int{37, 64, 300} {
		c := newFFN(rng, format.F32, H, nall, 40)
		recs, err := p.gd.Records(c.recordBlocks(format.F32, H, format.Interleaved), format.F32, H)
		if err != nil {
			t.Fatal(err)
		}
		all := recs.(*records)
		for _, G := range []int{1, 4, 16} {
			groups := (nall + G - 1) / G
			var reuse *records
			for _, static := range []int{0, G, 2*G + 1, nall} {
				first := static / G
				n := groups - first
				for _, k := range []int{0, 1, n / 2, n} {
					if k > n {
						continue
					}
					scores := make([]float32, groups)
					vals := []float32{-1, 0, float32(math.Copysign(0, -1)), 0.5, 2, float32(rng.NormFloat64())}
					for i := range scores {
						scores[i] = vals[rng.IntN(len(vals))]
					}
					g, _ := p.bufs(t, scores)
					got, err := p.ge.RouteGroups(all, g, first, n, k, static, G, reuse)
					if err != nil {
						t.Fatal(err)
					}
					r := got.(*records)
					if reuse != nil && r.Len() == reuse.Len() && r.table != reuse.table {
						t.Errorf("nall %d G %d static %d k %d: a reusable table was not reused", nall, G, static, k)
					}
					reuse = r
					table := make([]uint64, r.Len())
					if len(table) > 0 {
						done := p.gd.enter()
						if err := p.gd.drv.dtoh(unsafe.Pointer(&table[0]), r.table, 8*len(table)); err != nil {
							t.Fatal(err)
						}
						done()
					}
					// The reference.
					key := func(v float32) uint32 {
						b := math.Float32bits(v + 0)
						if b&0x80000000 != 0 {
							return ^b
						}
						return b | 0x80000000
					}
					idx := make([]int, n)
					for i := range idx {
						idx[i] = first + i
					}
					slices.SortStableFunc(idx, func(a, b int) int {
						ka, kb := key(scores[a]), key(scores[b])
						switch {
						case ka > kb:
							return -1
						case ka < kb:
							return 1
						}
						return a - b
					})
					chosen := slices.Clone(idx[:k])
					slices.Sort(chosen)
					want := slices.Clone(all.host[:min(static, nall)])
					for _, gr := range chosen {
						lo, hi := max(static, gr*G), min(nall, (gr+1)*G)
						for i := range G {
							if lo+i < hi {
								want = append(want, all.host[lo+i])
							} else {
								want = append(want, p.ge.zero.p)
							}
						}
					}
					if !slices.Equal(table, want) {
						t.Fatalf("nall %d G %d static %d k %d of %d: table differs from the reference\n got %v\nwant %v", nall, G, static, k, n, table, want)
					}
				}
			}
		}
	}
}
