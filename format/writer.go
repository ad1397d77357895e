package format

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/zeebo/blake3"

	"github.com/sipack/sipack/internal/tmpfile"
)

// WriteSpec is everything WritePack needs. The caller fills Index with the
// config, the JSON blobs, the dense tensor list (name, dtype, shape) and the
// sparse layers' permutations; WritePack plans every offset and computes every
// hash itself.
type WriteSpec struct {
	Index *Index
	// Dense[i] streams the bytes of Index.DenseTensors[i], then of
	// Index.Routers[i−len(DenseTensors)]; exactly Length bytes must be written.
	Dense []func(w io.Writer) error
	// Records fills dst with the neuron records (gate row | up row | down column)
	// of the given original neurons of a layer, one after the other.
	Records func(layer int, neurons []uint32, dst []byte) error
	// Progress, if set, is called with the number of bytes just written.
	Progress func(n int)
	// Major, if not 0, is the version (band layout, §5) to write instead of
	// the dtype's (LayoutFor): 1 to 5 (4 and 5 are the tiled layout; which
	// of them is written follows Index.TileGroup).
	Major uint16
}

// planLayout fills the offsets of idx and the preamble. Hash bytes are left as they are.
func planLayout(idx *Index, major uint16) (*Preamble, error) {
	c := &idx.Config
	rb, ok := idx.RecordDType.RowBytes(c.HiddenSize)
	if !ok {
		return nil, fmt.Errorf("sip: record dtype %v cannot hold rows of %d (hidden_size must be a multiple of %d)", idx.RecordDType, c.HiddenSize, idx.RecordDType.BlockElems())
	}
	idx.RecordBytes = uint64(3 * rb)
	layout := packLayout(idx.RecordDType)
	if major != 0 {
		if major > VersionMajor {
			return nil, fmt.Errorf("sip: no band layout of version %d (1 to %d)", major, VersionMajor)
		}
		layout = LayoutOf(major)
	}
	// A tiled block cuts down rows into pieces of DownTile values: whole
	// blocks of the dtype only (not K-quant super-blocks of 256).
	if layout == Tiled && TileBytes(idx.RecordDType) == 0 {
		return nil, fmt.Errorf("sip: record dtype %v has no tiled band layout (its blocks are longer than %d values)", idx.RecordDType, DownTile)
	}
	// Tile groups (version 5): a tiled band block's only; a group of a
	// whole band's records or more is none (version 4).
	if idx.TileGroup < 0 || (idx.TileGroup > 0 && layout != Tiled) {
		return nil, fmt.Errorf("sip: tile groups of %d records in band layout %d (tiled only)", idx.TileGroup, layout.Major())
	}
	if idx.TileGroup >= idx.BandNeurons {
		idx.TileGroup = 0
	}
	major = layout.Major()
	if idx.TileGroup > 0 {
		major = 5
	}
	nSparse := len(idx.SparseLayers)
	var bandCount, bandBytes uint64
	if nSparse > 0 {
		if idx.BandNeurons <= 0 {
			return nil, fmt.Errorf("sip: band size must be positive, got %d", idx.BandNeurons)
		}
		if idx.RanksPresent == 0 {
			idx.RanksPresent = c.IntermediateSize
		}
		if idx.RanksPresent < 1 || idx.RanksPresent > c.IntermediateSize {
			return nil, fmt.Errorf("sip: ranks present %d out of range [1, %d]", idx.RanksPresent, c.IntermediateSize)
		}
		bandCount = uint64((idx.RanksPresent + idx.BandNeurons - 1) / idx.BandNeurons)
		bandBytes = alignUp(uint64(nSparse*idx.BandNeurons)*idx.RecordBytes, SectionAlign)
	}
	idx.BandHashes = make([][HashSize]byte, bandCount)
	all := idx.tensors()
	for _, t := range all {
		n, ok := TensorBytes(t.DType, t.Shape)
		if !ok {
			return nil, fmt.Errorf("sip: tensor %q: shape %v cannot be stored as %v", t.Name, t.Shape, t.DType)
		}
		t.Length = uint64(n)
	}
	// Offsets depend on the index length, and FlatBuffers omits scalars equal
	// to their default (0), so measure the index with non-zero placeholder
	// offsets: its length then depends only on field sizes.
	for _, t := range all {
		t.Offset = 1 << 40
	}
	indexLen := uint64(len(encodeIndex(idx)))
	p := &Preamble{
		Major: major, Minor: VersionMinor,
		IndexOff: PreambleSize, IndexLen: indexLen,
		DenseOff:  alignUp(PreambleSize+indexLen, SectionAlign),
		BandBytes: bandBytes, BandNeurons: uint32(idx.BandNeurons), BandCount: uint32(bandCount),
	}
	off := p.DenseOff
	for _, t := range all {
		off = alignUp(off, TensorAlign)
		t.Offset = off
		off += t.Length
	}
	p.DenseLen = off - p.DenseOff
	p.FFNOff = alignUp(off, SectionAlign)
	p.FFNLen = bandCount * bandBytes
	p.FileLen = p.FFNOff + p.FFNLen
	if nSparse == 0 {
		idx.BandNeurons = 0
		p.BandNeurons = 0
		idx.RanksPresent = c.IntermediateSize
	}
	if nSparse > 0 && idx.SparseLayers[0].Budget != nil {
		p.Flags |= FlagLayerBands // bands of each layer's share (§5)
	}
	return p, nil
}

