package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sipack/sipack/format"
)

// layerCopies is one layer interleaved (version 1) and laid out as packs
// of its dtype are (format.LayoutFor).
type layerCopies struct{ v1, split []format.RecordBlock }

// layerCopiesOf builds copies of a layer's first loaded records (about 1 GiB
// a layout, so each step reads from memory), in bands of B records, and an
// activation vector of unit scale.
func layerCopiesOf(dt format.DType, H, N, B, loaded int) ([]layerCopies, []float32) {
	c, x := layerCopiesTiled(dt, H, N, B, loaded, 0)
	return c[0], x
}

// layerCopiesTiled is layerCopiesOf with, for each tile group size of
// groups, copies whose tiled blocks are by tile groups of that many
// records (version 5; 0: none); the copies of each size are allocated in
// turn, so that each set lies in memory as the others do.
func layerCopiesTiled(dt format.DType, H, N, B, loaded int, groups ...int) ([][]layerCopies, []float32) {
	rng := rand.New(rand.NewPCG(1, 1))
	R, _ := dt.RowBytes(H)
	rec := 3 * R
	n := max(2, (1<<30)/(loaded*rec))
	layer, _ := randRow(rng, dt, B*3*H) // one band of distinct records, repeated
	sets := make([][]layerCopies, len(groups))
	for k := range sets {
		sets[k] = make([]layerCopies, n)
	}
	for i := range n {
		for k, G := range groups {
			c := &sets[k][i]
			for lo := 0; lo < loaded; lo += B {
				m := min(B, loaded-lo)
				d := make([]byte, B*rec)
				copy(d, layer[:m*rec])
				c.v1 = append(c.v1, format.InterleavedBlock(d[:m*rec], R))
				c.split = append(c.split, format.PutBlock(make([]byte, B*rec), d[:m*rec], B, R, format.LayoutFor(dt), format.TileBytes(dt), format.GroupsAt(G, lo)))
			}
		}
	}
	x := randVec(rng, H)
	for i := range x {
		x[i] /= float32(math.Sqrt(float64(H)))
	}
	return sets, x
}

// BenchmarkInt8DownOverFloat: one decode token's FFN of a 1B-shape Q4_0,
// Q8_0 or Q4_K layer from memory (all N records, version 2 bands of 256, 2 threads) on the
// integer path, with the down projection's coefficients rounded to int8
// (Axpy8Act) and in float (WithExactDown), timed back to back in turn
// (order alternating); reports the median of the per-pair ratios
// (int8 ÷ float time) and the read bandwidth of a plain pass over the
// same bytes between pairs, the VM's regime at the time.
func BenchmarkInt8DownOverFloat(b *testing.B) {
	for _, dt := range []format.DType{format.Q4_0, format.Q8_0, format.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) { benchInt8Down(b, dt) })
	}
}

func benchInt8Down(b *testing.B, dt format.DType) {
	const H, N, B = 2048, 8192, 256
	int8Table := Active().WithIntegerPath(true).WithInt8Down(true)
	if int8Table.Ops(dt).Axpy8Act == nil {
		b.Skipf("table %s has no int8 down projection", int8Table.Name)
	}
	floatTable := int8Table.WithInt8Down(false)
	copies, x := layerCopiesOf(dt, H, N, B, N)
	y := make([]float32, H)
	p := NewPool(2)
	defer p.Close()
	R, _ := dt.RowBytes(H)
	bytes := float64(N * 3 * R)
	ratios := make([]float64, 0, b.N)
	var ti, tf, tr time.Duration
	for i := 0; i < b.N; i++ {
		var d [2]time.Duration
		for o := range 2 {
			which := (i + o) % 2 // 0: float, 1: int8
			restore := Use([]*Table{floatTable, int8Table}[which])
			blocks := copies[(2*i+o)%len(copies)].split
			t0 := time.Now()
			FFNRecords(p, y, blocks, dt, H, x, nil)
			d[which] = time.Since(t0)
			restore()
		}
		blocks := copies[(2*i+2)%len(copies)].split
		t0 := time.Now()
		p.Run(len(blocks), func(lo, hi, _ int) {
			for _, blk := range blocks[lo:hi] {
				SumBytes(blk.Gate[:blk.N*R])
				SumBytes(blk.Up[:blk.N*blk.UpStride])
				if blk.Runs() {
					SumBytes(blk.Down[:blk.N*R])
				}
			}
		})
		tr += time.Since(t0)
		tf, ti = tf+d[0], ti+d[1]
		ratios = append(ratios, float64(d[1])/float64(d[0]))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(bytes*float64(b.N)/tf.Seconds()/1e9, "float-GB/s")
	b.ReportMetric(bytes*float64(b.N)/ti.Seconds()/1e9, "int8-GB/s")
	b.ReportMetric(bytes*float64(b.N)/tr.Seconds()/1e9, "read-GB/s")
}

// BenchmarkRoutedOverPaper times one decode token's FFN over the router's
// decode set (runner's --select router): the first φN/4 ranks, then φ's
// other ranks as groups of G consecutive ranks spread over the rest of the
// loaded ones (a fixed pseudo-random choice, ascending), read in place as
// sub-blocks of their bands; against the paper's decode set of as many
// ranks (about φN), contiguous.
func BenchmarkRoutedOverPaper(b *testing.B) {
	benchRoutedOverPaper(b, "", 2048, 8192, 256, []int{8, 32, 64, 128})
}

// BenchmarkRoutedOverPaperTiny is BenchmarkRoutedOverPaper at the tiny
// model's shape (H 256, N 768, bands of 64): its layers stay in cache, so
// what it measures is the routed set's per-group cost, not its reads.
func BenchmarkRoutedOverPaperTiny(b *testing.B) {
	benchRoutedOverPaper(b, "tiny-", 256, 768, 64, []int{8, 16})
}

func benchRoutedOverPaper(b *testing.B, name string, H, N, B int, groups []int) {
	loaded, phi := 7*N/10, 4*N/10
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		copies, x := layerCopiesOf(dt, H, N, B, loaded)
		if name != "" {
			copies = copies[:6] // the tiny model's six layers, from cache
		}
		y := make([]float32, H)
		p := NewPool(2)
		for _, G := range groups {
			static := (phi/4 + G - 1) / G * G
			first, last := static/G, loaded/G
			rng := rand.New(rand.NewPCG(7, uint64(G)))
			chosen := rng.Perm(last - first)[:(phi-static)/G]
			slices.Sort(chosen)
			sets := make([][]format.RecordBlock, len(copies))
			papers := make([][]format.RecordBlock, len(copies)) // as many ranks, from the first
			n := static + len(chosen)*G
			for i, c := range copies {
				papers[i] = c.split[: n/B : n/B]
				if n%B != 0 {
					papers[i] = append(papers[i], c.split[n/B].Sub(0, n%B))
				}
				add := func(lo, hi int) {
					for lo < hi {
						blk := &c.split[lo/B]
						end := min(hi, (lo/B+1)*B)
						sets[i] = append(sets[i], blk.Sub(lo%B, lo%B+end-lo))
						lo = end
					}
				}
				add(0, static)
				for _, g := range chosen {
					add((first+g)*G, (first+g+1)*G)
				}
			}
			b.Run(fmt.Sprintf("%s%v-G%d", name, dt, G), func(b *testing.B) {
				ratios := make([]float64, 0, b.N)
				var tp, tm time.Duration
				for i := 0; i < b.N; i++ {
					var d [2]time.Duration
					for o := range 2 {
						which := (i + o) % 2 // 0: paper, 1: routed
						j := (i + o) % len(copies)
						t0 := time.Now()
						if which == 0 {
							FFNRecords(p, y, papers[j], dt, H, x, nil)
						} else {
							FFNRecords(p, y, sets[j], dt, H, x, nil)
						}
						d[which] = time.Since(t0)
					}
					tp, tm = tp+d[0], tm+d[1]
					ratios = append(ratios, float64(d[1])/float64(d[0]))
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "ratio")
				b.ReportMetric(float64(tp.Microseconds())/float64(b.N), "paper-µs")
				b.ReportMetric(float64(tm.Microseconds())/float64(b.N), "routed-µs")
			})
		}
		p.Close()
	}
}

// BenchmarkTileGroups: one decode token's FFN of a 1B-shape layer from
// memory (2 threads, bands of 256, γ0.7 φ0.4 as BenchmarkRoutedOverPaper)
// in the tiled dtypes, the router's set of groups of G = 128 ranks and the
// paper's contiguous set of as many, each on version 4 blocks (tiled
// whole) and on version 5 blocks (tiled by groups of G: what sipack route
// writes), the four timed in turn (order rotating); reports the medians
// of each one's time over the paper's on version 4.
func BenchmarkTileGroups(b *testing.B) {
	const H, N, B, G = 2048, 8192, 256, 128
	loaded, phi := 7*N/10, 4*N/10
	static := (phi/4 + G - 1) / G * G
	first, last := static/G, loaded/G
	rng := rand.New(rand.NewPCG(7, G))
	chosen := rng.Perm(last - first)[:(phi-static)/G]
	slices.Sort(chosen)
	n := static + len(chosen)*G
	for _, dt := range []format.DType{format.BF16, format.Q8_0} {
		both, x := layerCopiesTiled(dt, H, N, B, loaded, 0, G)
		v4, v5 := both[0], both[1]
		nc := len(v4)
		sets := func(copies []layerCopies) (paper, routed [][]format.RecordBlock) {
			paper, routed = make([][]format.RecordBlock, nc), make([][]format.RecordBlock, nc)
			for i := range nc {
				c := copies[i]
				paper[i] = append(c.split[:n/B:n/B], c.split[n/B].Sub(0, n%B))
				add := func(lo, hi int) {
					for lo < hi {
						end := min(hi, (lo/B+1)*B)
						routed[i] = append(routed[i], c.split[lo/B].Sub(lo%B, lo%B+end-lo))
						lo = end
					}
				}
				add(0, static)
				for _, g := range chosen {
					add((first+g)*G, (first+g+1)*G)
				}
			}
			return paper, routed
		}
		p4, r4 := sets(v4)
		p5, r5 := sets(v5)
		y := make([]float32, H)
		p := NewPool(2)
		b.Run(dt.String(), func(b *testing.B) {
			var ratios [3][]float64
			for i := 0; i < b.N; i++ {
				var d [4]time.Duration
				for o := range 4 {
					which := (i + o) % 4
					j := (4*i + o) % nc
					set := [][][]format.RecordBlock{p4, r4, p5, r5}[which][j]
					t0 := time.Now()
					FFNRecords(p, y, set, dt, H, x, nil)
					d[which] = time.Since(t0)
				}
				for k := range 3 {
					ratios[k] = append(ratios[k], float64(d[k+1])/float64(d[0]))
				}
			}
			for k, name := range []string{"routed4÷paper4", "paper5÷paper4", "routed5÷paper4"} {
				slices.Sort(ratios[k])
				b.ReportMetric(ratios[k][len(ratios[k])/2], name)
			}
		})
		p.Close()
	}
}
