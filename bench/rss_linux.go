//go:build linux

package bench

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// peakRSS: VmHWM of /proc/self/status, the peak RSS of this process image.
// getrusage's ru_maxrss is the fallback only: Linux carries it across
// fork and exec, so a small command started by a large process (a test
// binary, a shell holding much) reports its parent's peak as its own.
func peakRSS() uint64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
				f := bytes.Fields(v) // "12345 kB"
				if len(f) == 2 && string(f[1]) == "kB" {
					if kb, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
						return kb * 1024
					}
				}
			}
		}
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024
}
