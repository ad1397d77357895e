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

// BenchmarkFFNGatedDRAM: one decode token's FFN of a Llama-3.2-1B-shape
// layer (H 2048, N 8192) at γ 0.7, 2 threads, from memory (copies of the
// layer cycled, about 1 GiB a layout), in bands of 256 records
// (convert.DefaultBand for this shape) laid out as version 1 packs do
// (interleaved records) and as packs of the dtype are now written (each
// band's gate rows together, then its up|down pairs, or its up rows and
// its down rows: format.LayoutFor). "paper" computes the
// first 0.4·N records (a static set, or the compact decode set), "gate"
// dots the gate rows of all 0.7·N and computes up and down for 0.25·N,
// "hybrid" computes the first 0.125·N whole and, of the other loaded, up
// and down for 0.125·N by their gates — the same bytes (SetBytes: 0.4·N
// records for all three, so MB/s compares their speed).
func BenchmarkFFNGatedDRAM(b *testing.B) {
	const H, N, B = 2048, 8192, 256
	loaded, phi, k := 7*N/10, 4*N/10, N/4
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		copies, x := gatedLayers(dt, H, N, B, loaded)
		R, _ := dt.RowBytes(H)
		y := make([]float32, H)
		p := NewPool(2)
		for _, v := range []string{"paper", "gate", "hybrid"} {
			for _, layout := range []string{"v1", "split"} {
				b.Run(fmt.Sprintf("%v-%s-%s", dt, v, layout), func(b *testing.B) {
					b.SetBytes(int64(phi * 3 * R))
					for i := 0; i < b.N; i++ {
						blocks := copies[i%len(copies)].v1
						if layout == "split" {
							blocks = copies[i%len(copies)].split
						}
						gatedStep(p, v, y, blocks, dt, H, x, phi/B, k)
					}
				})
			}
		}
		p.Close()
	}
}

// BenchmarkGatedOverPaper: BenchmarkFFNGatedDRAM's layer (version 2
// layout) with the paper's set and a gated method's timed in turn, one of
// each per iteration (their order alternating), and the median of the
// per-pair ratios reported (method/paper): the VM's bandwidth moves by
// ±15 % from one second to the next, so two timings taken far apart do not
// compare, two taken back to back do.
func BenchmarkGatedOverPaper(b *testing.B) {
	const H, N, B = 2048, 8192, 256
	loaded, phi, k := 7*N/10, 4*N/10, N/4
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		copies, x := gatedLayers(dt, H, N, B, loaded)
		y := make([]float32, H)
		p := NewPool(2)
		for _, v := range []string{"gate", "hybrid"} {
			b.Run(fmt.Sprintf("%v-%s", dt, v), func(b *testing.B) {
				ratios := make([]float64, 0, b.N)
				var tp, tm time.Duration
				for i := 0; i < b.N; i++ {
					blocks := copies[i%len(copies)].split
					var d [2]time.Duration
					for o := range 2 {
						which := (i + o) % 2 // 0: paper, 1: the method
						name := "paper"
						if which == 1 {
							name = v
						}
						t0 := time.Now()
						gatedStep(p, name, y, blocks, dt, H, x, phi/B, k)
						d[which] = time.Since(t0)
						blocks = copies[(i+1)%len(copies)].split // the second from memory too
					}
					tp, tm = tp+d[0], tm+d[1]
					ratios = append(ratios, float64(d[1])/float64(d[0]))
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "ratio")
				b.ReportMetric(float64(tp.Microseconds())/float64(b.N), "paper-µs")
				b.ReportMetric(float64(tm.Microseconds())/float64(b.N), v+"-µs")
			})
		}
		p.Close()
	}
}

// gatedCopies is one layer interleaved (version 1) and split as packs of
// its dtype are now (format.LayoutFor: version 3 or 2).
type gatedCopies struct{ v1, split []format.RecordBlock }

