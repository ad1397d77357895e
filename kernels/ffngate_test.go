package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sipack/sipack/format"
)

// TestFFNGatedMatchesReference: the gated decode FFN against float64 from
// the widened records, every table, dtype and thread count, with and
// without a static prefix: it computes the static records and exactly k
// others, those are the k of largest |silu(gate·x)| among the others (up
// to the dots' rounding at the threshold), their h are silu(g)·(up·x) and
// y is Σ h·down over all computed. (Planting a selection by |g| instead
// of |silu(g)|, dropping the last pair's second record, or choosing among
// all records instead of those after the static ones makes it fail.)
func TestFFNGatedMatchesReference(t *testing.T) {
	forTables(t, testFFNGatedMatchesReference)
}

func testFFNGatedMatchesReference(t *testing.T, tb *Table) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for _, dt := range append(dtypes, format.Q8_0, format.Q4_0) {
			for _, fs := range []struct {
				H      int
				counts []int
			}{{100, []int{9, 3, 6}}, {64, []int{1, 1, 1, 16, 2}}, {2048, []int{13}}, {128, []int{40, 25}}} {
				H, counts := fs.H, fs.counts
				if dt.Quantized() && (H%32 != 0 || tb.Ops(dt).ActDot) {
					continue // the integer path rounds activations to Q8
				}
				total := 0
				for _, c := range counts {
					total += c
				}
				blocks, recs := randRecords(rng, dt, H, counts)
				x := randVec(rng, H)
				for i := range x {
					x[i] /= float32(math.Sqrt(float64(H))) // gates of a few units: silu(g) never underflows to 0
				}
				xw := roundedActs(tb, dt, x, 2*total, H, 1)
				g, u, key, slack := make([]float64, total), make([]float64, total), make([]float64, total), make([]float64, total)
				for j, r := range recs {
					var gAbs float64
					for i := 0; i < H; i++ {
						g[j] += float64(r[i]) * float64(xw[i])
						u[j] += float64(r[H+i]) * float64(xw[i])
						gAbs += math.Abs(float64(r[i]) * float64(xw[i]))
					}
					key[j] = math.Abs(g[j] / (1 + math.Exp(-g[j])))
					slack[j] = 1.1*2*float64(H+2)*6e-8*gAbs + 1e-6
				}
				for _, c := range []struct{ static, k int }{{0, 0}, {0, 1}, {0, total / 2}, {0, total - 1}, {0, total},
					{total / 3, 0}, {total / 3, 1}, {total / 3, (total - total/3) / 2}, {total / 3, total - total/3}} {
					static, k := c.static, c.k
					y := make([]float32, H)
					act := make([]float32, total)
					for j := range act {
						act[j] = float32(j + 1) // overwritten: zero where not computed
					}
					FFNGated(p, y, recordBlocks(dt, H, format.Layout(k%4), blocks...), dt, H, x, static, k, act)
					in := make([]bool, total)
					n := 0
					for j, h := range act {
						if h != 0 {
							in[j] = true
							n++
						}
					}
					if n != static+k {
						t.Fatalf("%v H=%d threads %d: %d records computed, want static %d + k %d", dt, H, threads, n, static, k)
					}
					for j := range static {
						if !in[j] {
							t.Fatalf("%v H=%d static %d: static record %d not computed", dt, H, static, j)
						}
					}
					want, mag := make([]float64, H), make([]float64, H)
					for j, r := range recs {
						if !in[j] {
							for i := static; i < total; i++ {
								if in[i] && key[i]+slack[i]+slack[j] < key[j] {
									t.Fatalf("%v H=%d k=%d: record %d (|silu(g)| %g) computed and %d (%g) not", dt, H, k, i, key[i], j, key[j])
								}
							}
							continue
						}
						h := g[j] / (1 + math.Exp(-g[j])) * u[j]
						if d := math.Abs(h - float64(act[j])); d > 1e-4*(1+math.Abs(h)) {
							t.Fatalf("%v H=%d k=%d act[%d]: %g vs %g", dt, H, k, j, act[j], h)
						}
						for i := 0; i < H; i++ {
							want[i] += h * float64(r[2*H+i])
							mag[i] += math.Abs(h * float64(r[2*H+i]))
						}
					}
					for i := range want {
						if math.Abs(want[i]-float64(y[i])) > 1e-4*(1+mag[i]) {
							t.Fatalf("%v H=%d k=%d threads %d y[%d]: %g vs %g", dt, H, k, threads, i, y[i], want[i])
						}
					}
				}
			}
		}
		p.Close()
	}
}

// recordBlocks views interleaved record bytes (gate | up | down rows of
// H elements of dt) as blocks: as they are (l Interleaved), or copied into
// a band block of layout l (version 2: gate rows together, then the up|down
// pairs; version 3: gate, up and down rows in three runs), in a block of
// room for n+3 records so strides and offsets differ.
func recordBlocks(dt format.DType, H int, l format.Layout, bs ...[]byte) []format.RecordBlock {
	R, _ := dt.RowBytes(H)
	out := make([]format.RecordBlock, len(bs))
	for i, b := range bs {
		if l == format.Interleaved {
			out[i] = format.InterleavedBlock(b, R)
			continue
		}
		B := len(b)/(3*R) + 3
		out[i] = format.PutBlock(make([]byte, 3*B*R), b, B, R, l, format.TileBytes(dt), format.TileGroups{})
	}
	return out
}

