# sipack / sirun. `make demo` converts the embedded tiny model and runs it;
# `make test` is what CI runs (.ci/run).
GO      ?= go
BIN     ?= bin
FUZZTIME ?= 30s
SYNTH   ?= /tmp/sipack-synth-1b
# llama.cpp, the peer: compare.sh, its CPU llama-bench, and the source and
# scripts the device check builds its CUDA llama-bench from.
LLAMACPP ?= ../shared/llamacpp

.PHONY: all build test test-readme test-packages demo badinput generate fuzz bench compare compare-routed routed-packs compare-avx2 recache bench-packs synth clean vet accuracy accuracy-quant test-arm64 test-arm32 test-arm64-kernels test-arm64-runner test-arm32-kernels test-arm32-runner test-packs cross loadtest qemu-user \
	cuda-kernels cuda-check build-cuda device-check device-rehearse cuda-cross-tools cuda-cross-arm64

all: build

# Stripped, path-free binaries stamped with git describe (sipack --version).
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo devel)
LDFLAGS = -s -w -X github.com/sipack/sipack/cmd/internal/cliutil.version=$(VERSION)

# Size (the docs test holds sirun to 12 MB): urfave_cli_no_docs leaves out
# urfave/cli's man and markdown writers (0.33 MB); nethttpomithttp2 leaves
# out net/http's HTTP/2, which a plain-HTTP server never speaks (0.38 MB);
# crypto is linked only for net/http's TLS, which sirun never serves, so it
# is compiled without inlining (0.34 MB).
BUILDFLAGS = -trimpath -tags urfave_cli_no_docs,nethttpomithttp2 -gcflags 'crypto/...=-l' -ldflags '$(LDFLAGS)'
build:
	$(GO) build $(BUILDFLAGS) -o $(BIN)/sipack ./cmd/sipack
	$(GO) build $(BUILDFLAGS) -o $(BIN)/sirun ./cmd/sirun


vet:
	$(GO) vet ./...

# The whole test suite: vet, unit and golden tests, each fuzz target on its
# seed corpus, and every README command (./docs: the longest package, a
# target of its own so that make -j starts it first).
test: test-readme test-packages
# The timeout is go test's 10 minutes doubled: .ci/run runs these beside
# the qemu runs on two cores.
test-readme:
	$(GO) test -count=1 -timeout 20m ./docs
test-packages:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/docs$$')

# Every platform people run local models on builds, without cgo; amd64 and
# arm64 get the assembly kernels, every other arch the generic ones.
CROSS = linux/amd64 linux/arm64 linux/arm darwin/arm64 darwin/amd64 windows/amd64
cross:
	@for t in $(CROSS); do echo "== GOOS=$${t%/*} GOARCH=$${t#*/} go build ./..."; \
	  CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build ./... || exit 1; done

# The dense and the pruned pack of the embedded test model side by side,
# and the share of dense quality the pruned one keeps held out.
demo: build
	testdata/demo/demo.sh $(BIN) out/demo


# Regenerate the FlatBuffers Go code from format/sip.fbs (needs flatc:
# apt-get install flatbuffers-compiler). The generated code is committed.
generate:
	cd format && flatc --go --go-namespace sipfb -o . sip.fbs
	gofmt -w format/sipfb

# Run every fuzz target for FUZZTIME each. A non-zero exit counts as a
# failure only if the fuzzer wrote a reproducer into testdata/fuzz/: a bare
# "context deadline exceeded" at the end of a duration is a known race in
# Go's fuzz coordinator (go.dev/issue/75804), not a crash.
fuzz:
	@fail=0; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    before=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	    echo "== $$pkg $$t"; \
	    if ! $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $$pkg; then \
	      after=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	      if [ "$$after" -gt "$$before" ]; then echo "CRASH: reproducer in $$dir/testdata/fuzz/$$t"; fail=1; \
	      else echo "(no reproducer written: coordinator deadline race, go.dev/issue/75804)"; fi; \
	    fi; \
	  done; \
	done; exit $$fail

# A random-weight checkpoint of Llama-3.2-1B shape in two shards (about 2.5 GB), converted.
synth: build
	$(GO) run ./testdata/synth -o $(SYNTH)
	/usr/bin/time -v $(BIN)/sipack convert $(SYNTH) -o $(SYNTH).sip 2>&1 | grep -E 'wrote|Maximum resident|Elapsed'

