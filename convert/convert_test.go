package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert/testmodel"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

const tinyDir = "../testdata/tinyllama"

func tokJSON(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tinyDir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func convertTo(t *testing.T, dir string, opt Options) (*format.Pack, *Model) {
	t.Helper()
	if opt.Output == "" {
		opt.Output = filepath.Join(t.TempDir(), "m.sip")
	}
	opt.ModelDir = dir
	if _, err := Convert(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	p, err := format.Open(opt.Output, format.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	m, err := OpenModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return p, m
}

// elem reads element i of b as float32.
func elem(b []byte, dt format.DType, i int) float32 {
	switch dt {
	case format.F32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	case format.F16:
		return kernels.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return kernels.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
}

// checkRoundTrip compares every dense tensor and every FFN record of p with
// the checkpoint, within tol(x) of the source value x (0: exact bytes).
func checkRoundTrip(t *testing.T, p *format.Pack, m *Model, tol func(x float32) float64) {
	t.Helper()
	c := m.Config
	compare := func(what string, got []byte, gdt format.DType, want []byte, wdt format.DType, n int) {
		t.Helper()
		if tol == nil && gdt == wdt {
			if !bytes.Equal(got, want[:len(got)]) {
				t.Fatalf("%s: bytes differ", what)
			}
			return
		}
		for i := 0; i < n; i++ {
			g, w := elem(got, gdt, i), elem(want, wdt, i)
			lim := 0.0
			if tol != nil {
				lim = tol(w)
			}
			if math.Abs(float64(g-w)) > lim {
				t.Fatalf("%s[%d] = %g, want %g (±%g)", what, i, g, w, lim)
			}
		}
	}
	for _, ti := range p.Index.DenseTensors {
		info, data, _ := p.Tensor(ti.Name)
		if strings.HasSuffix(ti.Name, "ffn_records") {
			continue // checked through records below
		}
		src := m.DenseTensor(ti.Name)
		if src == nil {
			t.Fatalf("tensor %s has no source", ti.Name)
		}
		compare(ti.Name, data, info.DType, src.Data, src.DType, info.Elems())
	}
	h, N := c.HiddenSize, c.IntermediateSize
	dt := p.Index.RecordDType
	es := dt.Size()
	for si, sl := range p.Index.SparseLayers {
		gate, up, down := m.FFN(sl.Layer)
		col := make([]byte, h*down.DType.Size())
		for r := 0; r < N; r++ {
			n := int(sl.Perm[r])
			rec := p.Record(si, r)
			ds := down.DType.Size()
			for i := 0; i < h; i++ {
				copy(col[i*ds:], down.Data[(i*N+n)*ds:(i*N+n+1)*ds])
			}
			compare("gate", rec[:h*es], dt, gate.Data[n*h*gate.DType.Size():], gate.DType, h)
			compare("up", rec[h*es:2*h*es], dt, up.Data[n*h*up.DType.Size():], up.DType, h)
			compare("down", rec[2*h*es:], dt, col, down.DType, h)
		}
	}
}

func TestRoundTripTinyllama(t *testing.T) {
	p, m := convertTo(t, tinyDir, Options{})
	if p.Index.RecordDType != format.BF16 {
		t.Fatalf("record dtype %v, want bf16 (the checkpoint's)", p.Index.RecordDType)
	}
	if len(p.Index.SparseLayers) != 6 {
		t.Fatalf("%d sparse layers, want 6", len(p.Index.SparseLayers))
	}
	for _, sl := range p.Index.SparseLayers {
		for r, n := range sl.Perm {
			if int(n) != r {
				t.Fatalf("layer %d: rank %d holds neuron %d, want the original order", sl.Layer, r, n)
			}
		}
	}
	checkRoundTrip(t, p, m, nil)
	if r, err := p.Verify(); err != nil || r.Bands != 12 {
		t.Fatalf("verify: %v (%+v)", err, r)
	}
	tj, _ := os.ReadFile(filepath.Join(tinyDir, "tokenizer.json"))
	if !bytes.Equal(p.Index.TokenizerJSON, tj) {
		t.Fatal("pack does not carry tokenizer.json verbatim")
	}
}

func TestDefaultBand(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{8, 8}, {64, 64}, {768, 64}, {4095, 64}, {4096, 128}, {8191, 128}, {8192, 256}, {14336, 256}, {1 << 20, 256},
	} {
		if got := DefaultBand(c.n); got != c.want {
			t.Errorf("DefaultBand(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	// A conversion that names no band size takes the default.
	p, _ := convertTo(t, tinyDir, Options{})
	if n := p.Index.Config.IntermediateSize; p.Index.BandNeurons != DefaultBand(n) {
		t.Errorf("band size %d, want DefaultBand(%d) = %d", p.Index.BandNeurons, n, DefaultBand(n))
	}
}

func TestConvertIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.sip", "b.sip"} {
		if _, err := Convert(context.Background(), Options{ModelDir: tinyDir, Output: filepath.Join(dir, name)}); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.sip"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.sip"))
	if !bytes.Equal(a, b) {
		t.Fatal("two conversions of the same checkpoint differ")
	}
}

// TestDTypes: f32 is exact (bf16 widens exactly); f16 has 3 more mantissa
// bits than bf16, so it is exact for normal f16 values and off by at most
// half an f16 subnormal step (2^-25) below 2^-14.
func TestDTypes(t *testing.T) {
	p, m := convertTo(t, tinyDir, Options{DType: "f32"})
	checkRoundTrip(t, p, m, func(float32) float64 { return 0 })
	p, m = convertTo(t, tinyDir, Options{DType: "f16"})
	checkRoundTrip(t, p, m, func(x float32) float64 {
		if math.Abs(float64(x)) < 1.0/(1<<14) {
			return 1.0 / (1 << 25)
		}
		return 0
	})
}

func TestPermutedOrderAndDenseLayers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	order := &Order{Perms: map[int][]uint32{}, BaseFraction: 0.3, Provenance: format.Provenance{Order: "random", Seed: 7}}
	for l := 1; l < 5; l++ {
		perm := make([]uint32, 768)
		for i, v := range rng.Perm(768) {
			perm[i] = uint32(v)
		}
		order.Perms[l] = perm
	}
	p, m := convertTo(t, tinyDir, Options{Order: order, DenseLayers: []int{0, 5}, BandNeurons: 100})
	if len(p.Index.SparseLayers) != 4 || p.Preamble.BandCount != 8 {
		t.Fatalf("sparse layers %d, bands %d; want 4 and ceil(768/100) = 8", len(p.Index.SparseLayers), p.Preamble.BandCount)
	}
	if p.Index.Provenance.Order != "random" || p.Index.BaseFraction != 0.3 {
		t.Fatalf("provenance not stored: %+v", p.Index.Provenance)
	}
	checkRoundTrip(t, p, m, nil)
	// Dense layers keep their FFN as records in original order in the dense section.
	_, recs, ok := p.Tensor(format.NameFFNRecords(0))
	if !ok {
		t.Fatal("dense layer 0 has no ffn_records tensor")
	}
	gate, _, _ := m.FFN(0)
	if !bytes.Equal(recs[3*256*2*5:3*256*2*5+512], gate.Data[5*512:6*512]) {
		t.Fatal("dense layer record 5 does not start with gate row 5")
	}
}

func TestShardedAndArchitectures(t *testing.T) {
	dir := t.TempDir()
	c := testmodel.Tiny(tokJSON(t))
	c.Shards = 3
	if err := testmodel.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	p, m := convertTo(t, dir, Options{})
	checkRoundTrip(t, p, m, nil)

	for _, d := range []string{"llama32-tied", "qwen2-bias"} {
		p, m := convertTo(t, filepath.Join("../testdata/archcheck", d), Options{})
		checkRoundTrip(t, p, m, nil)
		cfg := p.Index.Config
		if !cfg.TieWordEmbeddings {
			t.Errorf("%s: tied embeddings not recorded", d)
		}
		if _, _, ok := p.Tensor(format.NameOutput); ok {
			t.Errorf("%s: tied model has an output tensor", d)
		}
		if d == "qwen2-bias" && !cfg.AttentionBias {
			t.Errorf("%s: biases not recorded", d)
		}
		if d == "llama32-tied" && (cfg.RopeScaling == nil || cfg.RopeScaling.Factor != 8 || cfg.RopeScaling.OriginalMaxPositionEmbeddings != 64) {
			t.Errorf("%s: rope_scaling not recorded: %+v", d, cfg.RopeScaling)
		}
	}
}

// rewriteHeader edits the JSON header of a safetensors file, keeping its data.
func rewriteHeader(t *testing.T, path string, edit func(h map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var h map[string]any
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	hj, _ := json.Marshal(h)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hj)))
	out = append(append(out, hj...), b[8+n:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	tok := tokJSON(t)
	st := func(dir string) string { return filepath.Join(dir, "model.safetensors") }
	cases := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		opt    Options
		want   []string // substrings the error must contain
	}{
		{"missing tensors", func(t *testing.T, dir string) {
			rewriteHeader(t, st(dir), func(h map[string]any) {
				// Drop two tensors; keep the file consistent by renaming them away.
				for _, n := range []string{"model.layers.1.mlp.up_proj.weight", "model.norm.weight"} {
					h["x."+n] = h[n]
					delete(h, n)
				}
			})
		}, Options{}, []string{"2 missing tensors", "model.layers.1.mlp.up_proj.weight", "model.norm.weight"}},
		{"wrong shape", func(t *testing.T, dir string) {
			rewriteHeader(t, st(dir), func(h map[string]any) {
				e := h["model.layers.0.mlp.gate_proj.weight"].(map[string]any)
				e["shape"] = []int{64, 160}
			})
		}, Options{}, []string{"model.layers.0.mlp.gate_proj.weight", "shape [64 160], want [160 64]"}},
		{"unsupported architecture", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			os.WriteFile(filepath.Join(dir, "config.json"), bytes.Replace(b, []byte("LlamaForCausalLM"), []byte("GemmaForCausalLM"), 1), 0o644)
		}, Options{}, []string{"config.json", `unsupported architecture "GemmaForCausalLM"`}},
		{"unknown dtype flag", func(t *testing.T, dir string) {}, Options{DType: "int3"}, []string{`unknown dtype "int3"`}},
		{"unsupported tensor dtype", func(t *testing.T, dir string) {
			rewriteHeader(t, st(dir), func(h map[string]any) {
				h["model.norm.weight"].(map[string]any)["dtype"] = "I16"
			})
		}, Options{}, []string{"model.norm.weight", `unsupported dtype "I16"`}},
		{"truncated safetensors", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(st(dir))
			os.WriteFile(st(dir), b[:len(b)-100], 0o644)
		}, Options{}, []string{"model.safetensors", "outside the"}},
		{"garbage safetensors", func(t *testing.T, dir string) {
			os.WriteFile(st(dir), []byte("this is not a safetensors file at all"), 0o644)
		}, Options{}, []string{"model.safetensors", "header length"}},
		{"duplicate header key", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(st(dir))
			n := binary.LittleEndian.Uint64(b)
			h := strings.TrimRight(string(b[8:8+n]), " ")
			i := strings.Index(h, `"model.norm.weight"`)
			entry := h[i : i+strings.Index(h[i:], "}")+1]
			h = h[:len(h)-1] + "," + entry + "}"
			out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
			os.WriteFile(st(dir), append(append(out, h...), b[8+n:]...), 0o644)
		}, Options{}, []string{"duplicate entry", "model.norm.weight"}},
		{"overlapping tensors", func(t *testing.T, dir string) {
			rewriteHeader(t, st(dir), func(h map[string]any) {
				e := h["model.norm.weight"].(map[string]any)
				off := e["data_offsets"].([]any)
				e["data_offsets"] = []any{off[0].(float64) - 2, off[1].(float64) - 2}
			})
		}, Options{}, []string{"safetensors"}},
		{"missing tokenizer.json", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.json"))
		}, Options{}, []string{"tokenizer.json", "no such file"}},
		{"band out of range", func(t *testing.T, dir string) {}, Options{BandNeurons: 100000}, []string{"band size 100000 out of range"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := testmodel.Write(dir, testmodel.Tiny(tok)); err != nil {
				t.Fatal(err)
			}
			c.break_(t, dir)
			out := filepath.Join(t.TempDir(), "out.sip")
			opt := c.opt
			opt.ModelDir, opt.Output = dir, out
			_, err := Convert(context.Background(), opt)
			if err == nil {
				t.Fatal("Convert succeeded, want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if left, _ := filepath.Glob(out + "*"); len(left) != 0 {
				t.Errorf("%v left behind", left)
			}
		})
	}
}

func TestCancelledConvertLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "x.sip")
	if _, err := Convert(ctx, Options{ModelDir: tinyDir, Output: out}); err == nil {
		t.Fatal("cancelled convert succeeded")
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 0 {
		t.Fatalf("cancelled convert left %v", entries)
	}
}

func FuzzParseSafetensorsHeader(f *testing.F) {
	b, err := os.ReadFile("../testdata/archcheck/qwen2-bias/model.safetensors")
	if err != nil {
		f.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	f.Add(b[:8+n]) // header only: data area missing
	f.Add([]byte("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{}}        "))
	small := `{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	f.Add(append(binary.LittleEndian.AppendUint64(nil, uint64(len(small))), append([]byte(small), make([]byte, 8)...)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		infos, err := ParseSafetensorsHeader(data)
		if err != nil {
			return
		}
		// Accepted headers must describe tensors that fit the file.
		for _, ti := range infos {
			if ti.DType.Size() == 0 {
				t.Fatalf("accepted tensor %q with dtype %v", ti.Name, ti.DType)
			}
		}
	})
}

// TestInterruptedWriteLeavesNothing cancels a conversion half-way through
// (from the progress callback) and checks that neither the pack nor its
// temporary file remain, and that a second run then succeeds.
func TestInterruptedWriteLeavesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.sip")
	ctx, cancel := context.WithCancel(context.Background())
	written := 0
	_, err := Convert(ctx, Options{ModelDir: tinyDir, Output: out, Progress: func(n int, total int64) {
		written += n
		if written > 8<<20 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted convert: %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Fatalf("interrupted convert left %v", entries)
	}
	if _, err := Convert(context.Background(), Options{ModelDir: tinyDir, Output: out}); err != nil {
		t.Fatal(err)
	}
}

// TestMistralConfig: MistralForCausalLM reads as Llama; a sliding window
// shorter than max_position_embeddings caps the context at the window (the
// attention is then full attention), a null or longer one changes nothing,
// and a window below 1 is refused.
func TestMistralConfig(t *testing.T) {
	raw, err := os.ReadFile("../testdata/configs/mistral-7b-v0.3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		window    string
		positions int
		bad       bool
	}{{"null", 32768, false}, {"65536", 32768, false}, {"4096", 4096, false}, {"0", 0, true}} {
		cfg := strings.Replace(string(raw), `"sliding_window": null`, `"sliding_window": `+c.window, 1)
		m, arch, err := ParseConfig("config.json", []byte(cfg))
		switch {
		case c.bad && err == nil:
			t.Errorf("sliding_window %s accepted", c.window)
		case !c.bad && (err != nil || arch.Name() != "MistralForCausalLM" || m.MaxPositionEmbeddings != c.positions || m.HeadDim != 128 || m.NumKVHeads != 8):
			t.Errorf("sliding_window %s: %+v, %v; want %d positions", c.window, m, err, c.positions)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, p := range []string{tinyDir + "/config.json", "../testdata/archcheck/llama32-tied/config.json", "../testdata/archcheck/qwen2-bias/config.json", "../testdata/configs/mistral-7b-v0.3/config.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, arch, err := ParseConfig("config.json", raw)
		if err != nil {
			return
		}
		if c.HiddenSize <= 0 || c.NumHeads%c.NumKVHeads != 0 || c.HeadDim%2 != 0 || arch == nil {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
	})
}

// TestQuantizedPack: a q4_0 pack with bf16 dense matrices stores every FFN
// record as quantised rows that dequantise to the checkpoint within the
// format's bound, keeps attention in bf16 byte for byte, and q8_0/q4_0 are
// refused for rows that are not whole blocks of 32.
func TestQuantizedPack(t *testing.T) {
	p, m := convertTo(t, tinyDir, Options{DType: "q4_0", DenseDType: "bf16"})
	if p.Index.RecordDType != format.Q4_0 || p.Index.RecordBytes != 3*256/32*18 {
		t.Fatalf("record dtype %v, %d bytes", p.Index.RecordDType, p.Index.RecordBytes)
	}
	info, wq, _ := p.Tensor(format.NameWq(0))
	src := m.DenseTensor(format.NameWq(0))
	if info.DType != format.BF16 || !bytes.Equal(wq, src.Data) {
		t.Fatal("--dense-dtype bf16 did not keep wq byte for byte")
	}
	gate, _, _ := m.FFN(3)
	si, _ := p.SparseIndex(3)
	row := make([]float32, 256)
	for r := 0; r < 768; r += 97 {
		kernels.DequantizeRow(row, p.Record(si, r)[:144], format.Q4_0)
		var amax float64
		for b := 0; b < 8; b++ {
			amax = 0
			for i := b * 32; i < (b+1)*32; i++ {
				amax = math.Max(amax, math.Abs(float64(elem(gate.Data[r*512:], format.BF16, i))))
			}
			for i := b * 32; i < (b+1)*32; i++ {
				want := float64(elem(gate.Data[r*512:], format.BF16, i))
				if math.Abs(float64(row[i])-want) > amax/8*1.01+1e-6 {
					t.Fatalf("rank %d gate[%d]: %g, checkpoint %g", r, i, row[i], want)
				}
			}
		}
	}
	dir := t.TempDir()
	c := testmodel.Tiny(tokJSON(t))
	c.Hidden, c.Heads, c.KVHeads = 40, 4, 2 // head_dim 10: rows of 40 are not whole blocks
	if err := testmodel.Write(dir, c); err != nil {
		t.Fatal(err)
	}
	_, err := Convert(context.Background(), Options{ModelDir: dir, Output: filepath.Join(dir, "q.sip"), DType: "q8_0"})
	if err == nil || !strings.Contains(err.Error(), "multiples of 32") {
		t.Fatalf("q8_0 of hidden 40: %v", err)
	}
}
