package convert

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/sipack/sipack/chat"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/gguf"
	"github.com/sipack/sipack/internal/tmpfile"
	"github.com/sipack/sipack/tokenizer"
)

// A GGUF file (llama.cpp's format) opens as a Model like a checkpoint
// directory: its metadata becomes the config.json the HF checkpoint would
// have (and is checked by ParseConfig like one), its tensors take their HF
// names and shapes, its tokenizer.ggml.* keys become a tokenizer.json.
// F32, F16 and BF16 tensors are used where they lie in the mapped file;
// Q8_0, Q4_0, Q4_K, Q5_K and Q6_K ones are dequantised, exactly, to float32
// held by the Model (4 bytes a weight: a 1B model's Q4_K_M file becomes
// about 5 GB). The Q and K projections of the llama architecture are stored
// by llama.cpp's converter in ggml's interleaved RoPE row order; they are
// put back in HF's rotate-half order.

// ggufArchitectures maps general.architecture to the HF architecture whose
// names and rules the converter applies.
var ggufArchitectures = map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM"}

// Caps on GGUF hyperparameters, checked before any of them sizes anything
// (ParseConfig checks signs and divisibility, not size).
const (
	ggufMaxHidden  = 1 << 16
	ggufMaxHeads   = 1 << 12
	ggufMaxVocab   = 1 << 22
	ggufMaxContext = 1 << 24
)

// IsGGUF reports whether path is a file OpenModel reads as GGUF (tools
// that take a model or a pack tell them apart by it).
func IsGGUF(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && isGGUF(path, st)
}

// isGGUF reports whether path, not a directory, is to be read as GGUF: it
// is named *.gguf (a named pipe so named is refused when opened), or it is
// a regular file starting with the GGUF magic.
func isGGUF(path string, st os.FileInfo) bool {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return true
	}
	if !st.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == gguf.Magic
}

// openGGUF maps a GGUF file and opens it as a Model.
func openGGUF(path string) (*Model, error) {
	f, err := tmpfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	data, err := format.MapFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	ck := &Checkpoint{Tensors: map[string]*Tensor{}, maps: [][]byte{data}, files: []*os.File{f}}
	m, err := ggufModel(path, data, ck)
	if err != nil {
		ck.Close()
		return nil, err
	}
	return m, nil
}

// ggufSource is a parsed GGUF file and the name of its architecture's keys.
type ggufSource struct {
	path string
	f    *gguf.File
	arch string // general.architecture: the prefix of the model's keys
}

func (g *ggufSource) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{g.path}, args...)...)
}

// count reads an integer key of any width in [lo, hi]; a missing key gives
// def, or an error when def < 0.
func (g *ggufSource) count(key string, def, lo, hi int) (int, error) {
	kv := g.f.Lookup(key)
	if kv == nil {
		if def < 0 {
			return 0, g.errorf("no %s in the GGUF metadata", key)
		}
		return def, nil
	}
	n, ok := kv.Value.Int()
	if !ok || n < int64(lo) || n > int64(hi) {
		return 0, g.errorf("%s is %v (%v), want an integer in [%d, %d] (offset %d)", key, kv.Value, kv.Value.Type, lo, hi, kv.Off)
	}
	return int(n), nil
}

// float reads a float32 or float64 key; a missing key gives def, or an
// error when required.
func (g *ggufSource) float(key string, def float64, required bool) (float64, error) {
	kv := g.f.Lookup(key)
	if kv == nil {
		if required {
			return 0, g.errorf("no %s in the GGUF metadata", key)
		}
		return def, nil
	}
	x, ok := kv.Value.Float()
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, g.errorf("%s is %v (%v), want a finite float (offset %d)", key, kv.Value, kv.Value.Type, kv.Off)
	}
	return x, nil
}

// str reads a string key ("" when missing).
func (g *ggufSource) str(key string) (string, error) {
	kv := g.f.Lookup(key)
	if kv == nil {
		return "", nil
	}
	s, ok := kv.Value.Str()
	if !ok {
		return "", g.errorf("%s is a %v, want a string (offset %d)", key, kv.Value.Type, kv.Off)
	}
	return s, nil
}

// ggufRopeFreqs is the tensor llama.cpp's converter writes for a llama3
// rope_scaling: per rotary dimension pair, the factor its frequency is
// divided by.
const ggufRopeFreqs = "rope_freqs.weight"

