//go:build cuda

package cuda

import (
	_ "embed"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/sipack/sipack/backend/cudaplan"
)

//go:embed kernels/sipack.fatbin
var fatbin []byte

// cuDriver is the CUDA driver API through gorgonia.org/cu: the device's
// primary context, the kernel module loaded from the embedded fatbin, the
// default stream.
type cuDriver struct {
	dev cu.Device
	ctx cu.CUContext
	mod cu.Module
	fns map[string]cu.Function
	// graphStream captures and replays decode-step graphs (the default
	// stream cannot be captured); a blocking stream, so it is ordered with
	// the default stream's work both ways.
	graphStream cu.Stream
	events      map[uint64]cu.Event // kernel timing's events, by number
	nextEv      uint64
}

// openDriver opens GPU ordinal after checking that the driver can load
// the embedded fatbin.
func openDriver(ordinal int) (driver, devInfo, error) {
	var info devInfo
	if err := checkDriver(cu.Version(), fatbin); err != nil {
		return nil, info, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, info, fmt.Errorf("cuda: counting devices: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, info, fmt.Errorf("cuda: no device %d (%d found)", ordinal, n)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := &cuDriver{fns: map[string]cu.Function{}, events: map[uint64]cu.Event{}}
	if d.dev, err = cu.GetDevice(ordinal); err != nil {
		return nil, info, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	if info.name, err = d.dev.Name(); err != nil {
		return nil, info, fmt.Errorf("cuda: device %d name: %w", ordinal, err)
	}
	name := info.name
	if info.sms, err = d.dev.Attribute(cu.MultiprocessorCount); err != nil {
		return nil, info, fmt.Errorf("cuda: %s: %w", name, err)
	}
	integrated, err := d.dev.Attribute(cu.Integrated)
	if err != nil {
		return nil, info, fmt.Errorf("cuda: %s: %w", name, err)
	}
	info.integrated = integrated != 0
	if err := hostCaps(int(d.dev), &info); err != nil {
		return nil, info, fmt.Errorf("cuda: %s: %w", name, err)
	}
	if d.ctx, err = d.dev.RetainPrimaryCtx(); err != nil {
		return nil, info, fmt.Errorf("cuda: %s: primary context: %w", name, err)
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		d.dev.ReleasePrimaryCtx()
		return nil, info, fmt.Errorf("cuda: %s: %w", name, err)
	}
	if d.mod, err = cu.LoadFatBinary(string(fatbin)); err != nil {
		d.dev.ReleasePrimaryCtx()
		return nil, info, fmt.Errorf("cuda: %s: loading the kernels (fatbin of %d bytes: %s): %w", name, len(fatbin), describeFatbin(fatbin), err)
	}
	if d.graphStream, err = cu.MakeStream(cu.DefaultStream); err != nil {
		d.mod.Unload()
		d.dev.ReleasePrimaryCtx()
		return nil, info, fmt.Errorf("cuda: %s: creating a stream: %w", name, err)
	}
	for k := range cudaplan.Signatures {
		f, err := d.mod.Function(k)
		if err != nil {
			d.mod.Unload()
			d.dev.ReleasePrimaryCtx()
			return nil, info, fmt.Errorf("cuda: kernel %s: %w", k, err)
		}
		d.fns[k] = f
	}
	return d, info, nil
}

// enter makes the context current on a locked OS thread: a goroutine may
// change threads between calls, and a CUDA context is current per thread.
func (d *cuDriver) enter() func() {
	runtime.LockOSThread()
	cu.SetCurrentContext(d.ctx)
	return runtime.UnlockOSThread
}

func (d *cuDriver) alloc(n int) (uint64, error) {
	p, err := cu.MemAlloc(int64(n))
	if err != nil {
		return 0, err
	}
	if err := cu.MemsetD8(p, 0, int64(n)); err != nil {
		cu.MemFree(p)
		return 0, err
	}
	return uint64(p), nil
}

func (d *cuDriver) free(p uint64) { cu.MemFree(cu.DevicePtr(p)) }

func (d *cuDriver) memset0(p uint64, n int) error { return cu.MemsetD8(cu.DevicePtr(p), 0, int64(n)) }

func (d *cuDriver) htod(dst uint64, src unsafe.Pointer, n int) error {
	return cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(n))
}

func (d *cuDriver) dtoh(dst unsafe.Pointer, src uint64, n int) error {
	return cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(n))
}

func (d *cuDriver) dtod(dst, src uint64, n int) error {
	return cu.MemcpyDtoD(cu.DevicePtr(dst), cu.DevicePtr(src), int64(n))
}

func (d *cuDriver) launch(l cudaplan.Launch, a *cudaplan.Args) error {
	params, err := a.Params()
	if err != nil {
		return err
	}
	f, ok := d.fns[l.Kernel]
	if !ok {
		return fmt.Errorf("no kernel %s", l.Kernel)
	}
	return f.Launch(l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], 0, cu.Stream{}, params)
}

