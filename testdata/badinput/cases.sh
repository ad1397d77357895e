#!/usr/bin/env bash
# The bad-input cases a new user hits, one line each: case, exit status and
# what became of the file, the first 150 characters of the message.
# Usage: testdata/badinput/cases.sh SIPACK SIRUN   (from the repository root)
# Special files are nodes made here in a temporary folder (mknod needs root;
# without it those cases say so), never a system one.
set -u
SP=$(realpath "$1") SR=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export XDG_CACHE_HOME=$T/cache
TINY=testdata/tinyllama
"$SP" convert -q $TINY -o "$T/t.sip" >/dev/null 2>&1
res() { printf '%s\t%s\t%s\n' "$1" "$2" "$(echo "$3" | tr '\n' ' ' | cut -c1-150)"; }
kind() { stat -c %F "$1" 2>/dev/null; }

if mknod "$T/null" c 1 3 2>/dev/null; then
  o=$(timeout 20 "$SP" convert -q $TINY -o "$T/null" 2>&1); rc=$?; res "convert -o a character device" "exit $rc, after: $(kind "$T/null")" "$o"
  mknod "$T/null2" c 1 3
  o=$(timeout 20 "$SP" slice --gamma 0.5 "$T/t.sip" -o "$T/null2" 2>&1); rc=$?; res "slice -o a character device" "exit $rc, after: $(kind "$T/null2")" "$o"
else
  res "convert/slice -o a character device" "not run" "mknod needs root"
fi
mkfifo "$T/fifo-out"
o=$(timeout 20 "$SP" convert -q $TINY -o "$T/fifo-out" 2>&1); rc=$?; res "convert -o a FIFO" "exit $rc, after: $(kind "$T/fifo-out")" "$o"
mkfifo "$T/fifo.sip"
for c in "$SR $T/fifo.sip -p x -n 1" "$SP inspect $T/fifo.sip" "$SP verify $T/fifo.sip"; do
  o=$(timeout 5 $c 2>&1); rc=$?
  res "$(basename "${c%% *}") ${c#* } (a FIFO)" "exit $rc$([ $rc = 124 ] && echo ': hung, killed after 5 s')" "$o"
done
python3 - "$T/t.sip" "$T/bad.sip" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read()); ffn = struct.unpack_from('<Q', b, 48)[0]
b[ffn + 100:ffn + 104] = b'\xff\xff\xff\xff'; open(sys.argv[2], 'wb').write(b)
PY
o=$("$SR" "$T/bad.sip" -p 'In the beginning' -n 8 --temp 0 2>&1); rc=$?; res "sirun, 4 band bytes damaged" "exit $rc" "$o"
# Killed as soon as its temporary file appears.
"$SP" convert -q $TINY --dtype q4_0 -o "$T/killed.sip" >/dev/null 2>&1 & p=$!
for _ in $(seq 400); do ls -A "$T" | grep -q 'killed.*tmp' && break; sleep 0.005; done
kill -9 $p 2>/dev/null; wait $p 2>/dev/null
before=$(ls -A "$T" | grep -c 'tmp')
"$SP" convert -q $TINY -o "$T/other.sip" >/dev/null 2>&1
res "convert killed, then one to another name" "temporary files $before -> $(ls -A "$T" | grep -c 'tmp')" ""
s=$(date +%s%N); o=$("$SP" profile -q --task translate $TINY --max-prompts 20 -o "$T/missing/dir/x.prof" 2>&1); rc=$?
res "profile -o into a missing folder" "exit $rc after $(( ($(date +%s%N) - s) / 1000000 )) ms" "$o"
o=$("$SP" inspect $TINY/model.safetensors 2>&1); res "inspect a safetensors file" "exit $?" "$o"
o=$("$SP" route --task translate $TINY -o "$T/r.sip" 2>&1); res "route a model directory" "exit $?" "$o"
o=$(printf 'And God said, Let there be light\n%.0s' 1 2 3 4 5 6 | "$SR" "$T/t.sip" -i -p 'In the beginning' -n 24 --temp 0 --ignore-eos -c 64 2>&1 >/dev/null | grep -E 'error|full|fit' | head -2)
res "sirun -i past a 64-token context" "" "$o"
"$SP" convert -q $TINY --chat-template testdata/chat/tiny_template.jinja -o "$T/chat.sip" >/dev/null 2>&1
o=$(echo 'In the beginning' | "$SR" chat "$T/chat.sip" --temp 0 2>&1 >/dev/null | grep ' eval =' | tail -1)
res "sirun chat without -n" "" "$o"
