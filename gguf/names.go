package gguf

import (
	"strconv"
	"strings"
)

// The tensor names of the llama and qwen2 layouts, GGUF's against
// HuggingFace's (llama.cpp's tensor_mapping.py, those rows): the model-wide
// tensors, then each layer's under blk.N. and model.layers.N.
var (
	modelNames = [][2]string{
		{"token_embd.weight", "model.embed_tokens.weight"},
		{"output_norm.weight", "model.norm.weight"},
		{"output.weight", "lm_head.weight"},
	}
	layerNames = [][2]string{
		{"attn_norm.weight", "input_layernorm.weight"},
		{"attn_q.weight", "self_attn.q_proj.weight"},
		{"attn_k.weight", "self_attn.k_proj.weight"},
		{"attn_v.weight", "self_attn.v_proj.weight"},
		{"attn_q.bias", "self_attn.q_proj.bias"},
		{"attn_k.bias", "self_attn.k_proj.bias"},
		{"attn_v.bias", "self_attn.v_proj.bias"},
		{"attn_output.weight", "self_attn.o_proj.weight"},
		{"ffn_norm.weight", "post_attention_layernorm.weight"},
		{"ffn_gate.weight", "mlp.gate_proj.weight"},
		{"ffn_up.weight", "mlp.up_proj.weight"},
		{"ffn_down.weight", "mlp.down_proj.weight"},
	}
)

// HFName is the HuggingFace name of a GGUF tensor of a model of layers
// layers, or "" for a name the layouts do not have.
func HFName(name string, layers int) string {
	return rename(name, "blk.", "model.layers.", layers, 0)
}

// GGMLName is the GGUF name of a HuggingFace tensor, or "" for none.
func GGMLName(hf string) string {
	return rename(hf, "model.layers.", "blk.", -1, 1)
}

// rename maps name from side from (0: GGUF, 1: HF) of the tables to the
// other; a layer number must be in [0, layers) unless layers < 0.
func rename(name, fromPrefix, toPrefix string, layers, from int) string {
	to := 1 - from
	for _, n := range modelNames {
		if n[from] == name {
			return n[to]
		}
	}
	rest, ok := strings.CutPrefix(name, fromPrefix)
	if !ok {
		return ""
	}
	num, key, ok := strings.Cut(rest, ".")
	l, err := strconv.Atoi(num)
	if !ok || err != nil || l < 0 || (layers >= 0 && l >= layers) || strconv.Itoa(l) != num {
		return ""
	}
	for _, n := range layerNames {
		if n[from] == key {
			return toPrefix + num + "." + n[to]
		}
	}
	return ""
}
