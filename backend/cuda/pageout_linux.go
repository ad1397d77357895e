//go:build cuda || cudaemu

package cuda

import "golang.org/x/sys/unix"

// pageOut asks the kernel to reclaim b's pages (MADV_PAGEOUT, Linux 5.4+):
// once the pack's prefix has been read into pinned memory, its mapped
// pages are a second copy that only page reclaim would drop. The contents
// stay readable (file pages are read again, anonymous ones swapped); an
// older kernel's refusal only leaves them to normal reclaim.
func pageOut(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_PAGEOUT)
	}
}
