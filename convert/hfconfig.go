package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/sipack/sipack/format"
)

// hfConfig is the part of a HuggingFace config.json the converter reads.
type hfConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	HiddenSize            int             `json:"hidden_size"`
	IntermediateSize      int             `json:"intermediate_size"`
	NumHiddenLayers       int             `json:"num_hidden_layers"`
	NumAttentionHeads     int             `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	VocabSize             int             `json:"vocab_size"`
	MaxPositionEmbeddings int             `json:"max_position_embeddings"`
	RMSNormEps            float64         `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           json.RawMessage `json:"rope_scaling"`
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
	HiddenAct             string          `json:"hidden_act"`
	UseSlidingWindow      bool            `json:"use_sliding_window"`
	SlidingWindow         *int            `json:"sliding_window"`
	BOSTokenID            json.RawMessage `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
}

// Architecture maps one HF architecture onto the pack's internal tensors.
// Each implementation lives in its own file with its HF name table.
type Architecture interface {
	// Name is the HF "architectures" entry, e.g. "LlamaForCausalLM".
	Name() string
	// Check refuses config features the runner does not implement.
	Check(hf *hfConfig, c *format.ModelConfig) error
	// HFName gives the checkpoint tensor for an internal tensor name
	// (format.Name*), or "" when the tensor is not stored (tied output).
	HFName(c *format.ModelConfig, internal string) string
	// FFNNames gives the HF names of layer l's gate, up and down projections.
	FFNNames(l int) (gate, up, down string)
}

var architectures = map[string]Architecture{}

func register(a Architecture) { architectures[a.Name()] = a }

// SupportedArchitectures lists the architecture names convert accepts.
func SupportedArchitectures() []string {
	var names []string
	for n := range architectures {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseConfig reads a HF config.json into the pack's model config and picks
// its architecture. path is used in error messages only.
func ParseConfig(path string, raw []byte) (*format.ModelConfig, Architecture, error) {
	var hf hfConfig
	if err := json.Unmarshal(raw, &hf); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(hf.Architectures) != 1 {
		return nil, nil, fmt.Errorf("%s: \"architectures\" must name exactly one architecture, got %v", path, hf.Architectures)
	}
	arch, ok := architectures[hf.Architectures[0]]
	if !ok {
		return nil, nil, fmt.Errorf("%s: unsupported architecture %q (supported: %s)", path, hf.Architectures[0], strings.Join(SupportedArchitectures(), ", "))
	}
	c := &format.ModelConfig{
		Architecture:          arch.Name(),
		HiddenSize:            hf.HiddenSize,
		IntermediateSize:      hf.IntermediateSize,
		NumLayers:             hf.NumHiddenLayers,
		NumHeads:              hf.NumAttentionHeads,
		VocabSize:             hf.VocabSize,
		MaxPositionEmbeddings: hf.MaxPositionEmbeddings,
		RMSNormEps:            float32(hf.RMSNormEps),
		RopeTheta:             10000,
		BOSTokenID:            -1,
		AttentionBias:         hf.AttentionBias,
	}
	c.NumKVHeads = c.NumHeads
	if hf.NumKeyValueHeads != nil {
		c.NumKVHeads = *hf.NumKeyValueHeads
	}
	if c.NumHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	if hf.HeadDim != nil {
		c.HeadDim = *hf.HeadDim
	}
	if hf.RopeTheta != nil {
		c.RopeTheta = float32(*hf.RopeTheta)
	}
	if hf.TieWordEmbeddings != nil {
		c.TieWordEmbeddings = *hf.TieWordEmbeddings
	}
	checks := []struct {
		bad  bool
		what string
		val  any
	}{
		{c.HiddenSize <= 0, "hidden_size", c.HiddenSize},
		{c.IntermediateSize <= 0, "intermediate_size", c.IntermediateSize},
		{c.NumLayers <= 0, "num_hidden_layers", c.NumLayers},
		{c.NumHeads <= 0, "num_attention_heads", c.NumHeads},
		{c.NumKVHeads <= 0 || c.NumHeads%max(c.NumKVHeads, 1) != 0, "num_key_value_heads (must divide num_attention_heads)", c.NumKVHeads},
		{c.HeadDim <= 0 || c.HeadDim%2 != 0, "head_dim (must be even)", c.HeadDim},
		{c.VocabSize <= 0, "vocab_size", c.VocabSize},
		{c.MaxPositionEmbeddings <= 0, "max_position_embeddings", c.MaxPositionEmbeddings},
		{!(c.RMSNormEps > 0), "rms_norm_eps", hf.RMSNormEps},
		{!(c.RopeTheta > 0), "rope_theta", c.RopeTheta},
	}
	for _, ck := range checks {
		if ck.bad {
			return nil, nil, fmt.Errorf("%s: invalid %s: %v", path, ck.what, ck.val)
		}
	}
	if hf.HiddenAct != "" && hf.HiddenAct != "silu" {
		return nil, nil, fmt.Errorf("%s: unsupported hidden_act %q (only silu)", path, hf.HiddenAct)
	}
	if hf.MLPBias {
		return nil, nil, fmt.Errorf("%s: mlp_bias is not supported", path)
	}
	if err := parseRopeScaling(hf.RopeScaling, c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if ids, err := tokenIDs(hf.BOSTokenID); err != nil {
		return nil, nil, fmt.Errorf("%s: bos_token_id: %w", path, err)
	} else if len(ids) > 0 {
		c.BOSTokenID = ids[0]
	}
	ids, err := tokenIDs(hf.EOSTokenID)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: eos_token_id: %w", path, err)
	}
	c.EOSTokenIDs = ids
	for _, id := range append([]int{c.BOSTokenID}, ids...) {
		if id >= c.VocabSize {
			return nil, nil, fmt.Errorf("%s: token id %d outside the vocabulary of %d", path, id, c.VocabSize)
		}
	}
	if err := arch.Check(&hf, c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, arch, nil
}

func parseRopeScaling(raw json.RawMessage, c *format.ModelConfig) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var rs struct {
		Type     string  `json:"type"`
		RopeType string  `json:"rope_type"`
		Factor   float32 `json:"factor"`
		Low      float32 `json:"low_freq_factor"`
		High     float32 `json:"high_freq_factor"`
		Orig     uint32  `json:"original_max_position_embeddings"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return fmt.Errorf("rope_scaling: %w", err)
	}
	typ := rs.RopeType
	if typ == "" {
		typ = rs.Type
	}
	switch typ {
	case "default", "":
		return nil
	case "llama3":
		if !(rs.Factor > 0) || !(rs.Low > 0) || !(rs.High > rs.Low) || rs.Orig == 0 {
			return fmt.Errorf("rope_scaling llama3: need factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0")
		}
		c.RopeScaling = &format.RopeScaling{Type: typ, Factor: rs.Factor, LowFreqFactor: rs.Low, HighFreqFactor: rs.High, OriginalMaxPositionEmbeddings: rs.Orig}
		return nil
	}
	return fmt.Errorf("unsupported rope_scaling type %q (supported: llama3)", typ)
}

// tokenIDs accepts null, an integer or a list of integers.
func tokenIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		if one < 0 {
			return nil, fmt.Errorf("negative id %d", one)
		}
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("want an integer or a list of integers, got %s", raw)
	}
	for _, id := range many {
		if id < 0 {
			return nil, fmt.Errorf("negative id %d", id)
		}
	}
	return many, nil
}
