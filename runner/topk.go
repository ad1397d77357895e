package runner

// topKeys appends to sel, ascending, the indices of the k largest keys
// (ties: the lower index first) and returns it; buf (len(keys) long, apart
// from keys) is the radix select's. The router's choice of groups.
func topKeys(keys, buf []uint32, k int, sel []int32) []int32 {
	if k <= 0 {
		return sel
	}
	thr := kthLargest(keys, k, buf)
	ties := k
	for _, key := range keys {
		if key > thr {
			ties--
		}
	}
	for i, key := range keys {
		if key > thr || (key == thr && ties > 0) {
			if key == thr {
				ties--
			}
			sel = append(sel, int32(i))
		}
	}
	return sel
}

// kthLargest returns the k-th largest of keys (1-based, k ≤ len(keys)) by
// radix select, a byte at a time from the top: the byte's histogram over
// the candidates names the bucket holding the k-th, and only that bucket's
// keys stay candidates (copied into buf, len(keys) long).
func kthLargest(keys []uint32, k int, buf []uint32) uint32 {
	cand := keys
	for shift := 24; shift >= 0; shift -= 8 {
		var hist [256]int
		for _, x := range cand {
			hist[(x>>shift)&255]++
		}
		d := 255
		for ; d > 0 && hist[d] < k; d-- {
			k -= hist[d]
		}
		n := 0
		for _, x := range cand {
			if (x>>shift)&255 == uint32(d) {
				buf[n] = x
				n++
			}
		}
		cand = buf[:n]
	}
	return cand[0]
}
