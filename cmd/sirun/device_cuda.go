//go:build cuda || cudaemu

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/backend/cuda"
	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/cmd/internal/cliutil"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/runner"
)

// openDevice opens the device --device names: the CPU, or a GPU.
func openDevice(name string) (backend.Device, error) {
	ordinal, gpu, err := cudaplan.ParseDevice(name)
	if err != nil {
		return nil, err
	}
	if !gpu {
		return cpu.New(), nil
	}
	d, err := cuda.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// onDevice returns m with its weights on dev: m itself for the CPU, else
// the pack loaded anew onto the GPU (on an integrated GPU the mapped pack
// is registered and used in place). The caller closes dev.
func onDevice(dev backend.Device, pack *format.Pack, m *runner.Model) (*runner.Model, error) {
	d, ok := dev.(*cuda.Device)
	if !ok {
		return m, nil
	}
	// SIPACK_CUDA_IN_PLACE=1 uses the mapped pack in place on any GPU (on a
	// discrete one, to measure the integrated case's device memory).
	use := d.UsePack
	if os.Getenv("SIPACK_CUDA_IN_PLACE") == "1" {
		use = d.UsePackAnyway
	}
	if err := use(pack); err != nil {
		fmt.Fprintf(os.Stderr, "sirun: %v; copying the weights instead\n", err)
	}
	gm, err := runner.Load(pack, d)
	if err != nil {
		return nil, err
	}
	gm.KVType = m.KVType
	fmt.Fprintf(os.Stderr, "sirun: cuda: %s: the pack's %s loaded prefix %s; device copies %s; process memory %s\n",
		d.Name(), cliutil.HumanBytes(uint64(len(pack.Bytes()))), d.HostUse(), cliutil.HumanBytes(d.ResidentBytes()), processMemory())
	return gm, nil
}

// processMemory is the process's resident memory now, from
// /proc/self/status: the total and its anonymous (heap, pinned copies) and
// file-backed (the mapped pack) shares. An integrated GPU's allocations
// are in the same memory but not always in these counts (driver-held).
func processMemory() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	kb := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var n uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &n); err == nil {
			kb[k] = n << 10
		}
	}
	return fmt.Sprintf("RSS %s (anonymous %s, file %s)", cliutil.HumanBytes(kb["VmRSS"]), cliutil.HumanBytes(kb["RssAnon"]), cliutil.HumanBytes(kb["RssFile"]))
}

// deviceSummary is the summary's device line ("" on the CPU): weights
// copied to the device, weights read from host memory, and the device's memory in
// use as the driver reports it.
func deviceSummary(m *runner.Model) string {
	d, ok := m.Dev.(*cuda.Device)
	if !ok {
		return ""
	}
	s := fmt.Sprintf("sirun: device     %s: weights %s on the device, %s read from host memory", d.Name(),
		cliutil.HumanBytes(d.ResidentBytes()), cliutil.HumanBytes(d.RegisteredBytes()))
	if free, total, err := d.MemInfo(); err == nil {
		s += fmt.Sprintf("; device memory in use %s of %s", cliutil.HumanBytes(uint64(total-free)), cliutil.HumanBytes(uint64(total)))
	}
	return s
}
