// Package fromhf writes a GGUF file from a HuggingFace checkpoint directory
// the way llama.cpp's convert_hf_to_gguf.py writes one (and llama-quantize
// --pure quantises it): ggml tensor names, dimensions fastest first, the
// llama architecture's Q and K rows permuted to ggml's interleaved RoPE
// order, 1-D tensors in F32, a llama3 rope_scaling as rope_freqs.weight,
// and the tokenizer as tokenizer.ggml.* keys built from tokenizer.json. It
// exists for tests: it lets the GGUF reader and converter be checked
// against the checkpoint the file came from.
package fromhf

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/gguf"
	"github.com/sipack/sipack/kernels"
)

// Options says what to write.
type Options struct {
	// Type is the type of every matrix: F32, F16, BF16, Q8_0 or Q4_0
	// (0 is F32). Norms and biases are F32 whatever it is.
	Type gguf.Type
	// Pre overrides tokenizer.ggml.pre (default: the name of the
	// tokenizer.json's split regex, "llama-bpe" or "qwen2").
	Pre string
}

// Write converts the checkpoint in dir to a GGUF file at out.
func Write(dir, out string, opt Options) error {
	w, err := Build(dir, opt)
	if err != nil {
		return err
	}
	return w.WriteFile(out)
}

// archNames maps the HF architecture to general.architecture.
var archNames = map[string]string{"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}

// fileTypes is general.file_type of each matrix type (llama_ftype).
var fileTypes = map[gguf.Type]uint32{gguf.F32: 0, gguf.F16: 1, gguf.Q4_0: 2, gguf.Q8_0: 7, gguf.BF16: 32}

// Build converts the checkpoint in dir to a GGUF file in memory.
func Build(dir string, opt Options) (*gguf.Writer, error) {
	m, err := convert.OpenModel(dir)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	c := m.Config
	arch, ok := archNames[c.Architecture]
	if !ok {
		return nil, fmt.Errorf("%s: architecture %s has no GGUF name here", dir, c.Architecture)
	}
	ft, ok := fileTypes[opt.Type]
	if !ok {
		return nil, fmt.Errorf("matrix type %v is not one of F32, F16, BF16, Q8_0, Q4_0", opt.Type)
	}
	w := &gguf.Writer{}
	set := func(k string, v any) {
		if err == nil {
			err = w.Set(k, v)
		}
	}
	a := arch + "."
	set("general.architecture", arch)
	set("general.name", filepath.Base(filepath.Clean(dir)))
	set(a+"vocab_size", uint32(c.VocabSize))
	set(a+"context_length", uint32(c.MaxPositionEmbeddings))
	set(a+"embedding_length", uint32(c.HiddenSize))
	set(a+"block_count", uint32(c.NumLayers))
	set(a+"feed_forward_length", uint32(c.IntermediateSize))
	set(a+"attention.head_count", uint32(c.NumHeads))
	set(a+"attention.head_count_kv", uint32(c.NumKVHeads))
	set(a+"attention.key_length", uint32(c.HeadDim))
	set(a+"attention.value_length", uint32(c.HeadDim))
	set(a+"rope.dimension_count", uint32(c.HeadDim))
	set(a+"rope.freq_base", c.RopeTheta)
	set(a+"attention.layer_norm_rms_epsilon", c.RMSNormEps)
	set("general.file_type", ft)
	set("general.quantization_version", uint32(2))
	if err != nil {
		return nil, err
	}
	if err := addTokenizer(w, m, opt.Pre); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var named []string
	for _, t := range m.ChatTemplates {
		key := "tokenizer.chat_template"
		if t.Name != "default" {
			key += "." + t.Name
			named = append(named, t.Name)
		}
		w.Set(key, t.Template)
	}
	if len(named) > 0 {
		w.Set("tokenizer.chat_templates", named)
	}
	if err := addTensors(w, m, arch, opt.Type); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if rs := c.RopeScaling; rs != nil {
		f := make([]byte, 4*(c.HeadDim/2))
		for i, v := range rs.Llama3Factors(float64(c.RopeTheta), c.HeadDim) {
			binary.LittleEndian.PutUint32(f[4*i:], math.Float32bits(float32(v)))
		}
		if err := w.AddTensor("rope_freqs.weight", gguf.F32, []uint64{uint64(c.HeadDim / 2)}, f); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// The HF split regexes and the tokenizer.ggml.pre names llama.cpp's
// converter gives them.
var preNames = map[string]string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      "qwen2",
}

// addTokenizer writes tokenizer.ggml.* from the model's tokenizer.json as
// llama.cpp's converter does for a byte-level BPE: every id up to the
// vocabulary size listed, vocabulary tokens NORMAL, added tokens CONTROL
// (special) or USER_DEFINED, ids without a token "[PADn]" and UNUSED.
func addTokenizer(w *gguf.Writer, m *convert.Model, pre string) error {
	var tj struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		PreTokenizer struct {
			Pretokenizers []struct {
				Pattern struct {
					Regex string `json:"Regex"`
				} `json:"pattern"`
			} `json:"pretokenizers"`
		} `json:"pre_tokenizer"`
		Normalizer json.RawMessage `json:"normalizer"`
		Model      struct {
			Vocab        map[string]int    `json:"vocab"`
			Merges       []json.RawMessage `json:"merges"`
			ByteFallback bool              `json:"byte_fallback"`
			UnkToken     string            `json:"unk_token"`
		} `json:"model"`
	}
	if err := json.Unmarshal(m.TokenizerJSON, &tj); err != nil {
		return fmt.Errorf("tokenizer.json: %w", err)
	}
	c := m.Config
	tokens := make([]string, c.VocabSize)
	types := make([]int32, c.VocabSize)
	for s, id := range tj.Model.Vocab {
		if id >= 0 && id < c.VocabSize {
			tokens[id], types[id] = s, 1 // NORMAL
		}
	}
	for _, t := range tj.AddedTokens {
		if t.ID >= 0 && t.ID < c.VocabSize {
			tokens[t.ID], types[t.ID] = t.Content, 4 // USER_DEFINED
			if t.Special {
				types[t.ID] = 3 // CONTROL
			}
		}
	}
	for i := range tokens {
		if types[i] == 0 {
			tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), 5 // UNUSED
		}
	}
	merges := make([]string, len(tj.Model.Merges))
	for i, raw := range tj.Model.Merges {
		var s string
		var pair []string
		if json.Unmarshal(raw, &s) == nil {
			merges[i] = s
		} else if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
			merges[i] = pair[0] + " " + pair[1]
		} else {
			return fmt.Errorf("tokenizer.json: merge %d is %s", i, raw)
		}
	}
	if tj.Model.ByteFallback {
		return addSentencePiece(w, m, tokens, types, merges, tj.Model.UnkToken, strings.Contains(string(tj.Normalizer), `"Prepend"`))
	}
	if pre == "" {
		for _, p := range tj.PreTokenizer.Pretokenizers {
			if n, ok := preNames[p.Pattern.Regex]; ok {
				pre = n
			}
		}
		if pre == "" {
			return fmt.Errorf("tokenizer.json: no split regex this writer knows a tokenizer.ggml.pre name for")
		}
	}
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", pre)
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	return addSpecials(w, m)
}

