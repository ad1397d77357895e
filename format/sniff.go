package format

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// NotPackError is the error for a file that is not a pack at all: its text
// says what the file looks like by its first bytes (a checkpoint, a
// profile, a GGUF file...) instead of "bad magic at offset 0", since a file
// without the magic is not a damaged pack. It wraps the *FormatError
// (ErrMagic, section "preamble") that callers test for.
type NotPackError struct {
	*FormatError
	LooksLike string
}

func (e *NotPackError) Error() string {
	return "sip: " + e.File + ": not a .sip pack (looks like: " + e.LooksLike + ")"
}

func (e *NotPackError) Unwrap() error { return e.FormatError }

func notPack(path, what string) *NotPackError {
	fe := formatErr(ErrMagic, "preamble", 0, "bad magic", nil)
	fe.File = path
	return &NotPackError{FormatError: fe, LooksLike: what}
}

// notPackDir is the error for a directory given as a pack.
func notPackDir(path string) *NotPackError {
	what := "a directory"
	if _, err := os.Stat(filepath.Join(path, "config.json")); err == nil {
		what = "a model directory: convert it first, sipack convert " + path + " -o PACK"
	}
	return notPack(path, what)
}

// notPackFile is the error for a file without the magic: what it looks
// like by its first bytes head, and for a GGUF file the command that makes
// it a pack (a llama.cpp user's first try is sirun FILE.gguf).
func notPackFile(path string, head []byte, size int64) *NotPackError {
	what := looksLike(head, size)
	if what == "a GGUF file" {
		what += ": convert it first, sipack convert " + path + " -o PACK"
	}
	return notPack(path, what)
}

// looksLike names what a file that starts with head (its first bytes, 128
// are plenty) and holds size bytes is, among the files a user of sipack
// meets: "a safetensors file", "a sipack profile", "a GGUF file", "text"...
func looksLike(head []byte, size int64) string {
	le := binary.LittleEndian
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case size == 0:
		return "an empty file"
	case bytes.HasPrefix(head, []byte(Magic)):
		return "a .sip pack"
	case bytes.HasPrefix(head, []byte(Magic[:4])):
		return "a .sip pack whose first bytes were changed (a text-mode transfer?)"
	case len(head) < len(Magic) && strings.HasPrefix(Magic, string(head)):
		return "the first bytes of a .sip pack, cut short"
	case bytes.HasPrefix(head, []byte("GGUF")):
		return "a GGUF file"
	// safetensors: the header's length (8 bytes, little-endian), then the
	// JSON header itself.
	case len(head) > 8 && size > 8 && head[8] == '{' && le.Uint64(head) > 1 && le.Uint64(head) <= uint64(size-8):
		return "a safetensors file"
	// A profile is JSON whose first field is its format (profile.FileFormat).
	case bytes.HasPrefix(trimmed, []byte("{")) && bytes.Contains(head, []byte(`"sipack-profile"`)):
		return "a sipack profile"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "a PNG image"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "a zip archive (a PyTorch checkpoint?)"
	case len(head) > 1 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5:
		return "a Python pickle (a PyTorch checkpoint?)"
	case bytes.HasPrefix(trimmed, []byte("{")) || bytes.HasPrefix(trimmed, []byte("[")):
		return "JSON text"
	case isText(head):
		return "text"
	}
	return "data of another format"
}

// isText reports whether b is UTF-8 without control characters other than
// whitespace; a rune cut at the end of b is allowed.
func isText(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return false
		}
		b = b[n:]
	}
	return true
}