// tensors lists the dense section's tensors in file order: the dense
// tensors, then the routers.
func (idx *Index) tensors() []*TensorInfo {
	ts := make([]*TensorInfo, 0, len(idx.DenseTensors)+len(idx.Routers))
	for i := range idx.DenseTensors {
		ts = append(ts, &idx.DenseTensors[i])
	}
	for i := range idx.Routers {
		ts = append(ts, &idx.Routers[i])
	}
	return ts
}

// countingWriter tracks the file position so padding can be computed.
type countingWriter struct {
	w  *chunkWriter
	n  uint64
	cb func(int)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += uint64(n)
	if c.cb != nil {
		c.cb(n)
	}
	return n, err
}

func (c *countingWriter) padTo(off uint64) error {
	if off < c.n {
		return fmt.Errorf("sip: internal error: position %d past planned offset %d", c.n, off)
	}
	var zero [4096]byte
	for c.n < off {
		k := min(off-c.n, uint64(len(zero)))
		if _, err := c.Write(zero[:k]); err != nil {
			return err
		}
	}
	return nil
}

// packLayout is the band layout packs of record dtype dt are written in.
func packLayout(dt DType) Layout {
	if writeMajor != 0 {
		return LayoutOf(writeMajor)
	}
	return LayoutFor(dt)
}

// writeMajor, where not 0, is the version packs are written in, whatever
// their dtype; tests set it to check that every version still loads.
var writeMajor uint16

