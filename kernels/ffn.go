package kernels

import (
	"math"
	"sync"

	"github.com/sipack/sipack/format"
)

// FFNRecords is the SwiGLU FFN over a set of neuron records for T tokens:
// for every record j (gate row g_j | up row u_j | down column d_j, each H
// values) and token t,
//
//	h[t, j] = silu(g_j · x_t) · (u_j · x_t)
//	y_t    += h[t, j] · d_j
//
// blocks are runs of consecutive records (a band's slice, or a dense layer's
// whole tensor), interleaved or with their gate rows together
// (format.RecordBlock); records are numbered across blocks in order. x is [T, H],
// y is [T, H] and is accumulated into. If act is not nil it receives h as
// [T, total records]. Records are split over the pool into chunks; a
// decode token's chunks each accumulate a partial y (chunkSums), a
// prompt's workers one each over the chunks dealt to them (RunStatic), and
// the partials are added in a fixed order: the output does not depend on
// which worker happened to take which records.
func FFNRecords(p *Pool, y []float32, blocks []format.RecordBlock, dt format.DType, H int, x []float32, act []float32) {
	T := len(x) / H
	rowBytes, _ := dt.RowBytes(H)
	spans, total := p.spansOf(blocks)
	ops := active.Ops(dt)
	g := active.Gemm
	useGemm := gemmFits(active, dt, 2*total, H, T)
	var gemmBlocks []float32
	var xb []uint16
	rb := ffnRecBlock
	if useGemm {
		var xr []float32
		if xb, xr = prefillBF16(p, dt, x); xb != nil {
			x, rb = xr, ffnRecBlockBF16
		}
		gemmBlocks = p.gemmScratch(p.Workers() * ffnBlock(T, H, rb))
	}
	var acts []Q8Act
	if ops.ActDot && xb == nil {
		acts = quantizeTokens(p, ops, x, H, T)
	}
	var tiles *ActTiles // the gate and up rows by the integer GEMM tile
	var panels [][]byte
	if useGemm && acts != nil && panelFits(ops, dt, H, T) {
		tiles, panels = p.actTiles(acts, dt), p.panelScratch(dt, H/format.QK)
	}
	if T == 1 {
		// Chunks of whole tiled blocks: a tiled block cut short reads its
		// down pieces in runs as short as the cut (q4_0, γ0.7 φ0.4, 2
		// threads, chunks of 410 records: 0.88× the pairs pack).
		chunkSums(p, y, H, total, tiledAlign(blocks), func(acc []float32, lo, hi, worker int) {
			records := recordCursor{blocks: blocks, spans: spans}
			ffnDecode(acc, &records, ops, lo, hi, x, acts, act, p.decodeBuf(worker))
		})
		return
	}
	// Prefill: the chunks dealt out (a partial of T·H floats a chunk would
	// not stay in cache), so the sums are the same from run to run; against
	// claimed chunks, back to back, 16-256 tokens of 2048 BF16 or Q4_0
	// records: 0.98-1.02×.
	partial := p.scratch(p.Workers() * T * H)
	clear(partial)
	p.RunStatic(total, func(lo, hi, worker int) {
		acc := partial[worker*T*H : (worker+1)*T*H]
		records := recordCursor{blocks: blocks, spans: spans}
		if useGemm {
			var panel []byte
			if panels != nil {
				panel = panels[worker]
			}
			per := ffnBlock(T, H, rb)
			ffnPrefillGEMM(g, ops, dt, &records, spans, rowBytes, lo, hi, H, rb, x, xb, T, acc,
				gemmBlocks[worker*per:(worker+1)*per], act, total, acts, tiles, panel)
			return
		}
		// Tiles of 16 records × 16 tokens keep the records, the token inputs
		// and their accumulators in cache during prefill.
		const recBlock, tokTile = 16, 16
		// four is a row's dots with tokens t..t+3, the row unpacked once for
		// the four: Dot4 against float32 activations, Dot4Act against
		// converted ones (every token meets those), or nil.
		var four func(w []byte, t int) [4]float32
		switch {
		case acts != nil && ops.Dot4Act != nil:
			four = func(w []byte, t int) [4]float32 {
				return ops.Dot4Act(w, &acts[t], &acts[t+1], &acts[t+2], &acts[t+3])
			}
		case acts == nil && ops.Dot4 != nil:
			four = func(w []byte, t int) (o [4]float32) {
				ops.Dot4(w, x[t*H:(t+1)*H], x[(t+1)*H:(t+2)*H], x[(t+2)*H:(t+3)*H], x[(t+3)*H:(t+4)*H], &o)
				return o
			}
		}
		gemmDown := ops.GemmDown
		if acts != nil {
			gemmDown = nil // the float path's tile: its h comes from Dot4
		}
		var dgather []byte // a tiled block's down rows of a tile, whole
		var hbuf []float32 // h of a tile, token-major, for the prefill GEMM only
		if gemmDown != nil && T >= 4 {
			hbuf = make([]float32, tokTile*recBlock)
		}
		for j0 := lo; j0 < hi; j0 += recBlock {
			j1 := min(j0+recBlock, hi)
			for t0 := 0; t0 < T; t0 += tokTile {
				t1 := min(t0+tokTile, T)
				// With four or more tokens and the block's records contiguous,
				// the down projection runs as a register-blocked GEMM after
				// all of the tile's activations are known.
				first, contiguous := blockOf(spans, j0, j1)
				gemm := four != nil && gemmDown != nil && t1-t0 >= 4 && contiguous // h in hbuf comes from the four-token loop
				for j := j0; j < j1; j++ {
					blk, k := records.at(j)
					gate, up := blk.GateRow(k), blk.UpRow(k)
					var down []byte
					if blk.Tiled() { // gathered whole, in record order (the GEMM reads them so too)
						if dgather == nil {
							dgather = make([]byte, recBlock*rowBytes)
						}
						down = dgather[(j-j0)*rowBytes : (j-j0+1)*rowBytes]
						blk.CopyDown(down, k)
					} else {
						down = blk.DownRow(k)
					}
					t := t0
					if four != nil {
						for ; t+4 <= t1; t += 4 {
							g, u := four(gate, t), four(up, t)
							for q := 0; q < 4; q++ {
								h := SiLU(g[q]) * u[q]
								if act != nil {
									act[(t+q)*total+j] = h
								}
								if gemm {
									hbuf[(t-t0+q)*recBlock+(j-j0)] = h
								} else {
									ops.Axpy(acc[(t+q)*H:(t+q+1)*H], h, down)
								}
							}
						}
					}
					for ; t < t1; t++ {
						var h float32
						if acts != nil {
							h = SiLU(ops.DotAct(gate, &acts[t])) * ops.DotAct(up, &acts[t])
						} else {
							xt := x[t*H : (t+1)*H]
							h = SiLU(ops.Dot(gate, xt)) * ops.Dot(up, xt)
						}
						if act != nil {
							act[t*total+j] = h
						}
						ops.Axpy(acc[t*H:(t+1)*H], h, down)
					}
				}
				if gemm {
					b := &blocks[spans[first].block]
					down, stride := dgather, rowBytes // gathered above
					if !b.Tiled() {
						down, stride = b.Downs(j0-spans[first].first), b.DownStride
					}
					for t := t0; t+4 <= t1; t += 4 {
						gemmDown(acc[t*H:], H, hbuf[(t-t0)*recBlock:], recBlock, down, stride, j1-j0, H)
					}
				}
			}
		}
	})
	addPartials(y, partial)
}

