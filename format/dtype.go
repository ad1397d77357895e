package format

import (
	"fmt"
	"strings"
)

// DType is the element type of a tensor or neuron record. The numbers are
// part of the file format (they match sipfb.DType) and are never reused.
type DType uint8

const (
	F32  DType = 0
	F16  DType = 1
	BF16 DType = 2
	// 3..7 reserved.
	Q8_0 DType = 8 // v1.2: blocks of 32: fp16 scale d + 32 int8 q; x = d·q
	Q4_0 DType = 9 // v1.2: blocks of 32: fp16 scale d + 16 bytes of 4-bit q; x = d·(q−8)
	// Q4_K (v1.7): super-blocks of 256, 144 bytes, GGUF's bytes: fp16 d and
	// dmin, 12 bytes of 6-bit scales and mins of 8 sub-blocks of 32, 128
	// bytes of 4-bit q; x = d·sc·q − dmin·m.
	Q4_K DType = 10
	// Q6_K (v1.7): super-blocks of 256, 210 bytes, GGUF's bytes: 128 bytes
	// of low nibbles, 64 of high bit pairs, 16 int8 scales of sub-blocks of
	// 16, fp16 d; x = d·sc·(q−32).
	Q6_K DType = 11
)

// LastDType is the largest dtype value a reader knows (tables indexed by
// dtype are this long plus one).
const LastDType = Q6_K

// QK is the number of weights in one quantisation block.
const QK = 32

// QKK is the number of weights in one K-quant super-block.
const QKK = 256

// Size is the size of one element in bytes, 0 for block types and unknown values.
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case F16, BF16:
		return 2
	}
	return 0
}

// Valid reports whether d is a dtype a v1 reader can load.
func (d DType) Valid() bool { return d.BlockBytes() > 0 }

// Quantized reports whether d is a block type.
func (d DType) Quantized() bool { return d == Q8_0 || d == Q4_0 || d.KQuant() }

// KQuant reports whether d is a K-quant: blocks of QKK, GGUF's bytes.
func (d DType) KQuant() bool { return d == Q4_K || d == Q6_K }

// BlockElems is the number of elements one block holds (1 for plain types).
func (d DType) BlockElems() int {
	switch {
	case d.KQuant():
		return QKK
	case d.Quantized():
		return QK
	}
	return 1
}

// BlockBytes is the size of one block (of one element for plain types).
func (d DType) BlockBytes() int {
	switch d {
	case Q8_0:
		return 2 + QK
	case Q4_0:
		return 2 + QK/2
	case Q4_K:
		return 4 + 12 + QKK/2
	case Q6_K:
		return QKK/2 + QKK/4 + QKK/16 + 2
	}
	return d.Size()
}

// RowBytes is the size of a row of n elements; ok is false when n is not a
// whole number of blocks.
func (d DType) RowBytes(n int) (int, bool) {
	be := d.BlockElems()
	if be == 0 || n%be != 0 || d.BlockBytes() == 0 {
		return 0, false
	}
	return n / be * d.BlockBytes(), true
}

// TensorBytes is the size of a tensor of the given shape: rows of its last
// dimension. ok is false when the last dimension is not whole blocks.
func TensorBytes(d DType, shape []int) (int, bool) {
	if len(shape) == 0 {
		return d.RowBytes(1)
	}
	rb, ok := d.RowBytes(shape[len(shape)-1])
	rows := 1
	for _, x := range shape[:len(shape)-1] {
		rows *= x
	}
	return rows * rb, ok
}

func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	case Q8_0:
		return "q8_0"
	case Q4_0:
		return "q4_0"
	case Q4_K:
		return "q4_k"
	case Q6_K:
		return "q6_k"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// ParseDType parses a dtype name as written on the command line ("bf16", "F16", ...).
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "f32", "float32", "fp32":
		return F32, nil
	case "f16", "float16", "fp16":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "q8_0":
		return Q8_0, nil
	case "q4_0":
		return Q4_0, nil
	case "q4_k":
		return Q4_K, nil
	case "q6_k":
		return Q6_K, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (want bf16, f16, f32, q8_0, q4_0, q4_k or q6_k)", s)
}
