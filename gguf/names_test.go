package gguf

import "testing"

// TestNames: every name maps both ways and back; layer numbers out of
// range, malformed or unknown give "".
func TestNames(t *testing.T) {
	for _, c := range []struct{ g, hf string }{
		{"token_embd.weight", "model.embed_tokens.weight"},
		{"output.weight", "lm_head.weight"},
		{"blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight"},
		{"blk.15.ffn_down.weight", "model.layers.15.mlp.down_proj.weight"},
		{"blk.3.attn_v.bias", "model.layers.3.self_attn.v_proj.bias"},
	} {
		if got := HFName(c.g, 16); got != c.hf {
			t.Errorf("HFName(%s) = %q, want %q", c.g, got, c.hf)
		}
		if got := GGMLName(c.hf); got != c.g {
			t.Errorf("GGMLName(%s) = %q, want %q", c.hf, got, c.g)
		}
	}
	for _, bad := range []string{"blk.16.attn_q.weight", "blk.-1.attn_q.weight", "blk.01.attn_q.weight", "blk.x.attn_q.weight", "blk.0.attn_qq.weight", "rope_freqs.weight", "blk.0"} {
		if got := HFName(bad, 16); got != "" {
			t.Errorf("HFName(%s) = %q, want none", bad, got)
		}
	}
}
