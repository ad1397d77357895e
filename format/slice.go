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
	idx.Routers = append([]TensorInfo(nil), src.Routers...)
	if err := spec.copyTensors(p); err != nil {
		return err
	}
	spec.Records = p.recordSource()
	return WritePack(ctx, out, spec)
}

// recordSource gives WritePack the records of p's mapped prefix by their
// original neuron ids: rank[l][neuron] inverts each permutation.
func (p *Pack) recordSource() func(layer int, neurons []uint32, dst []byte) error {
	rank := make(map[int][]int, len(p.Index.SparseLayers))
	for _, sl := range p.Index.SparseLayers {
		inv := make([]int, len(sl.Perm))
		for r, n := range sl.Perm {
			inv[n] = r
		}
		rank[sl.Layer] = inv
	}
	rb := int(p.Index.RecordBytes)
	return func(layer int, neurons []uint32, dst []byte) error {
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
}

// copyTensors streams every tensor of spec.Index (dense and routers) from
// p's tensors of the same names.
func (spec *WriteSpec) copyTensors(p *Pack) error {
	for _, t := range spec.Index.tensors() {
		_, data, ok := p.Tensor(t.Name)
		if !ok {
			return fmt.Errorf("sip: internal error: tensor %q vanished", t.Name)
		}
		spec.Dense = append(spec.Dense, bytesSource(data))
	}
	return nil
}

// bytesSource is a WriteSpec.Dense source that writes data.
func bytesSource(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}
