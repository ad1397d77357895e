package kernels

import (
	"math"

	"github.com/sipack/sipack/format"
)

// FFNGated is the decode FFN of one token (x is [H]) with the neurons
// chosen per token by their gate, as CATS and TEAL do for dense models:
// every record's gate row is dotted with x first, then only the k records
// of largest |silu(g)| (ties: the lower index) compute their up row and
// add h·down to y. A neuron whose gate is near zero contributes near
// nothing whatever its up row says, so the gate is the token's own
// estimate of |h| for a third of a record's bytes. The first static
// records are computed whole, as FFNRecords does (a static base, as
// SelectInfer's), and the gate chooses its k among the others: the bytes
// read are static records, the other records' gate rows and 2/3 of k
// records.
//
// blocks are runs of consecutive records as for FFNRecords; in a version 2
// pack's split blocks the gate rows are one run (format/SPEC.md §5), in
// interleaved ones every third row. y ([H]) is accumulated into. If act is not nil it receives h of every record
// (zero where not computed).
func FFNGated(p *Pool, y []float32, blocks []format.RecordBlock, dt format.DType, H int, x []float32, static, k int, act []float32) {
	spans, total := p.spansOf(blocks)
	static = max(0, min(static, total))
	k = max(0, min(k, total-static))
	ops := active.Ops(dt)
	var acts []Q8Act
	if ops.ActDot {
		acts = quantizeTokens(p, ops, x, H, 1)
	}
	if act != nil {
		clear(act[:total])
	}
	// The static records and the others' gate dots in one pass over the
	// pool (one barrier fewer a layer): the work is split in units of a
	// row, three for a static record, one for a gate row.
	g, keys := p.gateScratch(total)
	record := func(u int) int { // the first record at or after unit u
		if u < 3*static {
			return (u + 2) / 3
		}
		return static + u - 3*static
	}
	// Chunks of whole tiled blocks of the static records (three units a
	// record), as FFNRecords' decode.
	align := tiledAlign(blocks)
	chunkSums(p, y, H, 3*static+total-static, 3*align, func(acc []float32, lo, hi, worker int) {
		records := recordCursor{blocks: blocks, spans: spans}
		r0, r1 := record(lo), record(hi)
		if s1 := min(r1, static); r0 < s1 {
			ffnDecode(acc, &records, ops, r0, s1, x, acts, act, p.decodeBuf(worker))
		}
		if g0 := max(r0, static); g0 < r1 {
			gateDots(g, keys, &records, ops, g0, r1, x, acts)
		}
	})
	sel := p.topGates(keys[static:total], p.keys[total:2*total], k)
	for i := range sel {
		sel[i] += int32(static)
	}
	// Tiled blocks' chosen records by tiles where the table can (not on
	// the int8 down projection, which takes whole rows).
	pass := upDown
	if ops.AxpyTilesIdx != nil && (acts == nil || !active.Int8Down) && align > 1 {
		pass = upDownTiled
	}
	chunkSums(p, y, H, len(sel), 1, func(acc []float32, lo, hi, _ int) {
		records := recordCursor{blocks: blocks, spans: spans}
		pass(acc, &records, ops, sel[lo:hi], g, x, acts, act)
	})
}

// gateAhead is how many records ahead the gate dots prefetch their rows,
// udAhead how many chosen records ahead upDown prefetches their up and
// down rows (BenchmarkFFNGatedDRAM: 8 or 16 no faster, none slower), one
// record at a time as it goes (a group of four at once left Q4_0's pass
// 1.35-1.39× the paper's decode of the same bytes, one at a time
// 1.25-1.34×, alternating runs; BF16 the same either way).
const gateAhead, udAhead = 4, 4

