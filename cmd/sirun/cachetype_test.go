package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCacheType: --cache-type f16 keeps the golden greedy tokens, halves
// the KV cache the summary reports and the one --mem-budget plans, works
// through chat's engine (serve's), and an unknown type is refused by name.
func TestCacheType(t *testing.T) {
	_, ids, greedy, _ := goldenGreedy(t)
	idsJSON, _ := json.Marshal(ids)
	// The summary's KV cache, then the one --mem-budget plans, in MiB.
	summary, plan := regexp.MustCompile(`KV cache ([0-9.]+) MiB \(`), regexp.MustCompile(`\+ KV cache ([0-9.]+) MiB`)
	mib := func(re *regexp.Regexp, s string) float64 {
		m := re.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("no %q in:\n%s", re, s)
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	var sizes, plans [2]float64
	for i, ct := range []string{"f32", "f16"} {
		out, errOut, code := run(t, "", pack, "--prompt-ids", string(idsJSON), "-n", "32", "--temperature", "0", "--output-ids", "--ignore-eos", "--cache-type", ct)
		var got []int
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || !slices.Equal(got, greedy) {
			t.Fatalf("--cache-type %s (%d): %q, want %v\n%s", ct, code, out, greedy, errOut)
		}
		sizes[i] = mib(summary, errOut)
		_, errOut, code = run(t, "", pack, "-p", "x", "-n", "1", "--cache-type", ct, "--mem-budget", "1GiB")
		if code != 0 {
			t.Fatalf("--cache-type %s --mem-budget: exit %d\n%s", ct, code, errOut)
		}
		plans[i] = mib(plan, errOut)
	}
	if sizes[0] == 0 || sizes[1] != sizes[0]/2 || plans[1] != plans[0]/2 {
		t.Errorf("KV cache f32 %g MiB, f16 %g MiB; planned %g and %g: want half", sizes[0], sizes[1], plans[0], plans[1])
	}
	if out, errOut, code := run(t, "In the beginning\n", "chat", pack, "--chat-template", tinyTemplate, "--temp", "0", "-n", "4", "--cache-type", "f16"); code != 0 || out == "" {
		t.Fatalf("chat --cache-type f16 (%d): %q\n%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", pack, "-p", "x", "--cache-type", "q8_0"); code == 0 || !strings.Contains(errOut, "--cache-type") || !strings.Contains(errOut, "q8_0") {
		t.Fatalf("--cache-type q8_0: exit %d, %s", code, errOut)
	}
}
