package bench

import "testing"

// TestPeakRSSIsPlausible: after touching 64 MiB the peak RSS is at least
// that (on the OSes this runs its tests on; 0 would mean the call failed).
func TestPeakRSSIsPlausible(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	if got := PeakRSS(); got < 64<<20 || got > 1<<40 {
		t.Fatalf("peak RSS %d bytes after touching 64 MiB", got)
	}
	_ = buf[len(buf)-1]
}
