package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShipsWithoutConverterOrPlots: sirun is what ships to a device, so it
// must not link the converter, the synthetic checkpoint writer, profiling
// or a plotting library (go list -deps names every package the binary links).
func TestShipsWithoutConverterOrPlots(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !contains(deps, "github.com/sipack/sipack/runner") {
		t.Fatalf("go list -deps gave %d packages without the runner: %q", len(deps), out)
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/sipack/sipack/convert", "github.com/sipack/sipack/profile", "github.com/sipack/sipack/cmd/internal/plots", "gonum.org/", "github.com/nlpodyssey/safetensors"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("sirun links %s", d)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
