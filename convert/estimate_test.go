package convert

import (
	"testing"

	"github.com/sipack/sipack/format"
)

// TestEstimateMatchesPack: the estimate from the config alone is the pack
// convert writes, to the byte: its dense tensors, its record size, and a
// γ load within the index and one band of the pack's own prefix; for the
// tiny model (hidden 256: K-quants whole), a tied model and a model with a
// bias (hidden 64 and 96: K-quants fall back), in every dtype kind.
func TestEstimateMatchesPack(t *testing.T) {
	for _, dir := range []string{tinyDir, "../testdata/archcheck/llama32-tied", "../testdata/archcheck/qwen2-bias"} {
		for _, dt := range []string{"", "f32", "q8_0", "q4_0", "q6_k", MixQ4KM} {
			p, m := convertTo(t, dir, Options{DType: dt})
			e, err := EstimatePack(m.Config, dt, m.tensor(m.Arch.HFName(m.Config, format.NameTokenEmbedding)).DType)
			if err != nil {
				t.Fatal(err)
			}
			var dense uint64
			for _, ti := range p.Index.DenseTensors {
				dense += ti.Length
			}
			if e.Dense != dense || e.RecordBytes != p.Index.RecordBytes || e.SparseLayers != len(p.Index.SparseLayers) {
				t.Errorf("%s %q: estimate dense %d, record %d, %d sparse layers; pack %d, %d, %d",
					dir, dt, e.Dense, e.RecordBytes, e.SparseLayers, dense, p.Index.RecordBytes, len(p.Index.SparseLayers))
			}
			if e.DTypeName() != p.DTypeName() {
				t.Errorf("%s %q: estimate names %s, pack %s", dir, dt, e.DTypeName(), p.DTypeName())
			}
			for _, g := range []float64{0.25, 0.7, 1} {
				got, want := e.Load(g), p.PrefixBytes(g)
				slack := uint64(p.Preamble.IndexLen) + p.Preamble.BandBytes + 1<<16
				if got > want || want-got > slack {
					t.Errorf("%s %q γ %v: estimate %d, pack prefix %d (slack %d)", dir, dt, g, got, want, slack)
				}
			}
		}
	}
}
