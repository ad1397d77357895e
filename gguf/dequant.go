package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Dequantize widens len(dst) elements of type t, stored in src, to
// float32. src must hold exactly those elements: len(dst) a whole number of
// blocks and len(src) their bytes. The result is exact: every value these
// types can hold is a float32, computed in the order ggml's reference
// dequantisers (and gguf-py's) compute it, each product rounded to float32
// before the next operation, never fused.
func Dequantize(dst []float32, t Type, src []byte) error {
	if !CanDequantize(t) {
		return fmt.Errorf("gguf: cannot dequantize %v tensors (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)", t)
	}
	be, bb := t.BlockElems(), t.BlockBytes()
	if len(dst)%be != 0 || len(src) != len(dst)/be*bb {
		return fmt.Errorf("gguf: %d %v elements need %d bytes in whole blocks of %d, got %d", len(dst), t, len(dst)/be*bb, be, len(src))
	}
	le := binary.LittleEndian
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = HalfToFloat(le.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16)
		}
	default:
		block := dequantizers[t]
		for b := 0; b < len(dst)/be; b++ {
			block(dst[b*be:(b+1)*be], src[b*bb:(b+1)*bb])
		}
	}
	return nil
}

// CanDequantize reports whether Dequantize reads type t.
func CanDequantize(t Type) bool {
	switch t {
	case F32, F16, BF16:
		return true
	}
	_, ok := dequantizers[t]
	return ok
}

// dequantizers widen one block each; dst and b are exactly one block.
var dequantizers = map[Type]func(dst []float32, b []byte){
	Q8_0: dequantQ8_0,
	Q4_0: dequantQ4_0,
	Q4_K: dequantQ4_K,
	Q5_K: dequantQ5_K,
	Q6_K: dequantQ6_K,
}

// HalfToFloat widens an IEEE binary16 value (subnormals, infinities and
// NaNs included).
func HalfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: mant · 2^-24, exact in float32.
	f := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

func half(b []byte) float32 { return HalfToFloat(binary.LittleEndian.Uint16(b)) }

// dequantQ8_0: 34 bytes, a float16 scale d then 32 int8 quants; x = d·q.
func dequantQ8_0(dst []float32, b []byte) {
	d := half(b)
	for i := range dst {
		dst[i] = d * float32(int8(b[2+i]))
	}
}

// dequantQ4_0: 18 bytes, a float16 scale d then 16 bytes of 4-bit quants;
// byte j holds element j in its low nibble and element j+16 in its high
// one; x = d·(q−8).
func dequantQ4_0(dst []float32, b []byte) {
	d := half(b)
	for j := 0; j < QK/2; j++ {
		q := b[2+j]
		dst[j] = d * float32(int(q&0xf)-8)
		dst[j+QK/2] = d * float32(int(q>>4)-8)
	}
}

// scaleMinK4 unpacks sub-block j's 6-bit scale and min from the 12 scale
// bytes s of a Q4_K or Q5_K super-block: sub-blocks 0-3 keep them in the low
// six bits of s[j] and s[j+4]; sub-blocks 4-7 in the nibbles of s[j+4]
// (scale low, min high) with the top two bits of s[j-4] and s[j].
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// dequantQ4_K: 144 bytes, a float16 d and dmin, 12 bytes of packed 6-bit
// scales and mins of 8 sub-blocks of 32, then 128 bytes of 4-bit quants in
// 4 runs of 32 bytes: run r holds sub-block 2r in its low nibbles and 2r+1
// in its high ones; x = (d·sc)·q − dmin·m.
func dequantQ4_K(dst []float32, b []byte) {
	d, dmin := half(b), half(b[2:])
	scales, qs := b[4:16], b[16:144]
	for s := 0; s < 8; s++ {
		sc, m := scaleMinK4(s, scales)
		d1 := float32(d * float32(sc))
		m1 := float32(dmin * float32(m))
		run, shift := qs[32*(s/2):32*(s/2)+32], uint(4*(s%2))
		for l := 0; l < 32; l++ {
			q := float32((run[l] >> shift) & 0xf)
			dst[32*s+l] = float32(d1*q) - m1
		}
	}
}

// dequantQ5_K: 176 bytes, as Q4_K with 32 bytes qh between the scales and
// the low nibbles: bit s of qh[l] is the fifth bit of sub-block s's
// element l; x = (d·sc)·q − dmin·m with q in [0, 32).
func dequantQ5_K(dst []float32, b []byte) {
	d, dmin := half(b), half(b[2:])
	scales, qh, qs := b[4:16], b[16:48], b[48:176]
	for s := 0; s < 8; s++ {
		sc, m := scaleMinK4(s, scales)
		d1 := float32(d * float32(sc))
		m1 := float32(dmin * float32(m))
		run, shift := qs[32*(s/2):32*(s/2)+32], uint(4*(s%2))
		for l := 0; l < 32; l++ {
			q := (run[l]>>shift)&0xf | ((qh[l]>>uint(s))&1)<<4
			dst[32*s+l] = float32(d1*float32(q)) - m1
		}
	}
}

// dequantQ6_K: 210 bytes: 128 bytes ql (low 4 bits), 64 bytes qh (high 2
// bits), 16 int8 scales of sub-blocks of 16, a float16 d. Each half of 128
// elements uses 64 bytes of ql and 32 of qh: element 32k+l of the half
// (k = 0..3) takes the low (k even) or high (k odd) nibble of ql[l+32·(k%2)]
// and bits 2k, 2k+1 of qh[l]; x = (d·scale)·(q − 32).
func dequantQ6_K(dst []float32, b []byte) {
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	d := half(b[208:])
	for h := 0; h < 2; h++ {
		for k := 0; k < 4; k++ {
			for l := 0; l < 32; l++ {
				lo := (ql[64*h+32*(k%2)+l] >> uint(4*(k/2))) & 0xf
				hi := (qh[32*h+l] >> uint(2*k)) & 3
				q := int(lo|hi<<4) - 32
				e := 128*h + 32*k + l
				ds := float32(d * float32(int8(sc[e/16])))
				dst[e] = ds * float32(q)
			}
		}
	}
}