// ggufModel reads the parsed file into a Model whose checkpoint is ck.
func ggufModel(path string, data []byte, ck *Checkpoint) (*Model, error) {
	f, err := gguf.Parse(path, data)
	if err != nil {
		return nil, err
	}
	g := &ggufSource{path: path, f: f}
	if g.arch, err = g.str("general.architecture"); err != nil {
		return nil, err
	}
	hfArch, ok := ggufArchitectures[g.arch]
	if !ok {
		var names []string
		for n := range ggufArchitectures {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, g.errorf("general.architecture %q is not supported (supported: %s)", g.arch, strings.Join(names, ", "))
	}
	layers, err := g.count(g.arch+".block_count", -1, 1, format.MaxLayers)
	if err != nil {
		return nil, err
	}
	// Every tensor must be one the architecture has: an unknown one means a
	// feature (experts, extra norms) the runner would silently leave out.
	var unknown []string
	for _, t := range f.Tensors {
		if gguf.HFName(t.Name, layers) == "" && !(t.Name == ggufRopeFreqs && g.arch == "llama") {
			unknown = append(unknown, t.Name)
		}
	}
	if len(unknown) > 0 {
		if len(unknown) > 8 {
			unknown = append(unknown[:8], fmt.Sprintf("and %d more", len(unknown)-8))
		}
		return nil, g.errorf("tensors a %s model does not have: %s", g.arch, strings.Join(unknown, ", "))
	}
	m := &Model{Dir: path, Checkpoint: ck}
	if m.ConfigJSON, err = g.configJSON(hfArch, layers); err != nil {
		return nil, err
	}
	if m.Config, m.Arch, err = ParseConfig(path+" (its GGUF metadata as config.json)", m.ConfigJSON); err != nil {
		return nil, err
	}
	if m.TokenizerJSON, err = g.tokenizerJSON(); err != nil {
		return nil, err
	}
	if m.Tokenizer, err = tokenizer.Load(m.TokenizerJSON); err != nil {
		return nil, g.errorf("tokenizer built from tokenizer.ggml.*: %w", err)
	}
	if n := m.Tokenizer.VocabSize(); n > m.Config.VocabSize {
		return nil, g.errorf("tokenizer has %d tokens, more than the model's %d embedding rows", n, m.Config.VocabSize)
	}
	if m.ChatTemplates, err = g.chatTemplates(); err != nil {
		return nil, err
	}
	for _, t := range f.Tensors {
		if t.Name == ggufRopeFreqs {
			continue
		}
		if !gguf.CanDequantize(t.Type) {
			return nil, g.errorf("tensor %q is %v, which sipack does not read (it reads F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K)", t.Name, t.Type)
		}
		dt := format.F32 // what a dequantised tensor becomes
		switch t.Type {
		case gguf.F16:
			dt = format.F16
		case gguf.BF16:
			dt = format.BF16
		}
		hf := gguf.HFName(t.Name, layers)
		ck.Tensors[hf] = &Tensor{Name: hf, DType: dt, Shape: t.Shape(), File: path}
	}
	if err := m.checkTensors(); err != nil {
		return nil, err
	}
	if err := g.loadTensors(m); err != nil {
		return nil, err
	}
	_, ffn := m.sources()
	for _, s := range ffn {
		m.ffn = append(m.ffn, [3]*Tensor{m.tensor(s[0].hf), m.tensor(s[1].hf), m.tensor(s[2].hf)})
	}
	return m, nil
}

// configJSON writes the config.json of the HF checkpoint the file was
// converted from, as far as the metadata says: the hyperparameters under
// the architecture's prefix, tied embeddings when there is no output.weight,
// attention biases when there are attn_q.bias tensors, bos and eos (plus
// eot and eom, which end a turn as eos does) from tokenizer.ggml.*.
func (g *ggufSource) configJSON(hfArch string, layers int) ([]byte, error) {
	a := g.arch + "."
	hidden, err := g.count(a+"embedding_length", -1, 1, ggufMaxHidden)
	if err != nil {
		return nil, err
	}
	ffn, err := g.count(a+"feed_forward_length", -1, 1, format.MaxNeurons)
	if err != nil {
		return nil, err
	}
	heads, err := g.count(a+"attention.head_count", -1, 1, ggufMaxHeads)
	if err != nil {
		return nil, err
	}
	kvHeads, err := g.count(a+"attention.head_count_kv", heads, 1, ggufMaxHeads)
	if err != nil {
		return nil, err
	}
	headDim, err := g.count(a+"attention.key_length", hidden/heads, 1, ggufMaxHidden)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"attention.value_length", "rope.dimension_count"} {
		if n, err := g.count(a+k, headDim, 1, ggufMaxHidden); err != nil {
			return nil, err
		} else if n != headDim {
			return nil, g.errorf("%s%s is %d, not the key length %d: partial or uneven heads are not supported", a, k, n, headDim)
		}
	}
	if n, err := g.count(a+"expert_count", 0, 0, math.MaxInt32); err != nil {
		return nil, err
	} else if n > 0 {
		return nil, g.errorf("%sexpert_count is %d: mixture-of-experts models are not supported", a, n)
	}
	ctx, err := g.count(a+"context_length", -1, 1, ggufMaxContext)
	if err != nil {
		return nil, err
	}
	eps, err := g.float(a+"attention.layer_norm_rms_epsilon", 0, true)
	if err != nil {
		return nil, err
	}
	theta, err := g.float(a+"rope.freq_base", 10000, false)
	if err != nil {
		return nil, err
	}
	embd := g.f.Tensor("token_embd.weight")
	if embd == nil || len(embd.Dims) != 2 || embd.Dims[1] > ggufMaxVocab {
		return nil, g.errorf("no token_embd.weight of [vocab, %d] (at most %d rows)", hidden, ggufMaxVocab)
	}
	vocab := int(embd.Dims[1])
	if n, err := g.count(a+"vocab_size", vocab, 1, ggufMaxVocab); err != nil {
		return nil, err
	} else if n != vocab {
		return nil, g.errorf("%svocab_size is %d, but token_embd.weight has %d rows", a, n, vocab)
	}
	cfg := map[string]any{
		"architectures":           []string{hfArch},
		"model_type":              g.arch,
		"hidden_size":             hidden,
		"intermediate_size":       ffn,
		"num_hidden_layers":       layers,
		"num_attention_heads":     heads,
		"num_key_value_heads":     kvHeads,
		"head_dim":                headDim,
		"vocab_size":              vocab,
		"max_position_embeddings": ctx,
		"rms_norm_eps":            eps,
		"rope_theta":              theta,
		"hidden_act":              "silu",
		"tie_word_embeddings":     g.f.Tensor("output.weight") == nil,
		"attention_bias":          g.f.Tensor("blk.0.attn_q.bias") != nil,
	}
	// general.name, not the file's name: the config is part of the
	// model's identity (SourceHash), which renaming the file must keep.
	if name, _ := g.str("general.name"); name != "" {
		cfg["_name_or_path"] = name
	}
	if rs, err := g.ropeScaling(theta, headDim); err != nil {
		return nil, err
	} else if rs != nil {
		cfg["rope_scaling"] = rs
	}
	tk := "tokenizer.ggml."
	if g.f.Lookup(tk+"bos_token_id") != nil {
		bos, err := g.count(tk+"bos_token_id", -1, 0, vocab-1)
		if err != nil {
			return nil, err
		}
		cfg["bos_token_id"] = bos
	}
	var eos []int
	for _, k := range []string{"eos_token_id", "eot_token_id", "eom_token_id"} {
		if g.f.Lookup(tk+k) == nil {
			continue
		}
		id, err := g.count(tk+k, -1, 0, vocab-1)
		if err != nil {
			return nil, err
		}
		if !contains(eos, id) {
			eos = append(eos, id)
		}
	}
	switch len(eos) {
	case 0:
	case 1:
		cfg["eos_token_id"] = eos[0]
	default:
		cfg["eos_token_id"] = eos
	}
	return json.MarshalIndent(cfg, "", "  ")
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// ropeScaling gives the rope_scaling block of the config: none, or the
// llama3 one llama.cpp's converter turned into rope_freqs.weight. Other
// scalings (linear, yarn) are refused: the runner has only llama3's.
func (g *ggufSource) ropeScaling(theta float64, headDim int) (map[string]any, error) {
	a := g.arch + "."
	typ, err := g.str(a + "rope.scaling.type")
	if err != nil {
		return nil, err
	}
	if typ != "" && typ != "none" {
		return nil, g.errorf("%srope.scaling.type %q is not supported (sipack runs llama3 scaling, which GGUF files carry as %s)", a, typ, ggufRopeFreqs)
	}
	if s, err := g.float(a+"rope.scale_linear", 1, false); err != nil {
		return nil, err
	} else if s != 1 {
		return nil, g.errorf("%srope.scale_linear %g: linear RoPE scaling is not supported", a, s)
	}
	t := g.f.Tensor(ggufRopeFreqs)
	if t == nil {
		return nil, nil
	}
	if t.Type != gguf.F32 || len(t.Dims) != 1 || int(t.Dims[0]) != headDim/2 {
		return nil, g.errorf("%s is %v %v, want F32 [%d]", ggufRopeFreqs, t.Type, t.Dims, headDim/2)
	}
	freqs := make([]float32, headDim/2)
	if err := gguf.Dequantize(freqs, t.Type, t.Data); err != nil {
		return nil, g.errorf("%s: %w", ggufRopeFreqs, err)
	}
	rs, err := llama3FromFactors(freqs, theta, headDim)
	if err != nil {
		return nil, g.errorf("%s: %w", ggufRopeFreqs, err)
	}
	if rs == nil {
		return nil, nil
	}
	return map[string]any{"rope_type": "llama3", "factor": rs.Factor, "low_freq_factor": rs.LowFreqFactor,
		"high_freq_factor": rs.HighFreqFactor, "original_max_position_embeddings": rs.OriginalMaxPositionEmbeddings}, nil
}

// llama3FromFactors recovers llama3 rope_scaling parameters from the
// per-dimension factors a GGUF file stores. The factors fix the plateau
// (factor) and, through the interpolated dimensions, s = A/wavelength + B;
// (orig, low, high) are fixed only up to a common scale, so low is taken
// as 1 (Llama 3.x's value), high and factor rounded to 1/1024 and orig to
// an integer. With one interpolated dimension high is taken as 4 (Llama
// 3.x's) too. The result must reproduce every stored factor. All ones is
// no scaling (nil).
func llama3FromFactors(freqs []float32, theta float64, headDim int) (*format.RopeScaling, error) {
	factor := 1.0
	for i, f := range freqs {
		if !(f >= 1) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("factor %d is %g, want a finite value of at least 1", i, f)
		}
		factor = max(factor, float64(f))
	}
	if factor == 1 {
		return nil, nil
	}
	// s = (1/f − 1/factor)/(1 − 1/factor) against x = 1/wavelength.
	var n, sx, sy, sxx, sxy float64
	for i, f := range freqs {
		if !(float64(f) > 1+1e-6 && float64(f) < factor*(1-1e-6)) {
			continue
		}
		x := 1 / (2 * math.Pi * math.Pow(theta, float64(2*i)/float64(headDim)))
		y := (1/float64(f) - 1/factor) / (1 - 1/factor)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	var A, B float64
	switch {
	case n >= 2:
		A = (n*sxy - sx*sy) / (n*sxx - sx*sx)
		B = (sy - A*sx) / n
	case n == 1: // low 1, high 4: s = (orig·x − 1)/3
		B = -1.0 / 3
		A = (sy - B) / sx
	default:
		return nil, fmt.Errorf("no interpolated dimension: llama3 rope_scaling cannot be recovered from factors of only 1 and %g", factor)
	}
	if !(B < 0) || !(A > 0) {
		return nil, fmt.Errorf("the interpolated factors do not follow llama3 rope_scaling")
	}
	round := func(x float64) float64 { return math.Round(x*1024) / 1024 }
	rs := &format.RopeScaling{
		Type:                          "llama3",
		Factor:                        float32(round(factor)),
		LowFreqFactor:                 1,
		HighFreqFactor:                float32(round((1 - B) / -B)),
		OriginalMaxPositionEmbeddings: uint32(min(math.Round(-A/B), math.MaxUint32)),
	}
	for i, want := range rs.Llama3Factors(theta, headDim) {
		if got := float64(freqs[i]); math.Abs(got-want) > 1e-4*want {
			return nil, fmt.Errorf("factor %d is %g, but llama3 rope_scaling (factor %g, low 1, high %g, original context %d) gives %g",
				i, got, rs.Factor, rs.HighFreqFactor, rs.OriginalMaxPositionEmbeddings, want)
		}
	}
	return rs, nil
}

// chatTemplates reads tokenizer.chat_template ("default") and the named
// templates tokenizer.chat_templates lists (tokenizer.chat_template.NAME),
// each compiled so that a broken one is refused now.
func (g *ggufSource) chatTemplates() ([]format.ChatTemplate, error) {
	var ts []format.ChatTemplate
	if s, err := g.str("tokenizer.chat_template"); err != nil {
		return nil, err
	} else if s != "" {
		ts = append(ts, format.ChatTemplate{Name: "default", Template: s})
	}
	if kv := g.f.Lookup("tokenizer.chat_templates"); kv != nil {
		names, ok := kv.Value.Strings()
		if !ok {
			return nil, g.errorf("tokenizer.chat_templates is a %v, want an array of strings (offset %d)", kv.Value.Type, kv.Off)
		}
		for _, n := range names {
			s, err := g.str("tokenizer.chat_template." + n)
			if err != nil {
				return nil, err
			}
			if s == "" {
				return nil, g.errorf("tokenizer.chat_templates names %q, but there is no tokenizer.chat_template.%s", n, n)
			}
			ts = append(ts, format.ChatTemplate{Name: n, Template: s})
		}
	}
	if err := format.CheckChatTemplates(ts); err != nil {
		return nil, g.errorf("%w", err)
	}
	cfg := &chat.Config{Templates: ts}
	for _, t := range ts {
		if _, err := cfg.Compile(t.Name); err != nil {
			return nil, g.errorf("%w", err)
		}
	}
	return ts, nil
}

// loadTensors gives every tensor of m's checkpoint its data: a view into
// the mapped file for F32, F16 and BF16, float32 the Model holds for the
// quantised types (dequantised on every CPU), and the llama Q and K rows
// back in HF's order.
func (g *ggufSource) loadTensors(m *Model) error {
	type job struct {
		src *gguf.Tensor
		dst *Tensor
	}
	var jobs []job
	for i := range g.f.Tensors {
		t := &g.f.Tensors[i]
		if t.Name == ggufRopeFreqs {
			continue
		}
		jobs = append(jobs, job{t, m.Checkpoint.Tensors[gguf.HFName(t.Name, m.Config.NumLayers)]})
	}
	c := m.Config
	heads := func(hf string) int {
		if g.arch != "llama" {
			return 0 // only llama.cpp's llama converter permutes
		}
		switch {
		case strings.HasSuffix(hf, ".q_proj.weight"):
			return c.NumHeads
		case strings.HasSuffix(hf, ".k_proj.weight"):
			return c.NumKVHeads
		}
		return 0
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				errs[i] = loadTensor(j.dst, j.src, heads(j.dst.Name))
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return g.errorf("tensor %q: %w", jobs[i].src.Name, err)
		}
	}
	return nil
}