clean:
	rm -rf $(BIN)

# The accuracy table of docs/accuracy.md: profiles of translate, qa and lm
# (150 prompts each), for each a ranked pack with layer budgets and routers
# (convert's default) and one without either (--layer-budget uniform
# --route none: the paper's method), a random-order pack and a dense one,
# then every task's eval at γ ∈ {0.5, 0.7, 0.9} × φ ∈ {0.3, 0.4, 0.5}.
ACC ?= /tmp/sipack-accuracy
# The eval lines pipe sirun into sed: with pipefail a failed eval stops the
# target instead of leaving a blank cell.
accuracy accuracy-quant: SHELL := bash
accuracy accuracy-quant: .SHELLFLAGS := -o pipefail -c
accuracy: build
	mkdir -p $(ACC)
	for t in translate qa lm; do \
	  grep -qs '"sensitivity"' $(ACC)/$$t.prof || $(BIN)/sipack profile -q --task $$t testdata/tinyllama -o $(ACC)/$$t.prof --max-prompts 150 --force || exit 1; \
	done
	S=$(ACC)/translate.prof,$(ACC)/qa.prof,$(ACC)/lm.prof; \
	for t in translate qa lm; do \
	  $(BIN)/sipack convert -q testdata/tinyllama --profile $(ACC)/$$t.prof --secondary $$S --route $$t -o $(ACC)/$$t.sip --force || exit 1; \
	  $(BIN)/sipack convert -q testdata/tinyllama --profile $(ACC)/$$t.prof --secondary $$S --layer-budget uniform --route none -o $(ACC)/$$t-paper.sip --force || exit 1; \
	done
	$(BIN)/sipack convert -q testdata/tinyllama --order random --seed 5 -o $(ACC)/random.sip --force
	$(BIN)/sipack convert -q testdata/tinyllama -o $(ACC)/dense.sip --force
	rm -f $(ACC)/results.jsonl
	for t in translate qa lm qa-ppl; do \
	  k=$$t; x=; case $$t in qa-ppl) k=qa; x="--manifests docs/tasks --data manifests/data/qa.eval.jsonl";; esac; \
	  $(BIN)/sirun eval -q --json $$x --task $$t $(ACC)/dense.sip | sed 's/^{/{"label":"dense",/' >> $(ACC)/results.jsonl || exit 1; \
	  case $$k in translate) o=qa;; *) o=translate;; esac; \
	  for g in 0.5 0.7 0.9; do for p in 0.3 0.4 0.5; do \
	    b=; case $$t in translate|qa) b="--baseline $(ACC)/dense.sip --bootstrap 1000";; esac; \
	    $(BIN)/sirun eval -q --json $$x --task $$t $(ACC)/$$k.sip --gamma $$g --phi $$p $$b | sed 's/^{/{"label":"task, router",/' >> $(ACC)/results.jsonl || exit 1; \
	    $(BIN)/sirun eval -q --json $$x --task $$t $(ACC)/$$k-paper.sip --gamma $$g --phi $$p $$b | sed 's/^{/{"label":"task, paper",/' >> $(ACC)/results.jsonl || exit 1; \
	    $(BIN)/sirun eval -q --json $$x --task $$t $(ACC)/$$o.sip --gamma $$g --phi $$p | sed 's/^{/{"label":"other",/' >> $(ACC)/results.jsonl || exit 1; \
	    $(BIN)/sirun eval -q --json $$x --task $$t $(ACC)/random.sip --gamma $$g --phi $$p | sed 's/^{/{"label":"random",/' >> $(ACC)/results.jsonl || exit 1; \
	  done; done; \
	done
	$(GO) run ./testdata/accuracy $(ACC)/results.jsonl docs/accuracy.md
	cat docs/accuracy.md

