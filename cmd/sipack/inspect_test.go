package main

import (
	"strings"
	"testing"
)

// TestInspectModel: inspect of a model (a config alone, or a directory
// with weights) prints what its pack would load, without converting:
// Llama-3.2-3B at γ0.7 is 5.16 GB in bf16 and 1.45 GB in q4_0 with a
// 0.47 GB f16 cache at 4096 tokens (docs/jetson.md's table, worked out
// from the format by hand).
func TestInspectModel(t *testing.T) {
	cfg := "../../testdata/configs/llama-3.2-3b"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"inspect", cfg}, []string{"γ=0.70: 4.80 GiB (5.16 GB)", "bf16 assumed", "448.00 MiB (0.47 GB) in f16", "tied embeddings"}},
		{[]string{"inspect", "--dtype", "q4_0", cfg + "/config.json"}, []string{"γ=0.70: 1.35 GiB (1.45 GB)", "pack       q4_0:"}},
		{[]string{"inspect", "-c", "8192", "--dtype", "q4_k_m", cfg}, []string{"pack       q4_k_m:", "8192 tokens: 896.00 MiB"}},
		{[]string{"inspect", "../../testdata/tinyllama"}, []string{"pack       bf16:", "hidden 256"}},
	} {
		out, e, code := run(t, c.args...)
		if code != 0 {
			t.Fatalf("sipack %v: exit %d\n%s", c.args, code, e)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("sipack %v: no %q in\n%s", c.args, w, out)
			}
		}
	}
	if strings.Contains(runOut(t, "inspect", "../../testdata/tinyllama"), "assumed") {
		t.Error("a directory with weights: the dtype was assumed, not read")
	}
	if _, e, code := run(t, "inspect", "-c", "0", cfg); code == 0 || !strings.Contains(e, "--ctx-size") {
		t.Errorf("--ctx-size 0: exit %d, %s", code, e)
	}
}

func runOut(t *testing.T, args ...string) string {
	out, _, _ := run(t, args...)
	return out
}