// loadTensor sets dst's data from src: in place for the float types, else
// dequantised to float32; with heads > 0 the rows are un-permuted.
func loadTensor(dst *Tensor, src *gguf.Tensor, heads int) error {
	data := src.Data
	if dst.DType == format.F32 && src.Type != gguf.F32 {
		n := int(src.Elems())
		row := int(src.Dims[0])
		out := make([]byte, 4*n)
		f := make([]float32, row)
		rb := len(src.Data) / (n / row)
		for r := 0; r < n/row; r++ {
			if err := gguf.Dequantize(f, src.Type, src.Data[r*rb:(r+1)*rb]); err != nil {
				return err
			}
			for i, v := range f {
				binary.LittleEndian.PutUint32(out[4*(r*row+i):], math.Float32bits(v))
			}
		}
		data = out
	}
	if heads > 0 {
		var err error
		if data, err = unpermuteRows(data, dst.Shape[0], heads); err != nil {
			return err
		}
	}
	dst.Data = data
	// Q4_K and Q6_K are a pack's bytes too: kept for rows a pack copies.
	if kt, ok := ggufKQuant[src.Type]; ok && len(dst.Shape) == 2 {
		raw := src.Data
		if heads > 0 {
			var err error
			if raw, err = unpermuteRows(raw, dst.Shape[0], heads); err != nil {
				return err
			}
		}
		dst.Raw, dst.RawDType = raw, kt
	}
	return nil
}

