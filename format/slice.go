package format

import (
	"context"
	"fmt"
	"io"
)

// Slice writes the pack's loaded prefix (its first LoadedRanks ranks per
// sparse layer) as a valid, smaller pack: what one ships to a device that
// will never load more. The dense section, the permutations and the
// provenance are kept; ranks_present records how many ranks remain, and
// every hash is recomputed. Bytes are copied from the mapped prefix only.
func Slice(ctx context.Context, p *Pack, out string) error {
	src := p.Index
	idx := *src
	idx.DenseTensors = append([]TensorInfo(nil), src.DenseTensors...)
	idx.SparseLayers = append([]SparseLayer(nil), src.SparseLayers...)
	idx.RanksPresent = p.LoadedRanks
	if len(idx.SparseLayers) == 0 {
		idx.RanksPresent = 0
	}
	spec := &WriteSpec{Index: &idx, Major: p.Preamble.Major} // the source's band layout
	for i := range idx.DenseTensors {
		_, data, ok := p.Tensor(idx.DenseTensors[i].Name)
		if !ok {
			return fmt.Errorf("sip: internal error: tensor %q vanished", idx.DenseTensors[i].Name)
		}
		spec.Dense = append(spec.Dense, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
	}
	// rank[l][neuron] inverts each permutation, so records are found by the
	// original neuron ids WritePack asks for.
	rank := make(map[int][]int, len(idx.SparseLayers))
	for _, sl := range idx.SparseLayers {
		inv := make([]int, len(sl.Perm))
		for r, n := range sl.Perm {
			inv[n] = r
		}
		rank[sl.Layer] = inv
	}
	rb := int(src.RecordBytes)
	spec.Records = func(layer int, neurons []uint32, dst []byte) error {
		si, _ := p.SparseIndex(layer)
		for j, n := range neurons {
			r := rank[layer][n]
			if r >= p.mappedRanks(si) {
				return fmt.Errorf("sip: internal error: rank %d beyond the loaded prefix", r)
			}
			blk := p.RecordBlock(si, r, r+1)
			blk.CopyRecord(dst[j*rb:(j+1)*rb], 0) // no allocation per record
		}
		return nil
	}
	return WritePack(ctx, out, spec)
}
