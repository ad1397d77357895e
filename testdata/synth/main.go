// Command synth writes a random-weight checkpoint of Llama-3.2-1B shape
// (hidden 2048, intermediate 8192, 16 layers, 32/8 heads, vocab 128256, tied
// embeddings, BF16) in two safetensors shards, for benchmarks. The weights
// are never committed: run `make synth`.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sipack/sipack/convert/testmodel"
)

func main() {
	out := flag.String("o", "/tmp/sipack-synth-1b", "output model directory")
	tok := flag.String("tokenizer", "testdata/tinyllama/tokenizer.json", "tokenizer.json to copy in")
	dtype := flag.String("dtype", "BF16", "BF16, F16 or F32")
	flag.Parse()
	tj, err := os.ReadFile(*tok)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	c := testmodel.Llama32_1B(tj)
	c.DType = *dtype
	start := time.Now()
	if err := testmodel.Write(*out, c); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "synth: wrote %s in %.1f s\n", *out, time.Since(start).Seconds())
}
