package runner

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestClosedSeam: the runner reaches the hardware only through package
// backend's interfaces, so a backend is the caller's choice and a new one
// needs no edit here: the CPU's kernels and device (kernels, backend/cpu)
// must not be among its dependencies.
func TestClosedSeam(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 || !slices.Contains(deps, "github.com/sipack/sipack/backend") {
		t.Fatalf("go list -deps gave %d packages without backend: %q", len(deps), out)
	}
	for _, banned := range []string{"github.com/sipack/sipack/kernels", "github.com/sipack/sipack/backend/cpu"} {
		if slices.Contains(deps, banned) {
			t.Errorf("runner depends on %s; reach it through backend.Device and backend.Pool", banned)
		}
	}
}
