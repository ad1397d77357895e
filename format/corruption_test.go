package format

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestCorruptionSuite flips and truncates a small pack systematically. Every
// input must either fail to open (or to verify) with a *FormatError naming a
// section, or load with exactly the original tensor and record bytes (the
// byte was padding). Panics fail the test by themselves.
func TestCorruptionSuite(t *testing.T) {
	dir := t.TempDir()
	path := writeSmall(t, dir, map[int]bool{1: true}, 8)
	good, _ := os.ReadFile(path)
	ref, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	pre := ref.Preamble
	bad := filepath.Join(dir, "bad.sip")

	type outcome int
	const (
		openErr outcome = iota
		verifyErr
		unused
	)
	stats := map[string]*[3]int{}
	try := func(class string, data []byte) {
		if stats[class] == nil {
			stats[class] = &[3]int{}
		}
		os.WriteFile(bad, data, 0o644)
		p, err := Open(bad, OpenOptions{})
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Section == "" {
				t.Fatalf("%s: error without a section: %v", class, err)
			}
			stats[class][openErr]++
			return
		}
		defer p.Close()
		if _, err := p.Verify(); err != nil {
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("%s: verify error is not a checksum error: %v", class, err)
			}
			stats[class][verifyErr]++
			return
		}
		// Loaded and verified: it must be the same model, byte for byte.
		for _, ti := range ref.Index.DenseTensors {
			_, a, _ := ref.Tensor(ti.Name)
			_, b, ok := p.Tensor(ti.Name)
			if !ok || !bytes.Equal(a, b) {
				t.Fatalf("%s: tensor %s silently changed", class, ti.Name)
			}
		}
		for si := range ref.Index.SparseLayers {
			for r := 0; r < ref.LoadedRanks; r++ {
				if !bytes.Equal(ref.Record(si, r), p.Record(si, r)) {
					t.Fatalf("%s: record %d/%d silently changed", class, si, r)
				}
			}
		}
		stats[class][unused]++
	}
	flip := func(off uint64, mask byte) []byte {
		b := bytes.Clone(good)
		b[off] ^= mask
		return b
	}
	for off := uint64(0); off < PreambleSize; off++ {
		try("preamble flip", flip(off, 0x01))
		try("preamble flip", flip(off, 0x80))
	}
	for off := pre.IndexOff; off < pre.IndexOff+pre.IndexLen; off++ {
		try("index flip", flip(off, 0x10))
	}
	rng := rand.New(rand.NewPCG(9, 9))
	sample := func(class string, lo, hi uint64, n int) {
		for i := 0; i < n && hi > lo; i++ {
			try(class, flip(lo+rng.Uint64N(hi-lo), byte(1<<rng.IntN(8))))
		}
	}
	sample("index padding flip", pre.IndexOff+pre.IndexLen, pre.DenseOff, 50)
	sample("dense flip", pre.DenseOff, pre.DenseOff+pre.DenseLen, 300)
	sample("ffn flip", pre.FFNOff, pre.FileLen, 300)
	for _, cut := range []uint64{0, 7, 8, 127, 128, pre.IndexOff + pre.IndexLen/2, pre.IndexOff + pre.IndexLen, pre.DenseOff, pre.DenseOff + 1,
		pre.DenseOff + pre.DenseLen, pre.FFNOff, pre.FFNOff + 1, pre.FFNOff + pre.BandBytes, pre.FileLen - 1} {
		try("truncation at boundary", good[:cut])
	}
	for i := 0; i < 100; i++ {
		try("truncation at random", good[:rng.Uint64N(uint64(len(good)))])
	}
	zeroed := bytes.Clone(good)
	clear(zeroed[pre.IndexOff : pre.IndexOff+pre.IndexLen])
	try("zeroed index", zeroed)
	total := [3]int{}
	for class, s := range stats {
		t.Logf("%-24s %4d inputs: %4d refused by Open, %4d by Verify, %4d loaded identical (padding)", class, s[0]+s[1]+s[2], s[0], s[1], s[2])
		for i := range total {
			total[i] += s[i]
		}
		if class != "index padding flip" && class != "dense flip" && class != "ffn flip" && s[2] > 0 {
			t.Errorf("%s: %d inputs loaded", class, s[2])
		}
	}
	t.Logf("total %d inputs: %d refused by Open (no --verify needed), %d more by Verify, %d padding; 0 panics, 0 silent changes",
		total[0]+total[1]+total[2], total[0], total[1], total[2])
}
