//go:build cuda || cudaemu

package cuda

// The integrated-GPU paths (a Jetson's): the pack's mapped prefix registered
// read-only and used in place, or, where registration is refused or not
// supported, read once into pinned host memory the GPU maps. The emulator
// plays such a device (EmuDeviceEnv); each path must be the one taken, copy
// no dense weight to device memory, and give the discrete path's greedy
// tokens. And the fatbin's driver requirement.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// tinyPack converts the tiny trained model (bf16) into a temporary pack.
func tinyPack(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SIPACK_TESTDATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata")
	}
	out := filepath.Join(t.TempDir(), "tiny.sip")
	if _, err := convert.Convert(context.Background(), convert.Options{ModelDir: filepath.Join(dir, "tinyllama"), Output: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// greedyOn opens the device as env plays it, loads path at γ onto it
// (UsePack first, as sirun does) and returns n greedy tokens of prompt.
func greedyOn(t *testing.T, env, path string, gamma float64, prompt []int, n int) ([]int, *Device) {
	t.Helper()
	t.Setenv(EmuDeviceEnv, env)
	p, err := format.Open(path, format.OpenOptions{Gamma: gamma})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := d.UsePack(p); err != nil {
		t.Fatalf("%s: UsePack: %v", env, err)
	}
	m, err := runner.Load(p, d)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	s, err := m.NewState(pool, len(prompt)+n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits, err := s.ForwardBatch(prompt, 0, runner.Pass{})
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := 0; i < n; i++ {
		tok := runner.Argmax(logits)
		out = append(out, tok)
		if i < n-1 {
			if logits, err = s.Forward(tok, len(prompt)+i); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out, d
}

func TestIntegratedPaths(t *testing.T) {
	if !Emulated {
		t.Skip("the emulator plays the integrated device; a GPU is what it is")
	}
	path := tinyPack(t)
	prompt := []int{4094, 17, 250}
	const gamma, n = 0.7, 3
	want, discrete := greedyOn(t, "", path, gamma, prompt, n)
	var norms uint64 // the float32 tensors: what Device.Vector copies
	pk, err := format.Open(path, format.OpenOptions{Gamma: gamma})
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range pk.Index.DenseTensors {
		if ti.DType == format.F32 {
			norms += ti.Length
		}
	}
	if pk.Split() && uint64(len(hostPart(pk))) != pk.Preamble.FFNOff {
		t.Errorf("a split pack registers %d bytes, want the %d before its FFN section", len(hostPart(pk)), pk.Preamble.FFNOff)
	}
	pk.Close()
	if discrete.HostUse() != HostCopied || discrete.RegisteredBytes() != 0 {
		t.Fatalf("discrete: %v, %d bytes in place", discrete.HostUse(), discrete.RegisteredBytes())
	}
	for _, c := range []struct {
		env  string
		want HostUse
	}{
		{"integrated", HostRegistered},
		{"integrated-refuse", HostPinned},
		{"integrated-noreg", HostPinned},
	} {
		got, d := greedyOn(t, c.env, path, gamma, prompt, n)
		if d.HostUse() != c.want {
			t.Errorf("%s: %v, want %v", c.env, d.HostUse(), c.want)
		}
		// Every weight is read from host memory: the matrices where the
		// mapping has them, the interleaved records from pinned memory.
		// Device memory holds the norms only.
		if d.ResidentBytes() != norms || d.ResidentBytes()+d.RegisteredBytes() != discrete.ResidentBytes() {
			t.Errorf("%s: %d bytes copied (the norms are %d) and %d read from host memory; the discrete GPU copied %d",
				c.env, d.ResidentBytes(), norms, d.RegisteredBytes(), discrete.ResidentBytes())
		}
		if got := d.HostScratchBytes(1, 1, 1, 1, 1, 1, 1, 1); got != IntegratedReserve {
			t.Errorf("%s: --mem-budget sets aside %d bytes for the device, want %d", c.env, got, IntegratedReserve)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: greedy %v, the discrete path %v", c.env, got, want)
		}
	}
	if got := discrete.HostScratchBytes(1, 1, 1, 1, 1, 1, 1, 1); got != 0 {
		t.Errorf("discrete: %d host bytes", got)
	}
}

func TestFatbinDriver(t *testing.T) {
	fb, err := os.ReadFile(filepath.Join("kernels", "sipack.fatbin"))
	if err != nil {
		t.Fatal(err)
	}
	es, err := parseFatbin(fb)
	if err != nil {
		t.Fatal(err)
	}
	var sass87, ptx bool
	for _, e := range es {
		sass87 = sass87 || (!e.ptx && e.arch == 87)
		ptx = ptx || (e.ptx && e.arch <= 87)
	}
	if !sass87 || !ptx {
		t.Fatalf("fatbin %s: want sm_87 SASS (Jetson Orin) and PTX that compute_87 can JIT", describeFatbin(fb))
	}
	need := requiredDriver(fb)
	// JetPack 6's driver is CUDA 12.2: the fatbin must load on it.
	if need == 0 || need > 12020 {
		t.Fatalf("fatbin %s needs a CUDA %s driver; JetPack 6 has 12.2", describeFatbin(fb), cudaVersion(need))
	}
	t.Logf("fatbin: %s; needs a driver for CUDA %s", describeFatbin(fb), cudaVersion(need))
	if err := checkDriver(12020, fb); err != nil {
		t.Errorf("JetPack 6's driver refused: %v", err)
	}
	err = checkDriver(need-10, fb)
	if err == nil || !strings.Contains(err.Error(), cudaVersion(need)) || !strings.Contains(err.Error(), cudaVersion(need-10)) {
		t.Errorf("an older driver: %v", err)
	}
	if checkDriver(-1, fb) == nil {
		t.Error("an unreadable driver version accepted")
	}
	if _, err := parseFatbin(fb[:len(fb)/2]); err == nil {
		t.Error("a truncated fatbin parsed")
	}
}
