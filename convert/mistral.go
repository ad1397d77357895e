package convert

import (
	"fmt"

	"github.com/sipack/sipack/format"
)

// mistral is MistralForCausalLM: the Llama layout and arithmetic. Its
// sliding-window attention equals full attention over contexts no longer
// than the window,
// so a window shorter than max_position_embeddings (v0.1's 4096 of 32768)
// caps the pack's context at the window instead of being refused.
type mistral struct{}

var _ Architecture = mistral{}

func init() { register(mistral{}) }

func (mistral) Name() string { return "MistralForCausalLM" }

func (mistral) Check(hf *hfConfig, c *format.ModelConfig) error {
	if c.AttentionBias {
		return fmt.Errorf("MistralForCausalLM with attention_bias is not supported")
	}
	if w := hf.SlidingWindow; w != nil && *w < c.MaxPositionEmbeddings {
		if *w < 1 {
			return fmt.Errorf("invalid sliding_window: %d", *w)
		}
		c.MaxPositionEmbeddings = *w
	}
	return nil
}

func (mistral) HFName(c *format.ModelConfig, internal string) string { return llamaHFName(c, internal) }
func (mistral) FFNNames(l int) (string, string, string)              { return llamaFFNNames(l) }
