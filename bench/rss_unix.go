//go:build freebsd || netbsd || openbsd || dragonfly

package bench

import "golang.org/x/sys/unix"

// peakRSS: getrusage's ru_maxrss, in KiB on these systems.
func peakRSS() uint64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024
}