// chunkSums runs fn over n units in decodeChunks chunks a worker (their
// size rounded up to a multiple of align), claimed as workers come free;
// each chunk adds into a partial of its own (H
// floats, cleared first), and the partials are added into y in chunk order,
// so y is the same to the bit whichever worker took which chunk. (Partials
// per worker summed the records in an order that changed from run to run,
// and the logits in their last bits with it: TestRunsAreReproducible.)
func chunkSums(p *Pool, y []float32, H, n, align int, fn func(acc []float32, lo, hi, worker int)) {
	if n == 0 {
		return
	}
	chunk := n // one worker: one call (runChunks)
	if p.Workers() > 1 && n > 1 {
		chunks := decodeChunks * p.Workers()
		chunk = (n + chunks - 1) / chunks
		chunk = min(n, (chunk+align-1)/align*align)
	}
	parts := p.scratch((n + chunk - 1) / chunk * H)
	p.runChunks(n, chunk, func(lo, hi, worker int) {
		acc := parts[lo/chunk*H : (lo/chunk+1)*H]
		clear(acc)
		fn(acc, lo, hi, worker)
	}, false)
	for c := 0; c < len(parts); c += H {
		AxpyF32(y[:H], 1, parts[c:c+H])
	}
}

// decodeChunks is how many chunks a worker's share of a decode FFN comes
// in: enough for a worker slowed by a neighbour to be helped, few enough
// that clearing and adding the partials costs nothing. The time against
// one partial per worker (Q4_0, the paper's γ0.7 φ0.4 set of a 1B layer
// from memory, 2 threads): 4 a worker 0.98-1.03×, 8 1.04-1.05×, 2
// 1.03-1.08×; with 4, BF16 0.99-1.00×. The chunks are claimed, not dealt
// out (RunStatic: Q4_0 1.03-1.12× the time), so a worker that starts late
// is helped.
const decodeChunks = 4

