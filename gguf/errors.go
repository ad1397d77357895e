package gguf

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every *FormatError wraps one of them, so callers test the
// class of a failure with errors.Is and never match message text.
var (
	ErrMagic     = errors.New("gguf: not a GGUF file (bad magic)")
	ErrVersion   = errors.New("gguf: unsupported GGUF version")
	ErrTruncated = errors.New("gguf: file is truncated")
	ErrBounds    = errors.New("gguf: count, length or offset out of bounds")
	ErrAlign     = errors.New("gguf: misaligned tensor data")
	ErrType      = errors.New("gguf: unknown or mismatched type")
	ErrMalformed = errors.New("gguf: malformed file")
)

// FormatError reports a problem at a byte offset of a GGUF file, in the
// style of debug/elf. Val, when set, is the offending value.
type FormatError struct {
	File string // path of the file, when known
	Off  int64  // byte offset the problem was found at (-1: not applicable)
	Msg  string
	Val  any
	Err  error // the sentinel class
}

func (e *FormatError) Error() string {
	s := "gguf: "
	if e.File != "" {
		s += e.File + ": "
	}
	s += e.Msg
	if e.Val != nil {
		s += fmt.Sprintf(" (%v)", e.Val)
	}
	if e.Off >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Off)
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }
