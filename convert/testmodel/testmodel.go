// Package testmodel writes random-weight HuggingFace checkpoints (config.json,
// tokenizer.json, safetensors shards with an index) for tests and for the
// 1B-shape benchmark model. Weights are streamed from a seeded generator,
// so even a multi-gigabyte checkpoint is written in constant memory.
package testmodel

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
)

// Config is the shape of the model to write.
type Config struct {
	Architecture     string // "LlamaForCausalLM" (default) or "Qwen2ForCausalLM"
	Hidden           int
	Intermediate     int
	Layers           int
	Heads, KVHeads   int
	Vocab            int
	MaxPos           int
	Tied             bool
	RopeScalingLlama bool // write a llama3 rope_scaling block
	Shards           int  // 1: model.safetensors; more: model-0000i-of-0000n.safetensors + index
	Seed             uint64
	TokenizerJSON    []byte // written verbatim as tokenizer.json
	DType            string // "BF16" (default), "F16" or "F32"
}

// Tiny is a small Llama for unit tests.
func Tiny(tok []byte) Config {
	return Config{Hidden: 64, Intermediate: 160, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 4096, MaxPos: 128, Shards: 1, Seed: 1, TokenizerJSON: tok}
}

// Llama32_1B is the shape of Llama-3.2-1B.
func Llama32_1B(tok []byte) Config {
	return Config{Hidden: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, Vocab: 128256, MaxPos: 131072,
		Tied: true, RopeScalingLlama: true, Shards: 2, Seed: 1, TokenizerJSON: tok}
}

type tensorSpec struct {
	name  string
	shape []int
	scale float32 // weights are uniform in [-scale, scale]; norms are 1 + noise
	norm  bool
}

func (c *Config) tensors() []tensorSpec {
	h, N, hd := c.Hidden, c.Intermediate, c.Hidden/c.Heads
	kv := c.KVHeads * hd
	ws := float32(1 / math.Sqrt(float64(h)))
	out := []tensorSpec{{name: "model.embed_tokens.weight", shape: []int{c.Vocab, h}, scale: 0.5}}
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		out = append(out,
			tensorSpec{name: p + "input_layernorm.weight", shape: []int{h}, norm: true},
			tensorSpec{name: p + "self_attn.q_proj.weight", shape: []int{h, h}, scale: ws},
			tensorSpec{name: p + "self_attn.k_proj.weight", shape: []int{kv, h}, scale: ws},
			tensorSpec{name: p + "self_attn.v_proj.weight", shape: []int{kv, h}, scale: ws},
			tensorSpec{name: p + "self_attn.o_proj.weight", shape: []int{h, h}, scale: ws},
			tensorSpec{name: p + "post_attention_layernorm.weight", shape: []int{h}, norm: true},
			tensorSpec{name: p + "mlp.gate_proj.weight", shape: []int{N, h}, scale: ws},
			tensorSpec{name: p + "mlp.up_proj.weight", shape: []int{N, h}, scale: ws},
			tensorSpec{name: p + "mlp.down_proj.weight", shape: []int{h, N}, scale: float32(1 / math.Sqrt(float64(N)))},
		)
		if c.Architecture == "Qwen2ForCausalLM" {
			out = append(out,
				tensorSpec{name: p + "self_attn.q_proj.bias", shape: []int{h}, scale: 0.1},
				tensorSpec{name: p + "self_attn.k_proj.bias", shape: []int{kv}, scale: 0.1},
				tensorSpec{name: p + "self_attn.v_proj.bias", shape: []int{kv}, scale: 0.1},
			)
		}
	}
	out = append(out, tensorSpec{name: "model.norm.weight", shape: []int{h}, norm: true})
	if !c.Tied {
		out = append(out, tensorSpec{name: "lm_head.weight", shape: []int{c.Vocab, h}, scale: ws})
	}
	return out
}

