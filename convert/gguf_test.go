package convert

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/gguf"
)

// The GGUF tests here build small files by hand with gguf.Writer, so each
// can break one rule; convert/gguf_ext_test.go converts the trained tiny
// model through GGUF files written as llama.cpp writes them.

// smallGGUF is a random-weight model of the llama layout (hidden 64, 2
// layers, 4 heads of 16, 2 kv heads, FFN 96) with a byte-level vocabulary
// of 256 byte tokens, bos and eos.
type smallGGUF struct {
	arch    string
	meta    []kvPair
	tensors []tensorSpec
}

type kvPair struct {
	key string
	val any
}

type tensorSpec struct {
	name string
	typ  gguf.Type
	dims []uint64
	data []byte
}

const (
	sH, sFFN, sLayers, sHeads, sKV, sHD, sVocab = 64, 96, 2, 4, 2, 16, 258
)

// byteTokens are the GPT-2 byte-level symbols of the 256 bytes.
func byteTokens() []string {
	var b2r [256]rune
	buildByteMapForTest(&b2r)
	out := make([]string, 256)
	for i := range out {
		out[i] = string(b2r[i])
	}
	return out
}

func buildByteMapForTest(b2r *[256]rune) {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
	}
}

func newSmallGGUF(arch string) *smallGGUF {
	g := &smallGGUF{arch: arch}
	a := arch + "."
	tokens := append(byteTokens(), "<|bos|>", "<|eos|>")
	types := make([]int32, len(tokens))
	for i := range types {
		types[i] = 1
	}
	types[256], types[257] = 3, 3
	g.meta = []kvPair{
		{"general.architecture", arch}, {a + "block_count", uint32(sLayers)}, {a + "embedding_length", uint32(sH)},
		{a + "feed_forward_length", uint32(sFFN)}, {a + "attention.head_count", uint32(sHeads)},
		{a + "attention.head_count_kv", uint32(sKV)}, {a + "context_length", uint32(128)},
		{a + "attention.layer_norm_rms_epsilon", float32(1e-5)}, {a + "rope.freq_base", float32(10000)},
		{"tokenizer.ggml.model", "gpt2"}, {"tokenizer.ggml.pre", "llama-bpe"}, {"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types}, {"tokenizer.ggml.merges", []string{}},
		{"tokenizer.ggml.bos_token_id", uint32(256)}, {"tokenizer.ggml.eos_token_id", uint32(257)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	mat := func(name string, rows, cols int) {
		b := make([]byte, 4*rows*cols)
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64()*0.1)))
		}
		g.tensors = append(g.tensors, tensorSpec{name, gguf.F32, []uint64{uint64(cols), uint64(rows)}, b})
	}
	vec := func(name string, n int) {
		b := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1+float32(i)/100))
		}
		g.tensors = append(g.tensors, tensorSpec{name, gguf.F32, []uint64{uint64(n)}, b})
	}
	mat("token_embd.weight", sVocab, sH)
	for l := 0; l < sLayers; l++ {
		p := "blk." + string(rune('0'+l)) + "."
		vec(p+"attn_norm.weight", sH)
		mat(p+"attn_q.weight", sHeads*sHD, sH)
		mat(p+"attn_k.weight", sKV*sHD, sH)
		mat(p+"attn_v.weight", sKV*sHD, sH)
		mat(p+"attn_output.weight", sH, sHeads*sHD)
		vec(p+"ffn_norm.weight", sH)
		mat(p+"ffn_gate.weight", sFFN, sH)
		mat(p+"ffn_up.weight", sFFN, sH)
		mat(p+"ffn_down.weight", sH, sFFN)
		if arch == "qwen2" {
			vec(p+"attn_q.bias", sHeads*sHD)
			vec(p+"attn_k.bias", sKV*sHD)
			vec(p+"attn_v.bias", sKV*sHD)
		}
	}
	vec("output_norm.weight", sH)
	mat("output.weight", sVocab, sH)
	return g
}

