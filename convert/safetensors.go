package convert

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nlpodyssey/safetensors"

	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/internal/tmpfile"
)

// maxHeaderSize caps a safetensors JSON header: a corrupt length must not make
// us allocate or parse gigabytes. Real headers are well under 1 MiB.
const maxHeaderSize = 64 << 20

// Tensor is one tensor of a checkpoint, its bytes a view into a mapped shard.
type Tensor struct {
	Name  string
	DType format.DType
	Shape []int
	Data  []byte
	File  string
	// Raw, where set, is the tensor in the K-quant RawDType as the GGUF
	// file stores it (rows in Data's order): a pack of that dtype copies
	// its rows instead of quantising Data again.
	Raw      []byte
	RawDType format.DType
}

// Checkpoint is the set of mapped safetensors shards of a model directory.
type Checkpoint struct {
	Tensors map[string]*Tensor
	maps    [][]byte
	files   []*os.File
}

// Close unmaps all shards.
func (c *Checkpoint) Close() error {
	var err error
	for _, m := range c.maps {
		err = errors.Join(err, format.Unmap(m))
	}
	for _, f := range c.files {
		err = errors.Join(err, f.Close())
	}
	c.maps, c.files = nil, nil
	return err
}

// OpenCheckpoint maps model.safetensors, or every shard named by
// model.safetensors.index.json, of dir.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	shards, err := shardFiles(dir)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Tensors: map[string]*Tensor{}}
	for _, path := range shards {
		if err := ck.addShard(path); err != nil {
			ck.Close()
			return nil, err
		}
	}
	return ck, nil
}

// shardFiles finds the checkpoint files of dir.
func shardFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	indexPath := filepath.Join(dir, "model.safetensors.index.json")
	raw, err := tmpfile.ReadFile(indexPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no model.safetensors and no model.safetensors.index.json", dir)
		}
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	if len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: empty weight_map", indexPath)
	}
	seen := map[string]bool{}
	var files []string
	for name, file := range index.WeightMap {
		// Shards must be plain file names inside dir: an index must not point elsewhere.
		if file != filepath.Base(file) || file == "." || file == ".." || strings.ContainsRune(file, os.PathSeparator) {
			return nil, fmt.Errorf("%s: tensor %q: shard %q is not a file name inside the model directory", indexPath, name, file)
		}
		if !seen[file] {
			seen[file] = true
			files = append(files, filepath.Join(dir, file))
		}
	}
	sort.Strings(files)
	return files, nil
}

func (ck *Checkpoint) addShard(path string) error {
	f, err := tmpfile.Open(path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	data, err := format.MapFile(f, st.Size())
	if err != nil {
		f.Close()
		return err
	}
	ck.maps = append(ck.maps, data)
	ck.files = append(ck.files, f)
	infos, err := ParseSafetensorsHeader(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// The library re-validates and gives zero-copy views into the mapping.
	st2, err := safetensors.Deserialize(data)
	if err != nil {
		return fmt.Errorf("%s: safetensors: %w", path, err)
	}
	for _, info := range infos {
		if _, dup := ck.Tensors[info.Name]; dup {
			return fmt.Errorf("%s: tensor %q appears in more than one shard", path, info.Name)
		}
		view, ok := st2.Tensor(info.Name)
		if !ok {
			return fmt.Errorf("%s: tensor %q missing from safetensors view", path, info.Name)
		}
		info.Data = view.Data()
		info.File = path
		ck.Tensors[info.Name] = info
	}
	return nil
}

// ParseSafetensorsHeader validates a whole safetensors file held in b and
// returns its tensors (Data unset). It enforces what the format implies and
// what a trusting reader gets wrong: a capped header length, a JSON object
// without duplicate keys, exactly two data offsets per tensor, shape × dtype
// size equal to the byte length, and tensors that tile the data area with no
// hole, no overlap and nothing after the last one.
func ParseSafetensorsHeader(b []byte) ([]*Tensor, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxHeaderSize {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d-byte cap", n, maxHeaderSize)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the file (%d bytes): truncated?", n, len(b))
	}
	header := b[8 : 8+n]
	dataLen := uint64(len(b)) - 8 - n

	dec := json.NewDecoder(bytes.NewReader(header))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	type entry struct {
		DType       string   `json:"dtype"`
		Shape       []uint64 `json:"shape"`
		DataOffsets []uint64 `json:"data_offsets"`
	}
	var out []*Tensor
	var spans [][3]uint64 // start, end, index into out
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("safetensors: header: %w", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("safetensors: header: key is not a string")
		}
		if seen[name] {
			return nil, fmt.Errorf("safetensors: duplicate entry %q in header", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			var meta map[string]string
			if err := dec.Decode(&meta); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__ must map strings to strings: %w", err)
			}
			continue
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets has %d values, want 2", name, len(e.DataOffsets))
		}
		start, end := e.DataOffsets[0], e.DataOffsets[1]
		if end < start || end > dataLen {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] outside the %d-byte data area", name, start, end, dataLen)
		}
		dt, size, err := safetensorsDType(e.DType)
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		elems := uint64(1)
		shape := make([]int, len(e.Shape))
		for i, d := range e.Shape {
			if d != 0 && elems > (1<<62)/d {
				return nil, fmt.Errorf("safetensors: tensor %q: shape %v overflows", name, e.Shape)
			}
			elems *= d
			shape[i] = int(d)
		}
		if elems*size != end-start {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v × %s is %d bytes, data_offsets span %d", name, e.Shape, e.DType, elems*size, end-start)
		}
		spans = append(spans, [3]uint64{start, end, uint64(len(out))})
		out = append(out, &Tensor{Name: name, DType: dt, Shape: shape})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("safetensors: trailing data after the header object")
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i][0] != spans[j][0] {
			return spans[i][0] < spans[j][0]
		}
		return spans[i][1] < spans[j][1]
	})
	pos := uint64(0)
	for _, s := range spans {
		name := out[s[2]].Name
		switch {
		case s[0] > pos:
			return nil, fmt.Errorf("safetensors: hole of %d bytes before tensor %q", s[0]-pos, name)
		case s[0] < pos:
			return nil, fmt.Errorf("safetensors: tensor %q overlaps the previous tensor", name)
		}
		pos = s[1]
	}
	if pos != dataLen {
		return nil, fmt.Errorf("safetensors: %d bytes after the last tensor", dataLen-pos)
	}
	return out, nil
}

// safetensorsDType maps a safetensors dtype name; only float types a pack can
// hold are accepted.
func safetensorsDType(s string) (format.DType, uint64, error) {
	switch s {
	case "F32":
		return format.F32, 4, nil
	case "F16":
		return format.F16, 2, nil
	case "BF16":
		return format.BF16, 2, nil
	}
	return 0, 0, fmt.Errorf("unsupported dtype %q (want F32, F16 or BF16)", s)
}
