package gguf

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// golden is testdata/golden.json, written by testdata/gen.py with gguf-py.
type golden struct {
	Tensors []struct {
		Name    string   `json:"name"`
		Type    Type     `json:"type"`
		Shape   []int    `json:"shape"`
		F32Bits []uint32 `json:"f32_bits"`
	} `json:"tensors"`
	Metadata map[string]struct {
		Types []ValueType `json:"types"`
	} `json:"metadata"`
	DataOffset int64 `json:"data_offset"`
	Alignment  int64 `json:"alignment"`
}

func readGolden(t *testing.T) (*golden, []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/gguf-py.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return &g, b
}

// TestGGUFPyFile reads the file gguf-py's own writer wrote: every metadata
// value as written, the layout gguf-py's reader reports, and every tensor
// dequantised to the float32 bits gguf-py's dequantisers give (F32, F16 and
// BF16 widened as numpy widens them).
func TestGGUFPyFile(t *testing.T) {
	g, b := readGolden(t)
	f, err := Parse("gguf-py.gguf", b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != g.Alignment || f.DataOffset != g.DataOffset {
		t.Fatalf("version %d, alignment %d, data at %d; want 3, %d, %d", f.Version, f.Alignment, f.DataOffset, g.Alignment, g.DataOffset)
	}
	want := map[string]any{
		"test.u8": uint8(200), "test.i8": int8(-100), "test.u16": uint16(60000), "test.i16": int16(-30000),
		"test.u32": uint32(4000000000), "test.i32": int32(-2000000000), "test.f32": float32(0.1),
		"test.u64": uint64(1<<63 + 5), "test.i64": int64(-(1 << 62)), "test.f64": 2.5e-300,
		"test.true": true, "test.false": false, "test.string": "héllo, GGUF ✓",
		"test.strings": []string{"a", "", "Ġthe", "<|eot_id|>"}, "test.ints": []int32{1, -2, 3},
		"test.floats": []float32{0.5, -1.25}, "test.bools": []bool{true, false, true},
		"general.architecture": "llama", "general.alignment": uint32(64),
	}
	for k, w := range want {
		v, ok := f.Get(k)
		if !ok || !reflect.DeepEqual(v.Any(), w) {
			t.Errorf("%s = %#v, want %#v", k, v.Any(), w)
		}
	}
	for k, m := range g.Metadata {
		v, _ := f.Get(k)
		types := []ValueType{v.Type}
		for x := v; x.Type == Array; x = x.Index(0) {
			types = append(types, x.Elem)
		}
		if !reflect.DeepEqual(types, m.Types) {
			t.Errorf("%s: types %v, gguf-py reads %v", k, types, m.Types)
		}
	}
	nested, _ := f.Get("test.nested")
	if nested.Len() != 2 || !reflect.DeepEqual(nested.Index(0).Any(), []int32{1, 2}) || !reflect.DeepEqual(nested.Index(1).Any(), []int32{3}) {
		t.Errorf("test.nested = %v", nested.Any())
	}
	ns, _ := f.Get("test.nested_strings")
	if s, _ := ns.Index(1).Strings(); !reflect.DeepEqual(s, []string{"z"}) {
		t.Errorf("test.nested_strings[1] = %v", s)
	}
	if len(f.Tensors) != len(g.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(g.Tensors))
	}
	for i, gt := range g.Tensors {
		tt := f.Tensor(gt.Name)
		if tt == nil || &f.Tensors[i] != tt {
			t.Fatalf("tensor %d is not %q", i, gt.Name)
		}
		if tt.Type != gt.Type || !reflect.DeepEqual(tt.Shape(), gt.Shape) || tt.Offset%64 != 0 {
			t.Errorf("%s: %v %v at %d, want %v %v aligned to 64", gt.Name, tt.Type, tt.Shape(), tt.Offset, gt.Type, gt.Shape)
		}
		got := make([]float32, tt.Elems())
		if err := Dequantize(got, tt.Type, tt.Data); err != nil {
			t.Fatalf("%s: %v", gt.Name, err)
		}
		bad := 0
		for j, v := range got {
			if math.Float32bits(v) != gt.F32Bits[j] {
				if bad++; bad <= 3 {
					t.Errorf("%s[%d] = %g (%#08x), gguf-py gives %g (%#08x)", gt.Name, j, v, math.Float32bits(v), math.Float32frombits(gt.F32Bits[j]), gt.F32Bits[j])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d values differ from gguf-py's", gt.Name, bad, len(got))
		}
	}
}

// lastDataEnd is where the last tensor's data ends: a file cut anywhere
// before it must be refused.
func lastDataEnd(t *testing.T, b []byte) int {
	f, err := Parse("x", b)
	if err != nil {
		t.Fatal(err)
	}
	end := int(f.DataOffset)
	for _, tt := range f.Tensors {
		end = max(end, int(tt.Offset+tt.Size))
	}
	return end
}

// checkRefused fails unless err is a *FormatError naming the file, with an
// offset inside the n bytes given.
func checkRefused(t *testing.T, what string, err error, n int) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: got %v, want a *FormatError", what, err)
	}
	if fe.File != "x.gguf" || !strings.Contains(err.Error(), "x.gguf") || fe.Off < 0 || fe.Off > int64(n) {
		t.Fatalf("%s: error %q does not name the file or has offset %d outside [0, %d]", what, err, fe.Off, n)
	}
}

