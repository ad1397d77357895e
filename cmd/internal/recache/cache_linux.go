//go:build linux

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// drop drops f's clean, unmapped pages from the page cache.
func drop(f *os.File) error { return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED) }

// compact asks the kernel to compact free memory into 2 MiB blocks (root
// only; without it the folios are what free memory allows).
func compact() { _ = os.WriteFile("/proc/sys/vm/compact_memory", []byte("1"), 0) }
