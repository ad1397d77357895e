//go:build cuda || cudaemu

package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cudaplan"
)

// buf is a float32 activation buffer in device memory, or a view of one
// (mem keeps the allocation alive while a view is).
type buf struct {
	p   uint64
	n   int
	mem *devMem
}

func (b *buf) Len() int { return b.n }

func dp(b backend.Buf) uint64 { return b.(*buf).p }

// ptr is b's device address for an operation queued on the stream: b's
// allocation is kept reachable until the stream is next waited for (Read,
// Close). The allocations are freed by finalizers when unreachable, and
// a caller's last use of a buffer can be the call that queues it: without
// this a collection during the call freed the memory under the operation
// (TestFFN, under the emulator, read garbage in about one run of four; with
// GOGC=off never).
func (e *Exec) ptr(b backend.Buf) uint64 {
	bb := b.(*buf)
	e.keep = append(e.keep, bb.mem)
	return bb.p
}

// Exec runs one sequence's operations on the device's default stream, in
// order; Read waits for them. Operations without an error result record
// the first failure, which Err reports and Embed and Gather return.
type Exec struct {
	d    *Device
	err  error
	args cudaplan.Args
	keep []*devMem // allocations the queued operations use (ptr), until Read

	tokens  *devMem // int32 token ids of the batch
	act     *devMem // (T, n) FFN activations h of the last FFN
	actT    int     // its T and n
	actN    int
	counts  *devMem // int32 vote counts
	zero    *devMem // a record of zeros: sip_route's filler
	argOut  *devMem // int32 sip_argmax's index, value bits and non-finite flag
	topOut  *devMem // int32 sip_topk's flag, indices and value bits
	topHost []int32
	embedT  int  // tokens of the last Embed, until an Argmax
	fed     bool // tokens holds the one token fedTok, written by sip_argmax
	fedTok  int
	posBuf  *devMem // int32: the batch's first position, read by RoPE, KV append, attention
	posVal  int     // the value it holds (−1: none)

	// CUDA graphs (on unless SIPACK_CUDA_GRAPH=0): a decode step's launches are
	// queued from Embed to Read; a step whose launches are those of the
	// previous one replays its graph, another is captured into a new one.
	graphs   bool
	queuing  bool
	queue    []queued
	cached   []queued
	graph    uint64  // the cached step's graph (0: none)
	replays  int     // steps run from a graph
	captures int     // graphs captured
	partial  *devMem // (splits, H) partial sums of the decode down projection
	attPart  *devMem // a split decode attention's partial results (AttPartFloats)
	attCount *devMem // int32 a head: its splits finished (zero between launches)

	invFreq *devMem  // (headDim/2) float32 RoPE frequencies
	ropeKey *float64 // the slice they came from
	ropeLen int      // and its length

	pend pending // a decode operation held back to fuse with the next (fuse.go)
}

var (
	_ backend.Exec        = (*Exec)(nil)
	_ backend.Voter       = (*Exec)(nil)
	_ backend.Argmaxer    = (*Exec)(nil)
	_ backend.GroupRouter = (*Exec)(nil)
	_ backend.TopKer      = (*Exec)(nil)
)

func (e *Exec) fail(err error) {
	if e.err == nil && err != nil {
		e.err = err
	}
}

// Err is the first failure of an operation since the Exec started.
func (e *Exec) Err() error { return e.err }

// grow returns m when it holds n bytes, else a new allocation.
func (e *Exec) grow(m *devMem, n int) *devMem {
	if m != nil && m.bytes >= n {
		return m
	}
	nm, err := e.d.alloc(max(n, 256))
	if err != nil {
		e.fail(err)
		return nil
	}
	return nm
}

// queued is one launch of a decode step: its shape and parameter values.
type queued struct {
	l    cudaplan.Launch
	vals []uint64
}

func sameSteps(a, b []queued) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].l != b[i].l || len(a[i].vals) != len(b[i].vals) {
			return false
		}
		for j, v := range a[i].vals {
			if b[i].vals[j] != v {
				return false
			}
		}
	}
	return true
}

