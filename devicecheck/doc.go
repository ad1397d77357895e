// Package devicecheck holds the checks that need a GPU and the script that
// runs them where one is lent. `make device-check` builds everything into
// one folder (bin/device-check, at most 64 MiB): the kernel tests of
// backend/cuda and the runner tests of this package as test binaries
// (build tag cuda), sirun-cuda, prep (writes the 1B-shape synthetic
// checkpoint and converts packs, as `make synth` and `sipack convert` do),
// the tiny model and the archcheck models with their PyTorch goldens,
// hf_bench.py (the same checkpoint under PyTorch/transformers generate),
// the peer's inputs (llama.cpp's source with build-cuda.sh, gen_gguf.py and
// gguf-py from LLAMACPP, quantize_gguf.py, the Llama 3 tokenizer: run.sh
// builds llama.cpp's CUDA llama-bench and times it beside sirun-cuda) and
// run.sh. The GPU machine needs no Go and no network: `./run.sh` with
// SIPACK_DEVICE_OUT naming the results folder. SIPACK_DEVICE_REHEARSE=1
// runs every step that needs no GPU (here: prep, packs, the CPU path, the
// script's parsing), so the script is rehearsed before GPU time is spent.
package devicecheck
