package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Pool is a fixed set of persistent worker goroutines that split a range of
// rows: no goroutine is started per call. A Pool runs one job at a time.
type Pool struct {
	workers int
	jobs    []chan job
	wg      sync.WaitGroup
	buf     []float32
}

type job struct {
	lo, hi int
	fn     func(lo, hi, worker int)
}

// NewPool starts n workers (n ≤ 0: one per CPU). Worker 0 is the calling goroutine.
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{workers: n}
	for w := 1; w < n; w++ {
		ch := make(chan job)
		p.jobs = append(p.jobs, ch)
		go func(w int) {
			for j := range ch {
				j.fn(j.lo, j.hi, w)
				p.wg.Done()
			}
		}(w)
	}
	return p
}

// Workers is the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn on the n rows, split into chunks that the workers claim
// one after another (so a worker slowed by a noisy neighbour takes fewer),
// and waits. fn's worker argument is the caller's index in [0, Workers()).
func (p *Pool) Run(n int, fn func(lo, hi, worker int)) {
	if p == nil || p.workers == 1 || n < 2 {
		fn(0, n, 0)
		return
	}
	// About 8 chunks per worker, at least 16 rows each.
	chunk := max(16, (n+8*p.workers-1)/(8*p.workers))
	if chunk*2 > n {
		chunk = (n + 1) / 2
	}
	var next atomic.Int64
	work := func(lo, hi, w int) {
		for {
			start := int(next.Add(int64(chunk))) - chunk
			if start >= n {
				return
			}
			fn(start, min(start+chunk, n), w)
		}
	}
	helpers := min(p.workers-1, (n+chunk-1)/chunk-1)
	p.wg.Add(helpers)
	for w := 1; w <= helpers; w++ {
		p.jobs[w-1] <- job{0, 0, func(_, _, w int) { work(0, 0, w) }}
	}
	work(0, 0, 0)
	p.wg.Wait()
}

// Close stops the workers.
func (p *Pool) Close() {
	for _, ch := range p.jobs {
		close(ch)
	}
	p.jobs = nil
}

// scratch returns a reusable buffer of n floats owned by the pool.
func (p *Pool) scratch(n int) []float32 {
	if cap(p.buf) < n {
		p.buf = make([]float32, n)
	}
	return p.buf[:n]
}
