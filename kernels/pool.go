package kernels

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/sipack/sipack/format"
)

// Pool is a fixed set of persistent worker goroutines that split a range of
// rows: no goroutine is started per call. A Pool runs one job at a time.
//
// Helpers spin on the job counter for a while after each job before they
// park. A decode step runs about a hundred jobs a few microseconds apart,
// and waking a parked thread costs tens of microseconds on a VM (measured:
// a helper woken through a channel did 25 % of a 160 µs matvec, so two
// threads were no faster than one), so parking between jobs would leave
// the second core idle through most of every small matvec.
type Pool struct {
	workers int
	helpers []*helper
	gen     atomic.Uint64 // the number of jobs posted; helpers watch it
	fn      func(lo, hi, worker int)
	n       int
	chunk   int
	static  bool         // chunk c is worker c mod workers' (RunStatic)
	next    atomic.Int64 // the next row to claim
	pending atomic.Int32 // helpers still on the current job
	closed  atomic.Bool
	buf     []float32
	acts    []Q8Act     // quantizeTokens' storage
	tiles   ActTiles    // the prefill's activation tiles (Ops.PanelAct)
	panels  [][]byte    // per worker: one packed panel
	gemm    []float32   // the prefill GEMM's per-worker blocks
	xb      []uint16    // the prefill's activations rounded to BF16
	xr      []float32   // and as float32
	att     []float32   // attentionLoop's score rows, one per worker
	dec     []decodeBuf // per worker: the decode FFN's scratch
	spans   []span      // FFNRecords' blocks placed
}

type helper struct {
	parked atomic.Bool
	wake   chan struct{} // one token when a parked helper has a job
}

// spinFor is how long an idle helper polls for the next job before it
// parks: longer than the gaps inside a decode step, short enough that an
// idle runner stops using the CPU at once.
const spinFor = 200 * time.Microsecond

// NewPool starts n workers (n ≤ 0: one per CPU). Worker 0 is the calling goroutine.
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{workers: n, dec: make([]decodeBuf, n)}
	for w := 1; w < n; w++ {
		h := &helper{wake: make(chan struct{}, 1)}
		p.helpers = append(p.helpers, h)
		go p.serve(w, h)
	}
	return p
}

// serve is helper w's loop: wait for a new job (spinning, then parked),
// take its share, report done.
func (p *Pool) serve(w int, h *helper) {
	seen := uint64(0)
	for {
		if !p.await(h, seen) {
			return
		}
		seen = p.gen.Load()
		p.work(w)
		p.pending.Add(-1)
	}
}

// await returns when a job after seen is posted (true) or the pool is
// closed (false).
func (p *Pool) await(h *helper, seen uint64) bool {
	start := time.Now()
	for spins := 0; ; spins++ {
		if p.closed.Load() {
			return false
		}
		if p.gen.Load() != seen {
			return true
		}
		if spins%64 == 63 {
			if time.Since(start) > spinFor {
				break
			}
			runtime.Gosched()
		}
	}
	// Park. Post clears the flag and sends one token; a job posted between
	// the flag and the re-check is either seen here or woken by that token.
	// The flag is set by a swap, not a store: under qemu-user on x86 an
	// arm64 store-release followed by the load-acquire of gen was
	// reordered (the store still in the host's store buffer), so neither
	// side saw the other and the helper slept through a job (make
	// test-arm64 hung); a read-modify-write is a full barrier there too.
	for {
		h.parked.Swap(true)
		if p.gen.Load() != seen || p.closed.Load() {
			if !h.parked.CompareAndSwap(true, false) {
				<-h.wake // Post took the flag: consume its token
			}
			return !p.closed.Load()
		}
		<-h.wake
		// A token is only a hint: return only on a job posted after seen
		// (or the close). Taken as a job, a stale one made the helper run
		// and count the current job twice, the caller's count of helpers
		// still working went below zero, and every worker waited for ever
		// (under load, about one in twenty runs of the FFN tests).
		if p.gen.Load() != seen || p.closed.Load() {
			return !p.closed.Load()
		}
	}
}

// work claims chunks of the current job until none are left (under
// RunStatic: takes its own chunks, in order).
func (p *Pool) work(w int) {
	if p.static {
		for lo := w * p.chunk; lo < p.n; lo += p.workers * p.chunk {
			p.fn(lo, min(lo+p.chunk, p.n), w)
		}
		return
	}
	for {
		start := int(p.next.Add(int64(p.chunk))) - p.chunk
		if start >= p.n {
			return
		}
		p.fn(start, min(start+p.chunk, p.n), w)
	}
}

// Workers is the number of workers, the caller included.
func (p *Pool) Workers() int { return p.workers }

// Run calls fn on the n rows, split into chunks that the workers claim
// one after another (so a worker slowed by a noisy neighbour takes fewer),
// and waits. fn's worker argument is the caller's index in [0, Workers()).
func (p *Pool) Run(n int, fn func(lo, hi, worker int)) { p.run(n, fn, false) }

// RunStatic is Run with the chunks dealt out, not claimed: chunk c goes to
// worker c mod Workers(), each worker's in order. For jobs whose workers
// add into sums of their own (the FFN's partial outputs) the sums are then
// the same from run to run: under Run which worker took which chunk, and
// so every float sum's order, changed between two runs of the same prompt,
// and the logits with them in their last bits (runner's
// TestRunsAreReproducible).
func (p *Pool) RunStatic(n int, fn func(lo, hi, worker int)) { p.run(n, fn, true) }

