package gguf

import (
	"fmt"
	"math"
)

// Value is one metadata value. Scalars hold a uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool or string; arrays a
// slice of one of those ([]string for strings) or, nested, a []Value.
type Value struct {
	Type ValueType
	Elem ValueType // for an array, the type of its elements
	v    any
}

// MakeValue wraps a Go value as a metadata value: one of the scalar types
// above, a slice of one of them, or a []Value of arrays (nested). ok is
// false for any other Go type.
func MakeValue(x any) (Value, bool) {
	switch x := x.(type) {
	case uint8:
		return Value{Type: Uint8, v: x}, true
	case int8:
		return Value{Type: Int8, v: x}, true
	case uint16:
		return Value{Type: Uint16, v: x}, true
	case int16:
		return Value{Type: Int16, v: x}, true
	case uint32:
		return Value{Type: Uint32, v: x}, true
	case int32:
		return Value{Type: Int32, v: x}, true
	case uint64:
		return Value{Type: Uint64, v: x}, true
	case int64:
		return Value{Type: Int64, v: x}, true
	case float32:
		return Value{Type: Float32, v: x}, true
	case float64:
		return Value{Type: Float64, v: x}, true
	case bool:
		return Value{Type: Bool, v: x}, true
	case string:
		return Value{Type: String, v: x}, true
	case []uint8:
		return Value{Type: Array, Elem: Uint8, v: x}, true
	case []int8:
		return Value{Type: Array, Elem: Int8, v: x}, true
	case []uint16:
		return Value{Type: Array, Elem: Uint16, v: x}, true
	case []int16:
		return Value{Type: Array, Elem: Int16, v: x}, true
	case []uint32:
		return Value{Type: Array, Elem: Uint32, v: x}, true
	case []int32:
		return Value{Type: Array, Elem: Int32, v: x}, true
	case []uint64:
		return Value{Type: Array, Elem: Uint64, v: x}, true
	case []int64:
		return Value{Type: Array, Elem: Int64, v: x}, true
	case []float32:
		return Value{Type: Array, Elem: Float32, v: x}, true
	case []float64:
		return Value{Type: Array, Elem: Float64, v: x}, true
	case []bool:
		return Value{Type: Array, Elem: Bool, v: x}, true
	case []string:
		return Value{Type: Array, Elem: String, v: x}, true
	case []Value:
		for _, e := range x {
			if e.Type != Array {
				return Value{}, false
			}
		}
		return Value{Type: Array, Elem: Array, v: x}, true
	}
	return Value{}, false
}

// Any is the Go value held (see Value).
func (v Value) Any() any { return v.v }

// Uint is an integer value of any width as a uint64; ok is false for a
// negative value or a value that is not an integer.
func (v Value) Uint() (uint64, bool) {
	switch x := v.v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8, int16, int32, int64:
		i, _ := v.Int()
		return uint64(i), i >= 0
	}
	return 0, false
}

// Int is an integer value of any width as an int64; ok is false for a
// uint64 above the int64 range or a value that is not an integer.
func (v Value) Int() (int64, bool) {
	switch x := v.v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8, uint16, uint32, uint64:
		u, _ := v.Uint()
		return int64(u), u <= math.MaxInt64
	}
	return 0, false
}

// Float is a float32 or float64 value as a float64.
func (v Value) Float() (float64, bool) {
	switch x := v.v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Bool is a bool value.
func (v Value) Bool() (bool, bool) {
	b, ok := v.v.(bool)
	return b, ok
}

// Str is a string value.
func (v Value) Str() (string, bool) {
	s, ok := v.v.(string)
	return s, ok
}

// Strings is an array of strings.
func (v Value) Strings() ([]string, bool) {
	s, ok := v.v.([]string)
	return s, ok
}

// Ints is an array of integers of any width as int64s; ok is false for
// another array or a uint64 element above the int64 range.
func (v Value) Ints() ([]int64, bool) {
	if v.Type != Array {
		return nil, false
	}
	n := v.Len()
	out := make([]int64, n)
	for i := 0; i < n; i++ {
		x, ok := v.Index(i).Int()
		if !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// Floats is an array of float32 or float64 values as float64s.
func (v Value) Floats() ([]float64, bool) {
	switch x := v.v.(type) {
	case []float32:
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out, true
	case []float64:
		return append([]float64(nil), x...), true
	}
	return nil, false
}

// Len is the number of elements of an array (0 for a scalar).
func (v Value) Len() int {
	switch x := v.v.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float32:
		return len(x)
	case []float64:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []Value:
		return len(x)
	}
	return 0
}

// Index is element i of an array as a Value (the zero Value when out of
// range or not an array).
func (v Value) Index(i int) Value {
	if i < 0 || i >= v.Len() {
		return Value{}
	}
	var e any
	switch x := v.v.(type) {
	case []uint8:
		e = x[i]
	case []int8:
		e = x[i]
	case []uint16:
		e = x[i]
	case []int16:
		e = x[i]
	case []uint32:
		e = x[i]
	case []int32:
		e = x[i]
	case []uint64:
		e = x[i]
	case []int64:
		e = x[i]
	case []float32:
		e = x[i]
	case []float64:
		e = x[i]
	case []bool:
		e = x[i]
	case []string:
		e = x[i]
	case []Value:
		return x[i]
	}
	out, _ := MakeValue(e)
	return out
}

// String describes the value briefly: scalars in full, strings up to 64
// bytes, arrays by element type and length.
func (v Value) String() string {
	switch x := v.v.(type) {
	case string:
		if len(x) > 64 {
			return fmt.Sprintf("%q… (%d bytes)", x[:64], len(x))
		}
		return fmt.Sprintf("%q", x)
	case nil:
		return "<none>"
	}
	if v.Type == Array {
		return fmt.Sprintf("[%d × %v]", v.Len(), v.Elem)
	}
	return fmt.Sprint(v.v)
}
