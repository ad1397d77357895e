package format

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that is not a pack is refused with what it looks like, not with
// "bad magic at offset 0".
func TestOpenSaysWhatAFileIs(t *testing.T) {
	dir := t.TempDir()
	st := make([]byte, 8, 64)
	hdr := `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	binary.LittleEndian.PutUint64(st, uint64(len(hdr)))
	st = append(append(st, hdr...), 0, 0, 0, 0)
	model := filepath.Join(dir, "model")
	os.Mkdir(model, 0o755)
	os.WriteFile(filepath.Join(model, "config.json"), []byte("{}"), 0o644)
	os.Mkdir(filepath.Join(dir, "plain"), 0o755)
	pack, _ := os.ReadFile(writeSmall(t, t.TempDir(), nil, 16))
	crlf := strings.Replace(string(pack[:200]), "\r\n", "\n", 1)
	cases := []struct {
		name string
		data []byte // nil: a directory
		want string
	}{
		{"model.safetensors", st, "a safetensors file"},
		{"qa.prof", []byte(`{"format":"sipack-profile","version":1,"task":"qa"}`), "a sipack profile"},
		{"m.gguf", []byte("GGUF\x03\x00\x00\x00\x00\x00"), "a GGUF file: convert it first, sipack convert " + filepath.Join(dir, "m.gguf") + " -o PACK)"},
		{"notes.txt", []byte("definitely not a pack\nbut text ✓\n"), "text"},
		{"empty.sip", []byte{}, "an empty file"},
		{"config.json", []byte(`  {"hidden_size": 8}`), "JSON text"},
		{"p.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), "a PNG image"},
		{"crlf.sip", []byte(crlf), "a .sip pack whose first bytes were changed"},
		{"bin", []byte{0, 1, 2, 3, 0xff, 0xfe, 9, 9, 9, 9}, "data of another format"},
		{"model", nil, "a model directory: convert it first, sipack convert " + model},
		{"plain", nil, "a directory"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if c.data != nil {
			os.WriteFile(path, c.data, 0o644)
		}
		_, err := Open(path, OpenOptions{HeaderOnly: true})
		want := path + ": not a .sip pack (looks like: " + c.want
		if !errors.Is(err, ErrMagic) || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open %s: %v; want ErrMagic and %q", c.name, err, want)
		}
	}
}