// flush launches what is queued, one by one, and stops queuing this step
// (before any operation that is not a launch: the queue must run first).
func (e *Exec) flush() {
	e.settle()
	if !e.queuing {
		return
	}
	e.queuing = false
	for _, q := range e.queue {
		if e.err != nil {
			return
		}
		if err := e.d.drv.launchValues(q.l, q.vals); err != nil {
			e.fail(fmt.Errorf("cuda: %v: %w", q.l, err))
		}
	}
}

// runStep runs the queued decode step: the cached graph if the step's
// launches are the cached ones, else a graph captured from them.
func (e *Exec) runStep() {
	e.settle()
	e.queuing = false
	if e.err != nil {
		return
	}
	if e.graph == 0 || !sameSteps(e.queue, e.cached) {
		if e.graph != 0 {
			e.d.drv.dropGraph(e.graph)
			e.graph = 0
		}
		// Hold the device lock while capturing: a finalizer freeing
		// memory on another thread must not call into the driver mid-capture.
		e.d.mu.Lock()
		g, err := e.d.drv.capture(e.queue)
		e.d.mu.Unlock()
		if err != nil {
			e.fail(fmt.Errorf("cuda: capturing a decode step of %d launches: %w", len(e.queue), err))
			return
		}
		e.graph, e.captures = g, e.captures+1
		e.cached = append(e.cached[:0], e.queue...)
		e.queue = nil // cached holds its values now
	}
	if err := e.d.drv.replay(e.graph); err != nil {
		e.fail(fmt.Errorf("cuda: replaying a decode step: %w", err))
		return
	}
	e.replays++
}

// GraphStats is how many decode steps ran from a CUDA graph and how many
// graphs were captured (the default; SIPACK_CUDA_GRAPH=0 turns them off).
func (e *Exec) GraphStats() (replays, captures int) { return e.replays, e.captures }

// setPos makes the device's position buffer hold pos.
func (e *Exec) setPos(pos int) uint64 {
	if e.posBuf != nil && e.posVal == pos {
		return e.posBuf.p
	}
	v := int32(pos)
	p := e.upload(&e.posBuf, unsafe.Pointer(&v), 4)
	e.posVal = pos
	return p
}

// launch runs one kernel with the parameters packed in e.args (or queues
// it while a decode step is being queued).
func (e *Exec) launch(l cudaplan.Launch) {
	if e.err != nil {
		return
	}
	if e.queuing {
		vals, err := e.args.Values()
		if err != nil {
			e.fail(err)
			return
		}
		l.Reads = 0 // a graph's steps compare launches; graphs are not timed
		e.queue = append(e.queue, queued{l, append([]uint64(nil), vals...)})
		return
	}
	if err := e.d.drv.launch(l, &e.args); err != nil {
		e.fail(fmt.Errorf("cuda: %v: %w", l, err))
	}
}

func (e *Exec) Alloc(n int) backend.Buf {
	defer e.d.enter()()
	if n == 0 {
		return &buf{}
	}
	m, err := e.d.alloc(4 * n)
	if err != nil {
		e.fail(err)
		return &buf{n: n}
	}
	return &buf{p: m.p, n: n, mem: m}
}

func (e *Exec) Slice(b backend.Buf, off, n int) backend.Buf {
	s := b.(*buf)
	if off < 0 || n < 0 || off+n > s.n {
		e.fail(fmt.Errorf("cuda backend: slice [%d, %d) of a buffer of %d", off, off+n, s.n))
		return &buf{n: n}
	}
	return &buf{p: s.p + 4*uint64(off), n: n, mem: s.mem}
}

func (e *Exec) Read(dst []float32, b backend.Buf) {
	n := min(len(dst), b.Len())
	if e.err != nil {
		return
	}
	if n == 0 {
		e.flush()
		e.release()
		return
	}
	defer e.d.enter()()
	e.settle()
	if e.queuing {
		e.runStep()
	}
	if err := e.d.drv.dtoh(unsafe.Pointer(&dst[0]), dp(b), 4*n); err != nil {
		e.fail(fmt.Errorf("cuda: reading %d floats: %w", n, err))
	}
	e.release()
}

