package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"sort"
	"unicode/utf8"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment of a file without general.alignment.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets a file's data alignment.
const KeyAlignment = "general.alignment"

// Caps a reader applies before it sizes anything by a value from the file.
// Real files stay far below them: a few hundred keys, a few thousand
// tensors, vocabularies of a few hundred thousand strings.
const (
	maxKVs       = 1 << 20
	maxTensors   = 1 << 20
	maxKeyLen    = 1<<16 - 1 // the specification's limit
	maxStringLen = 64 << 20  // a chat template or a charsmap, not a weight
	maxArrayLen  = 1 << 26
	maxDepth     = 8  // arrays of arrays of ...
	maxNameLen   = 64 // the specification's limit on tensor names
	maxDims      = 4  // ggml's GGML_MAX_DIMS
	maxElems     = 1 << 48
	maxAlignment = 1 << 30
)

// File is a parsed GGUF file: its metadata in file order and its tensors,
// whose Data are views into the file's bytes.
type File struct {
	Path      string // for messages
	Version   uint32
	Alignment int64
	KV        []KV
	Tensors   []Tensor
	// DataOffset is where the tensor data section starts; Size is the
	// file's size.
	DataOffset int64
	Size       int64

	keys    map[string]int
	names   map[string]int
	mapping []byte
	file    *os.File
}

// KV is one metadata key/value pair; Off is where its key starts.
type KV struct {
	Key   string
	Value Value
	Off   int64
}

// Tensor is one tensor: Dims lists its dimensions as GGUF does, fastest
// varying first (Dims[0] is the length of a row), and Data holds its bytes.
type Tensor struct {
	Name    string
	Type    Type
	Dims    []uint64
	Offset  int64 // absolute offset of the data in the file
	Size    int64 // bytes of data
	Data    []byte
	InfoOff int64 // where its tensor info starts
}

// Elems is the number of elements of the tensor.
func (t *Tensor) Elems() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// Shape is the tensor's shape in row-major order, slowest varying first
// (as numpy and safetensors list it): Dims reversed.
func (t *Tensor) Shape() []int {
	s := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		s[len(s)-1-i] = int(d)
	}
	return s
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Lookup returns the metadata pair of key, or nil.
func (f *File) Lookup(key string) *KV {
	i, ok := f.keys[key]
	if !ok {
		return nil
	}
	return &f.KV[i]
}

// Tensor returns the named tensor, or nil.
func (f *File) Tensor(name string) *Tensor {
	i, ok := f.names[name]
	if !ok {
		return nil
	}
	return &f.Tensors[i]
}

// Open maps the file at path and parses it. Close releases the mapping;
// tensor data must not be used after it. A named pipe or a device is
// refused before it is opened.
func Open(path string) (*File, error) {
	fd, err := tmpfile.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fd.Stat()
	if err != nil {
		fd.Close()
		return nil, err
	}
	data, err := format.MapFile(fd, st.Size())
	if err != nil {
		fd.Close()
		return nil, err
	}
	f, err := Parse(path, data)
	if err != nil {
		format.Unmap(data)
		fd.Close()
		return nil, err
	}
	f.mapping, f.file = data, fd
	return f, nil
}

// Close releases what Open mapped; a File from Parse has nothing to release.
func (f *File) Close() error {
	var err error
	if f.mapping != nil {
		err = format.Unmap(f.mapping)
	}
	if f.file != nil {
		err = errors.Join(err, f.file.Close())
	}
	f.mapping, f.file = nil, nil
	return err
}

// reader walks the bytes of a file; every read checks the bytes left.
type reader struct {
	b    []byte
	pos  int
	path string
}

func (r *reader) fail(class error, off int, msg string, val any) error {
	return &FormatError{File: r.path, Off: int64(off), Msg: msg, Val: val, Err: class}
}

func (r *reader) left() uint64 { return uint64(len(r.b) - r.pos) }

// need checks that n more bytes are there for what.
func (r *reader) need(n uint64, what string) error {
	if n > r.left() {
		return r.fail(ErrTruncated, r.pos, fmt.Sprintf("%s needs %d bytes, the file has %d left", what, n, r.left()), nil)
	}
	return nil
}

