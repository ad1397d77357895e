package convert

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
)

// Estimate is what a pack of a model holds, computed from its config before
// any conversion, with the tensor dtypes WritePack gives them: a user can
// see what a γ will load before converting (sipack inspect MODEL_DIR).
type Estimate struct {
	Config       *format.ModelConfig
	RecordDType  format.DType
	Mix          bool   // the q4_k_m mix
	Dense        uint64 // the dense section's tensors (not the index)
	RecordBytes  uint64 // one neuron's record: gate row | up row | down column
	SparseLayers int    // layers whose records a γ loads a prefix of
}

// EstimatePack is the Estimate of converting a model of config c to --dtype
// name (src, the checkpoint's dtype, when name is empty), every layer sparse.
func EstimatePack(c *format.ModelConfig, name string, src format.DType) (*Estimate, error) {
	dt, mix, err := recordDType(c, name, src)
	if err != nil {
		return nil, err
	}
	if dt.KQuant() && c.HiddenSize%format.QKK != 0 {
		dt = kquantFallback(dt)
	}
	rb, ok := dt.RowBytes(c.HiddenSize)
	if !ok {
		return nil, fmt.Errorf("%v needs hidden_size (%d) to be a multiple of %d", dt, c.HiddenSize, dt.BlockElems())
	}
	e := &Estimate{Config: c, RecordDType: dt, Mix: mix, RecordBytes: 3 * uint64(rb), SparseLayers: c.NumLayers}
	sparse := map[int]bool{}
	for l := range c.NumLayers {
		sparse[l] = true
	}
	for _, t := range format.ExpectedTensors(c, sparse) {
		tdt := tensorDType(c, t, dt, dt, mix)
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		rows := n / t.Shape[len(t.Shape)-1]
		b, ok := tdt.RowBytes(t.Shape[len(t.Shape)-1])
		if !ok {
			return nil, fmt.Errorf("%s: rows of %d values are not whole %v blocks", t.Name, t.Shape[len(t.Shape)-1], tdt)
		}
		e.Dense += uint64(rows * b)
	}
	return e, nil
}

// Load is the bytes a load of γ maps: the dense tensors and γ's records of
// every sparse layer (the index, whole bands and alignment add a little).
func (e *Estimate) Load(gamma float64) uint64 {
	return e.Dense + uint64(e.SparseLayers)*uint64(format.Count(gamma, e.Config.IntermediateSize))*e.RecordBytes
}

// DTypeName is the pack's dtype as sipack names it (q4_k_m for the mix
// unless its records fell back to a block type).
func (e *Estimate) DTypeName() string {
	if e.Mix && e.RecordDType == format.Q4_K {
		return MixQ4KM
	}
	return e.RecordDType.String()
}

// EstimateModel is EstimatePack for a model directory, a GGUF file, or a
// config.json alone (or a directory holding only one). Without weights the
// source dtype is unknown: name must be given, else bf16 is assumed and
// assumed says so.
func EstimateModel(path, name string) (e *Estimate, assumed bool, err error) {
	cfg := path
	if st, err := os.Stat(path); err != nil {
		return nil, false, err
	} else if st.IsDir() {
		cfg = filepath.Join(path, "config.json")
		if w, _ := filepath.Glob(filepath.Join(path, "*.safetensors")); len(w) > 0 {
			cfg = ""
		}
	} else if IsGGUF(path) {
		cfg = ""
	}
	if cfg == "" {
		m, err := OpenModel(path)
		if err != nil {
			return nil, false, err
		}
		defer m.Close()
		e, err := EstimatePack(m.Config, name, m.tensor(m.Arch.HFName(m.Config, format.NameTokenEmbedding)).DType)
		return e, false, err
	}
	raw, err := tmpfile.ReadFile(cfg)
	if err != nil {
		return nil, false, err
	}
	c, _, err := ParseConfig(cfg, raw)
	if err != nil {
		return nil, false, err
	}
	e, err = EstimatePack(c, name, format.BF16)
	return e, name == "", err
}
