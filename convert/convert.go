// Package convert turns a HuggingFace checkpoint directory (config.json,
// safetensors shards, tokenizer.json) into a .sip pack. It refuses, with an
// error naming the file and the tensor, any architecture it does not know,
// any missing or misshaped tensor and any malformed safetensors header.
package convert

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/tokenizer"
)

// Version is written into every pack's converter field.
const Version = "sipack 0.1"

// Order is a rank order for the sparse layers: Perms[l][rank] = original neuron.
type Order struct {
	Perms        map[int][]uint32
	Scores       map[int][]float32 // optional: task score per rank, stored for inspect
	BaseFraction float32
	Provenance   format.Provenance
	// Budgets, optional, is per sparse layer its layer budget
	// (format.SparseLayer.Budget; profile.Budgets).
	Budgets map[int][]float32
}

// Options configures Convert.
type Options struct {
	ModelDir string
	Output   string
	// DType is "bf16", "f16", "f32", "q8_0", "q4_0", "q4_k", "q6_k", or
	// "q4_k_m" (llama.cpp's mix: kquantMix); "" keeps the checkpoint's dtype.
	DType string
	// DenseDType, if set, is the dtype of the dense section's matrices
	// (attention, embeddings, lm_head); DType then applies to the FFN.
	DenseDType  string
	BandNeurons int // neurons per band; 0: DefaultBand of the FFN size
	// Layout, if set, is the band layout (interleaved, pairs, runs, tiled;
	// format SPEC §5) instead of the dtype's (format.LayoutFor, what
	// decodes the paper's selection fastest with AVX-512: tiled for BF16,
	// F16 and Q8_0, pairs for Q4_0; Q4_0 tiled is the faster on AVX2-only
	// CPUs); pairs serves the gated methods' scattered records better
	// (docs/bench.md).
	Layout      string
	DenseLayers []int  // layers whose FFN stays dense (in the dense section)
	Order       *Order // nil: original neuron order
	// BaseFraction is δ, the static fraction, for orders that do not set
	// their own (original and random orders).
	BaseFraction float32
	// ChatTemplate, if set, is a file that sets or overrides the model's chat
	// templates: a tokenizer_config.json (its chat_template), or Jinja source
	// (stored as "default").
	ChatTemplate string
	Progress     func(n int, total int64)
	// Warnings, if set, receives the converter's notes (a K-quant's
	// fallback for rows that are not whole super-blocks); else os.Stderr.
	Warnings io.Writer
}

// Result describes a written pack.
type Result struct {
	Path       string
	Bytes      int64
	SourceHash [format.HashSize]byte
	DType      format.DType
}

// readChatTemplates reads the chat templates of a tokenizer_config.json, or a
// Jinja file as the "default" template, and compiles each so that a broken
// template is refused now rather than when the pack is run. A missing
// tokenizer_config.json is no error when optional is set.
func readChatTemplates(path string, optional bool) ([]format.ChatTemplate, error) {
	if strings.HasSuffix(path, ".json") {
		err := tmpfile.CheckRegular(path)
		var cfg *chat.Config
		if err == nil {
			cfg, err = chat.LoadConfig(path)
		}
		if optional && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !optional && len(cfg.Templates) == 0 {
			return nil, fmt.Errorf("%s: no chat_template", path)
		}
		for i := range cfg.Templates {
			if _, err := cfg.Compile(cfg.Templates[i].Name); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		return cfg.Templates, nil
	}
	src, err := tmpfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--chat-template: %w", err)
	}
	cfg := &chat.Config{Templates: []format.ChatTemplate{{Name: "default", Template: string(src)}}}
	if err := format.CheckChatTemplates(cfg.Templates); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := cfg.Compile(""); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Templates, nil
}

// Model is a checkpoint directory opened for conversion or profiling.
type Model struct {
	Dir                  string
	Config               *format.ModelConfig
	Arch                 Architecture
	ConfigJSON           []byte
	TokenizerJSON        []byte
	GenerationConfigJSON []byte
	// ChatTemplates are tokenizer_config.json's chat templates, "default"
	// first (none for a base model).
	ChatTemplates []format.ChatTemplate
	Checkpoint    *Checkpoint
	Tokenizer     *tokenizer.Tokenizer
	ffn           [][3]*Tensor // per layer: gate, up, down (checked)
}

