package tokenizer

import "testing"

func TestTextStreamHoldsPartialUTF8(t *testing.T) {
	var ts TextStream
	s := "ñ→😀"
	b := []byte(s)
	var got string
	for i := range b {
		got += ts.Push(b[i : i+1])
		if i == 0 && got != "" {
			t.Fatalf("emitted %q before the character was complete", got)
		}
	}
	got += ts.Flush()
	if got != s {
		t.Fatalf("streamed %q, want %q", got, s)
	}
}
