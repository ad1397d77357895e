#!/usr/bin/env bash
# The device check: run on the GPU machine from the folder `make
# device-check` prepared (no Go, no network needed). Results go to
# $SIPACK_DEVICE_OUT (default ./results):
#
#   steps.tsv     step, exit status, seconds — one line per step
#   env.txt       nvidia-smi, driver, glibc, CPU
#   kernels.log   backend/cuda tests: every seam op on the GPU against the CPU
#                 reference (kernels.Generic), random shapes, ragged tails
#   runner.log    devicecheck tests: tiny + archcheck models against the
#                 PyTorch goldens (logits 1e-3, greedy ids identical); greedy
#                 ids at γ0.7 φ0.4 equal to the CPU's (bf16, q8_0, q4_0)
#   tiny-cli.txt  sirun-cuda --device cuda against --device cpu: the same text
#   bench.jsonl   1B-shape synthetic packs (bf16, q4_0): dense and γ0.7 φ0.4
#                 decode tok/s (launches one by one, and as CUDA graphs),
#                 prefill-256 tok/s, device memory; weights in place
#   peer.jsonl    the peer, llama.cpp's llama-bench built here with CUDA
#                 (llamacpp/build-cuda.sh, in the background from the start;
#                 log in peer-build.log), beside sirun-cuda on the same GPU in
#                 3 interleaved rounds: per round and dtype (bf16, q4_0: GGUFs
#                 of the same 1B shape, random weights, written while the tests
#                 run; Q4_0 by quantize_gguf.py, every matrix Q4_0 as
#                 llama-quantize --pure), llama-bench pp256 and tg128 at depth
#                 0 and 1024, then sirun's dense and γ0.7 φ0.4 decode of 128
#                 tokens after 16 and after 1024, and its prefill of 256
#   hf.json       the same bf16 checkpoint under PyTorch/transformers generate
#   summary.md    all of it in tables, with the peer ratios (medians of the
#                 per-round ratios and their range)
#
# SIPACK_DEVICE_REHEARSE=1 skips what needs a GPU and runs the rest on the
# CPU with short lengths (SIRUN names a sirun built without CUDA; SIRUN_GPU,
# if set, a sirun built with -tags cudaemu, whose --device cuda runs the
# kernels in the CPU emulator for the tiny-model step), so the script and
# its parsing are tried before GPU time is spent. The peer's rehearsal
# builds nothing: LLAMA_BENCH names a CPU llama-bench, the GGUFs have a
# small shape (their ratios to sirun's 1B packs mean nothing), one round,
# depth 32. The whole run is meant to finish in 9 minutes (the peer build
# at most PEER_BUILD_LIMIT s, 330); every step has its own time limit and a
# failed step, the peer build too, does not stop the next.
set -uo pipefail
cd "$(dirname "$0")"
HERE=$PWD
OUT=${SIPACK_DEVICE_OUT:-$HERE/results}
WORK=${SIPACK_DEVICE_WORK:-/tmp/sipack-device-check}
REHEARSE=${SIPACK_DEVICE_REHEARSE:-0}
SIRUN=${SIRUN:-$HERE/sirun-cuda}
SIRUN_GPU=${SIRUN_GPU:-$SIRUN}
KERNELS_TEST=${KERNELS_TEST:-./cuda.test}
RUNNER_TEST=${RUNNER_TEST:-./devicecheck.test}
DEVICE=cuda
TINY_DEVICE=cuda
N_TINY=32
N_DECODE=128
N_PREFILL=256
PEER_ROUNDS=${PEER_ROUNDS:-3}
PEER_DEPTH=1024
PEER_BUILD_LIMIT=${PEER_BUILD_LIMIT:-330}
DEADLINE=${SIPACK_DEVICE_DEADLINE:-530} # s: the peer's rounds and hf start only before it
# the peer's GGUFs: llama.cpp's random Llama-3.2-1B shape, sirun's synth packs' shape
PEER_SHAPE=()
PEER_PREFIX=llama32-1b-shape-random
if [ "$REHEARSE" = 1 ]; then
  DEVICE=cpu
  N_TINY=4
  N_DECODE=${N_DECODE_REHEARSE:-8}
  N_PREFILL=${N_PREFILL_REHEARSE:-16}
  [ "$SIRUN_GPU" = "$SIRUN" ] && TINY_DEVICE=cpu
  PEER_ROUNDS=${PEER_ROUNDS_REHEARSE:-1}
  PEER_DEPTH=${PEER_DEPTH_REHEARSE:-32}
  PEER_SHAPE=(--hidden 256 --ffn 1024 --layers 2 --heads 4 --kv-heads 2 --head-dim 64)
  PEER_PREFIX=peer-rehearsal-small
  DEADLINE=${SIPACK_DEVICE_DEADLINE:-100000}