// TestTruncated cuts the gguf-py file at every length short of its last
// tensor's end: each is refused with the offset, never a panic.
func TestTruncated(t *testing.T) {
	_, b := readGolden(t)
	end := lastDataEnd(t, b)
	for n := 0; n < end; n++ {
		_, err := Parse("x.gguf", b[:n:n])
		checkRefused(t, "cut at "+strconv.Itoa(n), err, n)
	}
	for n := end; n <= len(b); n++ {
		if _, err := Parse("x.gguf", b[:n:n]); err != nil {
			t.Fatalf("cut at %d, after the last tensor: %v", n, err)
		}
	}
}

// TestEveryByteFlipped flips each header byte of the gguf-py file three
// ways: every result is either read or refused with a *FormatError, never
// a panic, and a file that is read has every tensor inside it.
func TestEveryByteFlipped(t *testing.T) {
	g, b := readGolden(t)
	refused := 0
	for i := 0; i < int(g.DataOffset); i++ {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			c := bytes.Clone(b)
			c[i] ^= x
			f, err := Parse("x.gguf", c)
			if err != nil {
				checkRefused(t, "flip", err, len(c))
				refused++
				continue
			}
			for _, tt := range f.Tensors {
				if tt.Offset < f.DataOffset || tt.Offset+tt.Size > int64(len(c)) || int64(len(tt.Data)) != tt.Size {
					t.Fatalf("flip %#x at %d: tensor %q [%d, +%d) outside the data", x, i, tt.Name, tt.Offset, tt.Size)
				}
			}
		}
	}
	t.Logf("%d of %d flips of the %d header bytes refused", refused, 3*g.DataOffset, g.DataOffset)
}

// builder writes a small file by hand, so a test can put any value in any
// field.
type builder struct{ bytes.Buffer }

func (b *builder) u32(v uint32) *builder { binary.Write(b, binary.LittleEndian, v); return b }
func (b *builder) u64(v uint64) *builder { binary.Write(b, binary.LittleEndian, v); return b }
func (b *builder) str(s string) *builder { b.u64(uint64(len(s))); b.WriteString(s); return b }
func (b *builder) raw(p ...byte) *builder {
	b.Write(p)
	return b
}

// header starts a version-3 file of nt tensors and nkv keys.
func header(nt, nkv uint64) *builder {
	b := &builder{}
	b.WriteString("GGUF")
	return b.u32(3).u64(nt).u64(nkv)
}