func (e *Exec) Write(b backend.Buf, src []float32) {
	n := min(len(src), b.Len())
	if e.err != nil || n == 0 {
		return
	}
	defer e.d.enter()()
	e.flush() // what is queued runs before the copy lands
	if err := e.d.drv.htod(dp(b), unsafe.Pointer(&src[0]), 4*n); err != nil {
		e.fail(fmt.Errorf("cuda: writing %d floats: %w", n, err))
	}
}

// release drops the queued operations' allocations (ptr) once the stream
// has been waited for.
func (e *Exec) release() {
	clear(e.keep)
	e.keep = e.keep[:0]
}

// upload copies host bytes into device memory m (grown as needed).
func (e *Exec) upload(m **devMem, src unsafe.Pointer, n int) uint64 {
	if *m = e.grow(*m, n); *m == nil {
		return 0
	}
	if err := e.d.drv.htod((*m).p, src, n); err != nil {
		e.fail(fmt.Errorf("cuda: copying %d bytes: %w", n, err))
	}
	return (*m).p
}

func (e *Exec) Embed(out backend.Buf, table backend.Matrix, tokens []int) error {
	w := table.(*Matrix)
	ids := make([]int32, len(tokens))
	for t, tok := range tokens {
		if tok < 0 || tok >= w.rows {
			return fmt.Errorf("token id %d outside the vocabulary of %d", tok, w.rows)
		}
		ids[t] = int32(tok)
	}
	if e.err != nil {
		return e.err
	}
	if len(ids) == 0 {
		return nil
	}
	defer e.d.enter()()
	e.flush()
	// A greedy step's token is on the device already (Argmax put it there).
	var tp uint64
	if len(ids) == 1 && e.fed && e.fedTok == tokens[0] {
		tp = e.tokens.p
	} else {
		e.fed = false
		tp = e.upload(&e.tokens, unsafe.Pointer(&ids[0]), 4*len(ids))
	}
	e.embedT = len(ids)
	if e.graphs && len(ids) == 1 {
		e.queuing, e.queue = true, e.queue[:0]
	}
	e.args.Reset(cudaplan.KEmbed).Ptr(e.ptr(out)).Ptr(w.p).Ptr(tp).Int(w.cols).Int(w.rowB).Int(int(w.dt))
	e.launch(reading(cudaplan.Embed(w.cols, len(tokens)), len(tokens)*w.rowB))
	return e.err
}

func (e *Exec) RMSNorm(out, x backend.Buf, w backend.Vector, eps float32) {
	v := w.(*vector)
	defer e.d.enter()()
	e.settle()
	if x.Len() == v.n && v.n <= cudaplan.NormMax && dp(out) != dp(x) {
		// One row: held back to be the prologue of what reads it.
		p := &e.pend
		p.norm, p.normOut, p.normX, p.normW, p.normEps = true, e.ptr(out), e.ptr(x), v, eps
		return
	}
	e.args.Reset(cudaplan.KRMSNorm).Ptr(e.ptr(out)).Ptr(e.ptr(x)).Ptr(v.p).Int(v.n).F32(eps)
	e.launch(cudaplan.RMSNorm(x.Len() / v.n))
}

