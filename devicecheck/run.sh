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
#   hf.json       the same bf16 checkpoint under PyTorch/transformers generate
#   summary.md    all of it in one table
#
# SIPACK_DEVICE_REHEARSE=1 skips what needs a GPU and runs the rest on the
# CPU with short lengths (SIRUN names a sirun built without CUDA; SIRUN_GPU,
# if set, a sirun built with -tags cudaemu, whose --device cuda runs the
# kernels in the CPU emulator for the tiny-model step), so the script and
# its parsing are tried before GPU time is spent. The whole run
# is meant to finish in 8 minutes; every step has its own time limit and a
# failed step does not stop the next.
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
if [ "$REHEARSE" = 1 ]; then
  DEVICE=cpu
  N_TINY=4
  N_DECODE=${N_DECODE_REHEARSE:-8}
  N_PREFILL=${N_PREFILL_REHEARSE:-16}
  [ "$SIRUN_GPU" = "$SIRUN" ] && TINY_DEVICE=cpu
fi
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
: > "$OUT/steps.tsv"
: > "$OUT/bench.jsonl"

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

# 5. sirun on them: decode of N_DECODE tokens after 16, dense and γ0.7 φ0.4;
#    prefill of N_PREFILL tokens. One JSON line per run.
ids() { python3 -c "import sys; print('[' + ','.join(str(100 + i) for i in range(int(sys.argv[1]))) + ']')" "$1" 2>/dev/null ||
        awk -v n="$1" 'BEGIN { printf "["; for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), 100 + i; print "]" }'; }
bench() { # bench LABEL PACK NEW PROMPT_LEN [sirun flags...]
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
          label, device, rc, (p == "" ? "null" : p), (g == "" ? "null" : g), ffn, mem, dev }' "$WORK/bench.err" >> "$OUT/bench.jsonl"
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

# 6. The same bf16 checkpoint under PyTorch/transformers generate, if this
#    machine has them (with a GPU unless rehearsing), in the time left.
left=$(( 450 - $(elapsed) ))
if [ "$left" -gt 30 ]; then
  step hf "$left" python3 hf_bench.py "$WORK/synth" "$N_DECODE" "$N_PREFILL" "$DEVICE" > "$OUT/hf.json" 2> "$OUT/hf.err"
else
  echo '{"error":"skipped: no time left"}' > "$OUT/hf.json"
fi

# 7. Summary.
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
  echo "PyTorch/transformers: $(cat "$OUT/hf.json")"
} > "$OUT/summary.md"
cat "$OUT/summary.md"
echo "device check: $(elapsed) s; results in $OUT" >&2
