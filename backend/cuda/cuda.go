//go:build cuda || cudaemu

package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/format"
)

// Device is one GPU behind its driver, and the weights made resident on it.
type Device struct {
	drv        driver
	name       string
	sms        int
	integrated bool
	info       devInfo
	hostUse    HostUse

	mu           sync.Mutex
	closed       bool
	weights      []uint64 // device copies, freed by Close
	resident     uint64   // their bytes
	regions      []region // host memory registered for the device (integrated GPUs)
	registered   uint64   // bytes used in place through them or read from pinned memory
	hostRecs     bool     // Records interleaves split blocks into pinned host memory
	pinnedRecs   [][]byte // that memory, freed by Close
	graphs       bool     // Execs run decode steps as CUDA graphs
	graphsBefore bool     // graphs before TimeKernels turned timing on
	exactGEMM    bool     // batches' GEMMs in float32 on the CUDA cores (SetExactGEMM)
}

// region is host memory mapped into the device's address space: host
// (the pack's bytes) at dev, either registered in place or, when pinned is
// set, read into pinned (page-locked, device-mapped) memory at dev.
type region struct {
	host   []byte
	dev    uint64
	pinned []byte
}

// HostUse is how the device reads the weights UsePack was given.
type HostUse int

const (
	HostCopied     HostUse = iota // copied to device memory (a discrete GPU)
	HostRegistered                // registered read-only and read in place
	HostPinned                    // read once into pinned host memory the GPU maps
)

func (u HostUse) String() string {
	switch u {
	case HostRegistered:
		return "used in place (registered read-only)"
	case HostPinned:
		return "read once into pinned host memory the GPU maps (read-only registration refused)"
	}
	return "copied to device memory"
}

var _ backend.Device = (*Device)(nil)

// Open opens GPU ordinal (0 is the first) and loads the kernels.
func Open(ordinal int) (*Device, error) {
	drv, info, err := openDriver(ordinal)
	if err != nil {
		return nil, err
	}
	return &Device{drv: newCounted(drv), name: info.name, sms: info.sms, integrated: info.integrated, info: info, graphs: os.Getenv("SIPACK_CUDA_GRAPH") != "0"}, nil
}

// TakesKV is backend.KVTyper: the kernels keep float32 or f16 caches.
func (d *Device) TakesKV(t backend.KVType) bool { return t == backend.KVF32 || t == backend.KVF16 }

// SetGraphs makes the Execs started afterwards queue each decode step (one
// token, from Embed to Read) and run it as a CUDA graph: captured when the
// step's launches differ from the last one's (a new prompt's plan, new
// buffers), replayed otherwise. Open turns it on unless SIPACK_CUDA_GRAPH=0
// (the first GPU run, an H200: the same text, decode 1.00-1.07× the
// launches one by one; docs/cuda.md).
func (d *Device) SetGraphs(on bool) { d.graphs = on }

// SetExactGEMM makes batches (a prompt's prefill) multiply in float32 on
// the CUDA cores, as the CPU's exact path, instead of on the tensor cores
// with bf16 or half operands (the default; llama.cpp's prefill rounds its
// operands the same way). The goldens are checked on the exact path.
func (d *Device) SetExactGEMM(on bool) { d.exactGEMM = on }

// enter readies the driver for one call; the returned function ends it.
func (d *Device) enter() func() { return d.drv.enter() }

func (d *Device) Name() string {
	kind := "discrete"
	if d.integrated {
		kind = "integrated"
	}
	return fmt.Sprintf("cuda (%s, %d SMs, %s)", d.name, d.sms, kind)
}

// Integrated reports whether the GPU shares the host's memory.
func (d *Device) Integrated() bool { return d.integrated }