func (e *Exec) MatMul(outs []backend.Buf, ws []backend.Matrix, x backend.Buf) {
	defer e.d.enter()()
	if fusable(ws, x) { // one token
		var o [3]uint64
		var m [3]*Matrix
		for i := range ws {
			m[i], o[i] = ws[i].(*Matrix), e.ptr(outs[i])
		}
		if nw, from, eps, ok := e.normOf(x, m[0].cols); ok {
			e.matVecFused(len(ws), o, m, from, nw, eps, e.ptr(x), 0)
			return
		}
		e.settle()
		if len(ws) == 1 && dp(outs[0]) != dp(x) {
			// Held back for a residual add into another buffer (o_proj).
			p := &e.pend
			p.mat, p.matOut, p.matX, p.matW = true, o[0], e.ptr(x), m[0]
			return
		}
		e.matVecFused(len(ws), o, m, e.ptr(x), nil, 0, 0, 0)
		return
	}
	e.settle()
	for i, wi := range ws {
		w := wi.(*Matrix)
		T := x.Len() / w.cols
		l := cudaplan.MatMul(w.rows, T)
		e.args.Reset(l.Kernel).Ptr(e.ptr(outs[i])).Ptr(w.p).Ptr(e.ptr(x)).Int(w.rows).Int(w.cols).Int(w.rowB)
		if l.Kernel == cudaplan.KMatVec {
			e.args.Int(int(w.dt)).Int(b2i(cudaplan.Vec(w.dt, w.cols, w.p, dp(x))))
		} else {
			e.args.Int(T).Int(int(w.dt)).Int(b2i(!e.d.exactGEMM))
		}
		e.launch(reading(l, w.rows*w.rowB))
	}
}

// reading is l counting n bytes read (KernelTime.Bytes).
func reading(l cudaplan.Launch, n int) cudaplan.Launch {
	l.Reads = int64(n)
	return l
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *Exec) AddBias(x backend.Buf, b backend.Vector) {
	v := b.(*vector)
	defer e.d.enter()()
	e.settle()
	e.args.Reset(cudaplan.KAddBias).Ptr(e.ptr(x)).Ptr(v.p).Int(v.n).Int(x.Len())
	e.launch(cudaplan.Elementwise(cudaplan.KAddBias, x.Len()))
}

func (e *Exec) Add(x, y backend.Buf) {
	defer e.d.enter()()
	p := &e.pend
	switch {
	case p.mat && p.matOut == dp(y) && x.Len() == y.Len() && y.Len() == p.matW.rows && dp(x) != p.matX:
		p.mat = false
		e.matVecFused(1, [3]uint64{p.matOut}, [3]*Matrix{p.matW}, p.matX, nil, 0, 0, e.ptr(x))
		return
	case p.reduce && p.redOut == dp(y) && x.Len() == y.Len() && y.Len() == p.redH:
		p.reduce = false
		e.args.Reset(cudaplan.KReduceSplits).Ptr(p.redOut).Ptr(p.redPart).Int(p.redH).Int(p.redS).Ptr(e.ptr(x))
		e.launch(cudaplan.Elementwise(cudaplan.KReduceSplits, p.redH))
		return
	}
	e.settle()
	e.args.Reset(cudaplan.KAdd).Ptr(e.ptr(x)).Ptr(e.ptr(y)).Int(x.Len())
	e.launch(cudaplan.Elementwise(cudaplan.KAdd, x.Len()))
}

func (e *Exec) RoPE(x backend.Buf, T, headDim, pos int, invFreq []float64) {
	if len(invFreq) != headDim/2 || len(invFreq) == 0 {
		e.fail(fmt.Errorf("cuda backend: %d RoPE frequencies for head size %d", len(invFreq), headDim))
		return
	}
	defer e.d.enter()()
	p := &e.pend
	if e.ropeKey != &invFreq[0] || e.ropeLen != len(invFreq) {
		e.settle() // held-back rotations read the old frequencies
		// The frequencies as float32, as the CPU reference multiplies them.
		f := make([]float32, len(invFreq))
		for i, v := range invFreq {
			f[i] = float32(v)
		}
		e.upload(&e.invFreq, unsafe.Pointer(&f[0]), 4*len(f))
		e.ropeKey, e.ropeLen = &invFreq[0], len(invFreq)
	}
	if e.invFreq == nil {
		return
	}
	n := x.Len() / T
	if T == 1 && (p.ropes == 0 || p.ropes == 1 && p.ropePos == pos && p.ropeHD == headDim) {
		// One token: held back for the attention (q and k).
		if p.ropes == 0 {
			e.settle()
		}
		e.setPos(pos)
		p.ropeX[p.ropes], p.ropeN[p.ropes] = e.ptr(x), n
		p.ropeHD, p.ropePos = headDim, pos
		p.ropes++
		return
	}
	e.settle()
	pp := e.setPos(pos)
	e.args.Reset(cudaplan.KRoPE).Ptr(e.ptr(x)).Ptr(e.invFreq.p).Int(n).Int(headDim).Ptr(pp)
	e.launch(cudaplan.RoPE(n/headDim, T))
}