func (r *reader) u32(what string) (uint32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(r.b[r.pos:])
	r.pos += 4
	return v, nil
}

func (r *reader) u64(what string) (uint64, error) {
	if err := r.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	return v, nil
}

// str reads a string of at most max bytes.
func (r *reader) str(what string, max uint64) (string, error) {
	return r.strAt(func() string { return what }, max)
}

// strAt is str with the description made only for an error: a vocabulary
// is hundreds of thousands of strings.
func (r *reader) strAt(what func() string, max uint64) (string, error) {
	at := r.pos
	if r.left() < 8 {
		return "", r.need(8, what()+" length")
	}
	n := binary.LittleEndian.Uint64(r.b[r.pos:])
	r.pos += 8
	if n > max {
		return "", r.fail(ErrBounds, at, fmt.Sprintf("%s length %d is over the cap of %d", what(), n, max), nil)
	}
	if n > r.left() {
		return "", r.fail(ErrTruncated, at, fmt.Sprintf("%s length %d, but the file has %d bytes left", what(), n, r.left()), nil)
	}
	s := string(r.b[r.pos : r.pos+int(n)])
	r.pos += int(n)
	return s, nil
}

// value reads a value of type t; depth counts the arrays it is inside.
func (r *reader) value(t ValueType, depth int, what string) (Value, error) {
	at := r.pos
	switch t {
	case String:
		s, err := r.str(what, maxStringLen)
		return Value{Type: String, v: s}, err
	case Array:
		return r.array(depth, what)
	}
	n := uint64(t.size())
	if n == 0 {
		return Value{}, r.fail(ErrType, at-4, fmt.Sprintf("%s has value type %d, not one of the specification's 0-12", what, uint32(t)), nil)
	}
	if err := r.need(n, what); err != nil {
		return Value{}, err
	}
	v := r.scalar(t, r.b[r.pos:])
	r.pos += int(n)
	if t == Bool {
		if b := r.b[at]; b > 1 {
			return Value{}, r.fail(ErrMalformed, at, fmt.Sprintf("%s: bool byte is %d, not 0 or 1", what, b), nil)
		}
	}
	return v, nil
}

// scalar decodes a fixed-size value from the front of b (long enough).
func (r *reader) scalar(t ValueType, b []byte) Value {
	le := binary.LittleEndian
	var x any
	switch t {
	case Uint8:
		x = b[0]
	case Int8:
		x = int8(b[0])
	case Uint16:
		x = le.Uint16(b)
	case Int16:
		x = int16(le.Uint16(b))
	case Uint32:
		x = le.Uint32(b)
	case Int32:
		x = int32(le.Uint32(b))
	case Float32:
		x = math.Float32frombits(le.Uint32(b))
	case Bool:
		x = b[0] == 1
	case Uint64:
		x = le.Uint64(b)
	case Int64:
		x = int64(le.Uint64(b))
	case Float64:
		x = math.Float64frombits(le.Uint64(b))
	}
	v, _ := MakeValue(x)
	return v
}

