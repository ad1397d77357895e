package runner

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
)

func TestFinite(t *testing.T) {
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for n := 1; n <= 9; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i) - 3.5 // negative values too: -x·0 is -0
		}
		x[0] = float32(math.Copysign(0, -1))
		if !finite(x) {
			t.Fatalf("%v reported non-finite", x)
		}
		for i := range n {
			for _, b := range bad {
				y := append([]float32(nil), x...)
				y[i] = b
				if finite(y) {
					t.Fatalf("%v at %d of %d reported finite", b, i, n)
				}
			}
		}
	}
}

// TestDamagedPackIsLoud: a band whose bytes are overwritten with NaNs must
// fail with an error that names the pack and the way to check it, not
// decode a stream of token 0.
func TestDamagedPackIsLoud(t *testing.T) {
	path := freshPackOf(t, "../testdata/tinyllama", convertOptions())
	h, err := format.Open(path, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	off := int64(h.Preamble.FFNOff)
	h.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, off); err != nil { // two bf16 NaNs in layer 0's rank 0
		t.Fatal(err)
	}
	f.Close()
	m := loadModel(t, path, 1)
	pool := newPool(1)
	defer pool.Close()
	ss, err := m.NewSession(pool, 64, SamplerConfig{TopP: 1, RepetitionPenalty: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ss.Generate([]int{1, 450, 996}, GenerateOptions{MaxTokens: 4})
	var nf *NonFiniteError
	if !errors.As(err, &nf) {
		t.Fatalf("generate on a damaged pack: %v, want a NonFiniteError", err)
	}
	if nf.Pack != path || nf.Pos != 2 || !strings.Contains(err.Error(), "sipack verify "+path) {
		t.Fatalf("error %q (pack %q, position %d): want the pack %s, position 2 (the prompt's last) and the verify hint", err, nf.Pack, nf.Pos, path)
	}
}

// BenchmarkFinite: the check every forward pass makes on a Llama-3
// vocabulary's logits.
func BenchmarkFinite(b *testing.B) {
	x := make([]float32, 128256)
	for i := range x {
		x[i] = float32(i%97) - 48
	}
	for b.Loop() {
		if !finite(x) {
			b.Fatal("finite logits reported non-finite")
		}
	}
}