func (d *cuDriver) launchValues(l cudaplan.Launch, vals []uint64) error {
	f, ok := d.fns[l.Kernel]
	if !ok {
		return fmt.Errorf("no kernel %s", l.Kernel)
	}
	params := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		params[i] = unsafe.Pointer(&vals[i])
	}
	return f.Launch(l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], 0, d.graphStream, params)
}

func (d *cuDriver) stream() unsafe.Pointer { return unsafe.Pointer(d.graphStream.C()) }

func (d *cuDriver) capture(steps []queued) (uint64, error) {
	if err := captureBegin(d.stream()); err != nil {
		return 0, err
	}
	var first error
	for _, q := range steps {
		if err := d.launchValues(q.l, q.vals); err != nil && first == nil {
			first = fmt.Errorf("%v: %w", q.l, err)
		}
	}
	g, err := captureEnd(d.stream())
	if first != nil {
		if err == nil {
			graphDrop(g)
		}
		return 0, first
	}
	return g, err
}

func (d *cuDriver) replay(g uint64) error { return graphLaunch(g, d.stream()) }

func (d *cuDriver) dropGraph(g uint64) { graphDrop(g) }

func (d *cuDriver) sync() error { return cu.Synchronize() }

func (d *cuDriver) memInfo() (int64, int64, error) { return cu.MemInfo() }

func (d *cuDriver) registerHost(b []byte) (uint64, error) { return registerHost(b) }

func (d *cuDriver) unregisterHost(b []byte) error { return unregisterHost(b) }

func (d *cuDriver) hostAlloc(n int) ([]byte, uint64, error) { return hostAlloc(n) }

func (d *cuDriver) hostFree(b []byte) error { return hostFree(b) }

// Events are kept by number: cu.Event holds a C handle.
func (d *cuDriver) event() (uint64, error) {
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return 0, err
	}
	d.nextEv++
	d.events[d.nextEv] = ev
	return d.nextEv, nil
}

// record marks the default stream, which the graph stream (blocking)
// is ordered with both ways.
func (d *cuDriver) record(ev uint64) error {
	e, ok := d.events[ev]
	if !ok {
		return fmt.Errorf("no event %d", ev)
	}
	return e.Record(cu.Stream{})
}

func (d *cuDriver) elapsed(start, end uint64) (time.Duration, error) {
	a, okA := d.events[start]
	b, okB := d.events[end]
	if !okA || !okB {
		return 0, fmt.Errorf("no events %d, %d", start, end)
	}
	if err := b.Synchronize(); err != nil {
		return 0, err
	}
	ms, err := a.Elapsed(b)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

func (d *cuDriver) dropEvent(ev uint64) {
	if e, ok := d.events[ev]; ok {
		cu.DestroyEvent(&e)
		delete(d.events, ev)
	}
}

func (d *cuDriver) close() error {
	d.graphStream.Destroy()
	d.mod.Unload()
	return d.dev.ReleasePrimaryCtx()
}

// Emulated is false: the kernels run on a GPU.
const Emulated = false
