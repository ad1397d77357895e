package format

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBandLayout: a version 3 pack's band block holds the B gate rows,
// then the B up rows, then the B down rows; a version 2 pack's the B gate
// rows, then the B up | down pairs, at the offsets SPEC §5 gives; a
// version 1 pack holds whole records; all read back every record
// (Record, RecordBlock) and verify. Records are made so that every row of
// every neuron differs. (Writing the rows of a version 3 block in the
// version 2 order makes it fail.)
func TestBandLayout(t *testing.T) {
	const R = 16 // 8 bf16 values a row
	c := smallConfig()
	want := func(n uint32, part int) []byte { // neuron n's row: 0 gate, 1 up, 2 down
		return bytes.Repeat([]byte{byte(n) | byte(part)<<6}, R)
	}
	for _, major := range []uint16{1, 2, 3, 4} {
		restore := SetWriteMajor(major)
		idx := &Index{Config: c, ConfigJSON: []byte(`{}`), TokenizerJSON: []byte(`{"model":{}}`), RecordDType: BF16, BandNeurons: 16}
		sparse := map[int]bool{}
		for l := 0; l < c.NumLayers; l++ {
			perm := make([]uint32, c.IntermediateSize)
			for i := range perm {
				perm[i] = uint32((i * 7) % c.IntermediateSize)
			}
			sparse[l] = true
			idx.SparseLayers = append(idx.SparseLayers, SparseLayer{Layer: l, Perm: perm})
		}
		spec := denseSpec(idx, sparse, func(w io.Writer, n int) error { _, err := w.Write(make([]byte, n)); return err })
		spec.Records = func(l int, neurons []uint32, dst []byte) error {
			for j, n := range neurons {
				for part := 0; part < 3; part++ {
					copy(dst[(3*j+part)*R:], want(n, part))
				}
			}
			return nil
		}
		path := filepath.Join(t.TempDir(), "layout.sip")
		err := WritePack(context.Background(), path, spec)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Open(path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Preamble.Major != major || p.Split() != (major >= 2) || p.Layout().Major() != major {
			t.Fatalf("version %d pack reads as major %d, split %v", major, p.Preamble.Major, p.Split())
		}
		raw := p.data
		B, rec := 16, uint64(3*R)
		for si, sl := range idx.SparseLayers {
			for r := 0; r < c.IntermediateSize; r++ {
				n := sl.Perm[r]
				band := p.Preamble.FFNOff + uint64(r/B)*p.Preamble.BandBytes + uint64(si*B)*rec
				var gate, up, down uint64
				switch major {
				case 4: // the down row in pieces: check them below
					gate, up, down = band+uint64(r%B*R), band+uint64((B+r%B)*R), 0
				case 3:
					gate, up, down = band+uint64(r%B*R), band+uint64((B+r%B)*R), band+uint64((2*B+r%B)*R)
				case 2:
					gate, up = band+uint64(r%B*R), band+uint64(B*R+r%B*2*R)
					down = up + R
				default:
					gate = band + uint64(r%B)*rec
					up, down = gate+R, gate+2*R
				}
				if major == 4 {
					// §5: piece c (TileBytes: 64 values, 128 bytes of
					// bf16; R is 16 bytes here, so one piece of R) of rank
					// r at band + 2B·R + c·B·T + (r mod B)·R.
					down = band + uint64(2*B*R+r%B*R)
				}
				if !bytes.Equal(raw[gate:gate+R], want(n, 0)) || !bytes.Equal(raw[up:up+R], want(n, 1)) || !bytes.Equal(raw[down:down+R], want(n, 2)) {
					t.Fatalf("version %d, layer %d rank %d: rows not where §5 puts them", major, sl.Layer, r)
				}
				full := append(append(want(n, 0), want(n, 1)...), want(n, 2)...)
				if !bytes.Equal(p.Record(si, r), full) {
					t.Fatalf("version %d, layer %d rank %d: Record is not the neuron's record", major, sl.Layer, r)
				}
				lo := r / B * B
				blk := p.RecordBlock(si, lo, min(lo+B, c.IntermediateSize))
				downRow := make([]byte, R)
				blk.CopyDown(downRow, r-lo)
				if !bytes.Equal(blk.GateRow(r-lo), want(n, 0)) || !bytes.Equal(blk.UpRow(r-lo), want(n, 1)) || !bytes.Equal(downRow, want(n, 2)) {
					t.Fatalf("version %d, layer %d rank %d: RecordBlock rows differ", major, sl.Layer, r)
				}
			}
		}
		if _, err := p.Verify(); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
}

// TestTiledBlock: a layout Tiled block (§5, version 4) of B records puts
// piece c of record j's down row at 2B·R + c·B·T + j·(piece length), the
// last piece shorter where R is not a multiple of T; by tile groups of G
// ranks (version 5), the block's first rank O ranks into its group, at
// 2B·R + g·R + c·n_g·T + (j−g)·(piece length), g the first record of j's
// part of its group and n_g the part's records (the first and last parts
// may be short); every view of it (Sub, its pieces, CopyDown, CopyDownFrom
// either way, CopyRecord) gives back each record's rows, and DownRow
// refuses it.
func TestTiledBlock(t *testing.T) {
	for _, c := range []struct{ H, B, n, G, O int }{{2048, 8, 8, 0, 0}, {2080, 8, 5, 0, 0}, {32, 4, 3, 0, 0},
		{2048, 8, 8, 4, 0}, {2080, 8, 7, 3, 0}, {32, 8, 5, 3, 0}, {2048, 4, 4, 1, 0}, {32, 4, 3, 4, 0},
		{2048, 8, 8, 4, 1}, {2080, 8, 7, 3, 2}, {2048, 8, 6, 8, 5}, {2048, 8, 8, 16, 9}} {
		R, _ := Q8_0.RowBytes(c.H)
		T := TileBytes(Q8_0)
		recs := make([]byte, c.n*3*R)
		for i := range recs {
			recs[i] = byte(i*7 + i/251)
		}
		blk := make([]byte, 3*c.B*R)
		b := PutBlock(blk, recs, c.B, R, Tiled, T, TileGroups{c.G, c.O})
		if !b.Tiled() || !b.Runs() || !b.Split() || T != 68 {
			t.Fatalf("H=%d: tiled %v runs %v split %v, tile %d", c.H, b.Tiled(), b.Runs(), b.Split(), T)
		}
		nc := (R + T - 1) / T
		// Walked record by record: a part starts at record 0 and at every
		// record whose rank (O + j) is a multiple of G.
		parts := make([][2]int, c.B) // record j's part: its first record, its records
		for j, start := 0, 0; j <= c.B; j++ {
			if j == c.B || (j > 0 && c.G > 0 && (j+c.O)%c.G == 0) {
				for k := start; k < j; k++ {
					parts[k] = [2]int{start, j - start}
				}
				start = j
			}
		}
		for j := 0; j < c.n; j++ {
			down := recs[j*3*R+2*R : (j+1)*3*R]
			for p := 0; p < nc; p++ {
				pl := min(T, R-p*T)
				g, ng := parts[j][0], parts[j][1]
				at := 2*c.B*R + g*R + p*ng*T + (j-g)*pl
				if !bytes.Equal(blk[at:at+pl], down[p*T:p*T+pl]) || !bytes.Equal(b.DownPiece(j, p), down[p*T:p*T+pl]) {
					t.Fatalf("H=%d G=%d record %d piece %d not at %d", c.H, c.G, j, p, at)
				}
			}
		}
		// Views from record 1 on, and copies out of them.
		s := b.Sub(1, c.n)
		rec := make([]byte, 3*R)
		for j := 0; j < s.N; j++ {
			s.CopyRecord(rec, j)
			if !bytes.Equal(rec, recs[(j+1)*3*R:(j+2)*3*R]) {
				t.Fatalf("H=%d: Sub(1, %d) record %d differs", c.H, c.n, j)
			}
		}
		first, ng := s.TileGroupOf(0) // the group of the block's record 1
		if n := first + ng - 1; len(s.TilePieces(0, n, nc-1)) != n*min(T, R-(nc-1)*T) {
			t.Fatalf("H=%d G=%d: last pieces of %d records %d bytes", c.H, c.G, n, len(s.TilePieces(0, n, nc-1)))
		}
		if d, stride := s.TileDown(0); R >= T && (stride != ng*T || &d[0] != &s.TilePieces(0, 1, 0)[0]) {
			t.Fatalf("H=%d G=%d: TileDown stride %d, want %d, or not at record 1's first piece", c.H, c.G, stride, ng*T)
		}
		// Down rows between tiled and whole-row blocks.
		runs := RunsBlock(make([]byte, 3*c.B*R), c.n, c.B, R)
		tiled := TiledBlock(make([]byte, 3*c.B*R), c.n, c.B, R, T, TileGroups{c.G, c.O})
		for j := 0; j < c.n; j++ {
			runs.CopyDownFrom(j, &b, j)
			tiled.CopyDownFrom(c.n-1-j, &runs, j)
		}
		for j := 0; j < c.n; j++ {
			got := make([]byte, R)
			tiled.CopyDown(got, c.n-1-j)
			if !bytes.Equal(runs.DownRow(j), recs[j*3*R+2*R:(j+1)*3*R]) || !bytes.Equal(got, runs.DownRow(j)) {
				t.Fatalf("H=%d: CopyDownFrom record %d", c.H, j)
			}
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("H=%d: DownRow of a tiled block did not panic", c.H)
				}
			}()
			b.DownRow(0)
		}()
	}
}