// addPartials adds the workers' partial outputs (len(partial)/len(y) of
// them, one after the other) into y.
func addPartials(y, partial []float32) {
	for w := 0; w+len(y) <= len(partial); w += len(y) {
		for i, v := range partial[w : w+len(y)] {
			y[i] += v
		}
	}
}

// fusedDot2 reports whether ops has the two-row dot for the activations
// the caller meets the rows with (converted, or float32).
func fusedDot2(ops *Ops, acts []Q8Act) bool {
	return (acts != nil && ops.Dot2Act != nil) || (acts == nil && ops.Dot2 != nil)
}

// gemmDownBF16Ref is the reference of the prefill down projection for four
// tokens: acc[t·accStride + i] += Σ_{j<K} h[t·hStride + j] · bf16(down[j·recStride/2 + i]).
func gemmDownBF16Ref(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int) {
	for t := 0; t < 4; t++ {
		for j := 0; j < K; j++ {
			axpyBF16Ref(acc[t*accStride:t*accStride+H], h[t*hStride+j], down[j*recStride:])
		}
	}
}

// gemmDownF16Ref is gemmDownBF16Ref for F16 down columns.
func gemmDownF16Ref(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int) {
	for t := 0; t < 4; t++ {
		for j := 0; j < K; j++ {
			axpyF16Ref(acc[t*accStride:t*accStride+H], h[t*hStride+j], down[j*recStride:])
		}
	}
}

// span places one block of records: first is the global index of its first record.
type span struct{ block, first int }

// blockOf reports whether records [j0, j1) lie in one block, and which.
func blockOf(spans []span, j0, j1 int) (int, bool) {
	for i := len(spans) - 1; i >= 0; i-- {
		if spans[i].first <= j0 {
			end := math.MaxInt
			if i+1 < len(spans) {
				end = spans[i+1].first
			}
			return i, j1 <= end
		}
	}
	return 0, false
}

// spansOf places the blocks' records and counts them, in storage the
// pool keeps (a routed token's decode set is tens of blocks a layer, and
// a slice made a call was an allocation a layer).
func (p *Pool) spansOf(blocks []format.RecordBlock) ([]span, int) {
	spans, total := p.spans[:0], 0
	for i := range blocks {
		spans = append(spans, span{i, total})
		total += blocks[i].N
	}
	p.spans = spans
	return spans, total
}

// recordCursor finds record j across the blocks; it walks from the last
// record it found, so runs of nearby j are cheap.
type recordCursor struct {
	blocks []format.RecordBlock
	spans  []span
	bi     int
}

// at returns the block holding record j and j's index in it.
func (c *recordCursor) at(j int) (*format.RecordBlock, int) {
	for c.bi > 0 && c.spans[c.bi].first > j {
		c.bi--
	}
	for c.bi+1 < len(c.spans) && c.spans[c.bi+1].first <= j {
		c.bi++
	}
	return &c.blocks[c.spans[c.bi].block], j - c.spans[c.bi].first
}

// prefetchAhead is how many records ahead the fused decode dots prefetch.
const prefetchAhead = 4

