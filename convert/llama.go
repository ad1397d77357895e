package convert

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sipack/sipack/format"
)

// llama is LlamaForCausalLM: Llama 2, 3, 3.1 and 3.2 (rope_scaling llama3,
// optionally tied embeddings). No biases.
type llama struct{}

var _ Architecture = llama{}

func init() { register(llama{}) }

func (llama) Name() string { return "LlamaForCausalLM" }

func (llama) Check(hf *hfConfig, c *format.ModelConfig) error {
	if c.AttentionBias {
		return fmt.Errorf("LlamaForCausalLM with attention_bias is not supported")
	}
	return nil
}

// llamaNames is the HF name of every internal tensor of the Llama family
// ({l} is the layer). Qwen2 uses the same names plus q/k/v biases.
var llamaNames = map[string]string{
	format.NameTokenEmbedding: "model.embed_tokens.weight",
	format.NameOutputNorm:     "model.norm.weight",
	format.NameOutput:         "lm_head.weight",
	"attn_norm":               "model.layers.{l}.input_layernorm.weight",
	"wq":                      "model.layers.{l}.self_attn.q_proj.weight",
	"wk":                      "model.layers.{l}.self_attn.k_proj.weight",
	"wv":                      "model.layers.{l}.self_attn.v_proj.weight",
	"wo":                      "model.layers.{l}.self_attn.o_proj.weight",
	"bq":                      "model.layers.{l}.self_attn.q_proj.bias",
	"bk":                      "model.layers.{l}.self_attn.k_proj.bias",
	"bv":                      "model.layers.{l}.self_attn.v_proj.bias",
	"ffn_norm":                "model.layers.{l}.post_attention_layernorm.weight",
	"gate":                    "model.layers.{l}.mlp.gate_proj.weight",
	"up":                      "model.layers.{l}.mlp.up_proj.weight",
	"down":                    "model.layers.{l}.mlp.down_proj.weight",
}

// llamaHFName resolves an internal name ("layers.3.wq", "norm") through llamaNames.
func llamaHFName(c *format.ModelConfig, internal string) string {
	if internal == format.NameOutput && c.TieWordEmbeddings {
		return ""
	}
	if hf, ok := llamaNames[internal]; ok {
		return hf
	}
	rest, ok := strings.CutPrefix(internal, "layers.")
	if !ok {
		return ""
	}
	num, key, ok := strings.Cut(rest, ".")
	if _, err := strconv.Atoi(num); !ok || err != nil {
		return ""
	}
	hf, ok := llamaNames[key]
	if !ok {
		return ""
	}
	return strings.ReplaceAll(hf, "{l}", num)
}

func llamaFFNNames(l int) (string, string, string) {
	s := strconv.Itoa(l)
	r := func(k string) string { return strings.ReplaceAll(llamaNames[k], "{l}", s) }
	return r("gate"), r("up"), r("down")
}

func (llama) HFName(c *format.ModelConfig, internal string) string { return llamaHFName(c, internal) }
func (llama) FFNNames(l int) (string, string, string)              { return llamaFFNNames(l) }
