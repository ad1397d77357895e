package kernels

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolCoversEveryRowOnce: every row of every job is handed out exactly
// once, to a worker index in range, whether the helpers are still spinning
// from the last job or have parked (a pause longer than spinFor), and a
// closed pool's helpers stop.
func TestPoolCoversEveryRowOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 5} {
		p := NewPool(workers)
		for job, n := range []int{0, 1, 2, 3, 17, 100, 1000, 4096, 33, 5000} {
			if job == 5 || job == 8 {
				time.Sleep(3 * spinFor) // the helpers park
			}
			seen := make([]atomic.Int32, n)
			var badWorker atomic.Bool
			p.Run(n, func(lo, hi, w int) {
				if w < 0 || w >= workers {
					badWorker.Store(true)
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			if badWorker.Load() {
				t.Fatalf("%d workers, n=%d: worker index out of range", workers, n)
			}
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("%d workers, n=%d: row %d run %d times", workers, n, i, c)
				}
			}
		}
		p.Close()
		p.Close() // a second Close is harmless
	}
}