// addSentencePiece writes a byte-fallback BPE tokenizer.json as llama.cpp's
// converter writes a SentencePiece model: tokenizer.ggml.model "llama",
// the unknown token UNKNOWN and <0xXX> tokens BYTE, and each token's score
// minus the rank of the first merge that makes it (the scores the merges
// were made from order them so), so that merging the highest-scoring pair
// is merging by the file's ranks.
func addSentencePiece(w *gguf.Writer, m *convert.Model, tokens []string, types []int32, merges []string, unk string, spacePrefix bool) error {
	ids := map[string]int{}
	for id, tok := range tokens {
		ids[tok] = id
	}
	scores := make([]float32, len(tokens))
	for id := range scores {
		scores[id] = -float32(len(merges) + id) // made by no merge
	}
	for rank := len(merges) - 1; rank >= 0; rank-- {
		if id, ok := ids[strings.Replace(merges[rank], " ", "", 1)]; ok {
			scores[id] = -float32(rank)
		}
	}
	for id, tok := range tokens {
		switch {
		case types[id] != 1:
			scores[id] = 0
		case tok == unk:
			types[id], scores[id] = 2, 0 // UNKNOWN
		case len(tok) == 6 && strings.HasPrefix(tok, "<0x") && strings.HasSuffix(tok, ">"):
			types[id], scores[id] = 6, 0 // BYTE
		}
	}
	w.Set("tokenizer.ggml.model", "llama")
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.scores", scores)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.add_space_prefix", spacePrefix)
	return addSpecials(w, m)
}