// WritePack writes a pack to path. It writes the temporary file
// tmpfile.Name(path) (unique per process, so a file left by a killed writer
// can be recognised and removed by the next run) and renames it only when
// everything, index and preamble last, is on disk: an interrupted or failed
// write never leaves a file under the final name, and the temporary file is
// removed. A path that exists and is not a regular file (/dev/null, a named
// pipe) is refused, never renamed over. Cancelling ctx stops the write
// between tensors and bands.
func WritePack(ctx context.Context, path string, spec *WriteSpec) (err error) {
	idx := spec.Index
	if len(spec.Dense) != len(idx.DenseTensors)+len(idx.Routers) {
		return fmt.Errorf("sip: internal error: %d dense sources for %d tensors", len(spec.Dense), len(idx.DenseTensors)+len(idx.Routers))
	}
	if err := CheckChatTemplates(idx.ChatTemplates); err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	// With layer budgets a band holds each layer's share of its L·B
	// records (LayerBands), B of every layer otherwise.
	shares, err := checkBudgets(idx)
	if err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	pre, err := planLayout(idx, spec.Major)
	if err != nil {
		return err
	}
	if err := tmpfile.CheckOutput(path); err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	tmp := tmpfile.Name(path)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("sip: create %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	cw := &countingWriter{w: newChunkWriter(f, WriteChunk), cb: spec.Progress}
	// Reserve preamble and index; they are written last, over these zeros.
	if err := cw.padTo(pre.DenseOff); err != nil {
		return fmt.Errorf("sip: write %s: %w", tmp, err)
	}
	for i, t := range idx.tensors() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := cw.padTo(t.Offset); err != nil {
			return fmt.Errorf("sip: write %s: %w", tmp, err)
		}
		h := blake3.New()
		start := cw.n
		if err := spec.Dense[i](io.MultiWriter(cw, h)); err != nil {
			return fmt.Errorf("sip: tensor %q: %w", t.Name, err)
		}
		if got := cw.n - start; got != t.Length {
			return fmt.Errorf("sip: internal error: tensor %q wrote %d bytes, want %d", t.Name, got, t.Length)
		}
		copy(t.Hash[:], h.Sum(nil))
	}
	if err := cw.padTo(pre.FFNOff); err != nil {
		return fmt.Errorf("sip: write %s: %w", tmp, err)
	}
	if pre.BandCount > 0 {
		B, N := idx.BandNeurons, idx.RanksPresent
		layout := LayoutOf(pre.Major) // what planLayout chose
		R := int(idx.RecordBytes / 3)
		band := make([]byte, pre.BandBytes)
		recs := make([]byte, uint64(len(idx.SparseLayers)*B)*idx.RecordBytes) // one layer's records of the band, whole
		for b := 0; b < int(pre.BandCount); b++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			clear(band)
			var off uint64
			for li, sl := range idx.SparseLayers {
				lo, hi, capacity := b*B, min((b+1)*B, N), B
				if shares != nil {
					lo, hi = shares[li][b], shares[li][b+1]
					capacity = hi - lo
				}
				if err := spec.Records(sl.Layer, sl.Perm[lo:hi], recs[:uint64(hi-lo)*idx.RecordBytes]); err != nil {
					return fmt.Errorf("sip: layer %d records: %w", sl.Layer, err)
				}
				// §5: the block's rows in the pack's layout.
				PutBlock(band[off:], recs[:uint64(hi-lo)*idx.RecordBytes], capacity, R, layout, TileBytes(idx.RecordDType), GroupsAt(idx.TileGroup, lo))
				off += uint64(capacity) * idx.RecordBytes
			}
			idx.BandHashes[b] = blake3.Sum256(band)
			if _, err := cw.Write(band); err != nil {
				return fmt.Errorf("sip: write %s: %w", tmp, err)
			}
		}
	}
	if err := cw.w.Flush(); err != nil {
		return fmt.Errorf("sip: write %s: %w", tmp, err)
	}
	if cw.n != pre.FileLen {
		return fmt.Errorf("sip: internal error: wrote %d bytes, planned %d", cw.n, pre.FileLen)
	}
	index := encodeIndex(idx)
	if uint64(len(index)) != pre.IndexLen {
		return fmt.Errorf("sip: internal error: index is %d bytes, planned %d", len(index), pre.IndexLen)
	}
	pre.IndexHash = blake3.Sum256(index)
	if _, err := f.WriteAt(index, PreambleSize); err != nil {
		return fmt.Errorf("sip: write %s: %w", tmp, err)
	}
	if _, err := f.WriteAt(pre.MarshalBinary(), 0); err != nil {
		return fmt.Errorf("sip: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sip: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sip: close %s: %w", tmp, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Checked again here: the rename must never replace a special file.
	if err := tmpfile.Rename(tmp, path); err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	return nil
}
