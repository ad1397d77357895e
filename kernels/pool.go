package kernels

import (
	"runtime"
	"sync"
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

// Run calls fn on n rows split into one contiguous chunk per worker and waits.
func (p *Pool) Run(n int, fn func(lo, hi, worker int)) {
	if p == nil || p.workers == 1 || n < 2 {
		fn(0, n, 0)
		return
	}
	chunk := (n + p.workers - 1) / p.workers
	used := 0
	for w := 1; w < p.workers; w++ {
		lo := w * chunk
		if lo >= n {
			break
		}
		p.wg.Add(1)
		p.jobs[w-1] <- job{lo, min(lo+chunk, n), fn}
		used++
	}
	fn(0, min(chunk, n), 0)
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