// Close releases the mapped shards.
func (m *Model) Close() error { return m.Checkpoint.Close() }

// OpenModel reads and checks a model directory: its config, tokenizer and
// every tensor the architecture needs (all missing names are listed at once).
// A GGUF file opens the same way (gguf.go).
func OpenModel(dir string) (*Model, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if isGGUF(dir, st) {
			return openGGUF(dir)
		}
		return nil, fmt.Errorf("%s is not a model directory or a .gguf file", dir)
	}
	m := &Model{Dir: dir}
	cfgPath := filepath.Join(dir, "config.json")
	if m.ConfigJSON, err = tmpfile.ReadFile(cfgPath); err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, err)
	}
	if m.Config, m.Arch, err = ParseConfig(cfgPath, m.ConfigJSON); err != nil {
		return nil, err
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	if m.TokenizerJSON, err = tmpfile.ReadFile(tokPath); err != nil {
		return nil, fmt.Errorf("model directory %s: %w", dir, err)
	}
	if m.Tokenizer, err = tokenizer.Load(m.TokenizerJSON); err != nil {
		return nil, fmt.Errorf("%s: %w", tokPath, err)
	}
	if n := m.Tokenizer.VocabSize(); n > m.Config.VocabSize {
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, more than the model's vocab_size %d", tokPath, n, m.Config.VocabSize)
	}
	if m.ChatTemplates, err = readChatTemplates(filepath.Join(dir, "tokenizer_config.json"), true); err != nil {
		return nil, err
	}
	genPath := filepath.Join(dir, "generation_config.json")
	if raw, err := tmpfile.ReadFile(genPath); err == nil {
		m.GenerationConfigJSON = raw
		if err := mergeGenerationConfig(genPath, raw, m.Config); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if m.Checkpoint, err = OpenCheckpoint(dir); err != nil {
		return nil, err
	}
	if err := m.checkTensors(); err != nil {
		m.Checkpoint.Close()
		return nil, err
	}
	_, ffn := m.sources()
	for _, f := range ffn {
		m.ffn = append(m.ffn, [3]*Tensor{m.tensor(f[0].hf), m.tensor(f[1].hf), m.tensor(f[2].hf)})
	}
	return m, nil
}

// mergeGenerationConfig adds generation_config.json's eos ids (Llama-3
// instruct models stop on several) to the config's.
func mergeGenerationConfig(path string, raw []byte, c *format.ModelConfig) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ids, err := tokenIDs(g.EOS)
	if err != nil {
		return fmt.Errorf("%s: eos_token_id: %w", path, err)
	}
	for _, id := range ids {
		if id >= c.VocabSize {
			return fmt.Errorf("%s: eos_token_id %d outside the vocabulary of %d", path, id, c.VocabSize)
		}
		dup := false
		for _, e := range c.EOSTokenIDs {
			dup = dup || e == id
		}
		if !dup {
			c.EOSTokenIDs = append(c.EOSTokenIDs, id)
		}
	}
	return nil
}

// source is one checkpoint tensor the pack needs, with the shape it must have.
type source struct {
	hf    string
	shape []int
}

// sources lists every checkpoint tensor a full pack reads: the dense ones by
// internal name, and each layer's gate, up and down.
func (m *Model) sources() (dense map[string]source, ffn [][3]source) {
	c := m.Config
	dense = map[string]source{}
	all := map[int]bool{}
	for l := 0; l < c.NumLayers; l++ {
		all[l] = true
	}
	for _, e := range format.ExpectedTensors(c, all) {
		if hf := m.Arch.HFName(c, e.Name); hf != "" {
			dense[e.Name] = source{hf, e.Shape}
		}
	}
	for l := 0; l < c.NumLayers; l++ {
		g, u, d := m.Arch.FFNNames(l)
		N, h := c.IntermediateSize, c.HiddenSize
		ffn = append(ffn, [3]source{{g, []int{N, h}}, {u, []int{N, h}}, {d, []int{h, N}}})
	}
	return dense, ffn
}

