package gguf

import "fmt"

// Type is a tensor's element type (ggml_type). The numbers are the file
// format's; removed ones (4, 5, 31-33, 36-38) are never reused.
type Type uint32

// The tensor types of the GGUF specification.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
)

// QK is the elements of a Q8_0/Q4_0 block, QKK of a K-quant super-block.
const (
	QK  = 32
	QKK = 256
)

type typeInfo struct {
	name       string
	blockElems int // elements per block (1 for plain types)
	blockBytes int // bytes per block
}

// types holds, per type, the block shape ggml defines (ggml-common.h; the
// same table as gguf-py's GGML_QUANT_SIZES). A file's tensor sizes follow
// from it, so a type missing here cannot be read at all.
var types = map[Type]typeInfo{
	F32:     {"F32", 1, 4},
	F16:     {"F16", 1, 2},
	Q4_0:    {"Q4_0", QK, 2 + QK/2},
	Q4_1:    {"Q4_1", QK, 2 + 2 + QK/2},
	Q5_0:    {"Q5_0", QK, 2 + 4 + QK/2},
	Q5_1:    {"Q5_1", QK, 2 + 2 + 4 + QK/2},
	Q8_0:    {"Q8_0", QK, 2 + QK},
	Q8_1:    {"Q8_1", QK, 4 + 4 + QK},
	Q2_K:    {"Q2_K", QKK, 2 + 2 + QKK/16 + QKK/4},
	Q3_K:    {"Q3_K", QKK, 2 + QKK/4 + QKK/8 + 12},
	Q4_K:    {"Q4_K", QKK, 2 + 2 + 12 + QKK/2},
	Q5_K:    {"Q5_K", QKK, 2 + 2 + 12 + QKK/8 + QKK/2},
	Q6_K:    {"Q6_K", QKK, QKK/2 + QKK/4 + QKK/16 + 2},
	Q8_K:    {"Q8_K", QKK, 4 + QKK + QKK/8},
	IQ2_XXS: {"IQ2_XXS", QKK, 2 + QKK/4},
	IQ2_XS:  {"IQ2_XS", QKK, 2 + QKK/4 + QKK/32},
	IQ3_XXS: {"IQ3_XXS", QKK, 2 + QKK/4 + QKK/8},
	IQ1_S:   {"IQ1_S", QKK, 2 + QKK/8 + QKK/16},
	IQ4_NL:  {"IQ4_NL", QK, 2 + QK/2},
	IQ3_S:   {"IQ3_S", QKK, 2 + QKK/4 + QKK/8 + QKK/32 + 4},
	IQ2_S:   {"IQ2_S", QKK, 2 + QKK/4 + QKK/16},
	IQ4_XS:  {"IQ4_XS", QKK, 2 + 2 + QKK/2 + QKK/64},
	I8:      {"I8", 1, 1},
	I16:     {"I16", 1, 2},
	I32:     {"I32", 1, 4},
	I64:     {"I64", 1, 8},
	F64:     {"F64", 1, 8},
	IQ1_M:   {"IQ1_M", QKK, QKK/8 + QKK/16 + QKK/32},
	BF16:    {"BF16", 1, 2},
	TQ1_0:   {"TQ1_0", QKK, 2 + 4*13},
	TQ2_0:   {"TQ2_0", QKK, 2 + 64},
	MXFP4:   {"MXFP4", QK, 1 + QK/2},
}

// Known reports whether t is a type this package knows the size of.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// BlockElems is the number of elements of one block of t (1 for plain
// types, 0 for an unknown type).
func (t Type) BlockElems() int { return types[t].blockElems }

// BlockBytes is the size of one block of t in bytes (0 for an unknown type).
func (t Type) BlockBytes() int { return types[t].blockBytes }

func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// ValueType is the type of a metadata value (gguf_metadata_value_type).
type ValueType uint32

// The metadata value types.
const (
	Uint8   ValueType = 0
	Int8    ValueType = 1
	Uint16  ValueType = 2
	Int16   ValueType = 3
	Uint32  ValueType = 4
	Int32   ValueType = 5
	Float32 ValueType = 6
	Bool    ValueType = 7
	String  ValueType = 8
	Array   ValueType = 9
	Uint64  ValueType = 10
	Int64   ValueType = 11
	Float64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (v ValueType) String() string {
	if int(v) < len(valueTypeNames) {
		return valueTypeNames[v]
	}
	return fmt.Sprintf("value type(%d)", uint32(v))
}

// size is the encoded size of a fixed-size value type; strings and arrays
// take at least 8 and 12 bytes (their length fields).
func (v ValueType) size() int {
	switch v {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64, String:
		return 8
	case Array:
		return 12
	}
	return 0
}
