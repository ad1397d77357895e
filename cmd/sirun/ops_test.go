package main

import (
	"strings"
	"testing"
)

// TestBenchOps: `sirun bench --ops PACK` prints a breakdown of a decode
// step, dense and selective, with the FFN and the attention matmuls among
// the operations (times are never asserted).
func TestBenchOps(t *testing.T) {
	out, errOut, code := run(t, "", "bench", "--ops", "--tokens", "2", "--threads", "2", pack)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"γ 1.0 φ 1.0", "γ 0.7 φ 0.4", "| ffn |", "| matmul qkv |", "| matmul lm_head |", "| attention |", "| sample (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) |", "outside the operations", "after a 16-token prompt"} {
		if !strings.Contains(out, want) {
			t.Errorf("--ops output lacks %q:\n%s", want, out)
		}
	}
	// --depth: the steps follow a longer prompt (attention's share grows
	// with it); a negative one is refused.
	out, errOut, code = run(t, "", "bench", "--ops", "--depth", "40", "--tokens", "2", "--threads", "2", pack)
	if code != 0 || strings.Count(out, "after a 40-token prompt") != 2 {
		t.Fatalf("--ops --depth 40: exit %d, %s\n%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", "bench", "--ops", "--depth", "-1", pack); code == 0 || !strings.Contains(errOut, "depth") {
		t.Errorf("--ops --depth -1: exit %d, %q", code, errOut)
	}
}