// Write writes the checkpoint into dir (created if needed).
func Write(dir string, c Config) error {
	if c.Architecture == "" {
		c.Architecture = "LlamaForCausalLM"
	}
	if c.DType == "" {
		c.DType = "BF16"
	}
	if c.Shards < 1 {
		c.Shards = 1
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfg := map[string]any{
		"architectures": []string{c.Architecture}, "model_type": map[string]string{"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2"}[c.Architecture],
		"hidden_size": c.Hidden, "intermediate_size": c.Intermediate, "num_hidden_layers": c.Layers,
		"num_attention_heads": c.Heads, "num_key_value_heads": c.KVHeads, "vocab_size": c.Vocab,
		"max_position_embeddings": c.MaxPos, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": c.Tied, "hidden_act": "silu", "bos_token_id": 4094, "eos_token_id": 4095,
		"torch_dtype": "bfloat16",
	}
	if c.RopeScalingLlama {
		cfg["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	}
	raw, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		return err
	}
	if c.TokenizerJSON != nil {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), c.TokenizerJSON, 0o644); err != nil {
			return err
		}
	}
	specs := c.tensors()
	// Split into shards of roughly equal byte size, in name order.
	sort.Slice(specs, func(i, j int) bool { return specs[i].name < specs[j].name })
	esize := map[string]int{"BF16": 2, "F16": 2, "F32": 4}[c.DType]
	var total int
	for _, s := range specs {
		total += elems(s.shape) * esize
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	weightMap := map[string]string{}
	per := (total + c.Shards - 1) / c.Shards
	start := 0
	for sh := 0; sh < c.Shards; sh++ {
		name := "model.safetensors"
		if c.Shards > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", sh+1, c.Shards)
		}
		end, acc := start, 0
		for end < len(specs) && (acc < per || sh == c.Shards-1) {
			acc += elems(specs[end].shape) * esize
			end++
		}
		for _, s := range specs[start:end] {
			weightMap[s.name] = name
		}
		if err := writeShard(filepath.Join(dir, name), specs[start:end], c.DType, esize, rng); err != nil {
			return err
		}
		start = end
	}
	if c.Shards > 1 {
		raw, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
		return os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), raw, 0o644)
	}
	return nil
}

func elems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func writeShard(path string, specs []tensorSpec, dtype string, esize int, rng *rand.Rand) error {
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	off := 0
	for _, s := range specs {
		n := elems(s.shape) * esize
		header[s.name] = map[string]any{"dtype": dtype, "shape": s.shape, "data_offsets": []int{off, off + n}}
		off += n
	}
	hj, _ := json.Marshal(header)
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hj)))
	w.Write(lenb[:])
	w.Write(hj)
	var buf [4]byte
	for _, s := range specs {
		for i, n := 0, elems(s.shape); i < n; i++ {
			v := (rng.Float32()*2 - 1) * s.scale
			if s.norm {
				v = 1 + (rng.Float32()*2-1)*0.1
			}
			switch dtype {
			case "F32":
				binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
				w.Write(buf[:4])
			case "F16":
				binary.LittleEndian.PutUint16(buf[:], f16(v))
				w.Write(buf[:2])
			default:
				binary.LittleEndian.PutUint16(buf[:], uint16(math.Float32bits(v)>>16)) // truncation is fine for random data
				w.Write(buf[:2])
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// f16 converts small-magnitude values (|v| < 2) to binary16 by truncation.
func f16(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	e := int(b>>23&0xff) - 127 + 15
	if e <= 0 {
		return sign
	}
	return sign | uint16(e)<<10 | uint16(b>>13&0x3ff)
}

// ByteTokenizer returns a valid byte-level BPE tokenizer.json with the 256
// byte tokens (GPT-2 byte-to-unicode order), no merges and the Llama-3 split
// pattern: enough for a synthetic model when no real tokenizer is at hand.
func ByteTokenizer() []byte {
	vocab := map[string]int{}
	n := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)) {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	pattern := `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	raw, _ := json.Marshal(map[string]any{
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": pattern}, "behavior": "Isolated"},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
	})
	return raw
}