// TestRefusals: one file for each rule, each refused with its class and the
// offset of the field that breaks it.
func TestRefusals(t *testing.T) {
	cases := []struct {
		name  string
		b     []byte
		class error
		off   int64
		msg   string
	}{
		{"empty", nil, ErrTruncated, 0, "shorter than the 4-byte magic"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), ErrMagic, 0, `magic is "GGML"`},
		{"version 1", append([]byte("GGUF"), 1, 0, 0, 0), ErrVersion, 4, "version 1"},
		{"big-endian", append([]byte("GGUF"), 0, 0, 0, 3), ErrVersion, 4, "big-endian"},
		{"version 4", append([]byte("GGUF"), 4, 0, 0, 0), ErrVersion, 4, "version 4"},
		{"no counts", append([]byte("GGUF"), 3, 0, 0, 0), ErrTruncated, 8, "tensor count"},
		{"huge kv count", header(0, 1<<40).Bytes(), ErrBounds, 16, "metadata count"},
		{"huge tensor count", header(1<<40, 0).Bytes(), ErrBounds, 8, "tensor count"},
		{"kv count past the end", header(0, 2).str("a").u32(uint32(Uint8)).raw(1).Bytes(), ErrBounds, 16, "metadata count 2"},
		{"huge key length", header(0, 1).u64(1 << 20).raw(make([]byte, 64)...).Bytes(), ErrBounds, 24, "over the cap of 65535"},
		{"key past the end", header(0, 1).u64(100).raw(make([]byte, 20)...).Bytes(), ErrTruncated, 24, "length 100"},
		{"empty key", header(0, 1).str("").u32(uint32(Uint8)).raw(1, 0).Bytes(), ErrMalformed, 24, "empty or not printable"},
		{"control key", header(0, 1).str("a\nb").u32(uint32(Uint8)).raw(1).Bytes(), ErrMalformed, 24, "not printable"},
		{"duplicate key", header(0, 2).str("a").u32(uint32(Uint8)).raw(1).str("a").u32(uint32(Uint8)).raw(2).Bytes(), ErrMalformed, 38, `"a" appears twice`},
		{"value type", header(0, 1).str("a").u32(13).raw(make([]byte, 8)...).Bytes(), ErrType, 33, "value type 13"},
		{"bool byte", header(0, 1).str("a").u32(uint32(Bool)).raw(2).Bytes(), ErrMalformed, 37, "bool byte is 2"},
		{"huge string", header(0, 1).str("a").u32(uint32(String)).u64(1 << 40).Bytes(), ErrBounds, 37, "over the cap"},
		{"string past the end", header(0, 1).str("a").u32(uint32(String)).u64(9).raw('x').Bytes(), ErrTruncated, 37, "length 9"},
		{"array element type", header(0, 1).str("a").u32(uint32(Array)).u32(77).u64(1).Bytes(), ErrType, 37, "element type 77"},
		{"huge array", header(0, 1).str("a").u32(uint32(Array)).u32(uint32(Uint8)).u64(1 << 40).Bytes(), ErrBounds, 41, "over the cap"},
		{"array past the end", header(0, 1).str("a").u32(uint32(Array)).u32(uint32(String)).u64(3).u64(0).Bytes(), ErrTruncated, 41, "3 string elements"},
		{"bool array byte", header(0, 1).str("a").u32(uint32(Array)).u32(uint32(Bool)).u64(2).raw(1, 7).Bytes(), ErrMalformed, 50, "[1]: bool byte is 7"},
		{"nesting", nested(9), ErrBounds, 133, "nested more than 8 deep"},
		{"alignment type", header(0, 1).str(KeyAlignment).u32(uint32(Uint64)).u64(32).Bytes(), ErrType, 24, "must be a uint32"},
		{"alignment value", header(0, 1).str(KeyAlignment).u32(uint32(Uint32)).u32(48).Bytes(), ErrAlign, 24, "48 is not a power of two"},
		{"alignment zero", header(0, 1).str(KeyAlignment).u32(uint32(Uint32)).u32(0).Bytes(), ErrAlign, 24, "0 is not a power of two"},
		{"tensor name", header(1, 0).str(strings.Repeat("n", 65)).Bytes(), ErrBounds, 24, "over the cap of 64"},
		{"empty tensor name", header(1, 0).str("").u32(1).u64(32).u32(0).u64(0).raw(0).Bytes(), ErrMalformed, 24, "empty or not UTF-8"},
		{"tensor dims", header(1, 0).str("t").u32(5).raw(make([]byte, 40)...).Bytes(), ErrBounds, 33, "5 dimensions"},
		{"no tensor dims", header(1, 0).str("t").u32(0).u32(0).u64(0).raw(make([]byte, 8)...).Bytes(), ErrBounds, 33, "0 dimensions"},
		{"zero dim", header(1, 0).str("t").u32(2).u64(4).u64(0).u32(0).u64(0).Bytes(), ErrBounds, 45, "dimension 1 is 0"},
		{"dims overflow", header(1, 0).str("t").u32(2).u64(1 << 40).u64(1 << 40).u32(0).u64(0).Bytes(), ErrBounds, 45, "over 281474976710656 elements"},
		{"tensor type", header(1, 0).str("t").u32(1).u64(32).u32(31).u64(0).Bytes(), ErrType, 45, "tensor type 31"},
		{"partial block", header(1, 0).str("t").u32(1).u64(48).u32(uint32(Q4_K)).u64(0).Bytes(), ErrBounds, 37, "not whole Q4_K blocks of 256"},
		{"duplicate tensor", header(2, 0).str("t").u32(1).u64(8).u32(0).u64(0).str("t").u32(1).u64(8).u32(0).u64(32).Bytes(), ErrMalformed, 57, `"t" appears twice`},
		{"data past the end", header(1, 0).str("t").u32(1).u64(8).u32(0).u64(0).raw(make([]byte, 12)...).Bytes(), ErrBounds, 24, "ends past the end of the file"},
		{"data start past the end", header(1, 0).str("t").u32(1).u64(8).u32(0).u64(0).Bytes(), ErrTruncated, 57, "would start at 64"},
	}
	for _, c := range cases {
		_, err := Parse("x.gguf", c.b)
		var fe *FormatError
		if !errors.Is(err, c.class) || !errors.As(err, &fe) || fe.Off != c.off || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "x.gguf") {
			t.Errorf("%s: got %v, want %v at offset %d saying %q", c.name, err, c.class, c.off, c.msg)
		}
	}
}