// set replaces or adds a key; a nil value removes it.
func (g *smallGGUF) set(key string, val any) *smallGGUF {
	i := slices.IndexFunc(g.meta, func(p kvPair) bool { return p.key == key })
	switch {
	case val == nil && i >= 0:
		g.meta = slices.Delete(g.meta, i, i+1)
	case i >= 0:
		g.meta[i].val = val
	case val != nil:
		g.meta = append(g.meta, kvPair{key, val})
	}
	return g
}

func (g *smallGGUF) tensor(name string) *tensorSpec {
	for i := range g.tensors {
		if g.tensors[i].name == name {
			return &g.tensors[i]
		}
	}
	return nil
}

func (g *smallGGUF) drop(name string) *smallGGUF {
	g.tensors = slices.DeleteFunc(g.tensors, func(t tensorSpec) bool { return t.name == name })
	return g
}

func (g *smallGGUF) write(t *testing.T) string {
	t.Helper()
	w := &gguf.Writer{}
	for _, p := range g.meta {
		if err := w.Set(p.key, p.val); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range g.tensors {
		if err := w.AddTensor(s.name, s.typ, s.dims, s.data); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "small.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func openSmall(t *testing.T, g *smallGGUF) (*Model, error) {
	t.Helper()
	m, err := OpenModel(g.write(t))
	if err == nil {
		t.Cleanup(func() { m.Close() })
	}
	return m, err
}

// TestGGUFSmall: a hand-built file opens with the config, tensors and
// tokenizer its metadata says.
func TestGGUFSmall(t *testing.T) {
	g := newSmallGGUF("llama")
	g.set("tokenizer.ggml.eot_token_id", uint32(256)).set("tokenizer.ggml.eom_token_id", uint32(257))
	m, err := openSmall(t, g)
	if err != nil {
		t.Fatal(err)
	}
	want := format.ModelConfig{Architecture: "LlamaForCausalLM", HiddenSize: sH, IntermediateSize: sFFN, NumLayers: sLayers,
		NumHeads: sHeads, NumKVHeads: sKV, HeadDim: sHD, VocabSize: sVocab, MaxPositionEmbeddings: 128,
		RMSNormEps: 1e-5, RopeTheta: 10000, BOSTokenID: 256, EOSTokenIDs: []int{257, 256}}
	if !reflect.DeepEqual(*m.Config, want) {
		t.Fatalf("config\n%+v, want\n%+v", *m.Config, want)
	}
	if got := m.Tokenizer.Encode("hi", true); !slices.Equal(got, []int{256, 'h' - '!' + 0x21, 'i'}) {
		t.Errorf("Encode(hi) = %v", got)
	}
	// In place: the down projection is a view of the mapping; Q is not (its
	// rows were put back in HF order).
	mapping := m.Checkpoint.maps[0]
	gf, err := gguf.Parse("small.gguf", mapping)
	if err != nil {
		t.Fatal(err)
	}
	down := m.Checkpoint.Tensors["model.layers.1.mlp.down_proj.weight"]
	if off := gf.Tensor("blk.1.ffn_down.weight").Offset; down.DType != format.F32 || !slices.Equal(down.Shape, []int{sH, sFFN}) || &down.Data[0] != &mapping[off] {
		t.Errorf("down: %v %v, not in place", down.DType, down.Shape)
	}
	q := m.Checkpoint.Tensors["model.layers.0.self_attn.q_proj.weight"]
	gq := gf.Tensor("blk.0.attn_q.weight")
	if &q.Data[0] == &mapping[gq.Offset] || !slices.Equal(q.Data[:4*sH], gq.Data[:4*sH]) || slices.Equal(q.Data[4*sH:8*sH], gq.Data[4*sH:8*sH]) {
		t.Error("q: row 0 should stay, row 1 should come from GGUF row 2, in new memory")
	}
	if !slices.Equal(q.Data[4*sH:8*sH], gq.Data[8*sH:12*sH]) {
		t.Error("q: HF row 1 is not GGUF row 2")
	}
}

// TestGGUFUnpermute: llama.cpp's permutation of one head of 4 rows
// [r0 r1 r2 r3] is [r0 r2 r1 r3] (its reshape(1, 2, 2).swapaxes(1, 2));
// unpermuteRows undoes it, and undoes the permutation for any head count.
func TestGGUFUnpermute(t *testing.T) {
	got, err := unpermuteRows([]byte{0, 2, 1, 3}, 4, 1)
	if err != nil || !slices.Equal(got, []byte{0, 1, 2, 3}) {
		t.Fatalf("got %v, %v", got, err)
	}
	// Two heads of 6 rows, rows of 2 bytes.
	const heads, D, rb = 2, 6, 2
	hf := make([]byte, heads*D*rb)
	for i := range hf {
		hf[i] = byte(i)
	}
	// numpy: w.reshape(heads, 2, D/2, cols).swapaxes(1, 2): element
	// [h, j, i] of the result is [h, i, j] of the input.
	permuted := make([]byte, len(hf))
	for h := 0; h < heads; h++ {
		for j := 0; j < D/2; j++ {
			for i := 0; i < 2; i++ {
				to, from := (h*D/2+j)*2+i, h*D+i*D/2+j
				copy(permuted[to*rb:(to+1)*rb], hf[from*rb:(from+1)*rb])
			}
		}
	}
	back, err := unpermuteRows(permuted, heads*D, heads)
	if err != nil || !slices.Equal(back, hf) {
		t.Fatalf("unpermute(permute(x)) = %v, want %v (%v)", back, hf, err)
	}
	if _, err := unpermuteRows(hf, 12, 5); err == nil {
		t.Error("12 rows as 5 heads accepted")
	}
	if _, err := unpermuteRows(hf, 12, 4); err == nil {
		t.Error("heads of 3 rows accepted")
	}
}

// TestGGUFLlama3RopeFreqs: the llama3 rope_scaling llama.cpp's converter
// turns into per-dimension factors is recovered from them, for Llama
// 3.1/3.2's parameters and head sizes; a scaled equivalent gives the same
// factors; factors no llama3 scaling gives are refused.
func TestGGUFLlama3RopeFreqs(t *testing.T) {
	for _, c := range []struct {
		rs    format.RopeScaling
		theta float64
		d     int
	}{
		{format.RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, 500000, 64},
		{format.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, 500000, 128},
		{format.RopeScaling{Type: "llama3", Factor: 16, LowFreqFactor: 1, HighFreqFactor: 2.5, OriginalMaxPositionEmbeddings: 4096}, 10000, 128},
		// Head size 16: one interpolated dimension only (high 4 assumed).
		{format.RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, 500000, 16},
	} {
		f := factors32(c.rs.Llama3Factors(c.theta, c.d))
		got, err := llama3FromFactors(f, c.theta, c.d)
		if err != nil || *got != c.rs {
			t.Errorf("%+v: recovered %+v, %v", c.rs, got, err)
		}
	}
	// low 2, high 8, original 16384 is the same scaling as 1, 4, 8192.
	twice := format.RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 2, HighFreqFactor: 8, OriginalMaxPositionEmbeddings: 16384}
	f := factors32(twice.Llama3Factors(500000, 64))
	got, err := llama3FromFactors(f, 500000, 64)
	if err != nil || got.HighFreqFactor != 4 || got.OriginalMaxPositionEmbeddings != 8192 {
		t.Errorf("equivalent scaling: %+v, %v", got, err)
	}
	if rs, err := llama3FromFactors(factors32([]float64{1, 1, 1}), 10000, 6); rs != nil || err != nil {
		t.Errorf("all ones: %+v, %v", rs, err)
	}
	bad := slices.Clone(f)
	bad[len(bad)/2+1] *= 1.01
	for _, b := range [][]float32{bad, {1, 0.5}, {1, float32(math.NaN())}, {1, 1, 8, 8}} {
		if _, err := llama3FromFactors(b, 500000, 2*len(b)); err == nil {
			t.Errorf("factors %v accepted", b)
		}
	}
}

func factors32(f []float64) []float32 {
	out := make([]float32, len(f))
	for i, v := range f {
		out[i] = float32(v)
	}
	return out
}

// TestGGUFRefusals: each broken or unsupported file is refused by a message
// naming the file and what is wrong.
func TestGGUFRefusals(t *testing.T) {
	q3 := func(g *smallGGUF) *smallGGUF {
		s := g.tensor("blk.0.ffn_up.weight")
		s.typ, s.data = gguf.Q4_1, make([]byte, sFFN*sH/32*20)
		return g
	}
	for _, c := range []struct {
		name string
		g    *smallGGUF
		msg  string
	}{
		{"architecture", newSmallGGUF("gemma"), `general.architecture "gemma" is not supported (supported: llama, qwen2)`},
		{"no block count", newSmallGGUF("llama").set("llama.block_count", nil), "no llama.block_count"},
		{"block count type", newSmallGGUF("llama").set("llama.block_count", "2"), "llama.block_count is \"2\" (string), want an integer"},
		{"huge layers", newSmallGGUF("llama").set("llama.block_count", uint64(1<<40)), "want an integer in [1, 1024]"},
		{"head count array", newSmallGGUF("llama").set("llama.attention.head_count_kv", []int32{2, 2}), "head_count_kv is [2 × int32]"},
		{"eps", newSmallGGUF("llama").set("llama.attention.layer_norm_rms_epsilon", nil), "no llama.attention.layer_norm_rms_epsilon"},
		{"eps type", newSmallGGUF("llama").set("llama.attention.layer_norm_rms_epsilon", uint32(1)), "want a finite float"},
		{"experts", newSmallGGUF("llama").set("llama.expert_count", uint32(8)), "mixture-of-experts models are not supported"},
		{"partial rope", newSmallGGUF("llama").set("llama.rope.dimension_count", uint32(8)), "rope.dimension_count is 8, not the key length 16"},
		{"linear rope", newSmallGGUF("llama").set("llama.rope.scaling.type", "linear"), `rope.scaling.type "linear" is not supported`},
		{"yarn rope", newSmallGGUF("llama").set("llama.rope.scaling.type", "yarn"), `rope.scaling.type "yarn" is not supported`},
		{"vocab size", newSmallGGUF("llama").set("llama.vocab_size", uint32(300)), "llama.vocab_size is 300, but token_embd.weight has 258 rows"},
		{"unknown tensor", newSmallGGUF("llama").withTensor("blk.0.attn_q_norm.weight"), "tensors a llama model does not have: blk.0.attn_q_norm.weight"},
		{"layer out of range", newSmallGGUF("llama").withTensor("blk.2.attn_norm.weight"), "does not have: blk.2.attn_norm.weight"},
		{"rope_freqs in qwen2", newSmallGGUF("qwen2").withTensor("rope_freqs.weight"), "a qwen2 model does not have: rope_freqs.weight"},
		{"missing tensor", newSmallGGUF("llama").drop("blk.1.ffn_down.weight"), "1 missing tensors: model.layers.1.mlp.down_proj.weight"},
		{"wrong shape", newSmallGGUF("llama").reshape("blk.0.attn_k.weight", []uint64{32, 64}), `"model.layers.0.self_attn.k_proj.weight" in small.gguf: shape [64 32], want [32 64]`},
		{"quant type", q3(newSmallGGUF("llama")), `tensor "blk.0.ffn_up.weight" is Q4_1, which sipack does not read`},
		{"sentencepiece without scores", newSmallGGUF("llama").set("tokenizer.ggml.model", "llama"), "no tokenizer.ggml.scores in the GGUF metadata"},
		{"sentencepiece scores", newSmallGGUF("llama").set("tokenizer.ggml.model", "llama").set("tokenizer.ggml.scores", []float32{1}), "tokenizer.ggml.scores is [1 × float32], want 258 numbers"},
		{"bert", newSmallGGUF("llama").set("tokenizer.ggml.model", "bert"), `tokenizer.ggml.model "bert" is not supported`},
		{"no tokenizer", newSmallGGUF("llama").set("tokenizer.ggml.model", nil), "the file has no tokenizer"},
		{"pre", newSmallGGUF("llama").set("tokenizer.ggml.pre", "deepseek-llm"), `tokenizer.ggml.pre "deepseek-llm" is not supported`},
		{"no tokens", newSmallGGUF("llama").set("tokenizer.ggml.tokens", nil), "no tokenizer.ggml.tokens"},
		{"token types", newSmallGGUF("llama").set("tokenizer.ggml.token_type", []int32{1}), "want 258 integers, one per token"},
		{"token type value", newSmallGGUF("llama").set("tokenizer.ggml.token_type", append(make([]int32, 257), 1)), "token 0 \"Ā\" has token type 0, not one of 1-6"},
		{"bos range", newSmallGGUF("llama").set("tokenizer.ggml.bos_token_id", uint32(9999)), "tokenizer.ggml.bos_token_id is 9999"},
		{"add bos without bos", newSmallGGUF("llama").set("tokenizer.ggml.bos_token_id", nil), "no tokenizer.ggml.bos_token_id"},
		{"merge", newSmallGGUF("llama").set("tokenizer.ggml.merges", []string{"a b"}), "makes a token that is not in the vocabulary"},
		{"gpt-2 pre", newSmallGGUF("llama").set("tokenizer.ggml.pre", "gpt-2"), "GPT-2 pattern"},
		{"chat template", newSmallGGUF("llama").set("tokenizer.chat_template", "{% if %}"), `chat template "default"`},
		{"named template", newSmallGGUF("llama").set("tokenizer.chat_templates", []string{"tool_use"}), "no tokenizer.chat_template.tool_use"},
	} {
		_, err := openSmall(t, c.g)
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "small.gguf") {
			t.Errorf("%s: got %v, want an error naming small.gguf saying %q", c.name, err, c.msg)
		}
	}
}