fi
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
: > "$OUT/steps.tsv"
: > "$OUT/bench.jsonl"
: > "$OUT/peer.jsonl"

# step NAME LIMIT CMD...: runs CMD with a time limit, records its status.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  echo "== $name (limit ${limit}s)" >&2
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$OUT/steps.tsv"
  [ $rc = 124 ] && echo "   $name: timed out after ${limit}s" >&2
  return $rc
}

# run NAME CMD...: a step that is a shell function (which limits its own time).
run() {
  local name=$1
  shift
  local t0=$(date +%s)
  echo "== $name" >&2
  "$@"
  local rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" >> "$OUT/steps.tsv"
  return $rc
}

elapsed() { echo $(( $(date +%s) - START )); }

# 0. The peer, in the background from the start (niced: the tests come
#    first): llama.cpp's llama-bench built with CUDA for this GPU, and the
#    GGUFs it runs. Both are kept in WORK for a second run on the machine.
PEER_GGUF=$WORK/gguf
PEER_BUILD_PID= PEER_MODELS_PID=
if [ "$REHEARSE" = 1 ]; then
  PEER_LB=${LLAMA_BENCH:-}
  if [ -n "$PEER_LB" ] && [ -x "$PEER_LB" ]; then
    echo "rehearsal: no build; LLAMA_BENCH=$PEER_LB" > "$OUT/peer-build.log"
  else
    echo "rehearsal: no build, and LLAMA_BENCH names no llama-bench ('$PEER_LB')" > "$OUT/peer-build.log"
    PEER_LB=
  fi
  rm -f "$PEER_GGUF/$PEER_PREFIX"-*.gguf # small: write them again, so the writer and quantizer run
else
  PEER_LB=$WORK/llamacpp-cuda/build/bin/llama-bench
  if [ -x "$PEER_LB" ]; then
    echo "already built: $PEER_LB" > "$OUT/peer-build.log"
  elif [ ! -x llamacpp/build-cuda.sh ]; then
    echo "no llamacpp/build-cuda.sh here: make device-check copies it from LLAMACPP (../shared/llamacpp)" > "$OUT/peer-build.log"
  else
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .\r')
    case $arch in '' | *[!0-9]*) arch=90 ;; esac
    command -v nvcc > /dev/null || [ ! -x /usr/local/cuda/bin/nvcc ] || PATH=$PATH:/usr/local/cuda/bin
    {
      echo "CUDA_ARCH=$arch, $(nproc) jobs, nvcc $(command -v nvcc || echo 'not on PATH'), limit ${PEER_BUILD_LIMIT}s"
      export CUDA_ARCH=$arch
      step peer-build "$PEER_BUILD_LIMIT" nice -n 10 ./llamacpp/build-cuda.sh "$WORK/llamacpp-cuda"
    } > "$OUT/peer-build.log" 2>&1 &
    PEER_BUILD_PID=$!
  fi
fi
PEER_PY=
for py in python3 /usr/bin/python3; do
  if "$py" -c 'import numpy' 2> /dev/null; then PEER_PY=$py; break; fi
done
if [ ! -f llamacpp/gen_gguf.py ]; then
  echo "no llamacpp/gen_gguf.py here: make device-check copies it from LLAMACPP (../shared/llamacpp)" > "$OUT/peer-models.log"
elif [ -z "$PEER_PY" ]; then
  echo "no python3 with numpy here: the GGUFs cannot be written" > "$OUT/peer-models.log"