// nested is a file whose one key holds arrays nested depth deep.
func nested(depth int) []byte {
	b := header(0, 1).str("a").u32(uint32(Array))
	for i := 0; i < depth; i++ {
		b.u32(uint32(Array)).u64(1)
	}
	return b.u32(uint32(Uint8)).u64(0).Bytes()
}

// TestTensorPlacement: offsets must be aligned, inside the file, and no two
// tensors may overlap.
func TestTensorPlacement(t *testing.T) {
	w := &Writer{}
	w.AddTensor("a", F32, []uint64{8}, make([]byte, 32))
	w.AddTensor("b", F32, []uint64{8}, make([]byte, 32))
	b := w.Bytes()
	f, err := Parse("x.gguf", b)
	if err != nil {
		t.Fatal(err)
	}
	offOf := func(name string) int { return int(f.Tensor(name).InfoOff) + 8 + len(name) + 4 + 8 + 4 }
	set := func(name string, v uint64) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint64(c[offOf(name):], v)
		return c
	}
	for _, c := range []struct {
		b     []byte
		class error
		msg   string
	}{
		{set("b", 16), ErrAlign, "not a multiple of the alignment 32"},
		{set("b", 0), ErrBounds, `overlaps tensor "a"`},
		{set("b", 1<<20), ErrBounds, "ends past the end"},
		{set("b", 1<<63), ErrBounds, "beyond any file"},
	} {
		_, err := Parse("x.gguf", c.b)
		if !errors.Is(err, c.class) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("got %v, want %v saying %q", err, c.class, c.msg)
		}
	}
}

