//go:build cuda || cudaemu

package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sipack/sipack/backend"
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

	timing  atomic.Bool // launches are timed (TimeKernels)
	tmu     sync.Mutex  // pending, times and the driver's events
	pending []timedLaunch
	times   map[string]backend.KernelTime
}

func newCounted(d driver) *counted {
	return &counted{driver: d, graphLen: map[uint64]int{}, times: map[string]backend.KernelTime{}}
}

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
	if c.timing.Load() {
		return c.timed(l, func() error { return c.driver.launch(l, a) })
	}
	return c.driver.launch(l, a)
}

func (c *counted) launchValues(l cudaplan.Launch, vals []uint64) error {
	c.launches.Add(1)
	if c.timing.Load() {
		return c.timed(l, func() error { return c.driver.launchValues(l, vals) })
	}
	return c.driver.launchValues(l, vals)
}

// timedLaunch is a launch between two recorded events, not yet read.
type timedLaunch struct {
	kernel     string
	reads      int64
	start, end uint64
}

// timed runs launch between two events and keeps them for kernelTimes;
// past 4096 unread launches it reads them (a wait).
func (c *counted) timed(l cudaplan.Launch, launch func() error) error {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	start, err := c.driver.event()
	if err != nil {
		return fmt.Errorf("timing %s: %w", l.Kernel, err)
	}
	end, err := c.driver.event()
	if err != nil {
		c.driver.dropEvent(start)
		return fmt.Errorf("timing %s: %w", l.Kernel, err)
	}
	c.pending = append(c.pending, timedLaunch{l.Kernel, l.Reads, start, end})
	if err := c.driver.record(start); err != nil {
		return err
	}
	if err := launch(); err != nil {
		return err
	}
	if err := c.driver.record(end); err != nil {
		return err
	}
	if len(c.pending) >= 4096 {
		return c.readPending()
	}
	return nil
}

// readPending adds the pending launches' times to c.times and frees their
// events (c.tmu held).
func (c *counted) readPending() error {
	var first error
	for _, p := range c.pending {
		d, err := c.driver.elapsed(p.start, p.end)
		if err != nil && first == nil {
			first = fmt.Errorf("timing %s: %w", p.kernel, err)
		}
		c.driver.dropEvent(p.start)
		c.driver.dropEvent(p.end)
		t := c.times[p.kernel]
		t.Launches++
		t.Time += d
		t.Bytes += p.reads
		c.times[p.kernel] = t
	}
	c.pending = c.pending[:0]
	return first
}

// setTiming turns kernel timing on or off; off drops what was not read.
func (c *counted) setTiming(on bool) {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	if !on {
		for _, p := range c.pending {
			c.driver.dropEvent(p.start)
			c.driver.dropEvent(p.end)
		}
		c.pending = nil
	}
	c.times = map[string]backend.KernelTime{}
	c.timing.Store(on)
}

// kernelTimes reads the pending launches and returns the times since the
// last call.
func (c *counted) kernelTimes() (map[string]backend.KernelTime, error) {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	err := c.readPending()
	t := c.times
	c.times = map[string]backend.KernelTime{}
	return t, err
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

var _ backend.KernelTimer = (*Device)(nil)

// TimeKernels is backend.KernelTimer: while on, Execs started afterwards
// launch one by one (no graphs) and each launch lies between two events.
// Off restores the graphs setting.
func (d *Device) TimeKernels(on bool) {
	c := d.drv.(*counted)
	d.mu.Lock()
	if was := c.timing.Load(); on && !was {
		d.graphsBefore, d.graphs = d.graphs, false
	} else if !on && was {
		d.graphs = d.graphsBefore
	}
	d.mu.Unlock()
	defer d.enter()()
	c.setTiming(on)
}

// KernelTimes is backend.KernelTimer: it waits for the launches timed
// since the last call and returns their times by kernel.
func (d *Device) KernelTimes() (map[string]backend.KernelTime, error) {
	defer d.enter()()
	return d.drv.(*counted).kernelTimes()
}
