package gguf

import (
	"fmt"
	"testing"
)

// BenchmarkParseVocabulary: a header of a Llama-3-sized vocabulary (128k
// tokens, 280k merges, token types) parsed from memory.
func BenchmarkParseVocabulary(b *testing.B) {
	w := &Writer{}
	tokens := make([]string, 128256)
	types := make([]int32, len(tokens))
	for i := range tokens {
		tokens[i] = fmt.Sprintf("tok%d", i)
	}
	merges := make([]string, 280147)
	for i := range merges {
		merges[i] = fmt.Sprintf("a%d b%d", i, i)
	}
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	data := w.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse("bench.gguf", data); err != nil {
			b.Fatal(err)
		}
	}
}