// gateDots sets g[j] = silu(gate_j · x) for records [lo, hi), and keys[j]
// to the order-preserving bits of |g[j]| (so the chosen records' h needs
// no second SiLU: BenchmarkGatedOverPaper, q4_0 hybrid 1.13 → 1.05 of the
// paper, bf16 1.06 → 1.04). A split block's gate rows are one run, dotted
// a row at a time as the paper's decode dots them (ffnDecodeSplit: one
// sequential stream the hardware prefetcher follows; in pairs through the
// fused dots and their prefetch the hybrid's pass of static records and
// gate rows took 1.04-1.10× as long, BenchmarkGatedOverPaper, q4_0 and
// bf16, alternating builds). Interleaved blocks (every third row a gate
// row) take two rows a pass where the dtype fuses them, prefetching the
// gate rows gateAhead records ahead one call a row (without any, Q4_0
// took 1.1-1.5 ms against 0.7-0.9, BenchmarkFFNGatedDRAM).
func gateDots(g []float32, keys []uint32, records *recordCursor, ops *Ops, lo, hi int, x []float32, acts []Q8Act) {
	fused := fusedDot2(ops, acts)
	for j := lo; j < hi; {
		blk, k := records.at(j)
		m := min(hi-j, blk.N-k)
		if blk.Split() || !fused {
			for q := 0; q < m; q++ {
				g[j+q] = rowDot1(ops, blk.GateRow(k+q), x, acts)
			}
		} else {
			gatePairs(g, records, ops, j, j+m, hi, x, acts)
		}
		j += m
	}
	// g keeps silu(g): what the chosen records' h takes.
	gateKeys(keys[lo:hi], g[lo:hi], g[lo:hi])
}

// gatePairs sets g[j] to the gate dots of records [lo, hi) of one
// interleaved block two at a time, prefetching the gate rows gateAhead
// records ahead (up to end).
func gatePairs(g []float32, records *recordCursor, ops *Ops, lo, hi, end int, x []float32, acts []Q8Act) {
	pf := active.PrefetchL2
	var gg [2]float32
	j := lo
	for ; j+2 <= hi; j += 2 {
		for q := j + gateAhead; q < min(j+gateAhead+2, end); q++ {
			pf(gateRow(records, q))
		}
		pairDot(ops, gateRow(records, j), gateRow(records, j+1), x, acts, nil, &gg)
		g[j], g[j+1] = gg[0], gg[1]
	}
	if j < hi {
		g[j] = rowDot1(ops, gateRow(records, j), x, acts)
	}
}

// GateKeys sets keys[j] to the gated FFN's ranking key of the gate dot
// g[j]: the bits of |silu(g[j])|, which order as the values do
// (non-negative floats). The SiLUs go through the table's SiLUMul 64 at a
// time (the scalar SiLU took 18 ns a record, 87 µs a γ0.7 1B layer —
// about 3 % of a Q4_0 gated decode step; 10 µs so, BenchmarkGateKeys).
func GateKeys(keys []uint32, g []float32) { gateKeys(keys, g, nil) }

// gateKeys is GateKeys that also stores silu(g[j]) in silu[j] where silu
// is not nil (it may be g itself).
func gateKeys(keys []uint32, g, silu []float32) {
	var gu [128]float32
	var h [64]float32
	for j0 := 0; j0 < len(g); j0 += 64 {
		n := min(64, len(g)-j0)
		for i, v := range g[j0 : j0+n] {
			gu[2*i], gu[2*i+1] = v, 1
		}
		active.SiLUMul(h[:n], gu[:2*n])
		for i, v := range h[:n] {
			// Non-negative floats order as their bits.
			keys[j0+i] = math.Float32bits(v) &^ (1 << 31)
		}
		if silu != nil {
			copy(silu[j0:j0+n], h[:n])
		}
	}
}

