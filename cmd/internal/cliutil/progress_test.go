package cliutil

import (
	"strings"
	"testing"
	"time"
)

// Off a terminal a Progress prints a line every ProgressEvery with the
// count, the percentage and an estimate of the time left.
func TestProgressLinesOffTerminal(t *testing.T) {
	var out strings.Builder
	start := time.Now().Add(-10 * time.Second)
	p := &Progress{name: "convert", bytes: true, total: 4 << 20, start: start, last: start, lastLine: start, every: time.Second, out: &out, lineProgress: true}
	p.Add(1 << 20)
	got := out.String()
	for _, want := range []string{"convert: 1.00 MiB / 4.00 MiB (25 %)", "10s elapsed", "about 30s left"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line %q lacks %q", got, want)
		}
	}
	p.Add(1) // within the interval: no second line
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("printed more than one line within the interval: %q", out.String())
	}
	var zero Progress // a quiet command's no-op
	zero.Add(5)
	zero.SetTotal(3)
	zero.Done(true)
}