func (e *Exec) Attention(out, q, k, v backend.Buf, c *backend.KVCache, layer, pos, T int) {
	if !e.d.TakesKV(c.Type) {
		e.fail(fmt.Errorf("cuda backend: a %s KV cache is not supported (f32 or f16)", c.Type))
		return
	}
	if err := cudaplan.CheckAttention(c.Heads, c.KVDim/max(1, c.HeadDim), c.HeadDim); err != nil {
		e.fail(err)
		return
	}
	if pos < 0 || pos+T > c.Ctx || layer < 0 || layer >= c.Layers {
		e.fail(fmt.Errorf("cuda backend: attention at positions %d..%d of layer %d outside the cache (%d layers × %d)", pos, pos+T-1, layer, c.Layers, c.Ctx))
		return
	}
	defer e.d.enter()()
	kvDim := c.KVDim
	layerOff := uint64(c.Type.Size() * layer * c.Ctx * kvDim)
	f16 := b2i(c.Type == backend.KVF16)
	kc, vc := e.ptr(c.Keys)+layerOff, e.ptr(c.Values)+layerOff
	group := c.Heads / (kvDim / c.HeadDim)
	scale := float32(1 / math.Sqrt(float64(c.HeadDim)))
	p := &e.pend
	qp, kp, vp := dp(q), dp(k), dp(v)
	if T == 1 && p.ropes == 2 && p.ropePos == pos && p.ropeHD == c.HeadDim &&
		(p.ropeX == [2]uint64{qp, kp} || p.ropeX == [2]uint64{kp, qp}) && vp != kp && vp != qp &&
		q.Len() == c.Heads*c.HeadDim && k.Len() == kvDim && v.Len() == kvDim {
		// RoPE on q and k, the append and the attention in one launch.
		p.ropes = 0
		splits := cudaplan.AttSplits(pos + 1)
		var part, count uint64
		if splits > 1 {
			// Counters start at zero (alloc) and the merging block
			// zeroes its head's again.
			if e.attPart = e.grow(e.attPart, 4*cudaplan.AttPartFloats(c.Heads, splits)); e.attPart == nil {
				return
			}
			if e.attCount = e.grow(e.attCount, 4*c.Heads); e.attCount == nil {
				return
			}
			part, count = e.attPart.p, e.attCount.p
		}
		e.args.Reset(cudaplan.KAttentionRoPE).Ptr(e.ptr(out)).Ptr(e.ptr(q)).Ptr(e.ptr(k)).Ptr(e.ptr(v)).Ptr(kc).Ptr(vc).
			Ptr(e.posBuf.p).Ptr(e.invFreq.p).Int(c.Heads).Int(c.HeadDim).Int(kvDim).Int(group).F32(scale).Int(f16).Ptr(part).Ptr(count)
		e.launch(reading(cudaplan.AttentionRoPE(c.Heads, splits), 2*(pos+1)*kvDim*c.Type.Size()))
		return
	}
	e.settle()
	pp := e.setPos(pos)
	e.args.Reset(cudaplan.KKVAppend).Ptr(kc).Ptr(vc).Ptr(e.ptr(k)).Ptr(e.ptr(v)).Int(kvDim).Int(T).Ptr(pp).Int(f16)
	e.launch(cudaplan.KVAppend(T, kvDim))
	e.args.Reset(cudaplan.KAttention).Ptr(e.ptr(out)).Ptr(e.ptr(q)).Ptr(kc).Ptr(vc).
		Ptr(pp).Int(c.Heads).Int(c.HeadDim).Int(kvDim).Int(group).F32(scale).Int(f16)
	e.launch(reading(cudaplan.Attention(c.Heads, T), 2*(pos+T)*kvDim*c.Type.Size()))
}