# Accuracy of the quantised packs: translate and lm, each pack ranked by
# its own task's profile, at bf16 / q8_0 / q4_0, dense and γ0.7 φ0.4
# (one JSON line per eval in $(ACC)/quant.jsonl).
accuracy-quant: build
	mkdir -p $(ACC)
	for t in translate qa lm; do \
	  test -f $(ACC)/$$t.prof || $(BIN)/sipack profile -q --task $$t testdata/tinyllama -o $(ACC)/$$t.prof --max-prompts 150 || exit 1; \
	done
	rm -f $(ACC)/quant.jsonl
	S=$(ACC)/translate.prof,$(ACC)/qa.prof,$(ACC)/lm.prof; \
	for t in translate lm; do for d in bf16 q8_0 q4_0; do \
	  $(BIN)/sipack convert -q testdata/tinyllama --profile $(ACC)/$$t.prof --secondary $$S --dtype $$d -o $(ACC)/$$t-$$d.sip || exit 1; \
	  $(BIN)/sirun eval -q --json --task $$t $(ACC)/$$t-$$d.sip | sed "s/^{/{\"dtype\":\"$$d\",/" >> $(ACC)/quant.jsonl || exit 1; \
	  $(BIN)/sirun eval -q --json --task $$t $(ACC)/$$t-$$d.sip --gamma 0.7 --phi 0.4 | sed "s/^{/{\"dtype\":\"$$d\",/" >> $(ACC)/quant.jsonl || exit 1; \
	done; done
	cat $(ACC)/quant.jsonl

# The bad-input cases a new user hits, a line each (exit status, what became
# of the file, the message); BADINPUT_SIPACK/SIRUN compare other binaries.
BADINPUT_SIPACK ?= $(BIN)/sipack
BADINPUT_SIRUN ?= $(BIN)/sirun
badinput: build
	testdata/badinput/cases.sh $(BADINPUT_SIPACK) $(BADINPUT_SIRUN)

# Kernel benchmarks (GB/s of weights streamed; fast path and reference in one
# run), then the 1B-shape decode/prefill benchmark with 1 and 2 threads, and
# the quantised packs against dense bf16. `sipack synth` writes the random
# 1B-shape packs once into $(BENCH_DIR) (the checkpoint, 2.5 GB, in
# $(BENCH_DIR)/synth-1b); `sirun bench` only measures packs it is given;
# `sipack plot bench` draws its JSON lines.
#
# Against llama.cpp (same packs; llama.cpp's GGUFs written by the script):
#   make build && MAKE_PACK='bin/sipack synth --dtype $$DTYPE -o $$OUT' ../shared/llamacpp/compare.sh --threads 2
# (or `make compare`); compare.sh keeps its packs in BENCH_DIR, /tmp/sipack-bench by default, as here.
BENCH_DIR ?= /tmp/sipack-bench
BENCH_DTYPES = bf16 f16 q4_0 q8_0 q4_k_m
# The benchmark packs sipack synth writes, those BENCH_DIR lacks.
bench-packs: build
	for d in $(BENCH_DTYPES); do \
	  test -f $(BENCH_DIR)/synth-1b-$$d.sip || $(BIN)/sipack synth --dtype $$d --dir $(BENCH_DIR)/synth-1b -o $(BENCH_DIR)/synth-1b-$$d.sip || exit 1; \
	done

bench: bench-packs
	$(GO) test -run '^$$' -bench . -benchtime 20x ./kernels
	$(BIN)/sirun bench --threads 1 --json-out $(BIN)/bench-1t.jsonl $(BENCH_DIR)/synth-1b-bf16.sip $(BENCH_DIR)/synth-1b-f16.sip
	$(BIN)/sipack plot bench -o $(BIN)/bench-1t.png $(BIN)/bench-1t.jsonl
	$(BIN)/sirun bench --threads 2 --json-out $(BIN)/bench-2t.jsonl $(BENCH_DIR)/synth-1b-bf16.sip $(BENCH_DIR)/synth-1b-f16.sip
	$(BIN)/sipack plot bench -o $(BIN)/bench-2t.png $(BIN)/bench-2t.jsonl
	$(BIN)/sirun bench --quick --threads 2 --rounds 5 $(BENCH_DIR)/synth-1b-bf16.sip $(BENCH_DIR)/synth-1b-q4_0.sip $(BENCH_DIR)/synth-1b-q8_0.sip
	# The router against the paper's selection in the same rounds, on the
	# packs routed on one prompt (a random model's routers: the same bytes
	# and kernels as a real one's).
	$(MAKE) routed-packs
	$(BIN)/sirun bench --quick --select paper,router --threads 2 --rounds 8 --tokens 16 $(ROUTED_DIR)/synth-1b-q4_0.sip $(ROUTED_DIR)/synth-1b-bf16.sip $(ROUTED_DIR)/synth-1b-q8_0.sip

