package kernels

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sipack/sipack/format"
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

// TestPrefillScratchBound: what a pool holds after the operations of a
// forward pass (the q projection, the FFN, attention; prefill batches of
// growing length, then a decode step) stays within PrefillScratchBytes for
// every table and dtype, so a memory plan that counts it holds.
func TestPrefillScratchBound(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		for _, dt := range []format.DType{format.F32, format.BF16, format.F16, format.Q8_0, format.Q4_0} {
			for _, s := range []struct{ H, N, heads, kvHeads, hd int }{{256, 768, 8, 4, 32}, {256, 512, 4, 2, 64}} {
				rng := rand.New(rand.NewPCG(3, 4))
				qDim, kvDim := s.heads*s.hd, s.kvHeads*s.hd
				wq, _ := randRow(rng, dt, qDim*s.H)
				Wq := &Weight{Data: wq, DType: dt, Rows: qDim, Cols: s.H}
				recs, _ := randRow(rng, dt, s.N*3*s.H)
				blocks := recordBlocks(dt, s.H, format.Interleaved, recs)
				const ctx = 160
				keys, values := randVec(rng, ctx*kvDim), randVec(rng, ctx*kvDim)
				p := NewPool(2)
				most := 0 // the pool keeps what the longest batch grew it to
				lengths := []int{6, 37, 130, 1}
				if testing.Short() { // under qemu: the longest batch is 37 tokens
					lengths = []int{6, 37, 1}
				}
				for _, T := range lengths {
					most = max(most, T)
					x := randVec(rng, T*s.H)
					q := make([]float32, T*qDim)
					MatMul(p, q, Wq, x)
					FFNRecords(p, make([]float32, T*s.H), blocks, dt, s.H, x, nil)
					Attention(p, make([]float32, T*qDim), q, keys, values, s.heads, s.kvHeads, s.hd, s.hd, kvDim, ctx-T, T, 0.1)
					bound := PrefillScratchBytes(most, s.H, s.N, s.heads, s.kvHeads, s.hd, ctx, 2)
					if held := p.heldBytes(); held > bound {
						t.Errorf("%v %+v, %d tokens: the pool holds %d bytes, over the bound %d", dt, s, T, held, bound)
					}
				}
				p.Close()
			}
		}
	})
}