// randRecords makes blocks of counts[i] random records (gate | up | down
// rows of H elements of dt) and every record's values, in order.
func randRecords(rng *rand.Rand, dt format.DType, H int, counts []int) ([][]byte, [][]float32) {
	var blocks [][]byte
	var recs [][]float32
	for _, c := range counts {
		b, f := randRow(rng, dt, c*3*H)
		blocks = append(blocks, b)
		for j := 0; j < c; j++ {
			recs = append(recs, f[j*3*H:(j+1)*3*H])
		}
	}
	return blocks, recs
}

// tiledBlocks puts each of bs (interleaved records) in a layout Tiled
// band block of room for n+3 records, by tile groups of G ranks (0: none)
// with the i-th block's first rank 5i (so its first group is cut short
// where G does not divide it), and views it as two blocks cut at record
// cut where it has more.
func tiledBlocks(dt format.DType, H, G, cut int, bs ...[]byte) []format.RecordBlock {
	R, _ := dt.RowBytes(H)
	var out []format.RecordBlock
	for i, b := range bs {
		n := len(b) / (3 * R)
		B := n + 3
		blk := format.PutBlock(make([]byte, 3*B*R), b, B, R, format.Tiled, format.TileBytes(dt), format.GroupsAt(G, 5*i))
		if cut > 0 && cut < n {
			out = append(out, blk.Sub(0, cut), blk.Sub(cut, n))
			continue
		}
		out = append(out, blk)
	}
	return out
}

// TestTileGroups: a version 5 band block's down section by tile groups
// (format.RecordBlock.TileGroup) gives the decode and prefill FFN, and the
// gated FFN's chosen records, the sums of the same records tiled whole
// (version 4), to the bit — whole blocks and views cut inside a group and
// across groups, on every table.
func TestTileGroups(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(41, 42))
		p := NewPool(1)
		defer p.Close()
		for _, dt := range []format.DType{format.BF16, format.F16, format.Q8_0, format.Q4_0} {
			for _, H := range []int{256, 160} { // 160: a last, shorter piece
				if _, ok := dt.RowBytes(H); !ok {
					continue
				}
				blocks, _ := randRecords(rng, dt, H, []int{29, 7, 40})
				for _, T := range []int{1, 5} {
					x := randVec(rng, T*H)
					for i := range x {
						x[i] /= float32(math.Sqrt(float64(H)))
					}
					for _, cut := range []int{0, 2, 11} {
						want := make([]float32, T*H)
						FFNRecords(p, want, tiledBlocks(dt, H, 0, cut, blocks...), dt, H, x, nil)
						for _, G := range []int{1, 3, 8} {
							got := make([]float32, T*H)
							FFNRecords(p, got, tiledBlocks(dt, H, G, cut, blocks...), dt, H, x, nil)
							if !slices.Equal(got, want) {
								t.Fatalf("%v H=%d T=%d cut %d: tile groups of %d give another FFN than whole tiles", dt, H, T, cut, G)
							}
							if T > 1 {
								continue
							}
							wantG, gotG := make([]float32, H), make([]float32, H)
							FFNGated(p, wantG, tiledBlocks(dt, H, 0, cut, blocks...), dt, H, x, 9, 23, nil)
							FFNGated(p, gotG, tiledBlocks(dt, H, G, cut, blocks...), dt, H, x, 9, 23, nil)
							if !slices.Equal(gotG, wantG) {
								t.Fatalf("%v H=%d cut %d: tile groups of %d give another gated FFN than whole tiles", dt, H, cut, G)
							}
						}
					}
				}
			}
		}
	})
}

// TestTiledAlign: a decode's chunks end at tile groups in a version 5 set
// (a layer band's block of 366 records by groups of 128: 128), at whole
// blocks in a version 4 one (366), anywhere in untiled ones (1).
func TestTiledAlign(t *testing.T) {
	R := 2 * 256
	tiled := func(B int, tg format.TileGroups) format.RecordBlock {
		return format.TiledBlock(make([]byte, 3*B*R), B, B, R, format.TileBytes(format.BF16), tg)
	}
	runs := format.RunsBlock(make([]byte, 3*8*R), 8, 8, R)
	for _, c := range []struct {
		blocks []format.RecordBlock
		want   int
	}{
		{[]format.RecordBlock{tiled(366, format.GroupsAt(128, 1000)), tiled(300, format.GroupsAt(128, 1366)), runs}, 128},
		{[]format.RecordBlock{tiled(366, format.TileGroups{}), runs}, 366},
		{[]format.RecordBlock{runs}, 1},
	} {
		if got := tiledAlign(c.blocks); got != c.want {
			t.Errorf("tiledAlign: %d, want %d", got, c.want)
		}
	}
}