else
  {
    mkdir -p "$PEER_GGUF"
    export PYTHONPATH=$HERE/llamacpp/gguf-py PYTHONDONTWRITEBYTECODE=1
    g=$PEER_GGUF/$PEER_PREFIX
    if [ ! -f "$g-BF16.gguf" ]; then
      rm -rf "$PEER_GGUF/tmp"
      step peer-gguf-bf16 150 nice -n 10 "$PEER_PY" llamacpp/gen_gguf.py random --outdir "$PEER_GGUF/tmp" \
        --prefix "$PEER_PREFIX" --types bf16 --seed 1234 --tokenizer testdata/vocab/llama3.tokenizer.json.gz "${PEER_SHAPE[@]}" &&
        mv "$PEER_GGUF/tmp/$PEER_PREFIX-BF16.gguf" "$g-BF16.gguf"
    fi
    # every matrix Q4_0, the norms F32 (llama-quantize --pure; the trimmed source has no llama-quantize)
    [ -f "$g-Q4_0.gguf" ] || [ ! -f "$g-BF16.gguf" ] ||
      step peer-gguf-q4_0 150 nice -n 10 "$PEER_PY" quantize_gguf.py "$g-BF16.gguf" "$g-Q4_0.gguf" q4_0
    ls -l "$PEER_GGUF"
  } > "$OUT/peer-models.log" 2>&1 &
  PEER_MODELS_PID=$!
fi

{
  echo "date: $(date -u)"
  echo "rehearsal: $REHEARSE"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  ldd --version 2>&1 | head -1
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) × $(nproc)"
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)' 2>&1 | tail -1
} > "$OUT/env.txt" 2>&1

export SIPACK_TESTDATA=$HERE/testdata

# 0. The binaries start here (cgo: glibc ≥ 2.34, libcuda.so.1; gorgonia.org/cu
#    exits at start when the driver finds no GPU).
if ! "$SIRUN_GPU" --help > "$WORK/start.log" 2>&1; then
  { echo "sirun-cuda does not start here:"; head -5 "$WORK/start.log"; } | tee -a "$OUT/env.txt" >&2
fi

# 1. Kernels against the CPU reference. (Rehearsals run them only when
#    KERNELS_TEST and RUNNER_TEST name emulator builds, -tags cudaemu.)
if [ "$REHEARSE" != 1 ] || [ "$KERNELS_TEST" != ./cuda.test ]; then
  step kernels 150 "$KERNELS_TEST" -test.v -test.count=1 > "$OUT/kernels.log" 2>&1
  # 2. The runner on the GPU against the PyTorch goldens and the CPU path.
  step runner 150 "$RUNNER_TEST" -test.v -test.count=1 > "$OUT/runner.log" 2>&1
fi

# 3. The CLI on the tiny model: --device cuda prints what --device cpu prints.
T0=$(date +%s)
{
  for dt in bf16 q4_0; do
    pack=$WORK/tiny-$dt.sip
    ./prep convert testdata/tinyllama -o "$pack" -dtype "$dt" 2>/dev/null || { echo "prep convert $dt failed"; continue; }
    for sel in "" "--gamma 0.7 --phi 0.4" "--gamma 0.7 --phi 0.4 graphs"; do
      graphs=0
      if [ "${sel% graphs}" != "$sel" ]; then sel=${sel% graphs}; graphs=1; fi
      args=(-p 'Spanish: Y dijo Dios: Sea la luz: y fué la luz.\nEnglish:' -n "$N_TINY" --temp 0 $sel)
      gpu=$(SIPACK_CUDA_GRAPH=$graphs timeout 120 "$SIRUN_GPU" "$pack" "${args[@]}" --device "$TINY_DEVICE" 2>"$WORK/gpu.err")
      grc=$?
      # The CPU's float reference table: float dots for the block types, no
      # BF16 rounding, the arithmetic the GPU does (the CPU's default rounds
      # the prefill GEMM's activations to BF16 where it has AVX512_BF16).
      cpu=$(SIPACK_KERNELS=generic timeout 60 "$SIRUN" "$pack" "${args[@]}" --device cpu 2>"$WORK/cpu.err")
      crc=$?
      if [ $grc = 0 ] && [ $crc = 0 ] && [ "$gpu" = "$cpu" ]; then verdict=same; else verdict=DIFFERENT; fi
      echo "$dt ${sel:-dense}$([ $graphs = 1 ] && echo ', CUDA graphs'): $verdict (exit $grc/$crc)"
      # One line each: newlines shown as ⏎.
      echo "  $TINY_DEVICE: ${gpu//$'\n'/⏎}"
      echo "  cpu: ${cpu//$'\n'/⏎}"
      grep 'sirun: device' "$WORK/gpu.err" | sed 's/^/  /'
      grep -v '^sirun: \|^$' "$WORK/gpu.err" | sed 's/^/  gpu stderr: /' | head -5
    done
  done
} > "$OUT/tiny-cli.txt" 2>&1
grep -q DIFFERENT "$OUT/tiny-cli.txt"; printf 'tiny-cli\t%d\t%d\n' $(( $? == 0 )) $(( $(date +%s) - T0 )) >> "$OUT/steps.tsv"

