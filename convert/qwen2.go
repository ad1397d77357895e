package convert

import (
	"fmt"

	"github.com/sipack/sipack/format"
)

// qwen2 is Qwen2ForCausalLM (Qwen2, Qwen2.5): the Llama layout plus q/k/v
// biases (always present), usually tied embeddings. Sliding-window attention
// is refused.
type qwen2 struct{}

var _ Architecture = qwen2{}

func init() { register(qwen2{}) }

func (qwen2) Name() string { return "Qwen2ForCausalLM" }

func (qwen2) Check(hf *hfConfig, c *format.ModelConfig) error {
	if hf.UseSlidingWindow {
		return fmt.Errorf("Qwen2ForCausalLM with use_sliding_window is not supported")
	}
	c.AttentionBias = true
	return nil
}

func (qwen2) HFName(c *format.ModelConfig, internal string) string { return llamaHFName(c, internal) }
func (qwen2) FFNNames(l int) (string, string, string)              { return llamaFFNNames(l) }