func (m *Model) checkTensors() error {
	dense, ffn := m.sources()
	var need []source
	for _, s := range dense {
		need = append(need, s)
	}
	for _, f := range ffn {
		need = append(need, f[:]...)
	}
	sort.Slice(need, func(i, j int) bool { return need[i].hf < need[j].hf })
	var missing, wrong []string
	for _, s := range need {
		t, ok := m.Checkpoint.Tensors[s.hf]
		if !ok {
			missing = append(missing, s.hf)
			continue
		}
		if !slices.Equal(t.Shape, s.shape) {
			wrong = append(wrong, fmt.Sprintf("tensor %q in %s: shape %v, want %v", s.hf, filepath.Base(t.File), t.Shape, s.shape))
		}
	}
	var errs []string
	if len(missing) > 0 {
		errs = append(errs, fmt.Sprintf("%d missing tensors: %s", len(missing), strings.Join(missing, ", ")))
	}
	errs = append(errs, wrong...)
	if len(errs) > 0 {
		return fmt.Errorf("checkpoint %s (%s): %s", m.Dir, m.Arch.Name(), strings.Join(errs, "; "))
	}
	return nil
}

// tensor returns a checked checkpoint tensor.
func (m *Model) tensor(hf string) *Tensor { return m.Checkpoint.Tensors[hf] }

// FFN returns layer l's gate, up and down tensors.
func (m *Model) FFN(l int) (gate, up, down *Tensor) {
	return m.ffn[l][0], m.ffn[l][1], m.ffn[l][2]
}

// DenseTensor returns the checkpoint tensor behind an internal dense name, or nil.
func (m *Model) DenseTensor(internal string) *Tensor {
	if hf := m.Arch.HFName(m.Config, internal); hf != "" {
		return m.tensor(hf)
	}
	return nil
}

// SourceHash is the identity of the checkpoint: BLAKE3 over config.json and,
// in name order, every tensor the pack reads (name, dtype, shape, bytes).
// Profiles record it so a profile of another model is refused.
func (m *Model) SourceHash() [format.HashSize]byte {
	dense, ffn := m.sources()
	var names []string
	for _, s := range dense {
		names = append(names, s.hf)
	}
	for _, f := range ffn {
		for _, s := range f {
			names = append(names, s.hf)
		}
	}
	sort.Strings(names)
	h := blake3.New()
	io.WriteString(h, "sipack-source-v1\x00")
	h.Write(m.ConfigJSON)
	var num [8]byte
	for _, n := range names {
		t := m.tensor(n)
		io.WriteString(h, n)
		h.Write([]byte{0, byte(t.DType)})
		for _, d := range t.Shape {
			binary.LittleEndian.PutUint64(num[:], uint64(d))
			h.Write(num[:])
		}
		h.Write(t.Data)
	}
	var out [format.HashSize]byte
	copy(out[:], h.Sum(nil))
	return out
}

// DefaultBand is the band size B a pack of FFN size n gets unless told:
// n/32 rounded down to a power of two, within [64, 256] and at most n — so
// a band is about 3 % of the ranks or less (γ's granularity) where n allows,
// and from n = 8192 on 256 records. A decode FFN reads a layer's block of each band as one run, and
// the layer's next block lies a band of every other layer further on; the
// longer the runs, the faster the stream: a 1B-shape layer's whole FFN
// from memory in a version 2 band layout, timed in turn against B = 64 (2
// threads, medians of the per-turn ratios, two or three runs, Q4_0 and
// BF16): B = 128 1.09-1.18×, 256 1.13-1.27×, 512 1.21-1.29× (`go test -bench
// FFNBandSize ./kernels`; docs/bench.md, twelfth session). Past 256 the
// gain is small and γ's steps coarse.
func DefaultBand(n int) int {
	b := 64
	for b < 256 && 2*b <= n/32 {
		b *= 2
	}
	return max(1, min(b, n))
}

// Convert writes the pack described by opt.
func Convert(ctx context.Context, opt Options) (*Result, error) {
	m, err := OpenModel(opt.ModelDir)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.WritePack(ctx, opt)
}

