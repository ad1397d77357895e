// Package cuda is the CUDA implementation of the backend seam (package
// backend), behind the build tag cuda: `go build -tags cuda`, or
// `make build-cuda`. It runs the kernels of kernels/sipack.cu, compiled by
// `make cuda-kernels` into the committed kernels/sipack.fatbin (SASS for
// sm_87 Jetson Orin and sm_90 Hopper, PTX for compute_80 that newer GPUs
// JIT) and loaded through the driver API (gorgonia.org/cu), so libcuda.so.1
// is the only runtime dependency.
//
// gorgonia.org/cu initialises the driver in its package init and exits
// the process when there is no GPU, so nothing in the default build imports
// this package: without the tag only this file is compiled, and it holds
// no code. The host-side logic that needs no device (launch shapes,
// argument packing, record tables, buffer sizes) is package cudaplan,
// tested in the normal build.
//
// Build tag cudaemu (without cuda) swaps the driver for an emulator that
// compiles kernels/sipack.cu as host C++ (emu.h, emu_kernels.cpp) and runs
// each block's threads as fibers on the CPU: slow, but the same host code,
// launch shapes, parameters and kernel source, so `go test -tags cudaemu`
// rehearses this package's tests and the runner's golden tests without a
// GPU. It says nothing about speed, memory ordering between blocks, or the
// real compiler's code generation: only a GPU run does.
//
// Memory: the dense tensors and each sparse layer's loaded prefix of FFN
// records are copied to the device once (Device.Matrix, Device.Records).
// On an integrated GPU (Jetson), Device.UsePack registers the mapped pack
// read-only and tensors inside it are used in place, and split FFN records
// are interleaved into pinned host memory, so the γ prefix's saving holds
// on the device too. A record set is a device table of record
// addresses: a decode set is the static prefix and the voted ranks, read
// in place, nothing copied (the compact option of Gather is moot here).
package cuda
