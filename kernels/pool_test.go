package kernels

import (
	"sync"
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

// TestRunStaticDealsChunks: RunStatic gives chunk c (Run's chunk size) to
// worker c mod Workers(), each worker's chunks in order, every row once.
func TestRunStaticDealsChunks(t *testing.T) {
	for _, workers := range []int{2, 3} {
		p := NewPool(workers)
		for _, n := range []int{2, 17, 100, 1000, 4711} {
			var mu sync.Mutex
			seen := make([]int, n)
			var calls [][3]int // lo, hi, worker in call order per worker
			p.RunStatic(n, func(lo, hi, w int) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, [3]int{lo, hi, w})
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("%d workers, n %d: row %d run %d times", workers, n, i, c)
				}
			}
			chunk := calls[0][1] - calls[0][0]
			for _, c := range calls {
				chunk = max(chunk, c[1]-c[0])
			}
			last := make([]int, workers)
			for i := range last {
				last[i] = -1
			}
			for _, c := range calls {
				lo, w := c[0], c[2]
				if lo%chunk != 0 || (lo/chunk)%workers != w {
					t.Fatalf("%d workers, n %d: rows [%d, %d) ran on worker %d (chunk %d)", workers, n, lo, c[1], w, chunk)
				}
				if lo <= last[w] {
					t.Fatalf("%d workers, n %d: worker %d ran %d after %d", workers, n, w, lo, last[w])
				}
				last[w] = lo
			}
		}
		p.Close()
	}
}