// ggufKQuant maps the GGUF K-quants whose blocks are a pack dtype's bytes.
var ggufKQuant = map[gguf.Type]format.DType{gguf.Q4_K: format.Q4_K, gguf.Q6_K: format.Q6_K}

// unpermuteRows undoes the row permutation llama.cpp's converter applies to
// a llama Q or K projection of rows = heads·D rows: within each head, HF's
// rotate-half order (the D/2 first halves of the rotary pairs, then the D/2
// second halves) became ggml's interleaved order (pair by pair), so GGUF
// row h·D + 2j + i is HF row h·D + i·D/2 + j (i ∈ {0, 1}, j < D/2). The
// result is new memory; data is not changed.
func unpermuteRows(data []byte, rows, heads int) ([]byte, error) {
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 || len(data)%rows != 0 {
		return nil, fmt.Errorf("%d rows cannot be %d heads of an even number of rows", rows, heads)
	}
	D, rb := rows/heads, len(data)/rows
	out := make([]byte, len(data))
	for h := 0; h < heads; h++ {
		for j := 0; j < D/2; j++ {
			for i := 0; i < 2; i++ {
				hf, gg := h*D+i*D/2+j, h*D+2*j+i
				copy(out[hf*rb:(hf+1)*rb], data[gg*rb:(gg+1)*rb])
			}
		}
	}
	return out, nil
}
