// Command prep makes the device check's inputs on the GPU machine, which
// has no Go: `prep synth -o DIR` writes the random-weight Llama-3.2-1B-shape
// checkpoint (what `make synth` writes), and `prep convert DIR -o PACK
// [-dtype q4_0] [-base 0.3]` converts a checkpoint into a pack as `sipack
// convert` does. One small binary instead of two large ones keeps the
// device-check folder under its size limit.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/convert/testmodel"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: prep synth -o DIR [-tokenizer FILE] | prep convert DIR -o PACK [-dtype DT] [-base δ]"))
	}
	start := time.Now()
	switch os.Args[1] {
	case "synth":
		fs := flag.NewFlagSet("synth", flag.ExitOnError)
		out := fs.String("o", "", "output model directory")
		tok := fs.String("tokenizer", "testdata/tinyllama/tokenizer.json", "tokenizer.json to copy in")
		fs.Parse(os.Args[2:])
		if *out == "" {
			fail(fmt.Errorf("synth: -o DIR is required"))
		}
		tj, err := os.ReadFile(*tok)
		if err != nil {
			fail(err)
		}
		if err := testmodel.Write(*out, testmodel.Llama32_1B(tj)); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "prep: wrote %s in %.1f s\n", *out, time.Since(start).Seconds())
	case "convert":
		fs := flag.NewFlagSet("convert", flag.ExitOnError)
		out := fs.String("o", "", "output pack")
		dt := fs.String("dtype", "", "record and matrix dtype (default: the checkpoint's)")
		base := fs.Float64("base", 0.3, "static fraction δ recorded in the pack")
		if len(os.Args) < 3 {
			fail(fmt.Errorf("convert: need a model directory"))
		}
		fs.Parse(os.Args[3:])
		if *out == "" {
			fail(fmt.Errorf("convert: -o PACK is required"))
		}
		r, err := convert.Convert(context.Background(), convert.Options{ModelDir: os.Args[2], Output: *out, DType: *dt, BaseFraction: float32(*base)})
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "prep: wrote %s (%d bytes, %v) in %.1f s\n", r.Path, r.Bytes, r.DType, time.Since(start).Seconds())
	default:
		fail(fmt.Errorf("unknown command %q (synth, convert)", os.Args[1]))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "prep:", err)
	os.Exit(1)
}
