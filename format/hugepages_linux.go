//go:build linux

package format

import "os"

func hugeMapped(b []byte) (int64, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	lo, hi := addrRange(b)
	return smapsHuge(f, lo, hi)
}