// TestWriterRoundTrip: every value type, nested arrays, a non-default
// alignment and both versions read back as written.
func TestWriterRoundTrip(t *testing.T) {
	vals := map[string]any{
		"u8": uint8(1), "i8": int8(-2), "u16": uint16(3), "i16": int16(-4), "u32": uint32(5), "i32": int32(-6),
		"u64": uint64(7), "i64": int64(-8), "f32": float32(9.5), "f64": 10.25, "bool": true, "str": "ü",
		"a.u8": []uint8{1, 2}, "a.i8": []int8{-1}, "a.u16": []uint16{3}, "a.i16": []int16{-3}, "a.u32": []uint32{4},
		"a.i32": []int32{-4}, "a.u64": []uint64{5}, "a.i64": []int64{-5}, "a.f32": []float32{1.5}, "a.f64": []float64{2.5},
		"a.bool": []bool{false, true}, "a.str": []string{"x", ""}, "a.empty": []string{},
	}
	inner, _ := MakeValue([]string{"p", "q"})
	vals["a.nested"] = []Value{inner}
	for _, version := range []uint32{2, 3} {
		w := &Writer{Version: version}
		if err := w.Set(KeyAlignment, uint32(128)); err != nil {
			t.Fatal(err)
		}
		for k, v := range vals {
			if err := w.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		w.AddTensor("t", BF16, []uint64{2, 2}, data)
		w.AddTensor("u", Q8_0, []uint64{32}, make([]byte, 34))
		f, err := Parse("rt.gguf", w.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if f.Version != version || f.Alignment != 128 || len(f.KV) != len(vals)+1 {
			t.Fatalf("version %d alignment %d, %d keys", f.Version, f.Alignment, len(f.KV))
		}
		for k, want := range vals {
			v, _ := f.Get(k)
			if !reflect.DeepEqual(v.Any(), want) {
				t.Errorf("v%d %s = %#v, want %#v", version, k, v.Any(), want)
			}
		}
		tt := f.Tensor("t")
		if !bytes.Equal(tt.Data, data) || tt.Offset%128 != 0 || !reflect.DeepEqual(tt.Shape(), []int{2, 2}) || f.Tensor("u").Offset%128 != 0 {
			t.Errorf("tensor t: %v at %d shape %v", tt.Data, tt.Offset, tt.Shape())
		}
	}
	w := &Writer{}
	if w.Set("x", struct{}{}) == nil || w.Set(KeyAlignment, uint32(3)) == nil || w.AddTensor("t", Q4_0, []uint64{16}, make([]byte, 9)) == nil {
		t.Error("writer accepted a bad value, alignment or tensor")
	}
}

// TestValueAccessors: integers convert across widths where they fit.
func TestValueAccessors(t *testing.T) {
	v, _ := MakeValue(int32(-1))
	if _, ok := v.Uint(); ok {
		t.Error("Uint of -1")
	}
	if i, ok := v.Int(); !ok || i != -1 {
		t.Error("Int of -1")
	}
	v, _ = MakeValue(uint64(1 << 63))
	if _, ok := v.Int(); ok {
		t.Error("Int of 2^63")
	}
	if _, ok := v.Float(); ok {
		t.Error("Float of an integer")
	}
	v, _ = MakeValue([]uint16{1, 2})
	if s, ok := v.Ints(); !ok || !reflect.DeepEqual(s, []int64{1, 2}) {
		t.Error("Ints of []uint16")
	}
	v, _ = MakeValue([]float32{0.5})
	if s, ok := v.Floats(); !ok || s[0] != 0.5 {
		t.Error("Floats of []float32")
	}
	if _, ok := MakeValue([]Value{{Type: Uint8}}); ok {
		t.Error("MakeValue accepted a []Value of scalars")
	}
}

// TestOpen maps a file and refuses a directory and an empty file.
func TestOpen(t *testing.T) {
	f, err := Open("testdata/gguf-py.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 8 || f.Tensor("q4_k") == nil {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
	raw, _ := os.ReadFile("testdata/gguf-py.gguf")
	for _, tt := range f.Tensors {
		if !bytes.Equal(tt.Data, raw[tt.Offset:tt.Offset+tt.Size]) {
			t.Errorf("%s: mapped data differ from the file's bytes", tt.Name)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrTruncated) {
		t.Errorf("empty file: %v", err)
	}
}
