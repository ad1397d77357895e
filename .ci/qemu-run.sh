#!/usr/bin/env bash
# qemu-run.sh BINARY ARGS...: runs an arm64 test binary under qemu-user
# (another arch's with QEMU=qemu-arm, say),
# with a wall-clock limit, and once more when that limit is hit.
#
# Go programs sometimes hang forever under qemu-user (golang/go#70329,
# tianon/gosu#121: the emulator loses a signal or a futex wake; Go's own
# -test.timeout cannot fire then). A hang is the emulator's, not a test
# failure, so it gets one more try; a test that fails, or hangs twice, fails.
# Asynchronous preemption (SIGURG) is the signal traffic most often named in
# those hangs; it is switched off here, which changes no result.
set -uo pipefail
limit=${QEMU_LIMIT:-420}
for try in 1 2; do
	GODEBUG=asyncpreemptoff=1 timeout -k 10 "$limit" "${QEMU:-qemu-aarch64}" "$@"
	rc=$?
	if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then
		exit "$rc"
	fi
	echo "qemu-run: $1 ran past ${limit}s under qemu (try $try of 2)" >&2
done
exit "$rc"