// WritePack writes a pack of the opened model.
func (m *Model) WritePack(ctx context.Context, opt Options) (*Result, error) {
	c := m.Config
	dt, mix, err := recordDType(c, opt.DType, m.tensor(m.Arch.HFName(c, format.NameTokenEmbedding)).DType)
	if err != nil {
		return nil, err
	}
	var fellBack []string // tensors a K-quant could not hold (kquantFallback)
	if dt.KQuant() && c.HiddenSize%format.QKK != 0 {
		fellBack = append(fellBack, fmt.Sprintf("the FFN records (%d values a row): %v", c.HiddenSize, kquantFallback(dt)))
		dt = kquantFallback(dt)
	}
	var major uint16 // 0: the dtype's layout
	if opt.Layout != "" {
		l, err := format.ParseLayout(opt.Layout)
		if err != nil {
			return nil, fmt.Errorf("--layout: %w", err)
		}
		major = l.Major()
	}
	denseDT := dt
	if opt.DenseDType != "" {
		var err error
		if denseDT, err = format.ParseDType(opt.DenseDType); err != nil {
			return nil, fmt.Errorf("--dense-dtype: %w", err)
		}
	}
	if dt.Quantized() || denseDT.Quantized() {
		if c.HiddenSize%format.QK != 0 || (c.NumHeads*c.HeadDim)%format.QK != 0 {
			return nil, fmt.Errorf("%v needs hidden_size (%d) and heads × head_dim (%d) to be multiples of %d", dt, c.HiddenSize, c.NumHeads*c.HeadDim, format.QK)
		}
	}
	if opt.BandNeurons == 0 {
		opt.BandNeurons = DefaultBand(c.IntermediateSize)
	}
	if opt.BandNeurons < 1 || opt.BandNeurons > c.IntermediateSize {
		return nil, fmt.Errorf("band size %d out of range [1, %d] (intermediate_size)", opt.BandNeurons, c.IntermediateSize)
	}
	denseFFN := map[int]bool{}
	for _, l := range opt.DenseLayers {
		if l < 0 || l >= c.NumLayers {
			return nil, fmt.Errorf("dense layer %d out of range [0, %d)", l, c.NumLayers)
		}
		denseFFN[l] = true
	}
	templates := m.ChatTemplates
	if opt.ChatTemplate != "" {
		var err error
		if templates, err = readChatTemplates(opt.ChatTemplate, false); err != nil {
			return nil, err
		}
	}
	idx := &format.Index{
		ChatTemplates:        templates,
		Config:               *c,
		ConfigJSON:           m.ConfigJSON,
		TokenizerJSON:        m.TokenizerJSON,
		GenerationConfigJSON: m.GenerationConfigJSON,
		RecordDType:          dt,
		BandNeurons:          opt.BandNeurons,
		SourceHash:           m.SourceHash(),
		Converter:            Version,
		Provenance:           format.Provenance{Order: "original"},
	}
	N := c.IntermediateSize
	sparse := map[int]bool{}
	for l := 0; l < c.NumLayers; l++ {
		if denseFFN[l] {
			continue
		}
		sparse[l] = true
		perm := make([]uint32, N)
		for i := range perm {
			perm[i] = uint32(i)
		}
		if opt.Order != nil {
			p, ok := opt.Order.Perms[l]
			if !ok || len(p) != N {
				return nil, fmt.Errorf("rank order has no permutation of %d neurons for layer %d", N, l)
			}
			perm = p
		}
		sl := format.SparseLayer{Layer: l, Perm: perm}
		if opt.Order != nil && opt.Order.Scores != nil {
			sl.TaskScore = opt.Order.Scores[l]
		}
		if opt.Order != nil && opt.Order.Budgets != nil {
			if sl.Budget = opt.Order.Budgets[l]; len(sl.Budget) != format.BudgetSteps+1 {
				return nil, fmt.Errorf("rank order has no layer budget of %d steps for layer %d", format.BudgetSteps+1, l)
			}
		}
		idx.SparseLayers = append(idx.SparseLayers, sl)
	}
	idx.BaseFraction = opt.BaseFraction
	if opt.Order != nil {
		if opt.Order.BaseFraction > 0 {
			idx.BaseFraction = opt.Order.BaseFraction
		}
		idx.Provenance = opt.Order.Provenance
	}
	if !(idx.BaseFraction >= 0 && idx.BaseFraction <= 1) {
		return nil, fmt.Errorf("base fraction must be in [0, 1], got %v", idx.BaseFraction)
	}

	spec := &format.WriteSpec{Index: idx, Major: major, Records: func(l int, neurons []uint32, dst []byte) error {
		return m.recordsAs(l, neurons, dst, dt)
	}}
	for _, e := range format.ExpectedTensors(c, sparse) {
		e := e
		mixDense := mix && opt.DenseDType == ""
		ti := format.TensorInfo{Name: e.Name, DType: tensorDType(c, e, dt, denseDT, mixDense), Shape: e.Shape}
		if want := kquantWanted(c, e, denseDT, mixDense); !e.Vector && !e.Record && ti.DType != want {
			fellBack = append(fellBack, fmt.Sprintf("%s (%d values a row): %v", e.Name, e.Shape[len(e.Shape)-1], ti.DType))
		}
		idx.DenseTensors = append(idx.DenseTensors, ti)
		if e.Record {
			l := layerOf(e.Name)
			spec.Dense = append(spec.Dense, func(w io.Writer) error { return m.writeDenseRecords(w, l, dt) })
			continue
		}
		src := m.DenseTensor(e.Name)
		spec.Dense = append(spec.Dense, func(w io.Writer) error { return writeConverted(w, ti.DType, src) })
	}
	if len(fellBack) > 0 {
		w := opt.Warnings
		if w == nil {
			w = os.Stderr
		}
		fmt.Fprintf(w, "sipack: rows that are not whole K-quant super-blocks of %d values fall back to a block type: %s\n", format.QKK, strings.Join(fellBack, "; "))
	}
	var total int64
	if opt.Progress != nil {
		// Roughly the final size, for the progress bar: every tensor once.
		for _, t := range m.Checkpoint.Tensors {
			total += int64(len(t.Data) / t.DType.Size() * dt.BlockBytes() / dt.BlockElems())
		}
		spec.Progress = func(n int) { opt.Progress(n, total) }
	}
	if err := format.WritePack(ctx, opt.Output, spec); err != nil {
		return nil, err
	}
	st, err := os.Stat(opt.Output)
	if err != nil {
		return nil, err
	}
	return &Result{Path: opt.Output, Bytes: st.Size(), SourceHash: idx.SourceHash, DType: dt}, nil
}

