//go:build cuda || cudaemu

package devicecheck

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cuda"
	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/kernels"
)

// TestF16CacheMatchesCPU: with f16 KV caches on both, the GPU's greedy
// continuation of the golden prompts is the CPU's (both round keys and
// values to the same halves).
func TestF16CacheMatchesCPU(t *testing.T) {
	cases, n := 4, 16
	if cuda.Emulated {
		cases, n = 1, 6
	}
	restore := kernels.Use(&kernels.Generic)
	defer restore()
	path := packOf(t, testdata("tinyllama"), convert.Options{BaseFraction: 0.3})
	golden := readGolden(t, testdata("tinyllama", "golden.json"))
	gpu, cpu := onGPU(t, openPack(t, path, 1)), onCPU(t, openPack(t, path, 1))
	gpu.KVType, cpu.KVType = backend.KVF16, backend.KVF16
	for ci, c := range golden[:min(cases, len(golden))] {
		if g, w := gen(t, gpu, nil, c.ids(), n), gen(t, cpu, nil, c.ids(), n); !slices.Equal(g, w) {
			t.Errorf("case %d, f16 cache: greedy ids\ngpu %v\ncpu %v", ci, g, w)
		}
	}
}
