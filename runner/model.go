// Package runner runs a .sip pack: it resolves the pack's tensors into a
// model, runs the Llama-family forward pass over a KV cache, samples and
// generates. The FFN is the only part that knows about neuron ranks.
package runner

import (
	"fmt"
	"math"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/tokenizer"
)

// Layer holds one transformer block's weights, views into the mapped pack.
type Layer struct {
	AttnNorm   []float32      // (hidden)
	Wq, Wk, Wv kernels.Weight // (heads*hd, hidden), (kv*hd, hidden) ×2
	Bq, Bk, Bv []float32      // biases (Qwen2) or nil
	Wo         kernels.Weight // (hidden, heads*hd)
	FFNNorm    []float32      // (hidden)
	// FFN records: blocks of contiguous neuron records in rank order. For a
	// sparse layer one block per loaded band (ranks [0, LoadedRanks)); for a
	// dense layer one block of all N records.
	FFNBlocks [][]byte
	Sparse    bool
	Ranks     int // records available: LoadedRanks for sparse layers, N for dense
}

// Model is a loaded pack.
type Model struct {
	Pack      *format.Pack
	Config    format.ModelConfig
	Tokenizer *tokenizer.Tokenizer
	Embed     kernels.Weight // (vocab, hidden)
	Layers    []Layer
	Norm      []float32      // (hidden)
	Output    kernels.Weight // (vocab, hidden); the embedding when tied
	RecDType  format.DType
	invFreq   []float64 // (head_dim/2) RoPE frequencies, llama3 scaling applied
}

func f32Tensor(p *format.Pack, name string) ([]float32, error) {
	t, b, ok := p.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%s: missing tensor %q", p.Path, name)
	}
	if t.DType != format.F32 {
		return nil, fmt.Errorf("%s: tensor %q is %v, want f32", p.Path, name, t.DType)
	}
	return kernels.F32s(b), nil
}

func weight(p *format.Pack, name string) (kernels.Weight, error) {
	t, b, ok := p.Tensor(name)
	if !ok {
		return kernels.Weight{}, fmt.Errorf("%s: missing tensor %q", p.Path, name)
	}
	return kernels.Weight{Data: b, DType: t.DType, Rows: t.Shape[0], Cols: t.Shape[1]}, nil
}

// Load resolves an open pack into a model. The pack's structure has been
// validated by format.Open, so shapes are as the config says.
func Load(p *format.Pack) (*Model, error) {
	c := p.Index.Config
	tk, err := tokenizer.Load(p.Index.TokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", p.Path, err)
	}
	m := &Model{Pack: p, Config: c, Tokenizer: tk, RecDType: p.Index.RecordDType}
	var errs []error
	w := func(name string) kernels.Weight {
		x, err := weight(p, name)
		errs = append(errs, err)
		return x
	}
	v := func(name string) []float32 {
		x, err := f32Tensor(p, name)
		errs = append(errs, err)
		return x
	}
	m.Embed = w(format.NameTokenEmbedding)
	m.Norm = v(format.NameOutputNorm)
	if c.TieWordEmbeddings {
		m.Output = m.Embed
	} else {
		m.Output = w(format.NameOutput)
	}
	for l := 0; l < c.NumLayers; l++ {
		L := Layer{
			AttnNorm: v(format.NameAttnNorm(l)), FFNNorm: v(format.NameFFNNorm(l)),
			Wq: w(format.NameWq(l)), Wk: w(format.NameWk(l)), Wv: w(format.NameWv(l)), Wo: w(format.NameWo(l)),
		}
		if c.AttentionBias {
			L.Bq, L.Bk, L.Bv = v(format.NameBq(l)), v(format.NameBk(l)), v(format.NameBv(l))
		}
		if si, ok := p.SparseIndex(l); ok {
			L.Sparse, L.Ranks = true, p.LoadedRanks
			B := p.Index.BandNeurons
			for lo := 0; lo < p.LoadedRanks; lo += B {
				L.FFNBlocks = append(L.FFNBlocks, p.RecordRange(si, lo, min(lo+B, p.LoadedRanks)))
			}
		} else {
			_, b, ok := p.Tensor(format.NameFFNRecords(l))
			if !ok {
				errs = append(errs, fmt.Errorf("%s: missing tensor %q", p.Path, format.NameFFNRecords(l)))
			}
			L.FFNBlocks, L.Ranks = [][]byte{b}, c.IntermediateSize
		}
		m.Layers = append(m.Layers, L)
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	m.invFreq = ropeFrequencies(&c)
	return m, nil
}

// ropeFrequencies returns inv_freq[i] = θ^(-2i/d), rescaled as Llama 3.1's
// rope_scaling "llama3" says: wavelengths above original/low_freq_factor are
// divided by factor, those below original/high_freq_factor kept, and those in
// between interpolated smoothly.
func ropeFrequencies(c *format.ModelConfig) []float64 {
	d := c.HeadDim
	inv := make([]float64, d/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(float64(c.RopeTheta), float64(2*i)/float64(d))
	}
	rs := c.RopeScaling
	if rs == nil {
		return inv
	}
	orig := float64(rs.OriginalMaxPositionEmbeddings)
	lowWave, highWave := orig/float64(rs.LowFreqFactor), orig/float64(rs.HighFreqFactor)
	for i, f := range inv {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			inv[i] = f / float64(rs.Factor)
		default:
			smooth := (orig/wave - float64(rs.LowFreqFactor)) / float64(rs.HighFreqFactor-rs.LowFreqFactor)
			inv[i] = (1-smooth)*f/float64(rs.Factor) + smooth*f
		}
	}
	return inv
}

// GammaForBudget returns the largest γ (a whole number of bands) whose
// mapped prefix plus a KV cache of ctx tokens (0: the model's context, at
// most 4096) and the working buffers fit in budget bytes.
func GammaForBudget(path string, budget uint64, ctx int) (float64, error) {
	p, err := format.Open(path, format.OpenOptions{Gamma: 1e-9})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	c := &p.Index.Config
	if ctx == 0 {
		ctx = min(c.MaxPositionEmbeddings, 4096)
	}
	kv := uint64(2 * 4 * c.NumLayers * ctx * c.NumKVHeads * c.HeadDim)
	// Buffers: logits and activations of a 512-token prefill batch, and the per-prompt compacted records.
	buffers := uint64(4*(c.VocabSize+512*(3*c.HiddenSize+c.IntermediateSize))) + uint64(len(p.Index.SparseLayers)*c.IntermediateSize)*p.Index.RecordBytes/2
	fixed := p.Preamble.FFNOff + kv + buffers
	if p.Preamble.BandCount == 0 {
		if fixed > budget {
			return 0, fmt.Errorf("memory budget %d bytes is smaller than the pack (%d) plus KV cache (%d) and buffers (%d)", budget, p.Preamble.FFNOff, kv, buffers)
		}
		return 1, nil
	}
	if fixed+p.Preamble.BandBytes > budget {
		return 0, fmt.Errorf("memory budget of %d bytes is smaller than the dense section and index (%d bytes) plus one band (%d), KV cache (%d) and buffers (%d)",
			budget, p.Preamble.FFNOff, p.Preamble.BandBytes, kv, buffers)
	}
	bands := min(uint64(p.Preamble.BandCount), (budget-fixed)/p.Preamble.BandBytes)
	ranks := min(int(bands)*p.Index.BandNeurons, c.IntermediateSize)
	return float64(ranks) / float64(c.IntermediateSize), nil
}