// recordDType is the FFN records' dtype for --dtype name (the source's,
// src, when empty) and whether name is the q4_k_m mix.
func recordDType(c *format.ModelConfig, name string, src format.DType) (format.DType, bool, error) {
	if strings.EqualFold(name, MixQ4KM) {
		return format.Q4_K, true, nil
	}
	if name == "" {
		return src, false, nil
	}
	dt, err := format.ParseDType(name)
	if err != nil {
		return 0, false, fmt.Errorf("%w (or %s)", err, MixQ4KM)
	}
	return dt, false, nil
}

// kquantWanted is the dtype dense tensor e asks for before any fallback:
// float32 vectors, denseDT, or the q4_k_m mix's when mix is set.
func kquantWanted(c *format.ModelConfig, e format.ExpectedTensor, denseDT format.DType, mix bool) format.DType {
	if mix {
		return kquantMix(c, e.Name)
	}
	return denseDT
}

// tensorDType is the dtype tensor e is written in: float32 for vectors, the
// records' dt for dense FFN layers, else kquantWanted, whose K-quants fall
// back to a block type where rows are no whole super-blocks.
func tensorDType(c *format.ModelConfig, e format.ExpectedTensor, dt, denseDT format.DType, mix bool) format.DType {
	switch {
	case e.Vector:
		return format.F32
	case e.Record:
		return dt
	}
	t := kquantWanted(c, e, denseDT, mix)
	if t.KQuant() && e.Shape[len(e.Shape)-1]%format.QKK != 0 {
		return kquantFallback(t)
	}
	return t
}

// MixQ4KM names llama.cpp's Q4_K_M mix as a --dtype (kquantMix).
const MixQ4KM = "q4_k_m"

// kquantMix is the dtype of dense matrix name in a q4_k_m pack, llama.cpp's
// Q4_K_M rules for the tensors a pack has: Q6_K for the output matrix (the
// embeddings where they are tied: they are the output matrix then) and for
// the V projections of the layers useMoreBits picks, Q4_K for the rest.
// The FFN records are Q4_K (Convert): a pack has one record dtype, where
// llama.cpp would give the down projections of useMoreBits' layers Q6_K.
func kquantMix(c *format.ModelConfig, name string) format.DType {
	switch {
	case name == format.NameOutput, name == format.NameTokenEmbedding && c.TieWordEmbeddings:
		return format.Q6_K
	case strings.HasSuffix(name, ".wv") && useMoreBits(layerOf(name), c.NumLayers):
		return format.Q6_K
	}
	return format.Q4_K
}