// array reads an array: element type, length, elements.
func (r *reader) array(depth int, what string) (Value, error) {
	at := r.pos
	if depth >= maxDepth {
		return Value{}, r.fail(ErrBounds, at, fmt.Sprintf("%s: arrays nested more than %d deep", what, maxDepth), nil)
	}
	et32, err := r.u32(what + " element type")
	if err != nil {
		return Value{}, err
	}
	et := ValueType(et32)
	min := uint64(et.size())
	if min == 0 {
		return Value{}, r.fail(ErrType, at, fmt.Sprintf("%s: array element type %d is not one of the specification's 0-12", what, et32), nil)
	}
	n, err := r.u64(what + " array length")
	if err != nil {
		return Value{}, err
	}
	if n > maxArrayLen {
		return Value{}, r.fail(ErrBounds, at+4, fmt.Sprintf("%s: array length %d is over the cap of %d", what, n, maxArrayLen), nil)
	}
	if n > r.left()/min {
		return Value{}, r.fail(ErrTruncated, at+4, fmt.Sprintf("%s: %d %v elements need at least %d bytes, the file has %d left", what, n, et, n*min, r.left()), nil)
	}
	count := int(n)
	switch et {
	case String:
		out := make([]string, count)
		for i := range out {
			if out[i], err = r.strAt(func() string { return fmt.Sprintf("%s[%d]", what, i) }, maxStringLen); err != nil {
				return Value{}, err
			}
		}
		return Value{Type: Array, Elem: String, v: out}, nil
	case Array:
		out := make([]Value, count)
		for i := range out {
			if out[i], err = r.array(depth+1, fmt.Sprintf("%s[%d]", what, i)); err != nil {
				return Value{}, err
			}
		}
		return Value{Type: Array, Elem: Array, v: out}, nil
	case Bool:
		for i := 0; i < count; i++ {
			if b := r.b[r.pos+i]; b > 1 {
				return Value{}, r.fail(ErrMalformed, r.pos+i, fmt.Sprintf("%s[%d]: bool byte is %d, not 0 or 1", what, i, b), nil)
			}
		}
	}
	v := decodeArray(et, r.b[r.pos:], count)
	r.pos += count * int(min)
	return v, nil
}

// decodeArray decodes n fixed-size elements of type t from the front of b
// (long enough).
func decodeArray(t ValueType, b []byte, n int) Value {
	le := binary.LittleEndian
	var x any
	switch t {
	case Uint8:
		x = append([]uint8(nil), b[:n]...)
	case Int8:
		x = elems(b, n, 1, func(e []byte) int8 { return int8(e[0]) })
	case Bool:
		x = elems(b, n, 1, func(e []byte) bool { return e[0] == 1 })
	case Uint16:
		x = elems(b, n, 2, le.Uint16)
	case Int16:
		x = elems(b, n, 2, func(e []byte) int16 { return int16(le.Uint16(e)) })
	case Uint32:
		x = elems(b, n, 4, le.Uint32)
	case Int32:
		x = elems(b, n, 4, func(e []byte) int32 { return int32(le.Uint32(e)) })
	case Float32:
		x = elems(b, n, 4, func(e []byte) float32 { return math.Float32frombits(le.Uint32(e)) })
	case Uint64:
		x = elems(b, n, 8, le.Uint64)
	case Int64:
		x = elems(b, n, 8, func(e []byte) int64 { return int64(le.Uint64(e)) })
	case Float64:
		x = elems(b, n, 8, func(e []byte) float64 { return math.Float64frombits(le.Uint64(e)) })
	}
	v, _ := MakeValue(x)
	return v
}

// elems decodes n elements of size bytes each from the front of b.
func elems[T any](b []byte, n, size int, dec func([]byte) T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = dec(b[size*i:])
	}
	return s
}

