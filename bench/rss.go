package bench

// PeakRSS is the process's peak resident set size in bytes, or 0 where the
// OS gives no figure (see rss_*.go).
func PeakRSS() uint64 { return peakRSS() }