// ffnDecode is FFNRecords for one token over records [lo, hi), a block's
// run of them at a time: split blocks (version 2) in two passes
// (ffnDecodeSplit), interleaved ones record by record (ffnDecodeRecords).
func ffnDecode(acc []float32, records *recordCursor, ops *Ops, lo, hi int, x []float32, acts []Q8Act, act []float32, buf *decodeBuf) {
	for j := lo; j < hi; {
		blk, k := records.at(j)
		m := min(hi-j, blk.N-k)
		if blk.Split() && m > 1 {
			// The next run's first gate rows, prefetched as this one ends
			// (another block lies megabytes away, where no hardware
			// prefetcher looks).
			var then []byte
			if j+m < hi {
				nb, nk := records.at(j + m)
				then = nb.Gate[nk*nb.GateStride : (nk+min(prefetchAhead, nb.N-nk))*nb.GateStride]
			}
			ffnDecodeSplit(acc, blk, k, m, ops, x, acts, actFrom(act, j), then, buf)
		} else {
			ffnDecodeRecords(acc, records, ops, j, j+m, hi, x, acts, act, buf)
		}
		j += m
	}
}

// actFrom is act from record j on (nil stays nil).
func actFrom(act []float32, j int) []float32 {
	if act == nil {
		return nil
	}
	return act[j:]
}

// splitRun is how many records of a split block ffnDecodeSplit takes per
// pair of passes (their gate values wait on the stack between them): a
// whole block of the default band size (convert.DefaultBand) — each pass
// one run. Against 64 on 256-record blocks (the 1B layer's FFN from memory,
// 2 threads, timed in turn, two runs): 128 1.02-1.03× (Q4_0) and
// 1.01-1.02× (BF16), 256 1.03-1.04× and 1.02×.
const splitRun = 256

// ffnDecodeSplit is the decode FFN over records [k, k+m) of a split block:
// the gate rows first, one ascending run, then the up | down pairs, another
// (up dots, then the down axpys of a group). A layer's records so read are
// one stream a worker at a time; read record by record, the gate rows and
// the up | down pairs are two, and the records stream slower.
func ffnDecodeSplit(acc []float32, blk *format.RecordBlock, k, m int, ops *Ops, x []float32, acts []Q8Act, act []float32, then []byte, buf *decodeBuf) {
	axpy4, axpy8, group := downForms(ops, acts)
	// The block types' pairs of up dots prefetch the second record's down
	// row too (the pair kernel's own prefetch covers three rows): Q4_0
	// 1.07× in the paired benchmark; BF16 0.97×, so not the 16-bit types.
	pf, pfDown := active.PrefetchL2, acts != nil && !ops.ActBF16
	g := &buf.g
	var u [8]float32
	gu := &buf.gu
	dp := downPass{acc: acc, blk: blk, k: k, m: m, ops: ops, axpy4: axpy4, axpy8: axpy8, act: act, then: then, h: &buf.h, down: &buf.down, silu: &buf.silu, u: &buf.u}
	for s := 0; s < m; s += splitRun {
		e := min(m, s+splitRun)
		// The gate rows one at a time: they lie together, one sequential
		// stream the hardware prefetcher follows, which the pair kernel's
		// two streams and its prefetch did not match (a 1B layer's gate
		// rows from memory, bands of 256, 2 threads, BenchmarkGateRowsDRAM:
		// BF16 and F16 48-60 GB/s alone against 42-49 in pairs, Q8_0 42-52
		// against 32-39, Q4_0 34-42 against 22-36; the whole FFN of such a
		// layer, timed in turn with the pairs: BF16 1.03-1.04×, Q8_0
		// 1.08-1.09×, Q4_0 1.02-1.03×; whole q4_0 steps, the same binary
		// switched in turn: 0.94-1.05× dense (median 1.02×), 0.98-1.05×
		// at γ0.7 φ0.4). The row dots take the pair dots' arithmetic
		// (TestDotMatchesPairDot), so the result is the interleaved
		// records' to the bit.
		for q := s; q < e; q++ {
			if r := s + q + prefetchAhead - e; r >= s && r < e {
				// Near the run's end, the first up | down pairs the
				// second pass reads.
				pf(blk.UpDown(k + r))
			}
			g[q-s] = rowDot1(ops, blk.GateRow(k+q), x, acts)
		}
		if blk.Runs() {
			ffnDecodeRuns(&dp, s, e, x, acts, g[:e-s])
			continue
		}
		for q0 := s; q0 < e; q0 += group {
			n := min(group, e-q0)
			for q := 0; q < n; q += 2 {
				r := k + q0 + q
				if q+1 == n {
					pairDot(ops, blk.UpRow(r), blk.UpRow(r), x, acts, nil, gu)
					u[q] = gu[0]
					continue
				}
				var next []byte
				if r+prefetchAhead < k+m {
					next = blk.Ahead(r + prefetchAhead)
				}
				pairDot(ops, blk.UpRow(r), blk.UpRow(r+1), x, acts, next, gu)
				u[q], u[q+1] = gu[0], gu[1]
				if next != nil && pfDown && r+prefetchAhead+1 < k+m {
					pf(blk.DownRow(r + prefetchAhead + 1))
				}
			}
			dp.add(q0, n, g[q0-s:], u[:])
		}
	}
}