func (e *Exec) FFN(out, x backend.Buf, recs backend.Records, act []float32) {
	r := recs.(*records)
	e.keep = append(e.keep, r.mem) // its table, until Read
	H, n := r.hidden, r.Len()
	T := x.Len() / H
	defer e.d.enter()()
	e.actT, e.actN = T, 0
	if n == 0 {
		e.settle()
		e.flush()
		if e.err == nil {
			if err := e.d.drv.memset0(e.ptr(out), 4*out.Len()); err != nil {
				e.fail(fmt.Errorf("cuda: clearing the FFN output: %w", err))
			}
		}
		return
	}
	if e.act = e.grow(e.act, 4*T*n); e.act == nil {
		return
	}
	h := e.act.p
	e.actT, e.actN = T, n
	// h = silu(gate·x) ⊙ (up·x) over the table's records.
	if T == 1 && act == nil {
		if nw, from, eps, ok := e.normOf(x, H); ok {
			e.args.Reset(cudaplan.KFFNGateUpNorm).Ptr(h).Ptr(r.table).Ptr(from).Int(n).Int(H).Int(r.rowBytes).
				Int(int(r.dt)).Int(b2i(r.vec)).Ptr(nw.p).Ptr(e.ptr(x)).F32(eps)
			e.launch(reading(cudaplan.FFNGateUpNorm(n), 2*n*r.rowBytes))
			e.downDecode(out, r, r.table, h, n, true)
			return
		}
	}
	e.settle()
	l := cudaplan.FFNGateUp(n, T)
	e.args.Reset(l.Kernel).Ptr(h).Ptr(r.table).Ptr(e.ptr(x)).Int(n).Int(H).Int(r.rowBytes)
	if l.Kernel == cudaplan.KFFNGateUp {
		e.args.Int(int(r.dt)).Int(b2i(r.vec && cudaplan.Vec(r.dt, H, dp(x))))
	} else {
		e.args.Int(T).Int(int(r.dt)).Int(b2i(!e.d.exactGEMM))
	}
	e.launch(reading(l, 2*n*r.rowBytes))
	// out = h · D: one token splits the records and reduces the partial
	// sums; a batch runs the tiled GEMM.
	if T == 1 {
		e.downDecode(out, r, r.table, h, n, act == nil)
	} else {
		e.args.Reset(cudaplan.KFFNDownTiled).Ptr(e.ptr(out)).Ptr(r.table).Ptr(h).Int(n).Int(H).Int(r.rowBytes).Int(T).Int(int(r.dt)).Int(b2i(!e.d.exactGEMM))
		e.launch(reading(cudaplan.FFNDownTiled(H, T), n*r.rowBytes))
	}
	if act != nil && e.err == nil {
		e.flush()
		if err := e.d.drv.dtoh(unsafe.Pointer(&act[0]), h, 4*T*n); err != nil {
			e.fail(fmt.Errorf("cuda: reading FFN activations: %w", err))
		}
	}
}

// downDecode is one token's down projection, out = Σ_j h[j]·d_j over the n
// records of table (r's dtype and sizes): the records cut into splits,
// partial sums per split, then one reduction, held back when hold is set
// (the residual add that follows joins it).
func (e *Exec) downDecode(out backend.Buf, r *records, table, h uint64, n int, hold bool) {
	H := r.hidden
	dn := cudaplan.FFNDown(n, H, r.dt, e.d.sms)
	if e.partial = e.grow(e.partial, 4*dn.Splits*H); e.partial == nil {
		return
	}
	p := e.partial.p
	e.args.Reset(cudaplan.KFFNDownPartial).Ptr(p).Ptr(table).Ptr(h).Int(n).Int(H).Int(r.rowBytes).
		Int(dn.Chunk).Int(int(r.dt)).Int(b2i(r.vec))
	e.launch(reading(dn.Partial, n*r.rowBytes))
	if hold {
		pd := &e.pend
		pd.reduce, pd.redOut, pd.redPart, pd.redH, pd.redS = true, e.ptr(out), p, H, dn.Splits
		return
	}
	e.args.Reset(cudaplan.KReduceSplits).Ptr(e.ptr(out)).Ptr(p).Int(H).Int(dn.Splits).Ptr(0)
	e.launch(dn.Reduce)
}

