package format

import "fmt"

// Internal tensor names of the dense section. They are the one place the
// runner and the converter agree on; HF names are mapped to these in
// convert/, one table per architecture.
const (
	NameTokenEmbedding = "tok_embeddings" // [vocab, hidden]
	NameOutputNorm     = "norm"           // [hidden]
	NameOutput         = "output"         // [vocab, hidden]; absent when embeddings are tied
)

// Per-layer tensor names.
func NameAttnNorm(l int) string   { return fmt.Sprintf("layers.%d.attn_norm", l) } // [hidden]
func NameWq(l int) string         { return fmt.Sprintf("layers.%d.wq", l) }        // [heads*head_dim, hidden]
func NameWk(l int) string         { return fmt.Sprintf("layers.%d.wk", l) }        // [kv_heads*head_dim, hidden]
func NameWv(l int) string         { return fmt.Sprintf("layers.%d.wv", l) }        // [kv_heads*head_dim, hidden]
func NameWo(l int) string         { return fmt.Sprintf("layers.%d.wo", l) }        // [hidden, heads*head_dim]
func NameBq(l int) string         { return fmt.Sprintf("layers.%d.bq", l) }        // [heads*head_dim]
func NameBk(l int) string         { return fmt.Sprintf("layers.%d.bk", l) }        // [kv_heads*head_dim]
func NameBv(l int) string         { return fmt.Sprintf("layers.%d.bv", l) }        // [kv_heads*head_dim]
func NameFFNNorm(l int) string    { return fmt.Sprintf("layers.%d.ffn_norm", l) }  // [hidden]
func NameFFNRecords(l int) string { return fmt.Sprintf("layers.%d.ffn_records", l) }

// ExpectedTensor is one entry of the dense section a pack of a given config must have.
type ExpectedTensor struct {
	Name   string
	Shape  []int
	Vector bool // norms and biases: always stored as F32
	Record bool // FFN records of a dense layer: stored in the record dtype
}

// ExpectedTensors lists, in file order, the dense-section tensors of a pack
// whose FFN layers not in sparse are stored densely (as neuron records).
func ExpectedTensors(c *ModelConfig, sparse map[int]bool) []ExpectedTensor {
	h, q, kv := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	out := []ExpectedTensor{{Name: NameTokenEmbedding, Shape: []int{c.VocabSize, h}}}
	for l := 0; l < c.NumLayers; l++ {
		out = append(out,
			ExpectedTensor{Name: NameAttnNorm(l), Shape: []int{h}, Vector: true},
			ExpectedTensor{Name: NameWq(l), Shape: []int{q, h}},
			ExpectedTensor{Name: NameWk(l), Shape: []int{kv, h}},
			ExpectedTensor{Name: NameWv(l), Shape: []int{kv, h}},
		)
		if c.AttentionBias {
			out = append(out,
				ExpectedTensor{Name: NameBq(l), Shape: []int{q}, Vector: true},
				ExpectedTensor{Name: NameBk(l), Shape: []int{kv}, Vector: true},
				ExpectedTensor{Name: NameBv(l), Shape: []int{kv}, Vector: true},
			)
		}
		out = append(out,
			ExpectedTensor{Name: NameWo(l), Shape: []int{h, q}},
			ExpectedTensor{Name: NameFFNNorm(l), Shape: []int{h}, Vector: true},
		)
		if !sparse[l] {
			out = append(out, ExpectedTensor{Name: NameFFNRecords(l), Shape: []int{c.IntermediateSize, 3, h}, Record: true})
		}
	}
	out = append(out, ExpectedTensor{Name: NameOutputNorm, Shape: []int{h}, Vector: true})
	if !c.TieWordEmbeddings {
		out = append(out, ExpectedTensor{Name: NameOutput, Shape: []int{c.VocabSize, h}})
	}
	return out
}
