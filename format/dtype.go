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
	Q8_0 DType = 8 // reserved for block quantisation, not written by v1
	Q4_0 DType = 9 // reserved for block quantisation, not written by v1
)

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
func (d DType) Valid() bool { return d.Size() > 0 }

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
	}
	return 0, fmt.Errorf("unknown dtype %q (want bf16, f16 or f32)", s)
}