func (g *smallGGUF) withTensor(name string) *smallGGUF {
	g.tensors = append(g.tensors, tensorSpec{name, gguf.F32, []uint64{8}, make([]byte, 32)})
	return g
}

func (g *smallGGUF) reshape(name string, dims []uint64) *smallGGUF {
	g.tensor(name).dims = dims
	return g
}

// TestGGUFNotAFile: a path that is neither a directory nor a GGUF file is
// refused as before; a file named .gguf that is not one says why.
func TestGGUFNotAFile(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "model.bin")
	os.WriteFile(other, []byte("not a model"), 0o644)
	if _, err := OpenModel(other); err == nil || !strings.Contains(err.Error(), "is not a model directory or a .gguf file") {
		t.Errorf("other file: %v", err)
	}
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGML...."), 0o644)
	_, err := OpenModel(bad)
	if !errors.Is(err, gguf.ErrMagic) || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad magic: %v", err)
	}
	// A GGUF file not named .gguf is still read as one.
	g := newSmallGGUF("llama").write(t)
	renamed := filepath.Join(dir, "model")
	if err := os.Rename(g, renamed); err != nil {
		t.Fatal(err)
	}
	m, err := OpenModel(renamed)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if !IsGGUF(renamed) || !IsGGUF(bad) || IsGGUF(other) || IsGGUF(dir) || IsGGUF(filepath.Join(dir, "missing")) {
		t.Error("IsGGUF")
	}
}

// TestGGUFQwen2Small: qwen2's rows are not permuted (used in place), its
// biases are read, and its pre-tokenizer adds no bos.
func TestGGUFQwen2Small(t *testing.T) {
	g := newSmallGGUF("qwen2").set("tokenizer.ggml.pre", "qwen2")
	m, err := openSmall(t, g)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Config.AttentionBias || m.Config.Architecture != "Qwen2ForCausalLM" {
		t.Fatalf("config %+v", *m.Config)
	}
	mapping := m.Checkpoint.maps[0]
	gf, _ := gguf.Parse("small.gguf", mapping)
	for _, name := range []string{"blk.0.attn_q.weight", "blk.1.attn_k.weight", "blk.1.attn_k.bias"} {
		hf := m.Checkpoint.Tensors[gguf.HFName(name, sLayers)]
		if &hf.Data[0] != &mapping[gf.Tensor(name).Offset] {
			t.Errorf("%s is not used in place", name)
		}
	}
	if got := m.Tokenizer.Encode("hi", true); len(got) != 2 {
		t.Errorf("Encode(hi) = %v, want no bos", got)
	}
}