# sirun against llama.cpp on the same machine (../shared/llamacpp/compare.sh),
# with the packs sipack synth writes. The packs and llama.cpp's GGUFs are
# first put in the same page-cache state (recache): a file just written, or
# partly evicted and faulted back, or read into small folios, decodes slower
# than one read whole into 2 MiB folios, on either side (docs/performance.md).
# GGUFs compare.sh makes on its first run are fresh: run it again.
compare: bench-packs
	$(MAKE) recache
	BENCH_DIR=$(BENCH_DIR) SIRUN=$(BIN)/sirun $(LLAMACPP)/compare.sh --threads 2

# The routed packs (sipack route on one prompt: a random model's routers,
# the bytes and kernels of a real one) of bf16, q8_0 and q4_0, under the
# names compare.sh reads, in ROUTED_DIR (made once: remove them to route
# again, e.g. after the synth packs or the format change); and compare.sh
# on them: sirun's γ0.7 φ0.4 figure is then the router's (its default on
# a routed pack).
ROUTED_DIR ?= $(BENCH_DIR)/routed
routed-packs: bench-packs
	mkdir -p $(ROUTED_DIR)
	for d in bf16 q8_0 q4_0 q4_k_m; do \
	  test -f $(ROUTED_DIR)/synth-1b-$$d.sip || $(BIN)/sipack route -q --task translate --max-prompts 1 --gen-tokens 4 $(BENCH_DIR)/synth-1b-$$d.sip -o $(ROUTED_DIR)/synth-1b-$$d.sip || exit 1; \
	done

compare-routed: routed-packs
	$(MAKE) recache BENCH_DIR=$(ROUTED_DIR)
	BENCH_DIR=$(ROUTED_DIR) SIRUN=$(BIN)/sirun $(LLAMACPP)/compare.sh --threads 2 --dtypes bf16,q8_0,q4_0,q4_k_m

# The same against llama.cpp's AVX2 build (its CPU backends but the
# Haswell one removed from a copy of its bin/) and sirun's AVX2 table, one
# thread: what a CPU without AVX-512 gets (most laptops').
LLAMA_AVX2 ?= /tmp/sipack-llamacpp-avx2
compare-avx2: bench-packs
	rm -rf $(LLAMA_AVX2) && mkdir -p $(LLAMA_AVX2)
	cp -r $(LLAMACPP)/. $(LLAMA_AVX2)/
	find $(LLAMA_AVX2)/bin -name 'libggml-cpu-*.so' ! -name 'libggml-cpu-haswell.so' -delete
	$(MAKE) recache
	SIPACK_KERNELS=avx2 BENCH_DIR=$(BENCH_DIR) SIRUN=$(BIN)/sirun $(LLAMA_AVX2)/compare.sh --threads 1

