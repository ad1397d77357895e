package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// Writer builds a GGUF file in memory: metadata in the order set, tensors
// in the order added, each tensor's data at the next multiple of the
// alignment. It is small on purpose: tests and tools write model-sized
// files with it, never untrusted ones.
type Writer struct {
	// Version is the version written (0: 3).
	Version uint32
	kvs     []wkv
	tensors []wtensor
	align   int64
}

type wkv struct {
	key string
	v   Value
}

type wtensor struct {
	name string
	typ  Type
	dims []uint64
	data []byte
}

// Set sets key to x (see MakeValue for the Go types accepted), replacing
// an earlier value of key in place. A uint32 general.alignment sets the
// alignment the tensors are written at.
func (w *Writer) Set(key string, x any) error {
	v, ok := MakeValue(x)
	if !ok {
		return fmt.Errorf("gguf: key %q: cannot store a %T", key, x)
	}
	if key == KeyAlignment {
		a, ok := x.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("gguf: %s must be a uint32 power of two, got %v", KeyAlignment, x)
		}
		w.align = int64(a)
	}
	for i := range w.kvs {
		if w.kvs[i].key == key {
			w.kvs[i].v = v
			return nil
		}
	}
	w.kvs = append(w.kvs, wkv{key, v})
	return nil
}

// AddTensor adds a tensor of type t with dimensions dims (fastest varying
// first, as GGUF lists them) and its data, which must be exactly its size.
func (w *Writer) AddTensor(name string, t Type, dims []uint64, data []byte) error {
	if !t.Known() {
		return fmt.Errorf("gguf: tensor %q: unknown type %v", name, t)
	}
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	if len(dims) == 0 || dims[0]%uint64(t.BlockElems()) != 0 || uint64(len(data)) != n/uint64(t.BlockElems())*uint64(t.BlockBytes()) {
		return fmt.Errorf("gguf: tensor %q: %d bytes do not hold a %v tensor of dimensions %v", name, len(data), t, dims)
	}
	w.tensors = append(w.tensors, wtensor{name, t, append([]uint64(nil), dims...), data})
	return nil
}

func (w *Writer) alignment() int64 {
	if w.align == 0 {
		return DefaultAlignment
	}
	return w.align
}

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	var h bytes.Buffer
	le := binary.LittleEndian
	h.WriteString(Magic)
	v := w.Version
	if v == 0 {
		v = 3
	}
	binary.Write(&h, le, v)
	binary.Write(&h, le, uint64(len(w.tensors)))
	binary.Write(&h, le, uint64(len(w.kvs)))
	for _, kv := range w.kvs {
		putString(&h, kv.key)
		binary.Write(&h, le, uint32(kv.v.Type))
		putValue(&h, kv.v)
	}
	align := w.alignment()
	pad := func(n int64) int64 { return (align - n%align) % align }
	var off int64
	for _, t := range w.tensors {
		putString(&h, t.name)
		binary.Write(&h, le, uint32(len(t.dims)))
		for _, d := range t.dims {
			binary.Write(&h, le, d)
		}
		binary.Write(&h, le, uint32(t.typ))
		binary.Write(&h, le, uint64(off))
		off += int64(len(t.data))
		off += pad(off)
	}
	h.Write(make([]byte, pad(int64(h.Len()))))
	total, err := out.Write(h.Bytes())
	n := int64(total)
	for _, t := range w.tensors {
		if err != nil {
			return n, err
		}
		k, err2 := out.Write(t.data)
		n += int64(k)
		if err = err2; err == nil {
			k, err = out.Write(make([]byte, pad(int64(len(t.data)))))
			n += int64(k)
		}
	}
	return n, err
}

// Bytes is the file as WriteTo writes it.
func (w *Writer) Bytes() []byte {
	var b bytes.Buffer
	w.WriteTo(&b)
	return b.Bytes()
}

// WriteFile writes the file to path.
func (w *Writer) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func putString(b *bytes.Buffer, s string) {
	binary.Write(b, binary.LittleEndian, uint64(len(s)))
	b.WriteString(s)
}

// putValue writes v's encoding, without its type.
func putValue(b *bytes.Buffer, v Value) {
	le := binary.LittleEndian
	switch x := v.v.(type) {
	case string:
		putString(b, x)
	case bool:
		if x {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
	case float32:
		binary.Write(b, le, math.Float32bits(x))
	case float64:
		binary.Write(b, le, math.Float64bits(x))
	case uint8, int8, uint16, int16, uint32, int32, uint64, int64:
		binary.Write(b, le, x)
	default: // an array
		binary.Write(b, le, uint32(v.Elem))
		binary.Write(b, le, uint64(v.Len()))
		for i := 0; i < v.Len(); i++ {
			putValue(b, v.Index(i))
		}
	}
}