// useMoreBits is llama.cpp's choice of the layers whose V (and FFN down)
// projections a Q4_K_M file keeps in Q6_K: the first and last eighth, and
// every third layer between.
func useMoreBits(l, n int) bool {
	return l < n/8 || l >= 7*n/8 || (l-n/8)%3 == 2
}

// kquantFallback is the block type rows that are not whole super-blocks
// of a K-quant take instead: Q8_0 for Q6_K, Q4_0 for Q4_K.
func kquantFallback(dt format.DType) format.DType {
	if dt == format.Q6_K {
		return format.Q8_0
	}
	return format.Q4_0
}

func layerOf(name string) int {
	var l int
	fmt.Sscanf(name, "layers.%d.", &l)
	return l
}

// recordsAs fills dst with layer l's records (gate row | up row | down column)
// of the given neurons, converted to dt.
func (m *Model) recordsAs(l int, neurons []uint32, dst []byte, dt format.DType) error {
	h := m.Config.HiddenSize
	rb, ok := dt.RowBytes(h)
	if !ok {
		return fmt.Errorf("hidden_size %d is not a multiple of %d, as %v needs", h, dt.BlockElems(), dt)
	}
	rec := 3 * rb
	if len(dst) != len(neurons)*rec {
		return fmt.Errorf("internal error: record buffer of %d bytes for %d neurons", len(dst), len(neurons))
	}
	// The K-quants' search costs about 20 ns a weight: their records are
	// quantised on every CPU, a share of the neurons each.
	if workers := runtime.GOMAXPROCS(0); dt.KQuant() && workers > 1 && len(neurons) >= 2*workers {
		var wg sync.WaitGroup
		errs := make([]error, workers)
		per := (len(neurons) + workers - 1) / workers
		for w := 0; w < workers; w++ {
			lo, hi := w*per, min(len(neurons), (w+1)*per)
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w] = m.recordsAsSerial(l, neurons[lo:hi], dst[lo*rec:hi*rec], dt)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	return m.recordsAsSerial(l, neurons, dst, dt)
}

// recordsAsSerial is recordsAs on the calling goroutine.
func (m *Model) recordsAsSerial(l int, neurons []uint32, dst []byte, dt format.DType) error {
	gate, up, down := m.FFN(l)
	h, N := m.Config.HiddenSize, m.Config.IntermediateSize
	rb, _ := dt.RowBytes(h)
	ds := down.DType.Size()
	rec := 3 * rb
	col := make([]byte, h*ds)
	var f32 []float32
	if dt.Quantized() {
		f32 = make([]float32, h)
	}
	for j, n := range neurons {
		r := dst[j*rec : (j+1)*rec]
		if !copyRaw(r[:rb], dt, gate, int(n)) {
			encodeRow(r[:rb], dt, rowOf(gate, int(n), h), gate.DType, f32)
		}
		if !copyRaw(r[rb:2*rb], dt, up, int(n)) {
			encodeRow(r[rb:2*rb], dt, rowOf(up, int(n), h), up.DType, f32)
		}
		// down is [hidden, N]: neuron n's column is strided in the checkpoint
		// and contiguous in the record.
		for i := 0; i < h; i++ {
			at := (i*N + int(n)) * ds
			copy(col[i*ds:(i+1)*ds], down.Data[at:at+ds])
		}
		encodeRow(r[2*rb:], dt, col, down.DType, f32)
	}
	return nil
}

// copyRaw copies row r of t's GGUF K-quant bytes into dst where they are
// already dtype dt (the same bytes quantising would approximate again),
// and reports whether it did.
func copyRaw(dst []byte, dt format.DType, t *Tensor, r int) bool {
	if t.Raw == nil || t.RawDType != dt || len(t.Shape) != 2 {
		return false
	}
	rb, ok := dt.RowBytes(t.Shape[1])
	if !ok || rb != len(dst) || len(t.Raw) != t.Shape[0]*rb {
		return false
	}
	copy(dst, t.Raw[r*rb:(r+1)*rb])
	return true
}

// encodeRow converts one row src (dtype st) into dst (dtype dt); scratch
// holds the row widened to float32 when dt is a block type.
func encodeRow(dst []byte, dt format.DType, src []byte, st format.DType, scratch []float32) {
	if !dt.Quantized() {
		convertElems(dst, dt, src, st)
		return
	}
	f := scratch[:len(src)/st.Size()]
	kernels.ToF32(f, src, st)
	kernels.QuantizeRow(dst, dt, f)
}

func rowOf(t *Tensor, r, width int) []byte {
	s := t.DType.Size()
	return t.Data[r*width*s : (r+1)*width*s]
}

func (m *Model) writeDenseRecords(w io.Writer, l int, dt format.DType) error {
	const chunk = 64
	N := m.Config.IntermediateSize
	rb, ok := dt.RowBytes(m.Config.HiddenSize)
	if !ok {
		return fmt.Errorf("hidden_size %d is not a multiple of %d, as %v needs", m.Config.HiddenSize, dt.BlockElems(), dt)
	}
	rec := 3 * rb
	buf := make([]byte, chunk*rec)
	ids := make([]uint32, chunk)
	for lo := 0; lo < N; lo += chunk {
		hi := min(lo+chunk, N)
		for i := lo; i < hi; i++ {
			ids[i-lo] = uint32(i)
		}
		b := buf[:(hi-lo)*rec]
		if err := m.recordsAs(l, ids[:hi-lo], b, dt); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// writeConverted streams t converted to dt.
func writeConverted(w io.Writer, dt format.DType, t *Tensor) error {
	const chunk = 1 << 16
	n := len(t.Data) / t.DType.Size()
	if dt == t.DType {
		_, err := w.Write(t.Data)
		return err
	}
	if dt.Quantized() {
		cols := t.Shape[len(t.Shape)-1]
		rb, ok := dt.RowBytes(cols)
		if !ok {
			return fmt.Errorf("rows of %d elements cannot be stored as %v (need a multiple of %d)", cols, dt, dt.BlockElems())
		}
		if t.Raw != nil && t.RawDType == dt && len(t.Raw) == n/cols*rb {
			_, err := w.Write(t.Raw)
			return err
		}
		out := make([]byte, rb)
		f := make([]float32, cols)
		ss := cols * t.DType.Size()
		for r := 0; r < n/cols; r++ {
			encodeRow(out, dt, t.Data[r*ss:(r+1)*ss], t.DType, f)
			if _, err := w.Write(out); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, chunk*dt.Size())
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		out := buf[:(hi-lo)*dt.Size()]
		convertElems(out, dt, t.Data[lo*t.DType.Size():hi*t.DType.Size()], t.DType)
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// convertElems converts the elements of src (dtype st) into dst (dtype dt),
// rounding to nearest even when narrowing. Same dtype is a plain copy.
func convertElems(dst []byte, dt format.DType, src []byte, st format.DType) {
	if dt == st {
		copy(dst, src)
		return
	}
	le := binary.LittleEndian
	n := len(src) / st.Size()
	for i := 0; i < n; i++ {
		var f float32
		switch st {
		case format.F32:
			f = math.Float32frombits(le.Uint32(src[4*i:]))
		case format.F16:
			f = kernels.F16ToF32(le.Uint16(src[2*i:]))
		case format.BF16:
			f = kernels.BF16ToF32(le.Uint16(src[2*i:]))
		}
		putElem(dst, dt, i, f)
	}
}

// putElem writes f as element i of dst in the float dtype dt.
func putElem(dst []byte, dt format.DType, i int, f float32) {
	le := binary.LittleEndian
	switch dt {
	case format.F32:
		le.PutUint32(dst[4*i:], math.Float32bits(f))
	case format.F16:
		le.PutUint16(dst[2*i:], kernels.F32ToF16(f))
	case format.BF16:
		le.PutUint16(dst[2*i:], kernels.F32ToBF16(f))
	}
}

// EncodeF32 writes src in dtype dt into dst (dt.RowBytes(len(src))
// bytes): a row of a block type quantised as the converter quantises, the
// float types element by element as it converts them — for tensors a tool
// computes in float32 (sipack route's routers).
func EncodeF32(dst []byte, dt format.DType, src []float32) {
	if dt.Quantized() {
		kernels.QuantizeRow(dst, dt, src)
		return
	}
	for i, f := range src {
		putElem(dst, dt, i, f)
	}
}
