#!/usr/bin/env bash
# make demo: the dense and the pruned pack of the embedded test model side
# by side on the same prompts, then the share of dense quality the pruned
# one keeps on held-out rows. Usage: demo.sh BIN OUT
set -euo pipefail
BIN=$1 OUT=$2
mkdir -p "$OUT"
cat <<'NOTE'
The embedded model (testdata/tinyllama, 13 MB) is a test model trained on Bible verses in English and
Spanish: it shows what pruning keeps, not what a real model says.

NOTE
"$BIN/sipack" convert -q testdata/tinyllama -o "$OUT/dense.sip"
# Profile the translate task, rank the FFN neurons by it and fit the routers: one command.
"$BIN/sipack" convert -q testdata/tinyllama --profile translate --max-prompts 60 -o "$OUT/translate.sip"
for p in 'Spanish: Y dijo Dios: Sea la luz: y fué la luz.\nEnglish:' \
         'Spanish: Y llamó Dios á la luz Día, y á las tinieblas llamó Noche.\nEnglish:' \
         'Spanish: Y crió Dios los grandes monstruos marinos.\nEnglish:'; do
  echo "prompt:      ${p%%\\n*}"
  printf '  dense:     '; "$BIN/sirun" -q "$OUT/dense.sip" -p "$p" -n 24 --temp 0
  printf '  γ0.7 φ0.4: '; "$BIN/sirun" -q "$OUT/translate.sip" -p "$p" -n 24 --temp 0 --gamma 0.7 --phi 0.4
done
echo
echo "Held-out translations (150 verses), the pruned pack's BLEU and reference perplexity as a share of dense:"
"$BIN/sirun" eval -q --task translate "$OUT/translate.sip" --gamma 0.7 --phi 0.4 --half 2 --baseline "$OUT/dense.sip"
"$BIN/sirun" eval -q --manifests docs/tasks --task translate-ppl --data manifests/data/translate.eval.jsonl \
  "$OUT/translate.sip" --gamma 0.7 --phi 0.4 --half 2 --baseline "$OUT/dense.sip"