// Argmax reduces b on the device (sip_argmax) and reads back 12 bytes:
// the index, its value and whether b was all finite. A decode step's
// argmax joins its graph; its read-back is the step's one wait.
func (e *Exec) Argmax(b backend.Buf) (int, bool) {
	if e.err != nil {
		return 0, false
	}
	defer e.d.enter()()
	e.settle()
	if e.argOut = e.grow(e.argOut, 16); e.argOut == nil {
		return 0, false
	}
	// After a one-token step the kernel also feeds the next one: its token
	// id into the tokens buffer and the position one on, so that step
	// uploads neither.
	var next, pos uint64
	if e.embedT == 1 && e.tokens != nil && e.posBuf != nil {
		next, pos = e.tokens.p, e.posBuf.p
	}
	e.embedT = 0
	e.args.Reset(cudaplan.KArgmax).Ptr(e.argOut.p).Ptr(e.ptr(b)).Int(b.Len()).Ptr(next).Ptr(pos)
	e.launch(reading(cudaplan.Argmax(), 4*b.Len()))
	if e.queuing {
		e.runStep()
	}
	var out [3]int32
	if e.err == nil {
		if err := e.d.drv.dtoh(unsafe.Pointer(&out[0]), e.argOut.p, 12); err != nil {
			e.fail(fmt.Errorf("cuda: reading the argmax: %w", err))
		}
	}
	e.release()
	if e.err != nil {
		return 0, false
	}
	if next != 0 {
		e.fed, e.fedTok = true, int(out[0])
		e.posVal++
	}
	return int(out[0]), out[2] == 0
}

// MaxTopK is the most candidates sip_topk returns.
func (e *Exec) MaxTopK() int { return cudaplan.TopKMax }

// TopK is backend.TopKer: sip_topk selects on the device and 8k + 4 bytes
// come back; the step's read-back is its one wait.
func (e *Exec) TopK(b backend.Buf, ids []int32, vals []float32) bool {
	k := len(ids)
	if e.err != nil {
		return false
	}
	if k < 1 || k > cudaplan.TopKMax || len(vals) != k || k > b.Len() {
		e.fail(fmt.Errorf("cuda backend: top %d of %d values (at most %d)", k, b.Len(), cudaplan.TopKMax))
		return false
	}
	defer e.d.enter()()
	e.settle()
	n := 4 * (1 + 2*k)
	if e.topOut = e.grow(e.topOut, n); e.topOut == nil {
		return false
	}
	// After a one-token step the next one's position is this one's + 1.
	var pos uint64
	if e.embedT == 1 && e.posBuf != nil {
		pos = e.posBuf.p
	}
	e.embedT = 0
	e.args.Reset(cudaplan.KTopK).Ptr(e.topOut.p).Ptr(e.ptr(b)).Int(b.Len()).Int(k).Ptr(pos)
	e.launch(reading(cudaplan.TopK(), 4*b.Len()))
	if e.queuing {
		e.runStep()
	}
	out := e.topHost[:0]
	for range 1 + 2*k {
		out = append(out, 0)
	}
	e.topHost = out
	if e.err == nil {
		if err := e.d.drv.dtoh(unsafe.Pointer(&out[0]), e.topOut.p, n); err != nil {
			e.fail(fmt.Errorf("cuda: reading the top %d: %w", k, err))
		}
	}
	e.release()
	if e.err != nil {
		return false
	}
	if pos != 0 {
		e.posVal++
	}
	for i := range k {
		ids[i], vals[i] = out[1+i], math.Float32frombits(uint32(out[1+k+i]))
	}
	return out[0] == 0
}

