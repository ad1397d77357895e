package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sipack/sipack/format"
)

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
// (format.RecordBlock.TileGroup) gives the decode and prefill FFN the sums
// of the same records tiled whole
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