// UsePack makes the pack's mapped γ prefix the weights' home on an
// integrated GPU, whose memory is the host's: the dense tensors (and
// records the pack stores whole) are read where the mapping has them, and
// Records interleaves split record blocks once into pinned host memory the
// GPU maps, dropping their source pages. Where the device registers host
// memory read-only, the prefix is registered and read in place; where it
// cannot (the attribute says no, or the registration is refused), it is
// read once into pinned memory: one copy of the weights either way, never
// a second one in device memory. On a discrete GPU it does nothing (every
// read would cross the bus) and returns nil. HostUse says which was done.
func (d *Device) UsePack(p *format.Pack) error {
	if !d.integrated {
		return nil
	}
	b := hostPart(p)
	if len(b) == 0 {
		return nil
	}
	var refused error
	if d.info.readOnlyRegister {
		if refused = d.register(b); refused == nil {
			d.hostUse, d.hostRecs = HostRegistered, true
			return nil
		}
	}
	if !d.info.mapHost {
		return fmt.Errorf("cuda: %s maps no host memory (read-only registration: %v)", d.name, refusal(refused))
	}
	if err := d.pin(b); err != nil {
		return fmt.Errorf("%w (read-only registration: %v)", err, refusal(refused))
	}
	d.hostUse, d.hostRecs = HostPinned, true
	return nil
}

// hostPart is the part of p's mapped prefix the kernels read where it
// lies: all of it when the records are whole (version 1), else the part
// before the FFN section. Registering split blocks would lock pages whose
// interleaved copy is what the kernels read.
func hostPart(p *format.Pack) []byte {
	b := p.Bytes()
	if off := p.Preamble.FFNOff; p.Split() && off < uint64(len(b)) {
		b = b[:off]
	}
	return b
}

// refusal words why read-only registration was not used.
func refusal(err error) string {
	if err == nil {
		return "not supported by the device"
	}
	return err.Error()
}

// HostUse says how the weights given to UsePack are read.
func (d *Device) HostUse() HostUse { return d.hostUse }

// UsePackAnyway registers the pack in place on any GPU and keeps the
// interleaved records in pinned host memory: on a discrete GPU every
// weight read then crosses the bus. It measures the integrated case's
// device memory on a discrete GPU (SIPACK_CUDA_IN_PLACE=1).
func (d *Device) UsePackAnyway(p *format.Pack) error {
	b := hostPart(p)
	if len(b) == 0 {
		return nil
	}
	if err := d.register(b); err != nil {
		return err
	}
	d.hostUse, d.hostRecs = HostRegistered, true
	return nil
}

func (d *Device) register(b []byte) error {
	defer d.enter()()
	p, err := d.drv.registerHost(b)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", d.name, err)
	}
	d.mu.Lock()
	d.regions = append(d.regions, region{host: b, dev: p})
	d.mu.Unlock()
	return nil
}

// pin reads b into new pinned host memory the device maps and makes it b's
// device address.
func (d *Device) pin(b []byte) error {
	defer d.enter()()
	h, p, err := d.drv.hostAlloc(len(b))
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", d.name, err)
	}
	copy(h, b)
	pageOut(b)
	d.mu.Lock()
	d.regions = append(d.regions, region{host: b, dev: p, pinned: h})
	d.mu.Unlock()
	return nil
}

// inPlace returns the device address of host bytes b when they lie in a
// registered region.
func (d *Device) inPlace(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for _, r := range d.regions {
		lo := uintptr(unsafe.Pointer(&r.host[0]))
		if p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(r.host)) {
			return r.dev + uint64(p-lo), true
		}
	}
	return 0, false
}

// upload copies b into new device memory owned by the device.
func (d *Device) upload(b []byte) (uint64, error) {
	p, err := d.drv.alloc(len(b))
	if err != nil {
		return 0, fmt.Errorf("cuda: %s: allocating %d bytes: %w", d.name, len(b), err)
	}
	if err := d.drv.htod(p, unsafe.Pointer(&b[0]), len(b)); err != nil {
		d.drv.free(p)
		return 0, fmt.Errorf("cuda: %s: copying %d bytes: %w", d.name, len(b), err)
	}
	d.weights = append(d.weights, p)
	d.resident += uint64(len(b))
	return p, nil
}

