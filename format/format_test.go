package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeebo/blake3"
)

// smallConfig is a model small enough to fuzz: every section is present.
func smallConfig() ModelConfig {
	return ModelConfig{
		Architecture: "LlamaForCausalLM", HiddenSize: 8, IntermediateSize: 40, NumLayers: 2,
		NumHeads: 2, NumKVHeads: 1, HeadDim: 4, VocabSize: 16, MaxPositionEmbeddings: 32,
		RMSNormEps: 1e-5, RopeTheta: 10000, BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
}

// writeSmall writes a pack with random weights and returns its path.
func writeSmall(t testing.TB, dir string, denseLayers map[int]bool, band int) string {
	t.Helper()
	path, err := writeSmallWith(dir, denseLayers, band, nil)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// writeSmallWith is writeSmall with edit applied to the index before the
// pack is written; it returns WritePack's error.
func writeSmallWith(dir string, denseLayers map[int]bool, band int, edit func(*Index)) (string, error) {
	c := smallConfig()
	idx := &Index{Config: c, ConfigJSON: []byte(`{}`), TokenizerJSON: []byte(`{"model":{}}`), RecordDType: BF16, BandNeurons: band}
	sparse := map[int]bool{}
	for l := 0; l < c.NumLayers; l++ {
		if denseLayers[l] {
			continue
		}
		sparse[l] = true
		perm := make([]uint32, c.IntermediateSize)
		for i := range perm {
			perm[i] = uint32(c.IntermediateSize - 1 - i)
		}
		idx.SparseLayers = append(idx.SparseLayers, SparseLayer{Layer: l, Perm: perm})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(w io.Writer, n int) error {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		_, err := w.Write(b)
		return err
	}
	spec := denseSpec(idx, sparse, fill)
	spec.Records = func(l int, neurons []uint32, dst []byte) error {
		for j, n := range neurons {
			rec := dst[j*48 : (j+1)*48]
			for i := range rec {
				rec[i] = byte(l*100 + int(n)) // record content names its neuron
			}
		}
		return nil
	}
	if edit != nil {
		edit(idx)
	}
	path := filepath.Join(dir, "small.sip")
	return path, WritePack(context.Background(), path, spec)
}

// denseSpec starts a WriteSpec of idx with every dense tensor its config
// and sparse layers call for (BF16 matrices, F32 vectors), written by fill.
func denseSpec(idx *Index, sparse map[int]bool, fill func(w io.Writer, n int) error) *WriteSpec {
	spec := &WriteSpec{Index: idx}
	for _, e := range ExpectedTensors(&idx.Config, sparse) {
		dt := BF16
		if e.Vector {
			dt = F32
		}
		ti := TensorInfo{Name: e.Name, DType: dt, Shape: e.Shape}
		idx.DenseTensors = append(idx.DenseTensors, ti)
		n := ti.Elems() * dt.Size()
		spec.Dense = append(spec.Dense, func(w io.Writer) error { return fill(w, n) })
	}
	return spec
}

func TestWriteOpenVerify(t *testing.T) {
	path := writeSmall(t, t.TempDir(), map[int]bool{1: true}, 16)
	p, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Preamble.BandCount != 3 || p.LoadedRanks != 40 {
		t.Fatalf("bands %d, loaded ranks %d; want 3 and 40", p.Preamble.BandCount, p.LoadedRanks)
	}
	if p.Preamble.DenseOff%SectionAlign != 0 || p.Preamble.FFNOff%SectionAlign != 0 || p.Preamble.BandBytes%SectionAlign != 0 {
		t.Fatalf("sections not 4096-aligned: %+v", p.Preamble)
	}
	for _, ti := range p.Index.DenseTensors {
		if ti.Offset%TensorAlign != 0 {
			t.Fatalf("tensor %s at %d not 64-aligned", ti.Name, ti.Offset)
		}
	}
	// Rank r of layer 0 holds original neuron 39-r.
	for r := 0; r < 40; r++ {
		if got := p.Record(0, r)[0]; got != byte(39-r) {
			t.Fatalf("rank %d record starts %d, want %d", r, got, 39-r)
		}
	}
	if _, err := p.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestGammaMapsOnlyThePrefix(t *testing.T) {
	path := writeSmall(t, t.TempDir(), nil, 8)
	for _, c := range []struct {
		gamma       float64
		bands, rank int
	}{{0.1, 1, 4}, {0.2, 1, 8}, {0.25, 2, 10}, {0.7, 4, 28}, {0.71, 4, 28}, {1, 5, 40}} {
		p, err := Open(path, OpenOptions{Gamma: c.gamma})
		if err != nil {
			t.Fatal(err)
		}
		want := p.Preamble.FFNOff + uint64(c.bands)*p.Preamble.BandBytes
		if p.LoadedBands != c.bands || p.LoadedRanks != c.rank || uint64(len(p.Bytes())) != want {
			t.Errorf("γ=%v: %d bands, %d ranks, %d bytes mapped; want %d, %d, %d", c.gamma, p.LoadedBands, p.LoadedRanks, len(p.Bytes()), c.bands, c.rank, want)
		}
		if r, err := p.Verify(); err != nil || r.Bands != c.bands {
			t.Errorf("γ=%v: verify %v, %d bands", c.gamma, err, r.Bands)
		}
		p.Close()
	}
	for _, g := range []float64{-0.5, 1.5} {
		if _, err := Open(path, OpenOptions{Gamma: g}); err == nil {
			t.Errorf("γ=%v accepted", g)
		}
	}
}

func TestCorruption(t *testing.T) {
	dir := t.TempDir()
	path := writeSmall(t, dir, nil, 16)
	good, _ := os.ReadFile(path)
	p, _ := Open(path, OpenOptions{})
	pre := p.Preamble
	tensor := p.Index.DenseTensors[3]
	p.Close()
	bad := filepath.Join(dir, "bad.sip")
	try := func(b []byte) (error, error) {
		os.WriteFile(bad, b, 0o644)
		p, err := Open(bad, OpenOptions{})
		if err != nil {
			return err, nil
		}
		defer p.Close()
		_, verr := p.Verify()
		return nil, verr
	}
	flip := func(off uint64) []byte {
		b := append([]byte(nil), good...)
		b[off] ^= 0x40
		return b
	}
	cases := []struct {
		name      string
		data      []byte
		openErr   error // class expected from Open
		verifyErr error // class expected from Verify when Open succeeds
	}{
		{"empty", nil, ErrMagic, nil},
		{"not a pack", []byte("GGUF and some more bytes"), ErrMagic, nil},
		{"short preamble", good[:64], ErrTruncated, nil},
		{"truncated in index", good[:pre.IndexOff+10], ErrTruncated, nil},
		{"truncated at dense", good[:pre.DenseOff], ErrTruncated, nil},
		{"truncated at FFN", good[:pre.FFNOff], ErrTruncated, nil},
		{"truncated mid band", good[:pre.FFNOff+pre.BandBytes+100], ErrTruncated, nil},
		{"trailing bytes", append(append([]byte(nil), good...), 0), ErrBounds, nil},
		{"version", flip(8), ErrVersion, nil},
		{"preamble offset", flip(33), ErrChecksum, nil},
		{"index byte", flip(pre.IndexOff + pre.IndexLen/2), ErrChecksum, nil},
		{"dense tensor byte", flip(tensor.Offset + 1), nil, ErrChecksum},
		{"band byte", flip(pre.FFNOff + pre.BandBytes + 7), nil, ErrChecksum},
	}
	for _, c := range cases {
		oerr, verr := try(c.data)
		switch {
		case c.openErr != nil && !errors.Is(oerr, c.openErr):
			t.Errorf("%s: Open error %v, want %v", c.name, oerr, c.openErr)
		case c.openErr == nil && oerr != nil:
			t.Errorf("%s: Open failed: %v", c.name, oerr)
		case c.verifyErr != nil && !errors.Is(verr, c.verifyErr):
			t.Errorf("%s: Verify error %v, want %v", c.name, verr, c.verifyErr)
		}
		var fe *FormatError
		if oerr != nil && errors.As(oerr, &fe) && fe.File != bad {
			t.Errorf("%s: error does not name the file: %v", c.name, oerr)
		}
	}
}

// TestPreambleRecomputedCRC: a preamble edited with a valid CRC is still
// checked field by field.
func TestPreambleFieldChecks(t *testing.T) {
	dir := t.TempDir()
	good, _ := os.ReadFile(writeSmall(t, dir, nil, 16))
	p, _ := parsePreamble(good[:PreambleSize], int64(len(good)))
	edits := []struct {
		name string
		edit func(p *Preamble)
		want error
	}{
		{"index offset", func(p *Preamble) { p.IndexOff = 256 }, ErrBounds},
		{"dense misaligned", func(p *Preamble) { p.DenseOff += 64 }, ErrAlign},
		{"ffn misaligned", func(p *Preamble) { p.FFNOff += 8 }, ErrAlign},
		{"band count", func(p *Preamble) { p.BandCount++ }, ErrBounds},
		{"huge index", func(p *Preamble) { p.IndexLen = 1 << 62 }, ErrBounds},
		{"overflowing dense", func(p *Preamble) { p.DenseLen = ^uint64(0) - 10 }, ErrBounds},
	}
	for _, e := range edits {
		q := *p
		e.edit(&q)
		b := q.MarshalBinary()
		if _, err := parsePreamble(b, int64(len(good))); !errors.Is(err, e.want) {
			t.Errorf("%s: %v, want %v", e.name, err, e.want)
		}
	}
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	good, err := os.ReadFile(writeSmall(f, dir, map[int]bool{0: true}, 16))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:PreambleSize])
	f.Add(good[:len(good)/2])
	path := filepath.Join(dir, "fuzz.sip")
	f.Fuzz(func(t *testing.T, data []byte) {
		// Keep the preamble consistent often enough to reach the index decoder:
		// for inputs that start with the magic, fix the file length, the index
		// hash and the CRC, so mutations of the index get past the checksum.
		if len(data) >= PreambleSize && string(data[:8]) == Magic {
			binary.LittleEndian.PutUint64(data[112:], uint64(len(data)))
			if n := binary.LittleEndian.Uint64(data[24:]); n <= uint64(len(data)-PreambleSize) {
				h := blake3.Sum256(data[PreambleSize : PreambleSize+n])
				copy(data[80:112], h[:])
			}
			binary.LittleEndian.PutUint32(data[120:], crcOf(data[:120]))
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Open(path, OpenOptions{})
		if err != nil {
			return
		}
		defer p.Close()
		// An accepted pack must be safe to walk completely.
		for _, ti := range p.Index.DenseTensors {
			p.Tensor(ti.Name)
		}
		for si := range p.Index.SparseLayers {
			for r := 0; r < p.LoadedRanks; r++ {
				p.Record(si, r)
			}
		}
		p.Verify()
	})
}

func TestSliceAndTruncatedPrefix(t *testing.T) {
	dir := t.TempDir()
	path := writeSmall(t, dir, map[int]bool{1: true}, 8)
	full, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	p, err := Open(path, OpenOptions{Gamma: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sliced.sip")
	if err := Slice(context.Background(), p, out); err != nil {
		t.Fatal(err)
	}
	p.Close()
	s, err := Open(out, OpenOptions{Gamma: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Verify(); err != nil {
		t.Fatal(err)
	}
	if s.Index.RanksPresent != 20 || s.Preamble.BandCount != 3 || s.MaxGamma() != 0.5 {
		t.Fatalf("sliced: ranks %d bands %d max γ %v", s.Index.RanksPresent, s.Preamble.BandCount, s.MaxGamma())
	}
	for r := 0; r < 20; r++ {
		if !bytesEqual(s.Record(0, r), full.Record(0, r)) {
			t.Fatalf("rank %d record differs after slicing", r)
		}
	}
	for _, ti := range full.Index.DenseTensors {
		_, a, _ := full.Tensor(ti.Name)
		_, b, _ := s.Tensor(ti.Name)
		if !bytesEqual(a, b) {
			t.Fatalf("tensor %s differs after slicing", ti.Name)
		}
	}
	if _, err := Open(out, OpenOptions{Gamma: 0.7}); err == nil {
		t.Fatal("sliced pack opened above its γ")
	}
	// With no γ a sliced pack loads the prefix it holds; a γ whose count
	// is the slice's loads too (fractions are compared as counts).
	for _, g := range []float64{0, 0.5, 20.0 / 40, 0.5000001} {
		d, err := Open(out, OpenOptions{Gamma: g})
		if err != nil {
			t.Fatalf("sliced pack, γ = %v: %v", g, err)
		}
		if d.LoadedRanks != 20 {
			t.Fatalf("sliced pack, γ = %v: loaded %d ranks, want the 20 it holds", g, d.LoadedRanks)
		}
		d.Close()
	}
	if h, err := Open(out, OpenOptions{HeaderOnly: true}); err != nil || h.LoadedRanks != 0 || h.Index.Config.IntermediateSize != 40 {
		t.Fatalf("header-only open: %v", err)
	} else {
		h.Close()
	}
	// A full pack cut right after the γ = 0.5 prefix serves γ ≤ 0.5 and refuses more.
	b, _ := os.ReadFile(path)
	cut := filepath.Join(dir, "cut.sip")
	os.WriteFile(cut, b[:full.PrefixBytes(0.5)], 0o644)
	c, err := Open(cut, OpenOptions{Gamma: 0.5})
	if err != nil {
		t.Fatalf("cut pack at its prefix: %v", err)
	}
	if _, err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, g := range []float64{0.7, 0} { // a cut file is not a slice: the default wants it all
		if _, err := Open(cut, OpenOptions{Gamma: g}); !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut pack, γ = %v: %v, want ErrTruncated", g, err)
		}
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// TestCount: the one fraction→count rule, including fractions that float32
// storage or decimal parsing leaves just below the count they mean.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		f    float64
		n    int
		want int
	}{{0.7, 768, 537}, {float64(float32(0.7)), 1000, 700}, {0.7, 1000, 700}, {0.3, 8192, 2457},
		{float64(float32(0.3)), 8192, 2457}, {1, 8192, 8192}, {1.5, 10, 10}, {0, 10, 0}, {-1, 10, 0},
		{0.25, 768, 192}, {0.999, 1000, 999}, {0.99999, 1000, 1000}} {
		if got := Count(c.f, c.n); got != c.want {
			t.Errorf("Count(%v, %d) = %d, want %d", c.f, c.n, got, c.want)
		}
	}
}

// TestNoMmapReadsTheSamePrefix: a load read into memory (NoMmap) holds
// the mapped load's bytes at every γ, verifies, locks where asked (or says
// why not), and is released by Close; a file cut short inside the prefix is
// refused the same way both ways.
func TestNoMmapReadsTheSamePrefix(t *testing.T) {
	dir := t.TempDir()
	path := writeSmall(t, dir, map[int]bool{1: true}, 8)
	for _, g := range []float64{0.25, 1} {
		m, err := Open(path, OpenOptions{Gamma: g})
		if err != nil {
			t.Fatal(err)
		}
		a, err := Open(path, OpenOptions{Gamma: g, NoMmap: true, Mlock: true})
		if err != nil {
			t.Fatal(err)
		}
		if !a.Anon || m.Anon {
			t.Errorf("γ=%v: Anon %v read, %v mapped", g, a.Anon, m.Anon)
		}
		if !bytes.Equal(a.Bytes(), m.Bytes()) || a.LoadedRanks != m.LoadedRanks {
			t.Errorf("γ=%v: the read prefix (%d bytes, %d ranks) differs from the mapped one (%d, %d)", g, len(a.Bytes()), a.LoadedRanks, len(m.Bytes()), m.LoadedRanks)
		}
		if a.Locked == (a.LockErr != nil) {
			t.Errorf("γ=%v: Locked %v with LockErr %v", g, a.Locked, a.LockErr)
		}
		if _, err := a.Verify(); err != nil {
			t.Errorf("γ=%v: verify the read prefix: %v", g, err)
		}
		if err := a.Close(); err != nil || a.Bytes() != nil {
			t.Errorf("γ=%v: close: %v", g, err)
		}
		m.Close()
	}
	// Cut inside the second band: γ 0.25 (two bands) cannot load either way.
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(path, OpenOptions{HeaderOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.sip")
	os.WriteFile(cut, full[:p.Preamble.FFNOff+p.Preamble.BandBytes+100], 0o644)
	p.Close()
	for _, nm := range []bool{false, true} {
		_, err := Open(cut, OpenOptions{Gamma: 0.25, NoMmap: nm})
		if err == nil || !strings.Contains(err.Error(), cut) || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("NoMmap %v: a pack cut inside the prefix: %v", nm, err)
		}
	}
}

// TestSliceKeepsTheLayout: a slice is written in its source's band layout
// (version), not the dtype's default, and reads back the same records.
func TestSliceKeepsTheLayout(t *testing.T) {
	dir := t.TempDir()
	for _, major := range []uint16{2, 4} {
		restore := SetWriteMajor(major)
		path := writeSmall(t, dir, map[int]bool{1: true}, 8)
		restore()
		p, err := Open(path, OpenOptions{Gamma: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("s%d.sip", major))
		if err := Slice(context.Background(), p, out); err != nil {
			t.Fatal(err)
		}
		s, err := Open(out, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Preamble.Major != major {
			t.Errorf("a version %d pack sliced to version %d", major, s.Preamble.Major)
		}
		for r := 0; r < s.LoadedRanks; r++ {
			if !bytes.Equal(s.Record(0, r), p.Record(0, r)) {
				t.Fatalf("version %d: sliced rank %d differs", major, r)
			}
		}
		s.Close()
		p.Close()
	}
}
