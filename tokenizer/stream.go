package tokenizer

import "unicode/utf8"

// TextStream turns token bytes into text, holding back an incomplete UTF-8
// sequence until its last byte arrives.
type TextStream struct {
	buf  []byte
	last byte // last byte emitted
}

// EndsWithNewline reports whether the text emitted so far, ending with tail,
// ends with a newline.
func (ts *TextStream) EndsWithNewline(tail string) bool {
	if tail != "" {
		return tail[len(tail)-1] == '\n'
	}
	return ts.last == '\n'
}

// Push adds a token's bytes and returns the text that is complete.
func (ts *TextStream) Push(b []byte) string {
	ts.buf = append(ts.buf, b...)
	n := len(ts.buf)
	// Find the longest prefix that does not end inside a UTF-8 sequence.
	cut := n
	for i := n - 1; i >= 0 && i >= n-3; i-- {
		c := ts.buf[i]
		if c < 0x80 {
			break
		}
		if c >= 0xc0 { // a lead byte: is its sequence complete?
			need := 2
			if c >= 0xe0 {
				need = 3
			}
			if c >= 0xf0 {
				need = 4
			}
			if n-i < need {
				cut = i
			}
			break
		}
	}
	out := ts.buf[:cut]
	if len(out) > 0 {
		ts.last = out[len(out)-1]
	}
	rest := append([]byte(nil), ts.buf[cut:]...)
	ts.buf = rest
	if !utf8.Valid(out) {
		return string([]rune(string(out)))
	}
	return string(out)
}

// Flush returns whatever is held back.
func (ts *TextStream) Flush() string {
	s := string(ts.buf)
	ts.buf = nil
	return s
}