// place makes b resident: in place when registered, else a copy.
func (d *Device) place(b []byte) (uint64, error) {
	if p, ok := d.inPlace(b); ok {
		d.registered += uint64(len(b))
		return p, nil
	}
	return d.upload(b)
}

// Matrix is a resident weight: a device address, its dtype and shape.
type Matrix struct {
	p                uint64
	dt               format.DType
	rows, cols, rowB int
}

func (m *Matrix) Rows() int           { return m.rows }
func (m *Matrix) Cols() int           { return m.cols }
func (m *Matrix) DType() format.DType { return m.dt }
func (m *Matrix) Bytes() int          { return m.rows * m.rowB }

func (d *Device) Matrix(data []byte, dt format.DType, rows, cols int) (backend.Matrix, error) {
	if err := refuseKQuant(dt); err != nil {
		return nil, err
	}
	rb, ok := dt.RowBytes(cols)
	if !ok || len(data) != rows*rb || rows < 1 {
		return nil, fmt.Errorf("cuda backend: %d bytes for a %d×%d %v matrix", len(data), rows, cols, dt)
	}
	defer d.enter()()
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.place(data)
	if err != nil {
		return nil, err
	}
	return &Matrix{p: p, dt: dt, rows: rows, cols: cols, rowB: rb}, nil
}

// vector is a resident float32 vector.
type vector struct {
	p uint64
	n int
}

func (v *vector) Len() int { return v.n }