// chunkOf is the rows of each of Run's calls of fn over n rows (the last
// call may have fewer).
func (p *Pool) chunkOf(n int) int {
	if p == nil || p.workers == 1 || n < 2 {
		return max(n, 1)
	}
	// About 8 chunks per worker, at least 16 rows each.
	chunk := max(16, (n+8*p.workers-1)/(8*p.workers))
	if chunk*2 > n {
		chunk = (n + 1) / 2
	}
	return chunk
}

func (p *Pool) run(n int, fn func(lo, hi, worker int), static bool) {
	p.runChunks(n, p.chunkOf(n), fn, static)
}

// runChunks is run in chunks of the given size (one call of fn for all n
// rows where the pool has one worker or n < 2).
func (p *Pool) runChunks(n, chunk int, fn func(lo, hi, worker int), static bool) {
	if p == nil || p.workers == 1 || n < 2 {
		fn(0, n, 0)
		return
	}
	p.fn, p.n, p.chunk, p.static = fn, n, chunk, static
	p.next.Store(0)
	p.pending.Store(int32(len(p.helpers)))
	p.gen.Add(1) // publishes the fields above to the helpers
	for _, h := range p.helpers {
		if h.parked.Swap(false) {
			h.wake <- struct{}{}
		}
	}
	p.work(0)
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins%64 == 63 {
			runtime.Gosched()
		}
	}
	p.fn = nil
}

// Close stops the workers.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	for _, h := range p.helpers {
		if h.parked.Swap(false) {
			h.wake <- struct{}{}
		}
	}
	p.helpers = nil
}

// scratch returns a reusable buffer of n floats owned by the pool.
func (p *Pool) scratch(n int) []float32 {
	if cap(p.buf) < n {
		p.buf = make([]float32, n)
	}
	return p.buf[:n]
}

// decodeBuf is worker w's decode FFN scratch.
func (p *Pool) decodeBuf(w int) *decodeBuf { return &p.dec[w] }

// actTiles lays acts out as tiles for weights of dtype dt, in storage the
// pool keeps.
func (p *Pool) actTiles(acts []Q8Act, dt format.DType) *ActTiles {
	buildActTiles(&p.tiles, acts, dt, active.Ops(dt).PanelSigned)
	return &p.tiles
}

// panelScratch returns one packed panel of nb blocks of dt per worker,
// sized before the workers run.
func (p *Pool) panelScratch(dt format.DType, nb int) [][]byte {
	n := nb * panelBytes(dt)
	if len(p.panels) < p.workers {
		p.panels = make([][]byte, p.workers)
	}
	for w := range p.panels {
		if cap(p.panels[w]) < n {
			p.panels[w] = make([]byte, n)
		}
		p.panels[w] = p.panels[w][:n]
	}
	return p.panels
}

// gemmScratch returns a reusable buffer of n floats for the prefill GEMM
// (apart from scratch, which FFNRecords holds while it runs the GEMM).
func (p *Pool) gemmScratch(n int) []float32 {
	if cap(p.gemm) < n {
		p.gemm = make([]float32, n)
	}
	return p.gemm[:n]
}

// PrefillScratchBytes bounds what a pool of workers keeps for batches of
// up to T tokens of a model with hidden size H, N FFN neurons a layer,
// heads × hd query and kvHeads × hd key/value widths, over a context of
// ctx: the FFN's per-worker partial sums (scratch), the GEMM's blocks or
// attention's (gemmScratch, the larger), the activations rounded to BF16
// and back (xb, xr), quantized (acts) and laid out as tiles, the integer
// panels and the plain attention loop's score rows. A memory plan adds it
// once per pool, not per sequence.
func PrefillScratchBytes(T, H, N, heads, kvHeads, hd, ctx, workers int) uint64 {
	cols := max(H, heads*hd)
	np := (ctx + 31) &^ 31
	attn := attnBlockScratch(max(1, heads/max(1, kvHeads)), hd, np, hd) // an f16 cache's, the larger
	gemm := max(ffnBlock(T, H, max(ffnRecBlock, ffnRecBlockBF16)), gemmBlock(T, cols), attn)
	floats := workers*(T*H+gemm) + 2*workers*np
	// xb and xr: 6 bytes a value; acts (int8 values, their VNNI layout, a
	// scale and a sum per 32) and their tiles: at most 6; panels.
	bytes := 6*T*cols + 6*T*cols + workers*(cols/format.QK)*panelKBlockBytes
	return uint64(4*floats + bytes)
}

// heldBytes is what p's scratch holds now (PrefillScratchBytes' subject).
func (p *Pool) heldBytes() uint64 {
	n := 4*cap(p.buf) + 4*cap(p.gemm) + 2*cap(p.xb) + 4*cap(p.xr) + 4*cap(p.att) + 16*cap(p.spans)
	for _, a := range p.acts {
		n += cap(a.Q) + 4*cap(a.D) + 4*cap(a.S) + cap(a.Quad)
	}
	n += cap(p.tiles.Q) + 4*cap(p.tiles.D) + 4*cap(p.tiles.C) + 4*cap(p.tiles.M)
	for _, b := range p.panels {
		n += cap(b)
	}
	return uint64(n)
}