// downPass adds the down rows of a block's records k+q (q < m, the
// records a decode FFN call takes of it) into acc, a group at a time,
// with their h; h and down are the caller's (through the kernels' func
// values a local array would escape, an allocation a group).
type downPass struct {
	acc   []float32
	blk   *format.RecordBlock
	k, m  int
	ops   *Ops
	axpy4 func([]float32, *[4]float32, *[4][]byte)
	axpy8 func([]float32, *[8]float32, *[8][]byte)
	act   []float32
	then  []byte
	h     *[8]float32
	down  *[8][]byte
	silu  *siluBuf
	u     *[splitRun]float32 // ffnDecodeRuns' up dots, then h
}

// decodeBuf is a decode FFN worker's scratch (Pool.decodeBuf): the arrays
// ffnDecodeSplit and ffnDecodeRuns hand the kernels' func values, which
// make a local array escape — an allocation for every block a chunk
// meets, and a routed token's decode set is tens of blocks a layer.
type decodeBuf struct {
	g    [splitRun]float32
	u    [splitRun]float32
	h    [8]float32
	gu   [2]float32
	down [8][]byte
	silu siluBuf
}

// add adds records [k+q0, k+q0+n) with h = silu(g[i])·u[i] (g holding
// the gate dots, i < n), storing h in act[q0:] where act is not nil, and
// prefetches then (the next block's first gate rows) before the last group.
func (d *downPass) add(q0, n int, g, u []float32) {
	siluMul(d.silu, d.h[:n], g[:n], u[:n])
	for q := 0; q < n; q++ {
		if d.act != nil {
			d.act[q0+q] = d.h[q]
		}
		d.down[q] = d.blk.DownRow(d.k + q0 + q)
	}
	if d.then != nil && q0+n == d.m {
		active.PrefetchL2(d.then)
	}
	addDowns(d.acc, d.ops, d.axpy4, d.axpy8, d.h, d.down, n)
}

// ffnDecodeRuns is ffnDecodeSplit's second and third passes over records
// [k+s, k+e) of a block in three runs (format.Runs; dp holds the block, k,
// the kernels, act and then): the up rows one at a time, one
// ascending run, then the down rows, another, also one at a time; g holds
// the records' gate dots. Near the up pass's end the first down rows are
// prefetched. A row at a time the down pass reads one ascending stream, as
// the dots do; the four-row axpy read four rows side by side, and from
// memory that was the slower (a 1B layer's FFN against three matvecs of the
// same bytes, in turn, 2 threads: f16 1.08-1.14× their time in fours,
// 0.99-1.00× in rows; whole decode steps, the two in the same rounds: dense
// bf16 1.09× (2 threads) and 1.10× (1), f16 1.06-1.07× and 1.15×; γ0.7
// φ0.4 1.03-1.07× and 1.04-1.05×). The sums are the same to the bit: the
// four-row axpy adds its rows in order too.
func ffnDecodeRuns(dp *downPass, s, e int, x []float32, acts []Q8Act, g []float32) {
	blk, k, u := dp.blk, dp.k, dp.u
	for q := s; q < e; q++ {
		if r := s + q + prefetchAhead - e; r >= s && r < e && !blk.Tiled() {
			active.PrefetchL2(blk.DownRow(k + r))
		}
		u[q-s] = rowDot1(dp.ops, blk.UpRow(k+q), x, acts)
	}
	siluMul(dp.silu, u[:e-s], g[:e-s], u[:e-s]) // u becomes h = silu(g)·u
	if dp.act != nil {
		copy(dp.act[s:e], u[:e-s])
	}
	if !blk.Tiled() {
		for q := s; q < e; q++ {
			if dp.then != nil && q == max(s, dp.m-prefetchAhead) {
				active.PrefetchL2(dp.then)
			}
			dp.ops.Axpy(dp.acc, u[q-s], blk.DownRow(k+q))
		}
		return
	}
	if dp.then != nil && e == dp.m {
		active.PrefetchL2(dp.then)
	}
	// Tiles in float, the int8 down projection or not: gathering eight
	// rows whole from their tiles for it made a tiled q4_0 pack's dense
	// decode 0.58× the pairs pack's on AVX2 (sirun bench, 6 rounds).
	downTiles(dp.ops, dp.acc, u[:e-s], blk, k+s)
}