func (d *Device) Vector(v []float32) (backend.Vector, error) {
	if len(v) == 0 {
		return nil, errors.New("cuda backend: empty vector")
	}
	defer d.enter()()
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.upload(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
	if err != nil {
		return nil, err
	}
	return &vector{p: p, n: len(v)}, nil
}

// records is a set of FFN neuron records: a device table of their
// addresses, one per record in order.
type records struct {
	table    uint64   // device address of the table (n uint64)
	host     []uint64 // the table on the host, for gathering decode sets
	dt       format.DType
	hidden   int
	rowBytes int
	vec      bool // every record 16-byte aligned and rows whole 16-byte chunks
	mem      *devMem
	routed   bool // the table is written on the device (sip_route); host holds no addresses
}

func (r *records) Len() int   { return len(r.host) }
func (r *records) Bytes() int { return len(r.host) * 3 * r.rowBytes }

func (d *Device) Records(rblocks []format.RecordBlock, dt format.DType, hidden int) (backend.Records, error) {
	if err := refuseKQuant(dt); err != nil {
		return nil, err
	}
	rb, ok := dt.RowBytes(hidden)
	if !ok {
		return nil, fmt.Errorf("cuda backend: hidden size %d is not a whole number of %v blocks", hidden, dt)
	}
	rec := 3 * rb
	// The kernels read whole records (gate | up | down at one address). A
	// block the pack stores so is used in place where it is registered; a
	// split block (versions 2 to 5) is interleaved once: into pinned host
	// memory the GPU maps after UsePack (its source pages then dropped),
	// else into device memory, a block at a time through one host buffer.
	counts := make([]int, len(rblocks))
	whole := make([][]byte, len(rblocks))
	for i := range rblocks {
		b := &rblocks[i]
		if b.RowBytes != rb {
			return nil, fmt.Errorf("cuda backend: a block of %d-byte rows, want %d", b.RowBytes, rb)
		}
		counts[i] = b.N
		if whole[i] = b.Interleaved(); whole[i] != nil {
			if len(whole[i])%rec != 0 {
				return nil, fmt.Errorf("cuda backend: a block of %d bytes is not a whole number of %d-byte records", len(whole[i]), rec)
			}
			counts[i] = len(whole[i]) / rec
		}
	}
	defer d.enter()()
	d.mu.Lock()
	defer d.mu.Unlock()
	// bases[i]: where block i is used in place (0: it is copied).
	bases := make([]uint64, len(rblocks))
	copyBytes, largest := 0, 0
	for i, n := range counts {
		if p, ok := d.inPlace(whole[i]); ok {
			bases[i] = p
			d.registered += uint64(len(whole[i]))
			continue
		}
		copyBytes += n * rec
		largest = max(largest, n*rec)
	}
	var base uint64
	var pinned []byte // the destination's host view when it is pinned memory
	if copyBytes > 0 {
		if d.hostRecs && d.info.mapHost {
			h, p, err := d.drv.hostAlloc(copyBytes)
			if err != nil {
				return nil, fmt.Errorf("cuda: %s: allocating %d pinned bytes of FFN records: %w", d.name, copyBytes, err)
			}
			d.pinnedRecs = append(d.pinnedRecs, h)
			d.registered += uint64(copyBytes)
			pinned, base = h, p
		} else {
			p, err := d.drv.alloc(copyBytes)
			if err != nil {
				return nil, fmt.Errorf("cuda: %s: allocating %d bytes of FFN records: %w", d.name, copyBytes, err)
			}
			d.weights = append(d.weights, p)
			d.resident += uint64(copyBytes)
			base = p
		}
	}
	var buf []byte
	if pinned == nil && largest > 0 {
		buf = make([]byte, largest)
	}
	off := 0
	for i := range rblocks {
		if bases[i] != 0 {
			continue
		}
		n := counts[i] * rec
		bases[i] = base + uint64(off)
		var dst []byte
		if pinned != nil {
			dst = pinned[off : off+n]
		} else {
			dst = buf[:n]
		}
		interleave(dst, &rblocks[i], whole[i], rec)
		if d.integrated || d.hostRecs {
			dropPages(&rblocks[i])
		}
		if pinned == nil && n > 0 {
			if err := d.drv.htod(base+uint64(off), unsafe.Pointer(&dst[0]), n); err != nil {
				return nil, fmt.Errorf("cuda: %s: copying FFN records: %w", d.name, err)
			}
		}
		off += n
	}
	host := cudaplan.Table(bases, counts, rec)
	return d.newRecords(host, dt, hidden, rb, cudaplan.Vec(dt, hidden, host...))
}

// interleave writes block b's records whole into dst: the block's own
// bytes where it stores them so (whole), else record by record.
func interleave(dst []byte, b *format.RecordBlock, whole []byte, rec int) {
	if whole != nil {
		copy(dst, whole)
		return
	}
	for j := 0; j < b.N; j++ {
		b.CopyRecord(dst[j*rec:(j+1)*rec], j)
	}
}

// dropPages pages out the mapped rows of b once their interleaved copy is
// the one the GPU reads, so the process holds the records once.
func dropPages(b *format.RecordBlock) {
	for _, rows := range [][]byte{b.Gate, b.Up, b.Down} {
		pageOut(pageInner(rows))
	}
}

// pageInner is the whole pages inside b (madvise takes page-aligned
// ranges; the pages b shares with its neighbours are left).
func pageInner(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	ps := uintptr(os.Getpagesize())
	lo := uintptr(unsafe.Pointer(&b[0]))
	start := (lo + ps - 1) &^ (ps - 1)
	end := (lo + uintptr(len(b))) &^ (ps - 1)
	if end <= start {
		return nil
	}
	return b[start-lo : end-lo]
}

// newRecords uploads a table (called with d.mu held and the context current).
func (d *Device) newRecords(host []uint64, dt format.DType, hidden, rb int, vec bool) (*records, error) {
	r := &records{host: host, dt: dt, hidden: hidden, rowBytes: rb, vec: vec}
	if len(host) == 0 {
		return r, nil
	}
	m, err := d.alloc(8 * len(host))
	if err != nil {
		return nil, err
	}
	if err := d.drv.htod(m.p, unsafe.Pointer(&host[0]), 8*len(host)); err != nil {
		return nil, fmt.Errorf("cuda: %s: copying a record table: %w", d.name, err)
	}
	r.table, r.mem = m.p, m
	return r, nil
}

// devMem is device memory freed when it becomes unreachable (or when the
// device closes): activation buffers and decode-set tables, whose owners
// the seam does not close one by one.
type devMem struct {
	d     *Device
	p     uint64
	bytes int
}

// alloc returns zeroed device memory of n bytes (the context current).
func (d *Device) alloc(n int) (*devMem, error) {
	p, err := d.drv.alloc(n)
	if err != nil {
		return nil, fmt.Errorf("cuda: %s: allocating %d bytes: %w", d.name, n, err)
	}
	m := &devMem{d: d, p: p, bytes: n}
	runtime.SetFinalizer(m, (*devMem).free)
	return m, nil
}

func (m *devMem) free() {
	d := m.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.p == 0 || d.closed {
		return
	}
	done := d.drv.enter()
	d.drv.free(m.p)
	done()
	m.p = 0
}

// ResidentBytes is what the device holds for the model's weights (copies;
// weights read from host memory after UsePack are RegisteredBytes).
func (d *Device) ResidentBytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resident
}