// upDown adds, for the selected records sel (ascending), h = g·(up·x)
// times their down rows into acc (g holds silu of the gate dots, as
// gateDots leaves it), the up rows two a pass and the down rows
// four a pass where the dtype has the fused kernels (eight by the int8
// down projection on the integer path, as ffnDecode). The up and down rows
// of the record udAhead chosen records ahead are prefetched before each
// record (the records are scattered).
func upDown(acc []float32, records *recordCursor, ops *Ops, sel []int32, g, x []float32, acts []Q8Act, act []float32) {
	dot2 := fusedDot2(ops, acts)
	pf := active.PrefetchL2
	axpy4, axpy8, group := downForms(ops, acts)
	var h [8]float32
	var down [8][]byte
	var uu [2]float32
	var rows gatherRows // from tiled blocks (tables without AxpyTilesIdx, the int8 down projection)
	defer rows.release()
	for q0 := 0; q0 < len(sel); q0 += group {
		n := min(group, len(sel)-q0)
		for q := 0; q < n; q++ {
			prefetchUD(records, sel, q0+q+udAhead, pf)
			j := int(sel[q0+q])
			blk, k := records.at(j)
			up := blk.UpRow(k)
			down[q] = rows.row(blk, k, q)
			if dot2 && q+1 < n {
				j1 := int(sel[q0+q+1])
				blk1, k1 := records.at(j1)
				if acts != nil {
					ops.Dot2Act(up, blk1.UpRow(k1), &acts[0], &uu, nil)
				} else {
					ops.Dot2(up, blk1.UpRow(k1), x, &uu, nil)
				}
				prefetchUD(records, sel, q0+q+1+udAhead, pf)
				h[q], h[q+1] = g[j]*uu[0], g[j1]*uu[1]
				down[q+1] = rows.row(blk1, k1, q+1)
				q++
				continue
			}
			var u float32
			if acts != nil {
				u = ops.DotAct(up, &acts[0])
			} else {
				u = ops.Dot(up, x)
			}
			h[q] = g[j] * u
		}
		if act != nil {
			for q := 0; q < n; q++ {
				act[sel[q0+q]] = h[q]
			}
		}
		addDowns(acc, ops, axpy4, axpy8, &h, &down, n)
	}
}

// prefetchUD asks for the up and down rows of chosen record sel[a], if any.
func prefetchUD(records *recordCursor, sel []int32, a int, pf func([]byte)) {
	if a < len(sel) {
		b, k := records.at(int(sel[a]))
		pf(b.UpDown(k))
		switch {
		case b.Tiled():
			for c := range b.DownPieces() {
				pf(b.DownPiece(k, c))
			}
		case b.Runs():
			pf(b.DownRow(k))
		}
	}
}

func gateRow(records *recordCursor, j int) []byte {
	b, k := records.at(j)
	return b.GateRow(k)
}

// topGates returns, ascending, the k indices of the largest keys (ties:
// the lower index first), in storage the pool keeps; buf (len(keys) long,
// apart from keys) is the radix select's.
func (p *Pool) topGates(keys, buf []uint32, k int) []int32 {
	if cap(p.sel) < len(keys) {
		p.sel = make([]int32, len(keys))
	}
	return TopKeys(keys, buf, k, p.sel[:0])
}

// TopKeys appends to sel, ascending, the indices of the k largest keys
// (ties: the lower index first) and returns it; buf (len(keys) long, apart
// from keys) is the radix select's. The gated FFN's choice on every
// backend.
func TopKeys(keys, buf []uint32, k int, sel []int32) []int32 {
	if k <= 0 {
		return sel
	}
	thr := KthLargest(keys, k, buf)
	ties := k
	for _, key := range keys {
		if key > thr {
			ties--
		}
	}
	for i, key := range keys {
		if key > thr || (key == thr && ties > 0) {
			if key == thr {
				ties--
			}
			sel = append(sel, int32(i))
		}
	}
	return sel
}