// validKey applies the specification's rule for keys: non-empty ASCII. Its
// lower_snake_case advice is not enforced: files in use break it.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Parse reads a whole GGUF file held in b; path names it in errors. The
// tensors' Data are views into b.
func Parse(path string, b []byte) (*File, error) {
	r := &reader{b: b, path: path}
	if len(b) < 4 {
		return nil, r.fail(ErrTruncated, 0, fmt.Sprintf("file is %d bytes, shorter than the 4-byte magic", len(b)), nil)
	}
	if string(b[:4]) != Magic {
		return nil, r.fail(ErrMagic, 0, fmt.Sprintf("magic is %q, want %q", b[:4], Magic), nil)
	}
	r.pos = 4
	f := &File{Path: path, Size: int64(len(b)), Alignment: DefaultAlignment, keys: map[string]int{}, names: map[string]int{}}
	var err error
	if f.Version, err = r.u32("version"); err != nil {
		return nil, err
	}
	switch v := f.Version; {
	case v == 2 || v == 3:
	case v == 1:
		return nil, r.fail(ErrVersion, 4, "version 1 (32-bit counts) is not supported; only versions 2 and 3 are", nil)
	case bits.ReverseBytes32(v) >= 1 && bits.ReverseBytes32(v) <= 3:
		return nil, r.fail(ErrVersion, 4, fmt.Sprintf("version field %#x is a big-endian file's; only little-endian files are supported", v), nil)
	default:
		return nil, r.fail(ErrVersion, 4, fmt.Sprintf("version %d is not supported; only versions 2 and 3 are", v), nil)
	}
	nTensors, err := r.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := r.u64("metadata count")
	if err != nil {
		return nil, err
	}
	// A key/value takes at least 8 (key length) + 1 + 4 (type) + 1 bytes,
	// a tensor info 8 (name length) + 1 + 4 (dims) + 8 + 4 (type) + 8:
	// counts the bytes left cannot hold are refused before allocating.
	if nKV > maxKVs || nKV > r.left()/14 {
		return nil, r.fail(ErrBounds, 16, fmt.Sprintf("metadata count %d is over the cap of %d or more than %d bytes left can hold", nKV, maxKVs, r.left()), nil)
	}
	if nTensors > maxTensors || nTensors > r.left()/33 {
		return nil, r.fail(ErrBounds, 8, fmt.Sprintf("tensor count %d is over the cap of %d or more than %d bytes left can hold", nTensors, maxTensors, r.left()), nil)
	}
	f.KV = make([]KV, 0, nKV)
	for i := uint64(0); i < nKV; i++ {
		at := r.pos
		key, err := r.str(fmt.Sprintf("metadata key %d", i), maxKeyLen)
		if err != nil {
			return nil, err
		}
		if !validKey(key) {
			return nil, r.fail(ErrMalformed, at, fmt.Sprintf("metadata key %d %q is empty or not printable ASCII", i, key), nil)
		}
		if j, dup := f.keys[key]; dup {
			return nil, r.fail(ErrMalformed, at, fmt.Sprintf("metadata key %q appears twice (first at offset %d)", key, f.KV[j].Off), nil)
		}
		t, err := r.u32(fmt.Sprintf("type of %q", key))
		if err != nil {
			return nil, err
		}
		v, err := r.value(ValueType(t), 0, fmt.Sprintf("value of %q", key))
		if err != nil {
			return nil, err
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v, Off: int64(at)})
	}
	if kv := f.Lookup(KeyAlignment); kv != nil {
		a, ok := kv.Value.Any().(uint32)
		if !ok {
			return nil, r.fail(ErrType, int(kv.Off), fmt.Sprintf("%s is a %v, must be a uint32", KeyAlignment, kv.Value.Type), nil)
		}
		if a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return nil, r.fail(ErrAlign, int(kv.Off), fmt.Sprintf("%s %d is not a power of two up to %d", KeyAlignment, a, maxAlignment), nil)
		}
		f.Alignment = int64(a)
	}
	f.Tensors = make([]Tensor, 0, nTensors)
	for i := uint64(0); i < nTensors; i++ {
		t, err := r.tensorInfo(f, int(i))
		if err != nil {
			return nil, err
		}
		f.names[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	// The data section starts at the next multiple of the alignment.
	f.DataOffset = int64(r.pos)
	if rem := f.DataOffset % f.Alignment; rem != 0 {
		f.DataOffset += f.Alignment - rem
	}
	if len(f.Tensors) == 0 {
		return f, nil
	}
	if f.DataOffset > f.Size {
		return nil, r.fail(ErrTruncated, r.pos, fmt.Sprintf("the tensor data section would start at %d, past the end of the file", f.DataOffset), nil)
	}
	return f, r.placeTensors(f)
}

// tensorInfo reads tensor info i: name, dimensions, type and offset, and
// checks all but where the data lies.
func (r *reader) tensorInfo(f *File, i int) (Tensor, error) {
	at := r.pos
	name, err := r.str(fmt.Sprintf("tensor %d name", i), maxNameLen)
	if err != nil {
		return Tensor{}, err
	}
	if name == "" || !utf8.ValidString(name) {
		return Tensor{}, r.fail(ErrMalformed, at, fmt.Sprintf("tensor %d name %q is empty or not UTF-8", i, name), nil)
	}
	if j, dup := f.names[name]; dup {
		return Tensor{}, r.fail(ErrMalformed, at, fmt.Sprintf("tensor %q appears twice (first at offset %d)", name, f.Tensors[j].InfoOff), nil)
	}
	what := fmt.Sprintf("tensor %q", name)
	dimsAt := r.pos
	nd, err := r.u32(what + " dimension count")
	if err != nil {
		return Tensor{}, err
	}
	if nd < 1 || nd > maxDims {
		return Tensor{}, r.fail(ErrBounds, dimsAt, fmt.Sprintf("%s has %d dimensions, want 1 to %d", what, nd, maxDims), nil)
	}
	t := Tensor{Name: name, Dims: make([]uint64, nd), InfoOff: int64(at)}
	elems := uint64(1)
	for d := range t.Dims {
		dat := r.pos
		if t.Dims[d], err = r.u64(what + " dimension"); err != nil {
			return Tensor{}, err
		}
		if t.Dims[d] == 0 || t.Dims[d] > maxElems/elems {
			return Tensor{}, r.fail(ErrBounds, dat, fmt.Sprintf("%s dimension %d is %d: zero, or the tensor would have over %d elements", what, d, t.Dims[d], uint64(maxElems)), nil)
		}
		elems *= t.Dims[d]
	}
	typeAt := r.pos
	typ, err := r.u32(what + " type")
	if err != nil {
		return Tensor{}, err
	}
	t.Type = Type(typ)
	if !t.Type.Known() {
		return Tensor{}, r.fail(ErrType, typeAt, fmt.Sprintf("%s has tensor type %d, which this reader does not know", what, typ), nil)
	}
	if be := uint64(t.Type.BlockElems()); t.Dims[0]%be != 0 {
		return Tensor{}, r.fail(ErrBounds, dimsAt+4, fmt.Sprintf("%s: rows of %d elements are not whole %v blocks of %d", what, t.Dims[0], t.Type, be), nil)
	}
	offAt := r.pos
	off, err := r.u64(what + " data offset")
	if err != nil {
		return Tensor{}, err
	}
	if off%uint64(f.Alignment) != 0 {
		return Tensor{}, r.fail(ErrAlign, offAt, fmt.Sprintf("%s data offset %d is not a multiple of the alignment %d", what, off, f.Alignment), nil)
	}
	// Offsets are relative to the data section until placeTensors.
	if off > math.MaxInt64/2 {
		return Tensor{}, r.fail(ErrBounds, offAt, fmt.Sprintf("%s data offset %d is beyond any file", what, off), nil)
	}
	t.Offset = int64(off)
	size := elems / uint64(t.Type.BlockElems()) * uint64(t.Type.BlockBytes())
	if size > uint64(len(r.b)) {
		return Tensor{}, r.fail(ErrBounds, dimsAt, fmt.Sprintf("%s: shape %v of %v is %d bytes, more than the whole file (%d)", what, t.Dims, t.Type, size, len(r.b)), nil)
	}
	t.Size = int64(size)
	return t, nil
}

// placeTensors turns the tensors' offsets absolute and checks that each
// one's data lies in the file and overlaps no other's.
func (r *reader) placeTensors(f *File) error {
	avail := f.Size - f.DataOffset
	order := make([]int, len(f.Tensors))
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > avail || t.Size > avail-t.Offset {
			return r.fail(ErrBounds, int(t.InfoOff), fmt.Sprintf("tensor %q data [%d, %d) of the data section ends past the end of the file (%d bytes from offset %d): truncated?", t.Name, t.Offset, t.Offset+t.Size, avail, f.DataOffset), nil)
		}
		t.Offset += f.DataOffset
		t.Data = r.b[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, t := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if t.Offset < p.Offset+p.Size {
			return r.fail(ErrBounds, int(t.InfoOff), fmt.Sprintf("tensor %q data [%d, %d) overlaps tensor %q [%d, %d)", t.Name, t.Offset, t.Offset+t.Size, p.Name, p.Offset, p.Offset+p.Size), nil)
		}
	}
	return nil
}