# Drops the benchmark packs' and llama.cpp's GGUFs' page cache and reads each
# file back whole through a mapping advised for huge pages, so both sides'
# files lie in 2 MiB folios as far as free memory allows; prints each
# file's share in 2 MiB pages (cmd/internal/recache).
LLAMA_WORK ?= /tmp/sipack-llamacpp
recache:
	files=$$(ls $(BENCH_DIR)/synth-1b-*.sip $(LLAMA_WORK)/*.gguf 2>/dev/null); \
	[ -z "$$files" ] || $(GO) run ./cmd/internal/recache $$files

# qemu user emulation for the arm tests (Debian's qemu-user, installed
# when missing; CI installs it before running the arm tests side by side).
qemu-user:
	command -v qemu-aarch64 >/dev/null && command -v qemu-arm >/dev/null || (apt-get update && apt-get install -y qemu-user)

# The kernels and the golden runner tests on arm64 (the NEON and SDOT paths)
# under qemu, in -short runs (fewer tokens and tables: every path still
# runs). Kernels and runner are targets of their own so that make -j runs
# them side by side (a qemu run uses one core). The runner tests take the
# packs test-packs converts natively, as a device takes packs made on a
# host: converting them under emulation was a third of the arm64 run. The
# selection tests whose code no kernel table changes run natively only.
ARM64_RUNNER_TESTS = GoldenTinyllama|GoldenArchcheck|RouterSelection|FastAndGeneric|QuantizedGreedy
ARM32_RUNNER_TESTS = GoldenTinyllama|QuantizedGreedy
# The lint of the amd64 assembly reads source files: the same on any arch.
NATIVE_ONLY_KERNEL_TESTS = TestAMD64AssemblyAvoidsSSETransitions
TEST_PACKS = $(abspath $(BIN))/test-packs
test-packs:
	rm -rf $(TEST_PACKS)
	SIPACK_TEST_PACKS=$(TEST_PACKS) $(GO) test -count=1 -short -run '$(ARM64_RUNNER_TESTS)' ./runner
test-arm64: test-arm64-kernels test-arm64-runner
test-arm64-kernels: qemu-user
	@mkdir -p $(BIN)
	GOARCH=arm64 $(GO) test -c -o $(BIN)/kernels-arm64.test ./kernels
	cd kernels && ../.ci/qemu-run.sh ../$(BIN)/kernels-arm64.test -test.short -test.timeout 9m -test.v -test.run . -test.skip '$(NATIVE_ONLY_KERNEL_TESTS)' > ../$(BIN)/kernels-arm64.log; s=$$?; \
	  grep -E '^(--- |ok|PASS|FAIL)|kernel path' ../$(BIN)/kernels-arm64.log; \
	  [ $$s -eq 0 ] || tail -40 ../$(BIN)/kernels-arm64.log; exit $$s
test-arm64-runner: qemu-user test-packs
	@mkdir -p $(BIN)
	GOARCH=arm64 $(GO) test -c -o $(BIN)/runner-arm64.test ./runner
	cd runner && SIPACK_TEST_PACKS=$(TEST_PACKS) ../.ci/qemu-run.sh ../$(BIN)/runner-arm64.test -test.short -test.timeout 9m -test.v -test.run '$(ARM64_RUNNER_TESTS)'

# The same on 32-bit ARM (GOARM=7: phones and boards with a 32-bit
# userland), where the generic kernels run and int is 32 bits: the kernels'
# tests and the golden runner tests under qemu-arm.
test-arm32: test-arm32-kernels test-arm32-runner
test-arm32-kernels: qemu-user
	@mkdir -p $(BIN)
	GOARCH=arm GOARM=7 $(GO) test -c -o $(BIN)/kernels-arm.test ./kernels
	cd kernels && QEMU=qemu-arm ../.ci/qemu-run.sh ../$(BIN)/kernels-arm.test -test.short -test.timeout 9m -test.skip '$(NATIVE_ONLY_KERNEL_TESTS)'
test-arm32-runner: qemu-user test-packs
	@mkdir -p $(BIN)
	GOARCH=arm GOARM=7 $(GO) test -c -o $(BIN)/runner-arm.test ./runner
	cd runner && SIPACK_TEST_PACKS=$(TEST_PACKS) QEMU=qemu-arm ../.ci/qemu-run.sh ../$(BIN)/runner-arm.test -test.short -test.timeout 9m -test.v -test.run '$(ARM32_RUNNER_TESTS)'

# Load test of sirun serve (not in CI: it runs for LOADTEST_TIME): the tiny
# model with its test chat template, LOADTEST_CLIENTS clients cycling
# through OpenAI's endpoints (its Go SDK; streamed and not, logprobs, JSON
# schemas, a growing conversation), ollama's and llama-server's; prints
# requests/s, p50/p99 latency, errors (must be 0) and the server's RSS over
# the run (the last minute must not exceed the first by more than 10 %).
LOADTEST_TIME ?= 3m
LOADTEST_CLIENTS ?= 8
loadtest: build
	$(BIN)/sipack convert -q testdata/tinyllama --chat-template testdata/chat/tiny_template.jinja -o $(BIN)/tinyllama-chat.sip
	$(GO) run ./testdata/loadtest -sirun $(BIN)/sirun -pack $(BIN)/tinyllama-chat.sip -duration $(LOADTEST_TIME) -clients $(LOADTEST_CLIENTS)

# ---- CUDA (build tag cuda; see backend/cuda) ----
# The kernels are compiled by nvcc into one fatbin, committed and embedded:
# SASS for sm_87 (Jetson Orin) and sm_90 (H100/H200), PTX for compute_80 so
# newer GPUs JIT it. Its stamp, written beside it, holds the hashes of the
# source and of the fatbin and the flags, so cuda-check tells a stale
# fatbin without compiling it again. Debian's toolkit: .ci/cuda-toolkit.sh.
NVCC       ?= nvcc
CUDA_DIR   := backend/cuda/kernels
CUDA_ARCH  ?= -gencode arch=compute_87,code=sm_87 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80
CUDA_FLAGS := -fatbin -O3 -std=c++14 $(CUDA_ARCH)

cuda-kernels: $(CUDA_DIR)/sipack.fatbin

CUDA_STAMP = printf '%s\n' "sipack.cu $$(sha256sum < $(CUDA_DIR)/sipack.cu | cut -d' ' -f1)" \
	"sipack.fatbin $$(sha256sum < $(CUDA_DIR)/sipack.fatbin | cut -d' ' -f1)" 'nvcc $(CUDA_FLAGS)'

$(CUDA_DIR)/sipack.fatbin: $(CUDA_DIR)/sipack.cu
	$(NVCC) $(CUDA_FLAGS) -o $@.tmp $< && mv $@.tmp $@
	$(CUDA_STAMP) > $(CUDA_DIR)/sipack.fatbin.stamp

# What CI runs for the GPU code on a machine without a GPU: the toolkit
# (installed when missing), the committed fatbin checked against its stamp
# (the build of this sipack.cu with these flags), the tagged packages
# vetted and built, their tests
# compiled, the same tests run with the kernels in the CPU emulator (build
# tag cudaemu: sipack.cu compiled as C++, blocks' threads as fibers; about
# a minute), and the default sirun checked to link no CUDA.
cuda-check:
	./.ci/cuda-toolkit.sh
	@mkdir -p $(BIN)
	@$(CUDA_STAMP) | cmp -s - $(CUDA_DIR)/sipack.fatbin.stamp || \
	  { echo "cuda-check: $(CUDA_DIR)/sipack.fatbin is not the build of sipack.cu with these flags (its stamp differs): run make cuda-kernels and commit both"; exit 1; }
	$(GO) vet -tags cuda ./...
	$(GO) build -tags cuda -o $(BIN)/sirun-cuda.check ./cmd/sirun
	$(GO) test -tags cuda -c -o $(BIN)/cuda.test.check ./backend/cuda
	$(GO) test -tags cuda -c -o $(BIN)/devicecheck.test.check ./devicecheck
	$(GO) vet -tags cudaemu ./backend/cuda ./devicecheck
	$(GO) test -count=1 -tags cudaemu ./backend/cuda ./devicecheck
	@if $(GO) list -deps ./cmd/sirun | grep -q 'gorgonia.org/cu'; then echo "cuda-check: the default sirun links gorgonia.org/cu"; exit 1; fi
	@echo "cuda-check: ok (the default sirun links no CUDA)"
	@rm -f $(BIN)/sirun-cuda.check $(BIN)/cuda.test.check $(BIN)/devicecheck.test.check

# build-cuda builds for this machine, or with GOARCH=arm64 on an x86 host
# cross-builds for linux/arm64 (a Jetson: docs/jetson.md) with Debian's
# cross compiler (make cuda-cross-tools). The binary links against a
# libcuda stub built here (backend/cuda/stub/libcuda.c, soname
# libcuda.so.1); the device's driver provides the real one. CGO_LDFLAGS
# comes before gorgonia.org/cu's own flags, so its -L puts the stub first;
# the x86 library folders that package hard-codes are skipped by the
# linker as incompatible (--no-warn-search-mismatch quiets that).
HOSTARCH   := $(shell $(GO) env GOHOSTARCH)
CUDA_ARCH_GO = $(or $(GOARCH),$(HOSTARCH))
SIRUN_CUDA ?= $(BIN)/sirun-cuda
CROSS_CC_arm64 := aarch64-linux-gnu-gcc
CUDA_STUB   = $(BIN)/stub-$(CUDA_ARCH_GO)
# JetPack 6 (Ubuntu 22.04) has glibc 2.35: the arm64 binary must need no newer.
GLIBC_MAX_arm64 := 2.35

build-cuda:
ifeq ($(CUDA_ARCH_GO),$(HOSTARCH))
	$(GO) build -tags cuda -o $(SIRUN_CUDA) ./cmd/sirun
else ifeq ($(CUDA_ARCH_GO),arm64)
	@command -v $(CROSS_CC_arm64) >/dev/null || { echo "build-cuda: no $(CROSS_CC_arm64): make cuda-cross-tools"; exit 1; }
	@mkdir -p $(CUDA_STUB)
	$(CROSS_CC_arm64) -shared -fPIC -Wl,-soname,libcuda.so.1 -o $(CUDA_STUB)/libcuda.so backend/cuda/stub/libcuda.c
	CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=$(CROSS_CC_arm64) CXX=aarch64-linux-gnu-g++ \
	  CGO_LDFLAGS="-L$(abspath $(CUDA_STUB)) -Wl,--no-warn-search-mismatch" \
	  $(GO) build -trimpath -tags cuda -ldflags '$(LDFLAGS)' -o $(SIRUN_CUDA) ./cmd/sirun
else
	@echo "build-cuda: GOARCH=$(CUDA_ARCH_GO): only this machine's arch or arm64 (linux) are built"; exit 1
endif

# Debian's aarch64 cross compiler, installed when missing (CI installs it
# before its parallel stage).
cuda-cross-tools:
	command -v aarch64-linux-gnu-gcc >/dev/null && command -v aarch64-linux-gnu-g++ >/dev/null || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y gcc-aarch64-linux-gnu g++-aarch64-linux-gnu)

# What CI runs for the Jetson build: sirun-cuda cross-built for linux/arm64
# (into its own file), checked to be an aarch64 ELF that needs no glibc
# newer than JetPack 6's and imports only cu* symbols the stub defines; then
# run under qemu (Debian's arm64 glibc, the stub as libcuda): on the CPU it
# answers the tiny model's golden prompt as this machine's sirun does, and
# --device cuda without a driver is a clear error, not a crash.
cuda-cross-arm64: cuda-cross-tools qemu-user
	./.ci/cuda-toolkit.sh
	$(MAKE) build-cuda GOARCH=arm64 SIRUN_CUDA=$(BIN)/sirun-cuda-arm64
	file $(BIN)/sirun-cuda-arm64 | grep -q 'ELF 64-bit LSB .*ARM aarch64' || { file $(BIN)/sirun-cuda-arm64; exit 1; }
	@g=$$(aarch64-linux-gnu-objdump -T $(BIN)/sirun-cuda-arm64 | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1); \
	  if [ "$$(printf '%s\n' $$g $(GLIBC_MAX_arm64) | sort -V | tail -1)" != "$(GLIBC_MAX_arm64)" ]; then \
	    echo "cuda-cross-arm64: needs glibc $$g, JetPack 6 has $(GLIBC_MAX_arm64)"; exit 1; fi; \
	  echo "cuda-cross-arm64: ok: $(BIN)/sirun-cuda-arm64 is linux/arm64, needs glibc $$g (JetPack 6: $(GLIBC_MAX_arm64))"
	ln -sf libcuda.so $(BIN)/stub-arm64/libcuda.so.1
	$(GO) run ./cmd/sipack convert -q testdata/tinyllama -o $(BIN)/tiny-arm64-check.sip
	$(GO) run ./cmd/sirun $(BIN)/tiny-arm64-check.sip -q -p 'In the beginning' -n 12 --temp 0 > $(BIN)/tiny-arm64-check.want
	QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH=$(abspath $(BIN)/stub-arm64) ./.ci/qemu-run.sh \
	  $(BIN)/sirun-cuda-arm64 $(BIN)/tiny-arm64-check.sip -q -p 'In the beginning' -n 12 --temp 0 > $(BIN)/tiny-arm64-check.got
	cmp $(BIN)/tiny-arm64-check.want $(BIN)/tiny-arm64-check.got || { echo "cuda-cross-arm64: the arm64 build answers differently"; exit 1; }
	@if QEMU_LD_PREFIX=/usr/aarch64-linux-gnu LD_LIBRARY_PATH=$(abspath $(BIN)/stub-arm64) ./.ci/qemu-run.sh \
	  $(BIN)/sirun-cuda-arm64 $(BIN)/tiny-arm64-check.sip -q -p x -n 1 --device cuda 2> $(BIN)/tiny-arm64-check.err; then \
	  echo "cuda-cross-arm64: --device cuda without a driver succeeded"; exit 1; fi; \
	  grep -q "CUDA driver's version" $(BIN)/tiny-arm64-check.err || { cat $(BIN)/tiny-arm64-check.err; exit 1; }
	@echo "cuda-cross-arm64: ok: under qemu the arm64 build answers as this machine's sirun, and refuses --device cuda without a driver"

# The folder a GPU machine (no Go, no network) runs: the tagged test
# binaries, sirun-cuda, prep (synthetic checkpoint and packs), the tiny and
# archcheck models with their goldens, hf_bench.py and run.sh; and for the
# peer, llama.cpp's source, build-cuda.sh, gen_gguf.py and gguf-py from
# LLAMACPP (in llamacpp/, when LLAMACPP has them), quantize_gguf.py and the
# Llama 3 tokenizer; at most 64 MiB. Rehearse it here: make device-rehearse.
DEVICE_CHECK ?= $(BIN)/device-check
device-check:
	chmod -R u+w $(DEVICE_CHECK) 2>/dev/null; rm -rf $(DEVICE_CHECK) && mkdir -p $(DEVICE_CHECK)/testdata/vocab
	$(GO) test -tags cuda -c -ldflags='-s -w' -o $(DEVICE_CHECK)/cuda.test ./backend/cuda
	$(GO) test -tags cuda -c -ldflags='-s -w' -o $(DEVICE_CHECK)/devicecheck.test ./devicecheck
	$(GO) build -tags cuda -ldflags='-s -w' -o $(DEVICE_CHECK)/sirun-cuda ./cmd/sirun
	$(GO) build -ldflags='-s -w' -o $(DEVICE_CHECK)/prep ./devicecheck/prep
	cp -r testdata/tinyllama testdata/archcheck $(DEVICE_CHECK)/testdata/
	mkdir -p $(DEVICE_CHECK)/kernels && cp $(CUDA_DIR)/sipack.fatbin $(DEVICE_CHECK)/kernels/
	cp testdata/vocab/llama3.tokenizer.json.gz $(DEVICE_CHECK)/testdata/vocab/
	cp devicecheck/run.sh devicecheck/hf_bench.py devicecheck/quantize_gguf.py $(DEVICE_CHECK)/
	@if [ -f $(LLAMACPP)/build-cuda.sh ]; then \
	  mkdir -p $(DEVICE_CHECK)/llamacpp && \
	  cp -r $(LLAMACPP)/build-cuda.sh $(LLAMACPP)/src $(LLAMACPP)/gen_gguf.py $(LLAMACPP)/gguf-py $(DEVICE_CHECK)/llamacpp/ && \
	  { [ ! -f $(LLAMACPP)/LICENSE.llama.cpp ] || cp $(LLAMACPP)/LICENSE.llama.cpp $(DEVICE_CHECK)/llamacpp/; } && \
	  chmod -R u+w $(DEVICE_CHECK)/llamacpp && find $(DEVICE_CHECK)/llamacpp -name __pycache__ -prune -exec rm -rf {} + && \
	  echo "device-check: the peer (llama.cpp's source and scripts) from $(LLAMACPP)" || exit 1; \
	else \
	  echo "device-check: no $(LLAMACPP)/build-cuda.sh: run.sh will not measure the peer (set LLAMACPP to the folder)"; \
	fi
	@size=$$(du -sb $(DEVICE_CHECK) | cut -f1); echo "device-check: $(DEVICE_CHECK), $$size bytes"; \
	  if [ $$size -gt 67108864 ]; then echo "device-check: over 64 MiB"; exit 1; fi

# Every step of the device script that needs no GPU, on this machine's CPU
# (short lengths; results in $(BIN)/device-rehearsal).
# The kernel and runner test steps and the tiny-model CLI step (--device
# cuda) run with the kernels in the CPU emulator (-tags cudaemu builds).
# The peer step builds nothing: LLAMACPP's CPU llama-bench runs a small GGUF,
# written and quantized by a python3 with numpy (Debian's python3-numpy).
device-rehearse: device-check build
	$(GO) build -tags cudaemu -o $(BIN)/sirun-emu ./cmd/sirun
	$(GO) test -tags cudaemu -c -o $(BIN)/cuda-emu.test ./backend/cuda
	$(GO) test -tags cudaemu -c -o $(BIN)/devicecheck-emu.test ./devicecheck
	SIPACK_DEVICE_REHEARSE=1 SIRUN=$(CURDIR)/$(BIN)/sirun SIRUN_GPU=$(CURDIR)/$(BIN)/sirun-emu \
	  LLAMA_BENCH=$(abspath $(LLAMACPP))/bin/llama-bench \
	  KERNELS_TEST=$(CURDIR)/$(BIN)/cuda-emu.test RUNNER_TEST=$(CURDIR)/$(BIN)/devicecheck-emu.test \
	  SIPACK_DEVICE_OUT=$(CURDIR)/$(BIN)/device-rehearsal $(DEVICE_CHECK)/run.sh