// rowDot1 is one row's dot with the token: on the integer path against its
// quantized activations, else the float row dot.
func rowDot1(ops *Ops, w []byte, x []float32, acts []Q8Act) float32 {
	if acts != nil {
		return ops.DotAct(w, &acts[0])
	}
	return ops.Dot(w, x)
}

// pairDot sets out to two rows' dots with the token, through the fused
// two-row kernel where the dtype has one (prefetching next into L2). out
// is the caller's: passed to a kernel through a func value it escapes, and
// one a call was an allocation a call.
func pairDot(ops *Ops, a, b []byte, x []float32, acts []Q8Act, next []byte, out *[2]float32) {
	switch {
	case acts != nil && ops.Dot2Act != nil:
		ops.Dot2Act(a, b, &acts[0], out, next)
	case acts == nil && ops.Dot2 != nil:
		ops.Dot2(a, b, x, out, next)
	default:
		// No pair kernel (AVX2's block types, the reference): the row
		// dots, with the prefetch the pair kernels do themselves — three
		// rows' worth of the record ahead into L2. Without it a q4_0 pack
		// in pairs decoded at half its speed on AVX2 (FFN 6.5 GB/s, one
		// thread).
		if len(next) > 0 {
			active.PrefetchL2(next[:min(len(next), 3*len(a))])
		}
		out[0], out[1] = rowDot1(ops, a, x, acts), rowDot1(ops, b, x, acts)
	}
}

// downForms is the down projection's kernels for a decode group and the
// group's size: the four-row axpy, and on the integer path, where the
// table takes it (Table.Int8Down), the int8 one (eight rows).
func downForms(ops *Ops, acts []Q8Act) (axpy4 func([]float32, *[4]float32, *[4][]byte), axpy8 func([]float32, *[8]float32, *[8][]byte), group int) {
	axpy4, axpy8, group = ops.Axpy4, ops.Axpy8Act, 4
	if acts == nil || !active.Int8Down {
		axpy8 = nil
	}
	if axpy8 != nil {
		group = 8
	}
	return axpy4, axpy8, group
}

// addDowns adds Σ_{q<n} h[q]·down[q] into acc: eight rows by axpy8 (the
// integer path's int8 down projection) or four by axpy4 where present.
func addDowns(acc []float32, ops *Ops, axpy4 func([]float32, *[4]float32, *[4][]byte), axpy8 func([]float32, *[8]float32, *[8][]byte), h *[8]float32, down *[8][]byte, n int) {
	if n == 8 && axpy8 != nil {
		axpy8(acc, h, down)
		return
	}
	q := 0
	for ; axpy4 != nil && q+4 <= n; q += 4 {
		axpy4(acc, (*[4]float32)(h[q:q+4]), (*[4][]byte)(down[q:q+4]))
	}
	for ; q < n; q++ {
		ops.Axpy(acc, h[q], down[q])
	}
}

