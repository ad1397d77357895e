package format

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
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
// last piece shorter where R is not a multiple of T; every view of it
// (Sub, its pieces, CopyDown, CopyDownFrom either way, CopyRecord) gives
// back each record's rows, and DownRow refuses it.
func TestTiledBlock(t *testing.T) {
	for _, c := range []struct{ H, B, n int }{{2048, 8, 8}, {2080, 8, 5}, {32, 4, 3}} {
		R, _ := Q8_0.RowBytes(c.H)
		T := TileBytes(Q8_0)
		recs := make([]byte, c.n*3*R)
		for i := range recs {
			recs[i] = byte(i*7 + i/251)
		}
		blk := make([]byte, 3*c.B*R)
		b := PutBlock(blk, recs, c.B, R, Tiled, T)
		if !b.Tiled() || !b.Runs() || !b.Split() || T != 68 {
			t.Fatalf("H=%d: tiled %v runs %v split %v, tile %d", c.H, b.Tiled(), b.Runs(), b.Split(), T)
		}
		nc := (R + T - 1) / T
		for j := 0; j < c.n; j++ {
			down := recs[j*3*R+2*R : (j+1)*3*R]
			for p := 0; p < nc; p++ {
				pl := min(T, R-p*T)
				at := 2*c.B*R + p*c.B*T + j*pl
				if !bytes.Equal(blk[at:at+pl], down[p*T:p*T+pl]) || !bytes.Equal(b.DownPiece(j, p), down[p*T:p*T+pl]) {
					t.Fatalf("H=%d record %d piece %d not at %d", c.H, j, p, at)
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
		if p := s.TilePieces(0, s.N, nc-1); len(p) != s.N*min(T, R-(nc-1)*T) {
			t.Fatalf("H=%d: last pieces %d bytes", c.H, len(p))
		}
		// Down rows between tiled and whole-row blocks.
		runs := RunsBlock(make([]byte, 3*c.B*R), c.n, c.B, R)
		tiled := TiledBlock(make([]byte, 3*c.B*R), c.n, c.B, R, T)
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
