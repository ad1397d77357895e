//go:build cuda || cudaemu

package cuda

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sipack/sipack/backend/cudaplan"
)

// Counters is what the device has been asked to do since it was opened:
// the costs a decode step is held to (tests compare two readings).
type Counters struct {
	Launches int64 // kernels run, one by one or as nodes of a replayed graph
	Graphs   int64 // graph replays (each one launch call on the stream)
	Syncs    int64 // waits: device→host copies, host→device copies, explicit syncs
	DtoH     int64 // bytes copied device→host
	HtoD     int64 // bytes copied host→device
	HtoDOps  int64 // host→device copies
}

// Sub is c − o: what happened between two readings.
func (c Counters) Sub(o Counters) Counters {
	return Counters{c.Launches - o.Launches, c.Graphs - o.Graphs, c.Syncs - o.Syncs, c.DtoH - o.DtoH, c.HtoD - o.HtoD, c.HtoDOps - o.HtoDOps}
}

// counted wraps a driver and counts its launches, waits and copies: a few
// atomic adds per operation, against microseconds per operation on a GPU.
type counted struct {
	driver
	launches, graphs, syncs, dtohB, htodB, htodN atomic.Int64
	mu                                           sync.Mutex
	graphLen                                     map[uint64]int // launches in each captured graph
}

func newCounted(d driver) *counted { return &counted{driver: d, graphLen: map[uint64]int{}} }

func (c *counted) counters() Counters {
	return Counters{c.launches.Load(), c.graphs.Load(), c.syncs.Load(), c.dtohB.Load(), c.htodB.Load(), c.htodN.Load()}
}

// htod is a wait too: cuMemcpyHtoD from pageable memory synchronises the
// stream before it copies.
func (c *counted) htod(dst uint64, src unsafe.Pointer, n int) error {
	c.syncs.Add(1)
	c.htodB.Add(int64(n))
	c.htodN.Add(1)
	return c.driver.htod(dst, src, n)
}

// dtoh is a wait: cuMemcpyDtoH returns once the stream's work before it
// has run and the bytes are on the host.
func (c *counted) dtoh(dst unsafe.Pointer, src uint64, n int) error {
	c.dtohB.Add(int64(n))
	c.syncs.Add(1)
	return c.driver.dtoh(dst, src, n)
}

func (c *counted) launch(l cudaplan.Launch, a *cudaplan.Args) error {
	c.launches.Add(1)
	return c.driver.launch(l, a)
}

func (c *counted) launchValues(l cudaplan.Launch, vals []uint64) error {
	c.launches.Add(1)
	return c.driver.launchValues(l, vals)
}

func (c *counted) capture(steps []queued) (uint64, error) {
	g, err := c.driver.capture(steps)
	if err == nil {
		c.mu.Lock()
		c.graphLen[g] = len(steps)
		c.mu.Unlock()
	}
	return g, err
}

// replay counts the graph's kernels as launches: the emulator's replay
// launches them through its own driver, not through this wrapper.
func (c *counted) replay(g uint64) error {
	c.mu.Lock()
	n := c.graphLen[g]
	c.mu.Unlock()
	c.graphs.Add(1)
	c.launches.Add(int64(n))
	return c.driver.replay(g)
}

func (c *counted) dropGraph(g uint64) {
	c.mu.Lock()
	delete(c.graphLen, g)
	c.mu.Unlock()
	c.driver.dropGraph(g)
}

func (c *counted) sync() error {
	c.syncs.Add(1)
	return c.driver.sync()
}

// Counters is what the device has done since Open (launches, waits, copies).
func (d *Device) Counters() Counters { return d.drv.(*counted).counters() }
