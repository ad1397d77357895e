//go:build !cuda && !cudaemu

package main

import (
	"fmt"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/runner"
)

// openDevice returns the CPU for --device cpu; this build has no GPU
// backend, so any other device is refused with how to get one.
func openDevice(name string) (backend.Device, error) {
	_, gpu, err := cudaplan.ParseDevice(name)
	if err != nil {
		return nil, err
	}
	if gpu {
		return nil, fmt.Errorf("--device %s: this sirun is built without CUDA; build bin/sirun-cuda with `make build-cuda` "+
			"(needs the CUDA toolkit to build: .ci/cuda-toolkit.sh; needs an NVIDIA driver, libcuda.so.1, to run)", name)
	}
	return cpu.New(), nil
}

// onDevice returns m: the only device of this build is the CPU, where m is.
func onDevice(dev backend.Device, pack *format.Pack, m *runner.Model) (*runner.Model, error) {
	return m, nil
}

// deviceSummary has nothing to add on the CPU.
func deviceSummary(*runner.Model) string { return "" }