# 4. The 1B-shape synthetic checkpoint and its packs (made here: 2.5 GB).
if [ ! -f "$WORK/synth/config.json" ]; then
  step synth 120 ./prep synth -o "$WORK/synth" -tokenizer testdata/tinyllama/tokenizer.json
fi
for dt in bf16 q4_0; do
  [ -f "$WORK/synth-$dt.sip" ] || step "convert-$dt" 120 ./prep convert "$WORK/synth" -o "$WORK/synth-$dt.sip" -dtype "$dt"
done

# The timings below want a quiet machine: wait for the peer's build and
# GGUFs (each within its own limit).
if [ -n "$PEER_BUILD_PID$PEER_MODELS_PID" ]; then
  run peer-wait wait $PEER_BUILD_PID $PEER_MODELS_PID
fi

# 5. sirun on them: decode of N_DECODE tokens after 16, dense and γ0.7 φ0.4;
#    prefill of N_PREFILL tokens. One JSON line per run.
ids() { python3 -c "import sys; print('[' + ','.join(str(100 + i) for i in range(int(sys.argv[1]))) + ']')" "$1" 2>/dev/null ||
        awk -v n="$1" 'BEGIN { printf "["; for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), 100 + i; print "]" }'; }
BENCH_JSONL=$OUT/bench.jsonl
bench() { # bench LABEL PACK NEW PROMPT_LEN [sirun flags...]: one line to BENCH_JSONL
  local label=$1 pack=$2 new=$3 plen=$4
  shift 4
  [ -f "$pack" ] || return 1
  timeout 90 "$SIRUN" "$pack" --prompt-ids "$(ids "$plen")" -n "$new" --temp 0 --ignore-eos --output-ids --device "$DEVICE" "$@" \
    > "$WORK/bench.out" 2> "$WORK/bench.err"
  local rc=$?
  awk -v label="$label" -v rc="$rc" -v device="$DEVICE" '
    /sirun: prompt/   { for (i = 1; i <= NF; i++) if ($i == "tok/s)") { p = $(i-1); gsub(/\(/, "", p) } }
    /sirun: generate/ { for (i = 1; i <= NF; i++) if ($i == "tok/s)") { g = $(i-1); gsub(/\(/, "", g) } }
    /sirun: ffn/      { ffn = $0; sub(/^sirun: ffn +/, "", ffn) }
    /sirun: device/   { dev = $0; sub(/^sirun: device +/, "", dev) }
    /sirun: memory/   { mem = $0; sub(/^sirun: memory +/, "", mem) }
    END { gsub(/"/, "'"'"'", dev); printf "{\"label\":\"%s\",\"device\":\"%s\",\"exit\":%d,\"prefill_tok_s\":%s,\"decode_tok_s\":%s,\"ffn\":\"%s\",\"memory\":\"%s\",\"device_memory\":\"%s\"}\n",
          label, device, rc, (p == "" ? "null" : p), (g == "" ? "null" : g), ffn, mem, dev }' "$WORK/bench.err" >> "$BENCH_JSONL"
  [ $rc = 0 ] || sed 's/^/   /' "$WORK/bench.err" | tail -5 >&2
  return $rc
}
export SIPACK_CUDA_GRAPH=0 # launches one by one first, then as graphs (the default)
for dt in bf16 q4_0; do
  p=$WORK/synth-$dt.sip
  run "bench-$dt-dense" bench "$dt dense decode" "$p" "$N_DECODE" 16
  run "bench-$dt-sparse" bench "$dt γ0.7 φ0.4 decode" "$p" "$N_DECODE" 16 --gamma 0.7 --phi 0.4
  run "bench-$dt-prefill" bench "$dt dense prefill-$N_PREFILL" "$p" 1 "$N_PREFILL"
  run "bench-$dt-prefill-sparse" bench "$dt γ0.7 prefill-$N_PREFILL" "$p" 1 "$N_PREFILL" --gamma 0.7 --phi 0.4
done
# Decode steps as CUDA graphs (SIPACK_CUDA_GRAPH=1, the default): batch-1 decode is
# launch-bound on a big GPU.
for dt in bf16 q4_0; do
  p=$WORK/synth-$dt.sip
  SIPACK_CUDA_GRAPH=1 run "bench-$dt-dense-graphs" bench "$dt dense decode, CUDA graphs" "$p" "$N_DECODE" 16
  SIPACK_CUDA_GRAPH=1 run "bench-$dt-sparse-graphs" bench "$dt γ0.7 φ0.4 decode, CUDA graphs" "$p" "$N_DECODE" 16 --gamma 0.7 --phi 0.4
done
# The integrated-GPU layout on this GPU: the mapped γ prefix registered and
# read in place (over the host link here), for its device memory.
SIPACK_CUDA_IN_PLACE=1 run "bench-bf16-in-place" bench "bf16 γ0.7 φ0.4 decode, weights in place" "$WORK/synth-bf16.sip" 16 16 --gamma 0.7 --phi 0.4

# 6. The peer: llama.cpp's llama-bench (CUDA, all layers on the GPU, flash
#    attention) and sirun-cuda (CUDA graphs, the default) on the same shape and
#    dtype, interleaved: in each round, per dtype, llama-bench's pp and tg at
#    depth 0 and PEER_DEPTH, then sirun's dense and γ0.7 φ0.4 decode after 16
#    and after PEER_DEPTH prompt tokens and its prefill. A round starts only
#    if the last one's time still fits before DEADLINE.
peer_sirun() { # peer_sirun ROUND DTYPE KIND NEW PROMPT_LEN [sirun flags...]
  local r=$1 dt=$2 kind=$3 new=$4 plen=$5
  shift 5
  : > "$WORK/peer-one.jsonl"
  BENCH_JSONL=$WORK/peer-one.jsonl SIPACK_CUDA_GRAPH=1 bench "peer $dt $kind" "$WORK/synth-$dt.sip" "$new" "$plen" "$@"
  sed "s/^/{\"round\":$r,\"side\":\"sirun\",\"dtype\":\"$dt\",\"kind\":\"$kind\",\"rec\":/; s/\$/}/" "$WORK/peer-one.jsonl" >> "$OUT/peer.jsonl"
}
peer() {
  local r dt g last=0 t0
  for r in $(seq 1 "$PEER_ROUNDS"); do
    if [ $(( $(elapsed) + (last > 30 ? last : 30) )) -gt "$DEADLINE" ]; then
      echo "   peer: round $r not started: $(elapsed) s gone, the last round took $last s, the deadline is $DEADLINE s" >&2
      echo "{\"round\":$r,\"skipped\":\"no time left\"}" >> "$OUT/peer.jsonl"
      break
    fi
    t0=$(date +%s)
    for dt in bf16 q4_0; do
      g=$PEER_GGUF/$PEER_PREFIX-$(echo "$dt" | tr a-z A-Z).gguf
      if [ -f "$g" ]; then
        cat "$g" > /dev/null # from the page cache, not the disk
        timeout --kill-after=5 120 "$PEER_LB" -m "$g" -ngl 99 -fa 1 -p "$N_PREFILL" -n "$N_DECODE" -d "0,$PEER_DEPTH" -r 1 -o jsonl \
          2>> "$OUT/peer-llama.err" | grep '^{' | sed "s/^/{\"round\":$r,\"side\":\"llama\",\"dtype\":\"$dt\",\"rec\":/; s/\$/}/" >> "$OUT/peer.jsonl"
        [ "${PIPESTATUS[0]}" = 0 ] || echo "   peer: llama-bench failed on $g (peer-llama.err)" >&2
      else
        echo "   peer: no $g (peer-models.log)" >&2
      fi
      peer_sirun "$r" "$dt" dense "$N_DECODE" 16
      peer_sirun "$r" "$dt" sparse "$N_DECODE" 16 --gamma 0.7 --phi 0.4
      peer_sirun "$r" "$dt" prefill 1 "$N_PREFILL"
      peer_sirun "$r" "$dt" dense-depth "$N_DECODE" "$PEER_DEPTH"
      peer_sirun "$r" "$dt" sparse-depth "$N_DECODE" "$PEER_DEPTH" --gamma 0.7 --phi 0.4
    done
    last=$(( $(date +%s) - t0 ))
  done
}
: > "$OUT/peer-llama.err"
if [ -n "$PEER_LB" ] && [ -x "$PEER_LB" ]; then
  run peer peer
else
  echo "   peer: no llama-bench (peer-build.log): not measured" >&2
fi

# 7. The same bf16 checkpoint under PyTorch/transformers generate, if this
#    machine has them (with a GPU unless rehearsing), in the time left.
left=$(( DEADLINE - $(elapsed) ))
[ "$left" -gt 150 ] && left=150
if [ "$left" -gt 30 ]; then
  step hf "$left" python3 hf_bench.py "$WORK/synth" "$N_DECODE" "$N_PREFILL" "$DEVICE" > "$OUT/hf.json" 2> "$OUT/hf.err"
else
  echo '{"error":"skipped: no time left"}' > "$OUT/hf.json"
fi

# The peer's tables: medians over rounds of each figure and of the per-round
# ratios sirun / llama.cpp, with their range.
peer_summary() {
  echo "## The peer: llama.cpp's llama-bench beside sirun"
  echo
  if ! grep -q '"side": *"llama"' "$OUT/peer.jsonl"; then
    echo "Not measured: no llama-bench figures. peer-build.log ends:"
    echo '```'
    tail -n 8 "$OUT/peer-build.log" 2> /dev/null
    echo '```'
    echo "peer-models.log ends:"
    echo '```'
    tail -n 4 "$OUT/peer-models.log" 2> /dev/null
    tail -n 4 "$OUT/peer-llama.err" 2> /dev/null
    echo '```'
    return
  fi
  python3 - "$OUT/peer.jsonl" "$N_DECODE" "$N_PREFILL" "$PEER_DEPTH" "$REHEARSE" "$PEER_ROUNDS" << 'PY' || echo "(the peer tables could not be made: python3 failed; the figures are in peer.jsonl)"
import json, statistics as st, sys
path, ng, npp, depth, rehearse, planned = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", int(sys.argv[6])
L, S, skipped = {}, {}, []
for line in open(path):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if "skipped" in d:
        skipped.append(d["round"])
        continue
    r, dt, rec = d["round"], d["dtype"], d["rec"]
    if d["side"] == "llama":
        kind = "pp" if rec.get("n_prompt", 0) > 0 else "tg"
        L.setdefault((dt, kind, rec.get("n_depth", 0)), {})[r] = rec["avg_ts"]
    elif rec.get("exit") == 0:
        v = rec["prefill_tok_s"] if d["kind"] == "prefill" else rec["decode_tok_s"]
        if v:
            S.setdefault((dt, d["kind"]), {})[r] = v
f = lambda x, p=1: "n/a" if x is None else f"{x:.{p}f}"
med = lambda m: st.median(m.values()) if m else None
def ratio(a, b):
    rs = [a[r] / b[r] for r in sorted(a) if r in b and b[r]]
    if not rs:
        return "n/a"
    return f"{st.median(rs):.2f}×" + (f" ({min(rs):.2f}–{max(rs):.2f})" if len(rs) > 1 else "")
dts = [dt for dt in ("bf16", "q4_0") if any(k[0] == dt for k in L) or any(k[0] == dt for k in S)]
rounds = sorted({r for m in list(L.values()) + list(S.values()) for r in m})
print((f"llama.cpp 3f545bec's CPU llama-bench (LLAMA_BENCH, `-ngl 99 -fa 1 -r 1`) and sirun on the CPU" if rehearse else
       f"llama.cpp 3f545bec's llama-bench (`-ngl 99 -fa 1 -r 1`, built here with CUDA) and sirun-cuda (CUDA graphs) on the same GPU")
      + (", random weights of the same dtype" if rehearse else ", the same random-weight shape and dtype") + f" (GGUF: bf16, and Q4_0 in every matrix as `llama-quantize --pure`; "
      f"sirun: the synth packs), {len(rounds)} of {planned} interleaved rounds"
      + (f" (round {', '.join(map(str, skipped))} not started: no time left)" if skipped else "")
      + ". tok/s are medians over rounds; each × is sirun / llama.cpp within a round, the median over rounds (min–max), "
      "against the llama.cpp figure named in its column.")
if rehearse:
    print()
    print("Rehearsal: llama.cpp ran a small GGUF on the CPU and sirun the 1B packs: these ratios only show that the parsing works.")
print()
print(f"| dtype | llama.cpp tg{ng} | sirun dense | × llama.cpp tg{ng} | sirun γ0.7 φ0.4 | × llama.cpp tg{ng} | "
      f"llama.cpp pp{npp} | sirun prefill {npp} | × llama.cpp pp{npp} |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for dt in dts:
    tg, pp = L.get((dt, "tg", 0), {}), L.get((dt, "pp", 0), {})
    dn, sp, pf = S.get((dt, "dense"), {}), S.get((dt, "sparse"), {}), S.get((dt, "prefill"), {})
    print(f"| {dt} | {f(med(tg))} | {f(med(dn))} | {ratio(dn, tg)} | {f(med(sp))} | {ratio(sp, tg)} | "
          f"{f(med(pp))} | {f(med(pf))} | {ratio(pf, pp)} |")
print()
print(f"Decode at depth {depth} (sirun: {ng} tokens after a {depth}-token prompt; llama.cpp: tg{ng} @ d{depth}):")
print()
print(f"| dtype | llama.cpp tg{ng} @ d{depth} | sirun dense @ {depth} | × llama.cpp tg{ng} @ d{depth} | "
      f"sirun γ0.7 φ0.4 @ {depth} | × llama.cpp tg{ng} @ d{depth} | llama.cpp pp{npp} @ d{depth} |")
print("|---|---:|---:|---:|---:|---:|---:|")
for dt in dts:
    tg, pp = L.get((dt, "tg", depth), {}), L.get((dt, "pp", depth), {})
    dn, sp = S.get((dt, "dense-depth"), {}), S.get((dt, "sparse-depth"), {})
    print(f"| {dt} | {f(med(tg))} | {f(med(dn))} | {ratio(dn, tg)} | {f(med(sp))} | {ratio(sp, tg)} | {f(med(pp))} |")
PY
}

# 8. Summary.
{
  echo "# sipack device check ($(date -u +%F), $(elapsed) s, rehearsal $REHEARSE)"
  echo
  head -1 "$OUT/env.txt"
  grep -m1 -E 'H200|H100|Orin|NVIDIA' "$OUT/env.txt" || true
  echo
  echo "| step | exit | s |"
  echo "|---|---|---|"
  awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$OUT/steps.tsv"
  echo
  for f in kernels runner; do
    [ -f "$OUT/$f.log" ] && { echo "$f: $(grep -cE '^--- PASS' "$OUT/$f.log") passed, $(grep -cE '^--- FAIL' "$OUT/$f.log") failed"; grep -E '^--- FAIL|max \|Δ\|' "$OUT/$f.log" | head -20; }
  done
  echo
  echo '```'
  cat "$OUT/tiny-cli.txt"
  echo '```'
  echo
  echo "| run | device | prefill tok/s | decode tok/s | ffn | device memory |"
  echo "|---|---|---|---|---|---|"
  sed -e 's/^{"label":"\([^"]*\)","device":"\([^"]*\)","exit":\([0-9]*\),"prefill_tok_s":\([^,]*\),"decode_tok_s":\([^,]*\),"ffn":"\([^"]*\)","memory":"[^"]*","device_memory":"\([^"]*\)"}$/| \1 | \2 (exit \3) | \4 | \5 | \6 | \7 |/' "$OUT/bench.jsonl"
  echo
  peer_summary
  echo
  echo "PyTorch/transformers: $(cat "$OUT/hf.json")"
} > "$OUT/summary.md"
cat "$OUT/summary.md"
echo "device check: $(elapsed) s; results in $OUT" >&2