// Vote counts the last FFN's votes on the device (sip_vote: a radix
// select of the k-th largest |h| per token), so only the counts cross to
// the host.
func (e *Exec) Vote(counts []int32, k int) {
	n := e.actN
	if len(counts) != n || n == 0 || k < 1 || k > n {
		e.fail(fmt.Errorf("cuda backend: %d votes of %d over %d counts for the last FFN's %d records", k, n, len(counts), n))
		return
	}
	defer e.d.enter()()
	e.flush()
	cp := e.upload(&e.counts, unsafe.Pointer(&counts[0]), 4*n)
	if e.err != nil {
		return
	}
	e.args.Reset(cudaplan.KVote).Ptr(cp).Ptr(e.act.p).Int(n).Int(k)
	e.launch(cudaplan.Vote(e.actT))
	if e.err == nil {
		if err := e.d.drv.dtoh(unsafe.Pointer(&counts[0]), cp, 4*n); err != nil {
			e.fail(fmt.Errorf("cuda: reading votes: %w", err))
		}
	}
}

// Gather makes the decode set's table: the addresses of the selected
// records, read in place (static prefix and voted ranks alike), so compact
// has nothing to do on the device.
func (e *Exec) Gather(all backend.Records, ranks []int, static int, compact bool) (backend.Records, error) {
	if e.err != nil {
		return nil, e.err
	}
	a := all.(*records)
	if a.routed {
		return nil, fmt.Errorf("cuda backend: gathering from a routed decode set")
	}
	host, err := cudaplan.Gather(a.host, ranks)
	if err != nil {
		return nil, err
	}
	defer e.d.enter()()
	e.flush()
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	return e.d.newRecords(host, a.dt, a.hidden, a.rowBytes, a.vec)
}

// RouteGroups is backend.GroupRouter: sip_route chooses the groups and
// writes the decode set's table on the device, into reuse's table when it
// is a routed set of the same size (the stream orders the overwrite after
// the last token's FFN), so a decode step allocates and uploads nothing.
func (e *Exec) RouteGroups(all backend.Records, scores backend.Buf, first, n, k, static, G int, reuse backend.Records) (backend.Records, error) {
	if e.err != nil {
		return nil, e.err
	}
	a := all.(*records)
	static = max(0, min(static, a.Len()))
	if a.routed || G < 1 || first < 0 || n < 0 || first+n > scores.Len() || k < 0 || k > n {
		return nil, fmt.Errorf("cuda backend: routing %d of groups [%d, %d) of %d over %d scores (routed set: %v)", k, first, first+n, G, scores.Len(), a.routed)
	}
	size := static + k*G
	defer e.d.enter()()
	e.settle()
	r, ok := reuse.(*records)
	if !ok || r == nil || !r.routed || r.Len() != size || r.rowBytes != a.rowBytes || r.dt != a.dt {
		m := e.grow(nil, 8*max(1, size))
		if m == nil {
			return nil, e.err
		}
		r = &records{table: m.p, host: make([]uint64, size), dt: a.dt, hidden: a.hidden, rowBytes: a.rowBytes, vec: a.vec, mem: m, routed: true}
	}
	if e.zero = e.grow(e.zero, 3*a.rowBytes); e.zero == nil {
		return nil, e.err
	}
	e.keep = append(e.keep, a.mem, r.mem, e.zero)
	e.args.Reset(cudaplan.KRoute).Ptr(r.table).Ptr(a.table).Ptr(e.ptr(scores)).Int(first).Int(n).Int(k).
		Int(static).Int(G).Int(a.Len()).Ptr(e.zero.p)
	e.launch(cudaplan.Route())
	return r, e.err
}

// Close releases the Exec's scratch; its buffers are freed when unreachable.
func (e *Exec) Close() {
	done := e.d.enter()
	e.flush()
	if e.graph != 0 {
		e.d.drv.dropGraph(e.graph)
		e.graph = 0
	}
	done()
	e.release()
	for _, m := range []*devMem{e.tokens, e.act, e.partial, e.invFreq, e.counts, e.posBuf, e.argOut, e.zero, e.topOut} {
		if m != nil {
			m.free()
		}
	}
	e.tokens, e.act, e.partial, e.invFreq, e.counts, e.posBuf, e.argOut, e.zero, e.topOut = nil, nil, nil, nil, nil, nil, nil, nil, nil
	e.attPart, e.attCount = nil, nil
}