// gatedLayers builds copies of a layer's first loaded records (about 1 GiB
// a layout, so each step reads from memory), in bands of B records, and an
// activation vector of unit scale.
func gatedLayers(dt format.DType, H, N, B, loaded int) ([]gatedCopies, []float32) {
	c, x := gatedLayersTiled(dt, H, N, B, loaded, 0)
	return c[0], x
}

// gatedLayersTiled is gatedLayers with, for each tile group size of
// groups, copies whose tiled blocks are by tile groups of that many
// records (version 5; 0: none); the copies of each size are allocated in
// turn, so that each set lies in memory as the others do.
func gatedLayersTiled(dt format.DType, H, N, B, loaded int, groups ...int) ([][]gatedCopies, []float32) {
	rng := rand.New(rand.NewPCG(1, 1))
	R, _ := dt.RowBytes(H)
	rec := 3 * R
	n := max(2, (1<<30)/(loaded*rec))
	layer, _ := randRow(rng, dt, B*3*H) // one band of distinct records, repeated
	sets := make([][]gatedCopies, len(groups))
	for k := range sets {
		sets[k] = make([]gatedCopies, n)
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

// gatedStep is one decode FFN of the benchmarks' layer: "paper" computes
// the first bands (phiBands of them, a static set or the compact decode
// set), "gate" dots every loaded gate row and computes up and down for k
// records, "hybrid" computes the first k/2 whole and chooses k − k/2 of
// the others by their gates — the same bytes.
func gatedStep(p *Pool, method string, y []float32, blocks []format.RecordBlock, dt format.DType, H int, x []float32, phiBands, k int) {
	switch method {
	case "paper":
		FFNRecords(p, y, blocks[:phiBands], dt, H, x, nil)
	case "gate":
		FFNGated(p, y, blocks, dt, H, x, 0, k, nil)
	default:
		FFNGated(p, y, blocks, dt, H, x, k/2, k-k/2, nil)
	}
}

// BenchmarkGateKeys: the gated FFN's ranking keys of a γ0.7 layer's gate
// dots (4710 after a hybrid's static records), through SiLUMul.
func BenchmarkGateKeys(b *testing.B) {
	g := make([]float32, 4710)
	keys := make([]uint32, len(g))
	for i := range g {
		g[i] = float32(i%200-100) / 30
	}
	for i := 0; i < b.N; i++ {
		GateKeys(keys, g)
	}
}

// BenchmarkTopKeys: the gated FFN's choice of k = 1/4 of 8192 among the
// keys of a γ0.7 layer's 4710 gate dots after a hybrid's static records
// (gate values of unit scale).
func BenchmarkTopKeys(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	g := make([]float32, 4710)
	for i := range g {
		g[i] = float32(rng.NormFloat64())
	}
	keys, buf := make([]uint32, len(g)), make([]uint32, len(g))
	GateKeys(keys, g)
	sel := make([]int32, 0, len(g))
	for i := 0; i < b.N; i++ {
		sel = TopKeys(keys, buf, 1024, sel[:0])
	}
}

// BenchmarkInt8DownOverFloat: one decode token's FFN of a 1B-shape Q4_0
// or Q8_0 layer from memory (all N records, version 2 bands of 256, 2 threads) on the
// integer path, with the down projection's coefficients rounded to int8
// (Axpy8Act) and in float (WithExactDown), timed back to back in turn
// (order alternating); reports the median of the per-pair ratios
// (int8 ÷ float time) and the read bandwidth of a plain pass over the
// same bytes between pairs, the VM's regime at the time.
func BenchmarkInt8DownOverFloat(b *testing.B) {
	for _, dt := range []format.DType{format.Q4_0, format.Q8_0} {
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
	copies, x := gatedLayers(dt, H, N, B, N)
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

// BenchmarkRoutedOverPaper is BenchmarkGatedOverPaper for the router's
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
		copies, x := gatedLayers(dt, H, N, B, loaded)
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
		both, x := gatedLayersTiled(dt, H, N, B, loaded, 0, G)
		v4, v5 := both[0], both[1]
		nc := len(v4)
		sets := func(copies []gatedCopies) (paper, routed [][]format.RecordBlock) {
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
