// Package runner runs a .sip pack: it resolves the pack's tensors into a
// model, runs the Llama-family forward pass over a KV cache, samples and
// generates. The FFN is the only part that knows about neuron ranks.
package runner

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/tokenizer"
)

// Layer holds one transformer block's weights, resident on the model's device.
type Layer struct {
	AttnNorm   backend.Vector // (hidden)
	Wq, Wk, Wv backend.Matrix // (heads*hd, hidden), (kv*hd, hidden) ×2
	Bq, Bk, Bv backend.Vector // biases (Qwen2) or nil
	Wo         backend.Matrix // (hidden, heads*hd)
	FFNNorm    backend.Vector // (hidden)
	// FFN is the layer's records in rank order: for a sparse layer its
	// loaded ranks [0, Pack.LayerRanks[si]) (one block per band), for a
	// dense layer all N.
	FFN    backend.Records
	Sparse bool
	// Router, if the pack has routers (format v1.5), scores the layer's
	// groups of Model.RouterGroup consecutive ranks for a decode token:
	// V·(U·x + B), x the FFN's normed input (the "router" selection).
	Router *Router
	Ranks  int // records available: the layer's LayerRanks for sparse layers (LoadedRanks without layer budgets), N for dense
}

// Router is one sparse layer's group router, resident on the device.
type Router struct {
	U, V backend.Matrix // (rank, hidden), (groups, rank)
	B    backend.Vector // (rank)
}

// Model is a loaded pack, its weights resident on a device.
type Model struct {
	Pack      *format.Pack
	Config    format.ModelConfig
	Tokenizer *tokenizer.Tokenizer
	Dev       backend.Device
	Embed     backend.Matrix // (vocab, hidden)
	Layers    []Layer
	Norm      backend.Vector // (hidden)
	Output    backend.Matrix // (vocab, hidden); the embedding when tied
	RecDType  format.DType
	// RouterGroup is the ranks of one routed group, 0 when the pack has no
	// routers.
	RouterGroup int
	// KVType is the element type of the KV caches its states allocate
	// (NewState): KVF32 unless a command asks for another the device takes.
	KVType  backend.KVType
	invFreq []float64 // (head_dim/2) RoPE frequencies, llama3 scaling applied
}

// Load resolves an open pack into a model whose weights are resident on
// dev (cpu.New() for the CPU). The pack's structure has been validated by
// format.Open, so shapes are as the config says; every missing or unusable
// tensor is reported.
func Load(p *format.Pack, dev backend.Device) (*Model, error) {
	c := p.Index.Config
	tk, err := tokenizer.Load(p.Index.TokenizerJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer: %w", p.Path, err)
	}
	m := &Model{Pack: p, Config: c, Tokenizer: tk, Dev: dev, RecDType: p.Index.RecordDType}
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Path, err))
		}
	}
	w := func(name string) backend.Matrix {
		t, b, ok := p.Tensor(name)
		if !ok {
			fail(fmt.Errorf("missing tensor %q", name))
			return nil
		}
		x, err := dev.Matrix(b, t.DType, t.Shape[0], t.Shape[1])
		fail(err)
		return x
	}
	v := func(name string) backend.Vector {
		t, b, ok := p.Tensor(name)
		switch {
		case !ok:
			fail(fmt.Errorf("missing tensor %q", name))
			return nil
		case t.DType != format.F32:
			fail(fmt.Errorf("tensor %q is %v, want f32", name, t.DType))
			return nil
		}
		x, err := dev.Vector(f32s(b))
		fail(err)
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
		var blocks []format.RecordBlock
		if si, ok := p.SparseIndex(l); ok {
			L.Sparse, L.Ranks = true, p.LayerRanks[si]
			blocks = p.LayerBlocks(si, L.Ranks)
		} else {
			_, b, ok := p.Tensor(format.NameFFNRecords(l))
			if !ok {
				fail(fmt.Errorf("missing tensor %q", format.NameFFNRecords(l)))
			}
			rb, _ := m.RecDType.RowBytes(c.HiddenSize)
			blocks, L.Ranks = []format.RecordBlock{format.InterleavedBlock(b, rb)}, c.IntermediateSize
		}
		if len(errs) == 0 {
			L.FFN, err = dev.Records(blocks, m.RecDType, c.HiddenSize)
			fail(err)
		}
		if L.Sparse && p.Index.RouterGroup > 0 {
			nu, nb, nv := format.RouterNames(l)
			L.Router = &Router{U: w(nu), B: v(nb), V: w(nv)}
		}
		m.Layers = append(m.Layers, L)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m.invFreq = ropeFrequencies(&c)
	m.RouterGroup = p.Index.RouterGroup
	return m, nil
}

// DecodeBytes is the bytes one decode token reads at position pos with the
// given FFN records active: every attention matrix, the output matrix, the
// dense layers' FFN, the active records, one embedding row, norms, and the
// KV cache up to pos.
func (m *Model) DecodeBytes(activeRecords, pos int) uint64 {
	c := &m.Config
	var b uint64
	for _, L := range m.Layers {
		b += uint64(L.Wq.Bytes() + L.Wk.Bytes() + L.Wv.Bytes() + L.Wo.Bytes())
		b += uint64(4 * (2*c.HiddenSize + vlen(L.Bq) + vlen(L.Bk) + vlen(L.Bv)))
	}
	b += uint64(m.Output.Bytes()+m.Embed.Bytes()/m.Embed.Rows()) + uint64(4*c.HiddenSize)
	b += uint64(activeRecords) * m.Pack.Index.RecordBytes
	b += uint64(2 * m.KVType.Size() * c.NumLayers * (pos + 1) * c.NumKVHeads * c.HeadDim)
	return b
}

func vlen(v backend.Vector) int {
	if v == nil {
		return 0
	}
	return v.Len()
}

// MatrixParams is the number of weights a full forward pass multiplies:
// every attention matrix, every loaded FFN record (3·H each) and the output matrix.
func (m *Model) MatrixParams() float64 {
	var n float64
	H := float64(m.Config.HiddenSize)
	for _, L := range m.Layers {
		for _, w := range []backend.Matrix{L.Wq, L.Wk, L.Wv, L.Wo} {
			n += float64(w.Rows() * w.Cols())
		}
		n += float64(L.Ranks) * 3 * H
	}
	return n + m.OutputParams()
}

// OutputParams is the weights of the output matrix (lm_head), which a
// prompt runs for its last token only.
func (m *Model) OutputParams() float64 { return float64(m.Output.Rows() * m.Output.Cols()) }

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

// f32s views a tensor's little-endian float32 bytes as []float32 in place
// (as kernels.F32s, which the runner does not link): the pack aligns every
// tensor to 64 bytes, and every supported target is little-endian.
func f32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}