// KthLargest returns the k-th largest of keys (1-based, k ≤ len(keys)) by
// radix select, a byte at a time from the top: the byte's histogram over
// the candidates names the bucket holding the k-th, and only that bucket's
// keys stay candidates (copied into buf, len(keys) long).
func KthLargest(keys []uint32, k int, buf []uint32) uint32 {
	cand := keys
	for shift := 24; shift >= 0; shift -= 8 {
		var hist [256]int
		for _, x := range cand {
			hist[(x>>shift)&255]++
		}
		d := 255
		for ; d > 0 && hist[d] < k; d-- {
			k -= hist[d]
		}
		n := 0
		for _, x := range cand {
			if (x>>shift)&255 == uint32(d) {
				buf[n] = x
				n++
			}
		}
		cand = buf[:n]
	}
	return cand[0]
}

// gateScratch is the storage the pool keeps for n gate dots and their
// keys (with room for topGates' radix select after them).
func (p *Pool) gateScratch(n int) ([]float32, []uint32) {
	if cap(p.gates) < n {
		p.gates = make([]float32, n)
	}
	if cap(p.keys) < 2*n {
		p.keys = make([]uint32, 2*n)
	}
	return p.gates[:n], p.keys[:n]
}

// upDownTiled is upDown where blocks are tiled (format.Tiled): the chosen
// records of one block (up to 256 at a time) take their up dots, then their
// down pieces chunk by chunk (Ops.AxpyTilesIdx: each chunk's region swept
// once, ascending, where gathering a record's row whole read its 32
// pieces from 32 regions); records of untiled blocks a row at a time. The
// sums are upDown's: every output's multiply-adds in record order.
func upDownTiled(acc []float32, records *recordCursor, ops *Ops, sel []int32, g, x []float32, acts []Q8Act, act []float32) {
	const batch = 256 // a band's block: its regions swept once
	var h [batch]float32
	var idx [batch]int32
	pf := active.PrefetchL2
	for i := 0; i < len(sel); {
		blk, _ := records.at(int(sel[i]))
		n := 0
		for ; i+n < len(sel) && n < batch; n++ {
			b, k := records.at(int(sel[i+n]))
			if b != blk {
				break
			}
			idx[n] = int32(k)
		}
		for q := 0; q < n; q++ {
			if a := i + q + udAhead; a < len(sel) {
				b, k := records.at(int(sel[a]))
				pf(b.UpRow(k))
			}
			j := int(sel[i+q])
			h[q] = g[j] * rowDot1(ops, blk.UpRow(int(idx[q])), x, acts)
			if act != nil {
				act[j] = h[q]
			}
		}
		if !blk.Tiled() {
			for q := 0; q < n; q++ {
				ops.Axpy(acc, h[q], blk.DownRow(int(idx[q])))
			}
		} else {
			downTilesIdx(ops, acc, h[:n], idx[:n], blk)
		}
		i += n
	}
}

// downTilesIdx adds Σ_q h[q]·down_{idx[q]} into y for records idx (of
// this view, ascending) of a tiled block, a tile group's at a time: the
// whole pieces through AxpyTilesIdx, a last, shorter piece a record at a
// time.
func downTilesIdx(ops *Ops, y, h []float32, idx []int32, blk *format.RecordBlock) {
	T, nc, whole := blk.Tile, blk.DownPieces(), wholePieces(blk)
	for len(idx) > 0 {
		first, gn := blk.TileGroupOf(int(idx[0]))
		m := 1
		for m < len(idx) && blk.First+int(idx[m]) < first+gn {
			m++
		}
		if whole > 0 {
			// Whole pieces are T bytes, so view record k's piece of chunk c
			// is at first·R + c·gn·T + (First + k − first)·T: at c·gn·T +
			// k·T from base (≥ 0: first − First ≤ first and T ≤ R).
			base := first*blk.RowBytes + (blk.First-first)*T
			ops.AxpyTilesIdx(y[:whole*format.DownTile], h[:m], blk.Down[base:], idx[:m], gn*T)
		}
		for c := whole; c < nc; c++ {
			yc := y[c*format.DownTile:]
			for q, k := range idx[:m] {
				ops.Axpy(yc, h[q], blk.DownPiece(int(k), c))
			}
		}
		idx, h = idx[m:], h[m:]
	}
}
