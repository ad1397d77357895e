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
)

// QK is the number of weights in one quantisation block.
const QK = 32

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
func (d DType) Quantized() bool { return d == Q8_0 || d == Q4_0 }

// BlockElems is the number of elements one block holds (1 for plain types).
func (d DType) BlockElems() int {
	if d.Quantized() {
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
	}
	return 0, fmt.Errorf("unknown dtype %q (want bf16, f16, f32, q8_0 or q4_0)", s)
}
