// Command recache puts benchmark files — sirun's packs and llama.cpp's
// GGUFs alike — in the same page-cache state before a comparison: each
// file's cached pages dropped (POSIX_FADV_DONTNEED), then read back whole
// through a mapping advised for huge pages, so that the page cache holds it
// in 2 MiB folios wherever the kernel has 2 MiB of free memory to give (on
// Linux it asks the kernel to compact free memory first). It prints each
// file's share in 2 MiB pages. A file's folios decide how fast a program
// that maps it reads it (docs/bench.md, seventeenth session), and read by
// cat the same files lay 51-98 % in 2 MiB pages, differently for each file
// and drifting as memory fragmented: a bias between the two programs that
// no ratio shows.
//
//	go run ./cmd/internal/recache FILE...
package main

import (
	"fmt"
	"os"

	"github.com/sipack/sipack/format"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: recache FILE...")
		os.Exit(2)
	}
	compact()
	failed := false
	for _, path := range os.Args[1:] {
		if err := recache(path); err != nil {
			fmt.Fprintf(os.Stderr, "recache: %v\n", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func recache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := drop(f); err != nil {
		return fmt.Errorf("%s: dropping its page cache: %w", path, err)
	}
	b, err := format.MapFilePopulated(f, st.Size())
	if err != nil {
		return err
	}
	defer format.Unmap(b)
	if huge, ok := format.HugeMapped(b); ok && len(b) > 0 {
		fmt.Printf("%s: %.0f MiB, %.1f %% in 2 MiB pages\n", path, float64(len(b))/(1<<20), 100*float64(huge)/float64(len(b)))
	} else {
		fmt.Printf("%s: %.0f MiB read\n", path, float64(len(b))/(1<<20))
	}
	return nil
}
