//go:build darwin

package bench

import "golang.org/x/sys/unix"

// peakRSS: getrusage's ru_maxrss, which darwin gives in bytes.
func peakRSS() uint64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss)
}