// RegisteredBytes is the weight bytes the GPU reads from host memory:
// registered in place or in pinned memory (UsePack).
func (d *Device) RegisteredBytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.registered
}

// MemInfo is the device's free and total memory as the driver reports it.
func (d *Device) MemInfo() (free, total int64, err error) {
	defer d.enter()()
	return d.drv.memInfo()
}

// SMs is the number of multiprocessors.
func (d *Device) SMs() int { return d.sms }

// NewExec starts an Exec; its operations run on the GPU, so it asks of
// pool only that it has a worker.
func (d *Device) NewExec(pool backend.Pool) (backend.Exec, error) {
	if pool == nil {
		return nil, errors.New("cuda backend: no host pool")
	}
	if n := pool.Workers(); n < 1 {
		return nil, fmt.Errorf("cuda backend: %d threads", n)
	}
	return &Exec{d: d, ropeLen: -1, posVal: -1, graphs: d.graphs}, nil
}

// HostScratchBytes is the host memory a run needs besides the weights, the
// KV cache and the activation buffers a memory plan counts. The Exec runs
// no kernels on the host pool, so on a discrete GPU it is 0. An integrated
// GPU's memory is the host's: its KV cache and buffers are the plan's, and
// what it holds besides — the CUDA context and the loaded kernels, the
// norms, the record tables — is IntegratedReserve.
func (d *Device) HostScratchBytes(tokens, hidden, intermediate, heads, kvHeads, headDim, ctx, threads int) uint64 {
	if d.integrated {
		return IntegratedReserve
	}
	return 0
}

// IntegratedReserve is what --mem-budget sets aside on an integrated GPU
// for the device's own memory besides the plan's KV cache and buffers:
// the CUDA context and module (tens of MiB on a Jetson) and the per-layer
// norms and record tables (under 2 MiB for a 3B model). An allowance, not
// a measurement.
const IntegratedReserve = 128 << 20

// Close frees the weights, unregisters host memory and releases the
// context. The pack must stay open until then.
func (d *Device) Close() error {
	defer d.enter()()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	if err := d.drv.sync(); err != nil {
		errs = append(errs, fmt.Errorf("cuda: %s: %w", d.name, err))
	}
	for _, p := range d.weights {
		d.drv.free(p)
	}
	for _, r := range d.regions {
		free := func() error { return d.drv.unregisterHost(r.host) }
		if r.pinned != nil {
			free = func() error { return d.drv.hostFree(r.pinned) }
		}
		if err := free(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range d.pinnedRecs {
		if err := d.drv.hostFree(h); err != nil {
			errs = append(errs, err)
		}
	}
	d.weights, d.regions, d.pinnedRecs = nil, nil, nil
	if err := d.drv.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// refuseKQuant refuses the K-quants, which this backend has no kernels
// for (the CPU backend runs them).
func refuseKQuant(dt format.DType) error {
	if dt.KQuant() {
		return fmt.Errorf("cuda backend: %v weights are not supported (convert with --dtype q4_0 or q8_0, or run on the CPU)", dt)
	}
	return nil
}