// ffnDecodeRecords is the decode FFN over records [lo, hi) read record by
// record, prefetching up to record end: the gate and up dots per record,
// then the down axpys, four records at a time where the dtype has a
// four-row axpy (y loaded and stored once per four), eight on the integer
// path where it takes the int8 down projection (Axpy8Act, Table.Int8Down).
func ffnDecodeRecords(acc []float32, records *recordCursor, ops *Ops, lo, hi, end int, x []float32, acts []Q8Act, act []float32, buf *decodeBuf) {
	axpy4, axpy8, group := downForms(ops, acts)
	pf := active.PrefetchL2
	var gs, us [8]float32
	h, gu, down := &buf.h, &buf.gu, &buf.down
	var rows gatherRows // a lone record of a tiled block (ffnDecode)
	defer rows.release()
	for j0 := lo; j0 < hi; j0 += group {
		n := min(group, hi-j0)
		for q := 0; q < n; q++ {
			j := j0 + q
			if a := j + prefetchAhead; q%4 == 0 && a < end {
				// A split record's gate row lies apart from its up and down rows
				// (which the dots prefetch): the next group's gate rows, one run
				// within a block, one call for the four (a call per record cost
				// Q4_0 decode 5 %).
				if ab, ak := records.at(a); ab.Split() {
					m := min(4, end-a, ab.N-ak)
					pf(ab.Gate[ak*ab.GateStride : (ak+m)*ab.GateStride])
				}
			}
			blk, k := records.at(j)
			// The fused dots prefetch the record four ahead into L2
			// (PREFETCHT2, see dot2Q40Q8VNNI), the next group of four's
			// record in the same place: on the AMD EPYC (Zen 5), dense BF16
			// and F16 decode runs 5 % faster four ahead than two (FFN 47.3
			// against 50.5 ms a step, `sirun bench --ops`), Q4_0 the same;
			// one, three and six ahead are no better than two.
			var ahead []byte
			if j+prefetchAhead < end {
				ab, ak := records.at(j + prefetchAhead)
				ahead = ab.Ahead(ak)
			}
			pairDot(ops, blk.GateRow(k), blk.UpRow(k), x, acts, ahead, gu)
			gs[q], us[q] = gu[0], gu[1]
			down[q] = rows.row(blk, k, q)
		}
		// SiLU after the group's dots: independent exp chains overlap
		// instead of each one stalling before the next record's dots.
		siluMul(&buf.silu, h[:n], gs[:n], us[:n])
		if act != nil {
			copy(act[j0:j0+n], h[:n])
		}
		addDowns(acc, ops, axpy4, axpy8, h, down, n)
	}
}

// downTiles adds Σ_q h[q]·down_{j0+q} into y for records j0.. of a layout
// Tiled block, a tile group's records at a time (format.RecordBlock.
// TileGroup; a block without groups is one): through the table's AxpyTiles
// over the whole pieces (one call, every chunk), and a last, shorter piece
// (H not a multiple of format.DownTile) a record at a time; without
// AxpyTiles piece by piece through Axpy (the same sums: each output's
// multiply-adds in record order).
func downTiles(ops *Ops, y, h []float32, blk *format.RecordBlock, j0 int) {
	for len(h) > 0 {
		first, gn := blk.TileGroupOf(j0)
		m := min(len(h), first+gn-blk.First-j0)
		if m <= 0 {
			panic("kernels: downTiles past the block's records")
		}
		downTileGroup(ops, y, h[:m], blk, j0, gn)
		h, j0 = h[m:], j0+m
	}
}

// downTileGroup is downTiles for records j0.. of one tile group of gn
// records.
func downTileGroup(ops *Ops, y, h []float32, blk *format.RecordBlock, j0, gn int) {
	n := len(h)
	nc, whole := blk.DownPieces(), wholePieces(blk)
	c := 0
	if ops.AxpyTiles != nil && whole > 0 {
		// From record j0's first piece to the end of the group's pieces:
		// the kernel reads chunk c's n pieces at c·stride on — one run
		// where n is the whole group, else short runs apart (AxpyTilesGap).
		down, stride := blk.TileDown(j0)
		axpy := ops.AxpyTiles
		if n < gn && ops.AxpyTilesGap != nil {
			axpy = ops.AxpyTilesGap
		}
		axpy(y[:whole*format.DownTile], h, down, stride)
		c = whole
	}
	for ; c < nc; c++ {
		p := blk.TilePieces(j0, n, c)
		pl := len(p) / n
		yc := y[c*format.DownTile : min(len(y), (c+1)*format.DownTile)]
		for q := 0; q < n; q++ {
			ops.Axpy(yc, h[q], p[q*pl:(q+1)*pl])
		}
	}
}