// TestTileGroupVersion: an index with tile groups is written as version 5
// (tiled by groups) and reads back; a group of a band's records or more is
// written as version 4 without one; tile groups of a layout other than
// Tiled are refused on write; a version 4 pack claiming tile groups and a
// version 5 pack without them are refused on open.
func TestTileGroupVersion(t *testing.T) {
	dir := t.TempDir()
	open := func(path string) *Pack {
		t.Helper()
		p, err := Open(path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	for _, c := range []struct{ group, major, want int }{{4, 5, 4}, {16, 4, 0}, {0, 4, 0}} {
		path, err := writeSmallWith(t.TempDir(), nil, 16, func(idx *Index) { idx.TileGroup = c.group })
		if err != nil {
			t.Fatal(err)
		}
		p := open(path)
		if int(p.Preamble.Major) != c.major || p.Index.TileGroup != c.want || p.Layout() != Tiled {
			t.Fatalf("tile group %d: version %d, group %d, layout %d; want version %d, group %d", c.group, p.Preamble.Major, p.Index.TileGroup, p.Layout(), c.major, c.want)
		}
		if _, err := p.Verify(); err != nil {
			t.Fatal(err)
		}
		var sum strings.Builder
		p.Summary(&sum)
		if says := strings.Contains(sum.String(), fmt.Sprintf("tiled by groups of %d\n", c.want)); says != (c.want > 0) {
			t.Fatalf("tile group %d: the summary's FFN line says groups %v:\n%s", c.want, says, sum.String())
		}
		// The other version in the preamble.
		raw, _ := os.ReadFile(path)
		pre := p.Preamble
		pre.Major = uint16(9 - c.major)
		copy(raw, pre.MarshalBinary())
		bad := filepath.Join(dir, "bad.sip")
		os.WriteFile(bad, raw, 0o644)
		if q, err := Open(bad, OpenOptions{}); !errors.Is(err, ErrIndex) {
			if err == nil {
				q.Close()
			}
			t.Fatalf("tile group %d in a version %d pack: %v, want ErrIndex", c.want, pre.Major, err)
		}
	}
	restore := SetWriteMajor(2)
	_, err := writeSmallWith(dir, nil, 16, func(idx *Index) { idx.TileGroup = 4 })
	restore()
	if err == nil || !strings.Contains(err.Error(), "tile groups") {
		t.Fatalf("tile groups of a version 2 pack: %v", err)
	}
}