// addSpecials writes the bos and eos ids and whether the tokenizer adds
// them: the tokens the post-processor puts before and after a text that
// holds neither, as llama.cpp's converter reads them from the tokenizer's
// special tokens.
func addSpecials(w *gguf.Writer, m *convert.Model) error {
	c := m.Config
	bos, eos := c.BOSTokenID, -1
	if len(c.EOSTokenIDs) > 0 {
		eos = c.EOSTokenIDs[0]
	}
	plain, ids := m.Tokenizer.Encode("a", false), m.Tokenizer.Encode("a", true)
	var addBOS, addEOS bool
	if i := len(ids) - len(plain); i == 1 && slices.Equal(ids[1:], plain) {
		addBOS, bos = true, ids[0]
	} else if i == 1 && slices.Equal(ids[:len(plain)], plain) {
		addEOS, eos = true, ids[len(ids)-1]
	} else if i == 2 && slices.Equal(ids[1:len(ids)-1], plain) {
		addBOS, bos, addEOS, eos = true, ids[0], true, ids[len(ids)-1]
	} else if i != 0 {
		return fmt.Errorf("tokenizer.json adds %d tokens around a text; this writer knows bos and eos only", i)
	}
	if bos >= 0 {
		w.Set("tokenizer.ggml.bos_token_id", uint32(bos))
	}
	if eos >= 0 {
		w.Set("tokenizer.ggml.eos_token_id", uint32(eos))
	}
	w.Set("tokenizer.ggml.add_bos_token", addBOS)
	w.Set("tokenizer.ggml.add_eos_token", addEOS)
	return nil
}

// addTensors writes every tensor the model reads, in the checkpoint's name
// order.
func addTensors(w *gguf.Writer, m *convert.Model, arch string, typ gguf.Type) error {
	c := m.Config
	var names []string
	for hf := range m.Checkpoint.Tensors {
		names = append(names, hf)
	}
	sort.Strings(names)
	for _, hf := range names {
		t := m.Checkpoint.Tensors[hf]
		name := gguf.GGMLName(hf)
		if name == "" {
			return fmt.Errorf("tensor %q has no ggml name here", hf)
		}
		n := len(t.Data) / t.DType.Size()
		x := make([]float32, n)
		kernels.ToF32(x, t.Data, t.DType)
		if arch == "llama" && strings.HasSuffix(name, "attn_q.weight") {
			x = permute(x, t.Shape[0], c.NumHeads)
		} else if arch == "llama" && strings.HasSuffix(name, "attn_k.weight") {
			x = permute(x, t.Shape[0], c.NumKVHeads)
		}
		dims := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			dims[len(dims)-1-i] = uint64(d)
		}
		tt := typ
		if len(t.Shape) == 1 || tt == 0 {
			tt = gguf.F32
		}
		if err := w.AddTensor(name, tt, dims, encode(x, tt, int(dims[0]))); err != nil {
			return err
		}
	}
	return nil
}

// permute is llama.cpp's LlamaModel.permute: within each head of D rows,
// the rows of the first and second halves of the rotary pairs interleave,
// row h·D + i·D/2 + j going to h·D + 2j + i.
func permute(x []float32, rows, heads int) []float32 {
	out := make([]float32, len(x))
	D, cols := rows/heads, len(x)/rows
	for h := 0; h < heads; h++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < D/2; j++ {
				from, to := h*D+i*D/2+j, h*D+2*j+i
				copy(out[to*cols:(to+1)*cols], x[from*cols:(from+1)*cols])
			}
		}
	}
	return out
}

// encode stores x, rows of rowLen values, as type t (rounding to nearest
// even for F16 and BF16; Q8_0 and Q4_0 quantised as sipack's converter
// quantises, which is ggml's reference quantiser).
func encode(x []float32, t gguf.Type, rowLen int) []byte {
	le := binary.LittleEndian
	switch t {
	case gguf.F32:
		b := make([]byte, 4*len(x))
		for i, v := range x {
			le.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	case gguf.F16, gguf.BF16:
		b := make([]byte, 2*len(x))
		for i, v := range x {
			h := kernels.F32ToF16(v)
			if t == gguf.BF16 {
				h = kernels.F32ToBF16(v)
			}
			le.PutUint16(b[2*i:], h)
		}
		return b
	}
	dt := map[gguf.Type]format.DType{gguf.Q8_0: format.Q8_0, gguf.Q4_0: format.Q4_0}[t]
	rb, _ := dt.RowBytes(rowLen)
	b := make([]byte, len(x)/rowLen*rb)
	for r := 0; r < len(x)/rowLen; r++ {
		kernels.QuantizeRow(b[r*rb:(r+1)*rb], dt, x[r*rowLen:(r+1)*rowLen])
	}
	return b
}
