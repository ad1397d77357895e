package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"testing"
)

// f16 of the few exact values the hand-built blocks use.
var f16 = map[float32]uint16{0.25: 0x3400, 0.5: 0x3800, 1: 0x3c00, 2: 0x4000, -3: 0xc200}

func dequant(t *testing.T, typ Type, b []byte, n int) []float32 {
	t.Helper()
	got := make([]float32, n)
	if err := Dequantize(got, typ, b); err != nil {
		t.Fatal(err)
	}
	return got
}

func expect(t *testing.T, typ Type, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%v element %d = %g, want %g", typ, i, got[i], want[i])
		}
	}
}

// The hand-built blocks below are packed as ggml's reference quantisers
// pack them (quantize_row_*_ref in ggml-quants.c): values chosen first,
// then laid out, so each test checks the layout against known values.

func TestDequantizeQ8_0(t *testing.T) {
	b := make([]byte, 34)
	binary.LittleEndian.PutUint16(b, f16[0.5])
	want := make([]float32, 32)
	for i := range want {
		q := int8(i*9 - 128)
		b[2+i] = byte(q)
		want[i] = 0.5 * float32(q)
	}
	expect(t, Q8_0, dequant(t, Q8_0, b, 32), want)
}

func TestDequantizeQ4_0(t *testing.T) {
	b := make([]byte, 18)
	binary.LittleEndian.PutUint16(b, f16[-3])
	want := make([]float32, 32)
	for j := 0; j < 16; j++ {
		lo, hi := j, 15-j // elements j and j+16
		b[2+j] = byte(lo | hi<<4)
		want[j], want[j+16] = -3*float32(lo-8), -3*float32(hi-8)
	}
	expect(t, Q4_0, dequant(t, Q4_0, b, 32), want)
}

// k4Scales are the scales and mins of the 8 sub-blocks of the Q4_K and Q5_K
// test blocks, and k4Packed their 12 bytes: bytes 0-3 hold sc0-3 in their
// low six bits and the top two bits of sc4-7; bytes 4-7 the same for the
// mins; bytes 8-11 the low four bits of sc4-7 (low nibble) and m4-7 (high).
var (
	k4Sc     = [8]float32{1, 2, 3, 4, 21, 37, 63, 0}
	k4M      = [8]float32{0, 5, 10, 63, 3, 50, 16, 1}
	k4Packed = [12]byte{0x41, 0x82, 0xc3, 0x04, 0x00, 0xc5, 0x4a, 0x3f, 0x35, 0x25, 0x0f, 0x10}
)

// kValue is the value of element e (sub-block e/32) of a Q4_K/Q5_K block.
func kValue(d, dmin float32, e, q int) float32 {
	s := e / 32
	return float32(d*k4Sc[s])*float32(q) - float32(dmin*k4M[s])
}

func TestDequantizeQ4_K(t *testing.T) {
	b := make([]byte, 144)
	binary.LittleEndian.PutUint16(b, f16[2])
	binary.LittleEndian.PutUint16(b[2:], f16[0.5])
	copy(b[4:], k4Packed[:])
	q := func(e int) int { return (e*e*5 + e*7 + e/32) % 16 }
	want := make([]float32, 256)
	for j := 0; j < 256; j += 64 { // a run of 32 bytes: j..j+31 low, j+32..j+63 high
		for l := 0; l < 32; l++ {
			b[16+j/2+l] = byte(q(j+l) | q(j+l+32)<<4)
		}
	}
	for e := range want {
		want[e] = kValue(2, 0.5, e, q(e))
	}
	expect(t, Q4_K, dequant(t, Q4_K, b, 256), want)
}

func TestDequantizeQ5_K(t *testing.T) {
	b := make([]byte, 176)
	binary.LittleEndian.PutUint16(b, f16[0.25])
	binary.LittleEndian.PutUint16(b[2:], f16[1])
	copy(b[4:], k4Packed[:])
	q := func(e int) int { return (e*e*3 + e*11 + e/32) % 32 }
	qh, ql := b[16:48], b[48:176]
	for n, m1 := 0, 0; n < 256; n, m1 = n+64, m1+2 { // bits m1 and m1+1 of qh
		for j := 0; j < 32; j++ {
			l1, l2 := q(n+j), q(n+j+32)
			if l1 > 15 {
				l1 -= 16
				qh[j] |= 1 << m1
			}
			if l2 > 15 {
				l2 -= 16
				qh[j] |= 2 << m1
			}
			ql[n/2+j] = byte(l1 | l2<<4)
		}
	}
	want := make([]float32, 256)
	for e := range want {
		want[e] = kValue(0.25, 1, e, q(e))
	}
	expect(t, Q5_K, dequant(t, Q5_K, b, 256), want)
}

func TestDequantizeQ6_K(t *testing.T) {
	b := make([]byte, 210)
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	binary.LittleEndian.PutUint16(b[208:], f16[0.5])
	q := func(e int) int { return (e*e*7 + e*3 + e/16 + 1) % 64 } // no period a layout mix-up could hide behind
	for i := range sc {
		sc[i] = byte(int8(i*3 - 20))
	}
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := q(128*h+l), q(128*h+l+32), q(128*h+l+64), q(128*h+l+96)
			ql[64*h+l] = byte(q1&15 | (q3&15)<<4)
			ql[64*h+l+32] = byte(q2&15 | (q4&15)<<4)
			qh[32*h+l] = byte(q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6)
		}
	}
	want := make([]float32, 256)
	for e := range want {
		want[e] = float32(0.5*float32(i8(sc[e/16]))) * float32(q(e)-32)
	}
	expect(t, Q6_K, dequant(t, Q6_K, b, 256), want)
}

func i8(b byte) int8 { return int8(b) }

func TestHalfToFloat(t *testing.T) {
	for h, want := range map[uint16]float32{
		0x0000: 0, 0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0400: 1.0 / (1 << 14),
		0x0001: 1.0 / (1 << 24), 0x03ff: 1023.0 / (1 << 24), 0x8001: -1.0 / (1 << 24),
	} {
		if got := HalfToFloat(h); got != want {
			t.Errorf("HalfToFloat(%#04x) = %g, want %g", h, got, want)
		}
	}
	if f := HalfToFloat(0x7c00); !math.IsInf(float64(f), 1) {
		t.Errorf("0x7c00 = %g", f)
	}
	if f := HalfToFloat(0xfe01); !math.IsNaN(float64(f)) || math.Float32bits(f) != 0xffc02000 {
		t.Errorf("0xfe01 = %#08x, want the payload kept", math.Float32bits(f))
	}
	if f := HalfToFloat(0x8000); math.Float32bits(f) != 0x80000000 {
		t.Errorf("-0 = %#08x", math.Float32bits(f))
	}
}

func TestDequantizeRefuses(t *testing.T) {
	if err := Dequantize(make([]float32, 256), Q3_K, make([]byte, 110)); err == nil {
		t.Error("Q3_K dequantized")
	}
	if err := Dequantize(make([]float32, 32), Q8_0, make([]byte, 33)); err == nil {
		t.Error("33 bytes of Q8_0 dequantized")
	}
	if err := Dequantize(make([]float32, 16), Q4_0, make([]byte, 9)); err == nil {
		t.Error("half a Q4_0 block dequantized")
	}
	if err := Dequantize(make([]float32, 3), BF16, make([]byte, 6)); err != nil {
		t.Error(err)
	}
}

// FuzzParse: no input makes Parse panic; a refusal is a *FormatError; a
// file it reads has every tensor inside the input, and dequantising a
// readable tensor succeeds.
func FuzzParse(f *testing.F) {
	seed, err := os.ReadFile("testdata/gguf-py.gguf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	// Cut inside the first tensor past the data start, and one byte before
	// the last tensor's end (clones: no capacity past the cut to read).
	f.Add(bytes.Clone(seed[:1300]))
	last, err := Parse("seed", seed)
	if err != nil {
		f.Fatal(err)
	}
	end := int64(0)
	for _, t := range last.Tensors {
		end = max(end, t.Offset+t.Size)
	}
	f.Add(bytes.Clone(seed[:end-1]))
	w := &Writer{}
	w.Set("a", []string{"x", "yz"})
	w.Set("n", []Value{mustValue([]int32{1})})
	w.AddTensor("t", Q4_0, []uint64{32, 2}, make([]byte, 36))
	f.Add(w.Bytes())
	f.Add(nested(3))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse("fuzz.gguf", b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("not a *FormatError: %v", err)
			}
			return
		}
		for _, tt := range file.Tensors {
			if tt.Offset < file.DataOffset || tt.Offset+tt.Size > int64(len(b)) || int64(len(tt.Data)) != tt.Size {
				t.Fatalf("tensor %q [%d, +%d) outside the input", tt.Name, tt.Offset, tt.Size)
			}
			if CanDequantize(tt.Type) && tt.Elems() <= 1<<16 {
				if err := Dequantize(make([]float32, tt.Elems()), tt.Type, tt.Data); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

func mustValue(x any) Value {
	v, ok := MakeValue(x)
	if !ok {
		panic("not a value")
	}
	return v
}