// wholePieces is how many of a tiled block's down pieces a row are whole
// (DownTile values; the AxpyTiles kernels take those, the row axpy the
// last, shorter one where H is not a multiple of DownTile).
func wholePieces(blk *format.RecordBlock) int {
	if blk.RowBytes%blk.Tile != 0 {
		return blk.DownPieces() - 1
	}
	return blk.DownPieces()
}

// rowScratch holds the buffers of gatherRows.
var rowScratch sync.Pool

// gatherRows gives the decode paths that add a group of up to eight
// records' down rows (addDowns) those rows whole: a block's own bytes, or,
// from a layout Tiled block, the row gathered into slot q of a buffer
// taken from rowScratch at the first such row (release gives it back).
type gatherRows struct{ buf *[]byte }

// row is record k's down row, gathered into slot q (< 8) where blk is tiled.
func (g *gatherRows) row(blk *format.RecordBlock, k, q int) []byte {
	if !blk.Tiled() {
		return blk.DownRow(k)
	}
	R := blk.RowBytes
	if g.buf == nil || cap(*g.buf) < 8*R {
		if b, ok := rowScratch.Get().(*[]byte); ok && cap(*b) >= 8*R {
			g.buf = b
		} else {
			b := make([]byte, 8*R)
			g.buf = &b
		}
	}
	d := (*g.buf)[q*R : (q+1)*R]
	blk.CopyDown(d, k)
	return d
}

func (g *gatherRows) release() {
	if g.buf != nil {
		rowScratch.Put(g.buf)
	}
}

// tiledAlign is the record count a decode's chunks come in multiples of so
// that they end at a tile group's end (format.RecordBlock.TileGroup: a
// decode set's groups start at its multiples, the routed groups and the
// static ranks before them alike), or a tiled block's where it has none
// (format.Tiled; 1 when none is). At a block's end, a layer band's block
// of a budgeted pack (hundreds of records, its capacity) left a routed
// step's two workers a few uneven chunks: bf16 1B shape with layer budgets,
// router ÷ paper 0.946 -> 0.994 (12-token decodes, ten alternating runs).
func tiledAlign(blocks []format.RecordBlock) int {
	align := 1
	for i := range blocks {
		if b := &blocks[i]; b.Tiled() {
			a := b.TileCap
			if b.TileGroup > 0 {
				a = b.TileGroup
			}
			align = max(align, a)
		}
	}
	return align
}

// siluMul sets h[i] = silu(g[i])·u[i] (h may be u). Where the table's
// SiLUMul is a vector (Table.SiLUVec) it goes through it a vector at a
// time, the last one padded, so that a record's h is the same to the bit
// whichever decode path and group size computed it (the table's own tail
// is the scalar SiLU); elsewhere through the scalar SiLU. The scalar SiLU
// cost 15-18 ns a record (GateKeys): over a dense 1B decode step's 131072
// records 2 ms, about 3.5 % of an f16 FFN with one thread. (The prefill's
// loops over tokens keep the scalar SiLU, the same in every layout.) b is
// the caller's: through the table's func value a local array would
// escape, an allocation a call.
func siluMul(b *siluBuf, h, g, u []float32) {
	w := active.SiLUVec
	if w == 0 || w > len(b.h) {
		for i := range h {
			h[i] = SiLU(g[i]) * u[i]
		}
		return
	}
	for i0 := 0; i0 < len(h); i0 += w {
		n := min(w, len(h)-i0)
		for i := 0; i < n; i++ {
			b.gu[2*i], b.gu[2*i+1] = g[i0+i], u[i0+i]
		}
		clear(b.gu[2*n : 2*w])
		active.SiLUMul(b.h[:w], b.gu[:2*w])
		copy(h[i0:i0+n], b.h[:n])
	}
}

// siluBuf is siluMul's scratch.
type siluBuf struct {
	gu [32]float32
	h  [16]float32
}
