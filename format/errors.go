package format

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every *FormatError wraps one of them, so callers test the
// class of a failure with errors.Is and never match message text.
var (
	ErrMagic     = errors.New("sip: not a .sip pack (bad magic)")
	ErrVersion   = errors.New("sip: unsupported format version")
	ErrTruncated = errors.New("sip: file is truncated")
	ErrBounds    = errors.New("sip: offset or length out of bounds")
	ErrAlign     = errors.New("sip: misaligned section or tensor")
	ErrIndex     = errors.New("sip: malformed index")
	ErrChecksum  = errors.New("sip: checksum mismatch")
	ErrShape     = errors.New("sip: tensor shape does not match the config")
	ErrDType     = errors.New("sip: unknown or unsupported dtype")
)

// FormatError reports a problem at a byte offset of a pack, in the style of
// debug/elf. Val, when set, is the offending value.
type FormatError struct {
	File    string // path of the pack, when known
	Off     int64  // byte offset the problem was found at (-1: not applicable)
	Section string // "preamble", "index", "dense", "ffn"
	Msg     string
	Val     any
	Err     error // the sentinel class
}

func (e *FormatError) Error() string {
	s := "sip: "
	if e.File != "" {
		s += e.File + ": "
	}
	if e.Section != "" {
		s += e.Section + ": "
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

func formatErr(class error, section string, off int64, msg string, val any) *FormatError {
	return &FormatError{Off: off, Section: section, Msg: msg, Val: val, Err: class}
}
