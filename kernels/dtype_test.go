package kernels

import (
	"math"
	"testing"
)

func TestF16RoundTripAllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F16ToF32(F32ToF16(f)); !math.IsNaN(float64(g)) {
				t.Fatalf("NaN %#04x did not stay NaN", h)
			}
			continue
		}
		if got := F32ToF16(f); got != uint16(h) {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)=%g) = %#04x", h, f, got)
		}
	}
}

func TestBF16RoundTripAllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := BF16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if got := F32ToBF16(f); got != uint16(h) {
			t.Fatalf("F32ToBF16(BF16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

func TestRoundingTiesToEven(t *testing.T) {
	cases := []struct {
		f    float32
		bf16 uint16
		f16  uint16
	}{
		{1, 0x3f80, 0x3c00},
		{-2, 0xc000, 0xc000},
		{65504, 0x4780, 0x7bff},                 // largest half (bits 0x477fe000: bf16 rounds up)
		{65520, 0x4780, 0x7c00},                 // rounds to +Inf in half
		{5.960464477539063e-08, 0x3380, 0x0001}, // smallest half subnormal
		{2.980232238769531e-08, 0x3300, 0x0000}, // exactly half of it: ties to even (0)
		{1 + 1.0/256, 0x3f80, 0x3c04},           // bf16 tie -> even (down)
		{1 + 3.0/256, 0x3f82, 0x3c0c},           // bf16 tie -> even (up)
	}
	for _, c := range cases {
		if got := F32ToBF16(c.f); got != c.bf16 {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.bf16)
		}
		if got := F32ToF16(c.f); got != c.f16 {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.f, got, c.f16)
		}
	}
}
