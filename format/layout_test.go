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
	for _, major := range []uint16{1, 2, 3} {
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
				case 3:
					gate, up, down = band+uint64(r%B*R), band+uint64((B+r%B)*R), band+uint64((2*B+r%B)*R)
				case 2:
					gate, up = band+uint64(r%B*R), band+uint64(B*R+r%B*2*R)
					down = up + R
				default:
					gate = band + uint64(r%B)*rec
					up, down = gate+R, gate+2*R
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
				if !bytes.Equal(blk.GateRow(r-lo), want(n, 0)) || !bytes.Equal(blk.UpRow(r-lo), want(n, 1)) || !bytes.Equal(blk.DownRow(r-lo), want(n, 2)) {
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
