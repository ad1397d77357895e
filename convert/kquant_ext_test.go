package convert_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/convert/testmodel"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/gguf"
	"github.com/sipack/sipack/internal/testutil"
)

// TestKQuantCopiesGGUFRows: a GGUF whose layer-0 up projection is Q4_K and
// whose layer-1 V projection is Q6_K, converted with --dtype q4_k and
// q6_k, keeps their bytes: each record's up row of layer 0 is the GGUF's
// row of that neuron, and the Q6_K pack's layers.1.wv is the GGUF tensor,
// both not quantised again (the blocks are arbitrary bytes, which
// quantising their values does not give back: with copyRaw returning false,
// or writeConverted not copying, this test fails).
func TestKQuantCopiesGGUFRows(t *testing.T) {
	g := writeGGUF(t, testutil.Tiny, gguf.F32)
	f, err := gguf.Open(g)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the writer reads the tensors from the mapping
	w := &gguf.Writer{}
	for _, kv := range f.KV {
		w.Set(kv.Key, kv.Value.Any())
	}
	ktypes := map[string]gguf.Type{"blk.0.ffn_up.weight": gguf.Q4_K, "blk.1.attn_v.weight": gguf.Q6_K}
	raw := map[string][]byte{}
	for _, tt := range f.Tensors {
		data, typ := tt.Data, tt.Type
		if kt, ok := ktypes[tt.Name]; ok {
			// Blocks of arbitrary bytes (any are valid) with small finite
			// scales: not what quantising their values gives back.
			blocks := int(tt.Elems()) / 256
			data = make([]byte, blocks*kt.BlockBytes())
			for j := range data {
				data[j] = byte(j*131 + j/97)
			}
			for b := 0; b < blocks; b++ {
				at := b * kt.BlockBytes()
				if kt == gguf.Q6_K {
					at += kt.BlockBytes() - 2
				} else {
					data[at+2], data[at+3] = byte(b*3), 0x18
				}
				data[at], data[at+1] = byte(b), 0x1c
			}
			typ = kt
			raw[tt.Name] = data
		}
		if err := w.AddTensor(tt.Name, typ, tt.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(t.TempDir(), "k.gguf")
	if err := w.WriteFile(src); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []string{"q4_k", "q6_k"} {
		out := filepath.Join(t.TempDir(), dt+".sip")
		if _, err := convert.Convert(t.Context(), convert.Options{ModelDir: src, Output: out, DType: dt}); err != nil {
			t.Fatal(err)
		}
		p, err := format.Open(out, format.OpenOptions{Gamma: 1})
		if err != nil {
			t.Fatal(err)
		}
		if dt == "q4_k" {
			up := raw["blk.0.ffn_up.weight"]
			rb := len(up) / p.Index.Config.IntermediateSize
			si, _ := p.SparseIndex(0)
			for n := 0; n < p.Index.Config.IntermediateSize; n++ {
				blk := p.RecordBlock(si, n, n+1)
				if !bytes.Equal(blk.UpRow(0), up[n*rb:(n+1)*rb]) {
					t.Fatalf("q4_k layer 0 neuron %d: up row is not the GGUF's Q4_K row", n)
				}
			}
		} else {
			_, b, _ := p.Tensor("layers.1.wv")
			if !bytes.Equal(b, raw["blk.1.attn_v.weight"]) {
				t.Fatalf("q6_k layers.1.wv is not the GGUF's Q6_K tensor")
			}
		}
		p.Close()
	}
}

// TestKQuantFallback: rows that are not whole super-blocks (testmodel's
// Tiny, hidden size 64) take Q4_0 (q4_k) or Q8_0 (q6_k), said once in the
// warnings, and the pack loads.
func TestKQuantFallback(t *testing.T) {
	dir := t.TempDir()
	if err := testmodel.Write(dir, testmodel.Tiny(testmodel.ByteTokenizer())); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dtype, want string }{{"q4_k", "q4_0"}, {"q6_k", "q8_0"}, {"q4_k_m", "q4_0"}} {
		var warn strings.Builder
		out := filepath.Join(t.TempDir(), c.dtype+".sip")
		res, err := convert.Convert(t.Context(), convert.Options{ModelDir: dir, Output: out, DType: c.dtype, Warnings: &warn})
		if err != nil {
			t.Fatal(err)
		}
		if res.DType.String() != c.want || strings.Count(warn.String(), "\n") != 1 || !strings.Contains(warn.String(), "FFN records") {
			t.Errorf("%s: records %v, warnings %q", c.dtype, res.DType, warn.String())
		}
	}
}
