package kernels

import (
	"unsafe"

	"github.com/sipack/sipack/format"
)

// The prefill GEMM: out[t, r] = Σ_c W[r, c]·x[t, c] for many tokens at
// once, on tables that have a register-tiled micro-kernel (Table.Gemm).
// Rows of any dtype are widened to float32 a block of columns at a time
// (through the table's own Axpy with a = 1 into zeros, which is exact), so
// one float32 kernel serves every dtype; the widening is paid once per
// block of rows and shared by every token.

const (
	gemmRows = 4   // weight rows per micro-kernel call
	gemmToks = 6   // tokens per micro-kernel call
	gemmKC   = 512 // columns per block: 4 rows + 6 tokens of it stay in L1
	// gemmMinT is the fewest tokens the GEMM runs for where it widens the
	// rows: below it, widening the rows costs more than it saves
	// (BenchmarkPrefillMatMul: a BF16 2048×2048 matmul on one thread was
	// faster through Dot4 at 12-16 tokens, 1.6× faster through the GEMM at
	// 32-64; a 1B f16 prefill of 8 tokens 27 → 21 tok/s through it).
	gemmMinT = 24
	// gemmMinTPanel is the same for BF16 rows through PanelBF16 and for the
	// block types' FFN (gate/up by integer dots, the down projection by the
	// float tile instead of a block-type axpy per token): one full group of
	// six. 1B prefill, tok/s, 24 → 6 tokens: bf16 at 6 tokens 24-28 → 29-34,
	// 12: 30-32 → 42-48, 16: 34-37 → 60-64; q4_0 at 6: 37-38 → 60-61, 16:
	// 34-37 → 54-62; q8_0 at 16: 35 → 55; at 4 tokens no gain (a group of
	// six with two repeated tokens).
	gemmMinTPanel = 6
)

// GemmKernel is a table's prefill micro-kernel: Tile adds to acc[t·4 + r]
// the 16 partial sums (lanes) of Σ_{k<n} w[r][k]·x[t][k] (n a multiple of
// 16); Fold sets out[i] to the sum of acc[i]'s lanes.
//
// PanelBF16, where the CPU has it, is Tile over BF16 rows as stored, four
// rows packed into one panel by PackBF16 (32 columns of each row in turn),
// and activations rounded to BF16 (n a multiple of 32): its lanes are
// partial sums like Tile's, so Fold folds them.
//
// Down is the FFN's down projection for six tokens: acc[t·accStride + c] +=
// Σ_{j<K} h[j·6 + t]·down[j·ldd + c] for c < H (a multiple of 64).
type GemmKernel struct {
	Tile func(w *[4]*float32, x *[6]*float32, n int, acc *[24][16]float32)
	// Panel, where the table has it, is Tile over four rows packed into
	// one panel, 16 columns of each row in turn (packWidePanel), from zero
	// and folded: out[t·4 + i] = Σ_c row i · token t over the n columns.
	Panel func(w *float32, x *[6]*float32, n int, out *[24]float32)
	// PanelF16, where the table has it, is Panel over four F16 rows packed
	// as stored (packF16Panel), widened in the kernel: F16 rows take it
	// instead of being widened into a float panel.
	PanelF16 func(w *uint16, x *[6]*float32, n int, out *[24]float32)
	// PackF16 is PanelF16 over the four rows where they are stored,
	// writing them into panel as PanelF16 reads them on the way (where the
	// table has it; else packF16Panel, then PanelF16).
	PackF16   func(w *[4]*uint16, panel *uint16, x *[6]*float32, n int, out *[24]float32)
	PanelBF16 func(w *uint16, x *[6]*uint16, n int, out *[24]float32)
	// PackBF16 is PanelBF16 over the four rows where they are stored,
	// writing them into panel as PanelBF16 reads them on the way.
	PackBF16 func(w *[4]*uint16, panel *uint16, x *[6]*uint16, n int, out *[24]float32)
	// DownBF16 is Down over BF16 record pairs (interleaved word by word,
	// column-block major: see gemmDown6BF16DP) and h as BF16 pairs, where
	// the CPU has it.
	DownBF16 func(acc *float32, accStride int, h *uint32, w *uint16, ldw int, P int, H int)
	// Interleave writes dst[2i] = a[i], dst[2i+1] = b[i] for i < n (a
	// multiple of 32): a record pair for DownBF16.
	Interleave func(dst *uint16, a, b *uint16, n int)
	// RoundBF16 sets xb[i] = F32ToBF16(x[i]) and, where xr is not nil,
	// xr[i] = BF16ToF32(xb[i]) (roundBF16Ref), for the BF16 path's
	// activations.
	RoundBF16 func(xb []uint16, xr, x []float32)
	Fold      func(acc *[24][16]float32, out *[24]float32)
	Down      func(acc *float32, accStride int, h *float32, down *float32, ldd int, K int, H int)
}

// roundBF16Ref is GemmKernel.RoundBF16 in Go.
func roundBF16Ref(xb []uint16, xr, x []float32) {
	for i, v := range x {
		xb[i] = F32ToBF16(v)
		if xr != nil {
			xr[i] = BF16ToF32(xb[i])
		}
	}
}

// hsum24Ref is GemmKernel.Fold in Go: out[i] = Σ_lanes acc[i] (tables whose
// tile fills fewer lanes leave the others zero).
func hsum24Ref(acc *[24][16]float32, out *[24]float32) {
	for i := range acc {
		var s float32
		for _, v := range acc[i] {
			s += v
		}
		out[i] = s
	}
}

// gemmFits reports whether rows × cols × T of dtype dt goes through table
// t's GEMM.
func gemmFits(t *Table, dt format.DType, rows, cols, T int) bool {
	minT := gemmMinT
	if t.prefillTakesBF16(dt) || t.ops[dt].ActDot {
		minT = gemmMinTPanel
	}
	return t.Gemm != nil && T >= minT && cols%32 == 0 && rows >= gemmRows
}

// prefillBF16 reports whether the active table's prefill GEMM takes BF16
// rows through PanelBF16 (activations rounded to BF16, as llama.cpp's BF16
// path does), and if so returns x rounded to BF16 (xb) and the same values
// as float32 (xr, for the rows and tokens outside the tiles, so the whole
// product is one rounding), both in p's scratch.
func prefillBF16(p *Pool, dt format.DType, x []float32) (xb []uint16, xr []float32) {
	if !active.prefillTakesBF16(dt) {
		return nil, nil
	}
	if cap(p.xb) < len(x) {
		p.xb = make([]uint16, len(x))
		p.xr = make([]float32, len(x))
	}
	xb, xr = p.xb[:len(x)], p.xr[:len(x)]
	// Over the pool: on one thread it was 2 % of a 256-token prefill with
	// the other worker idle.
	p.Run(len(x)/64, func(lo, hi, _ int) {
		if hi == len(x)/64 {
			hi = (len(x) + 63) / 64
		}
		a, b := lo*64, min(hi*64, len(x))
		roundBF16(active.Gemm, xb[a:b], xr[a:b], x[a:b])
	})
	return xb, xr
}

// roundBF16 is g's RoundBF16, or the reference where g has none.
func roundBF16(g *GemmKernel, xb []uint16, xr, x []float32) {
	if g != nil && g.RoundBF16 != nil {
		g.RoundBF16(xb, xr, x)
		return
	}
	roundBF16Ref(xb, xr, x)
}

// prefillTakesBF16 reports whether t's prefill GEMM takes rows of dtype dt
// through PanelBF16 (PrefillBF16 is only set where t.Gemm has it).
func (t *Table) prefillTakesBF16(dt format.DType) bool {
	return dt == format.BF16 && t.PrefillBF16
}

// widen sets dst to the row w of len(dst) elements as float32.
func widen(ops *Ops, dst []float32, w []byte) {
	if ops.Widen != nil {
		ops.Widen(dst, w)
		return
	}
	clear(dst)
	ops.Axpy(dst, 1, w)
}

// gemmBlock is one worker's storage for gemmRowsOf over T tokens of cols
// columns; cols 0 for float32 rows only (no panels: attention).
func gemmBlock(T, cols int) int {
	n := gemmGroups(T)*384 + gemmRows*gemmKC
	if cols == 0 {
		return n
	}
	// A block of panels, and room for at least one (and its widening row).
	return max(n, gemmPanelBlock/4, 5*gemmRows*cols)
}

// gemmPanelBlock is the bytes of packed rows one block of gemmPanels keeps
// in L2 while every token group passes over them.
const gemmPanelBlock = 256 << 10

// gemmPanels runs rows [q0·4, q1·4) through a panel tile, blocked for the
// caches the other way round from gemmRowsOf's float path: a block of rows
// (gemmPanelBlock bytes of panels) stays in L2 while each group of six
// tokens of x (width cols) passes over all of it, each tile the whole width
// in registers. Rows in L1 with the tokens streamed past them (the float
// path's order) read the activations from L3 once per four rows; four rows
// as four streams rather than one panel missed the prefetcher. BF16 rows
// (PanelBF16), quarter 1B FFN layer at 256 tokens, one thread
// (BenchmarkFFNPrefill): 108-124 → 125-152 GFLOP/s; F16 rows widened into
// float panels (Panel), 256-token 1B f16 prefill alternating: 64-76 →
// 74-87 tok/s. (The tokens blocked to 512 or 1024 columns so they stay in
// L1 measured no faster.)
//
// The first token group fills the panels: packTile(panel, q, …) writes quad
// q's rows into panel and computes their tile, the later groups take tile
// over the panel. BF16 packs in the tile itself (PackBF16), so the rows'
// one read from memory overlaps the arithmetic: a 16-token bf16 prefill
// had spent 40 % of its time in a packing pass of its own.
func gemmPanels[P, E uint16 | float32](q0, q1, cols int, x []E, T int, panels []P,
	packTile func(panel []P, q int, x *[6]*E, n int, out *[24]float32),
	tile func(w *P, x *[6]*E, n int, out *[24]float32), emit func(r0, t0 int, out *[24]float32)) {
	groups := gemmGroups(T)
	quad := gemmRows * cols
	var e P
	qb := max(1, min(gemmPanelBlock/(int(unsafe.Sizeof(e))*quad), len(panels)/quad))
	var xp [6]*E
	var out [24]float32
	for b0 := q0; b0 < q1; b0 += qb {
		b1 := min(b0+qb, q1)
		for gi := 0; gi < groups; gi++ {
			for j := range xp {
				xp[j] = &x[tok(gi, j, T)*cols]
			}
			for q := b0; q < b1; q++ {
				panel := panels[(q-b0)*quad : (q-b0+1)*quad]
				if gi == 0 {
					packTile(panel, q, &xp, cols, &out)
				} else {
					tile(&panel[0], &xp, cols, &out)
				}
				emit(q*gemmRows, gi*gemmToks, &out)
			}
		}
	}
}

// quadRows16 is rows 4q..4q+3 of 16-bit values where they are stored, for
// the tiles that pack them on the way (PackBF16, PackF16).
func quadRows16(row func(r int) []byte, q int) (w [4]*uint16) {
	for i := range w {
		w[i] = (*uint16)(unsafe.Pointer(&row(q*gemmRows + i)[0]))
	}
	return w
}

// packWidePanel writes rows r0..r0+3 widened to float32 (through wide, cols
// floats) into dst as Panel reads them: 16 columns of each row in turn.
func packWidePanel(dst, wide []float32, ops *Ops, row func(r int) []byte, r0, cols int) {
	dst = dst[:gemmRows*cols]
	for i := 0; i < gemmRows; i++ {
		widen(ops, wide, row(r0+i))
		for c := 0; c < cols; c += 16 {
			*(*[16]float32)(dst[c*gemmRows+i*16:]) = *(*[16]float32)(wide[c:])
		}
	}
}

// packF16Panel writes F16 rows r0..r0+3 (cols values each) into dst as
// PanelF16 reads them: 16 columns of each row in turn, as stored.
func packF16Panel(dst []uint16, row func(r int) []byte, r0, cols int) {
	dst = dst[:gemmRows*cols]
	for i := 0; i < gemmRows; i++ {
		src := unsafe.Slice((*uint16)(unsafe.Pointer(&row(r0 + i)[0])), cols)
		for c := 0; c < cols; c += 16 {
			*(*[16]uint16)(dst[c*gemmRows+i*16:]) = *(*[16]uint16)(src[c:])
		}
	}
}

// gemmGroups is the micro-kernel calls a row block takes for T tokens: the
// last group of fewer than six repeats its first token in the missing
// places, whose outputs are dropped (cheaper than a slower path for them).
func gemmGroups(T int) int { return (T + gemmToks - 1) / gemmToks }

// tok is the token group gi's place j computes: beyond T, the group's first.
func tok(gi, j, T int) int {
	if t := gi*gemmToks + j; t < T {
		return t
	}
	return gi * gemmToks
}

// gemmRowsOf runs the GEMM for rows [q0·4, q1·4) of a matrix whose row r is
// row(r), over the T tokens of x (width cols), calling emit(r0, t0, out)
// with every tile of outputs: out[t·4 + i] is row r0 + i for token t0 + t,
// t < min(6, T − t0) (one call per tile, not per output); ops widens rows
// of dtype dt. block is one worker's storage (gemmBlock(T, cols) floats).
// With xb (x rounded to BF16, BF16 rows only) the rows go to PanelBF16 as
// stored instead of widened; rows of other dtypes but F32 go widened to
// Panel where the table has it (both through gemmPanels). The caller's
// rows past the last group of four are left to the caller.
func gemmRowsOf(g *GemmKernel, ops *Ops, dt format.DType, row func(r int) []byte, q0, q1, cols int, x []float32, xb []uint16, T int,
	block []float32, emit func(r0, t0 int, out *[24]float32)) {
	// gemmBlock(T, cols) holds at least one panel and its widening row.
	if xb != nil {
		panels := unsafe.Slice((*uint16)(unsafe.Pointer(&block[0])), 2*len(block))
		gemmPanels(q0, q1, cols, xb, T, panels, func(panel []uint16, q int, x *[6]*uint16, n int, out *[24]float32) {
			w := quadRows16(row, q)
			g.PackBF16(&w, &panel[0], x, n, out)
		}, g.PanelBF16, emit)
		return
	}
	if g.PanelF16 != nil && dt == format.F16 {
		panels := unsafe.Slice((*uint16)(unsafe.Pointer(&block[0])), 2*len(block))
		gemmPanels(q0, q1, cols, x, T, panels, func(panel []uint16, q int, x *[6]*float32, n int, out *[24]float32) {
			if g.PackF16 == nil {
				packF16Panel(panel, row, q*gemmRows, cols)
				g.PanelF16(&panel[0], x, n, out)
				return
			}
			w := quadRows16(row, q)
			g.PackF16(&w, &panel[0], x, n, out)
		}, g.PanelF16, emit)
		return
	}
	if g.Panel != nil && dt != format.F32 {
		wide, panels := block[:cols], block[cols:]
		gemmPanels(q0, q1, cols, x, T, panels, func(panel []float32, q int, x *[6]*float32, n int, out *[24]float32) {
			packWidePanel(panel, wide, ops, row, q*gemmRows, cols)
			g.Panel(&panel[0], x, n, out)
		}, g.Panel, emit)
		return
	}
	groups := gemmGroups(T)
	acc, wide := block[:groups*384], block[groups*384:]
	var wp [4]*float32
	var xp [6]*float32
	var out [24]float32
	for q := q0; q < q1; q++ {
		r0 := q * gemmRows
		a := acc[:groups*384]
		clear(a)
		for k0 := 0; k0 < cols; k0 += gemmKC {
			n := min(gemmKC, cols-k0)
			for i := 0; i < gemmRows; i++ {
				if dt == format.F32 {
					wp[i] = &F32s(row(r0 + i))[k0]
					continue
				}
				// Widen this block of the row: the dtype's row bytes for
				// columns [k0, k0+n) are a whole number of blocks.
				w := wide[i*gemmKC : i*gemmKC+n]
				rb, _ := dt.RowBytes(k0)
				nb, _ := dt.RowBytes(n)
				widen(ops, w, row(r0 + i)[rb:rb+nb])
				wp[i] = &w[0]
			}
			for gi := 0; gi < groups; gi++ {
				for j := range xp {
					xp[j] = &x[tok(gi, j, T)*cols+k0]
				}
				g.Tile(&wp, &xp, n, accAt(a, gi))
			}
		}
		for gi := 0; gi < groups; gi++ {
			g.Fold(accAt(a, gi), &out)
			emit(r0, gi*gemmToks, &out)
		}
	}
}

// matMulGEMM is MatMul through the table's GEMM: whole groups of four rows
// and six tokens in the micro-kernel, the rest through matTile.
// With xb (x rounded to BF16 by prefillBF16, x then its float32 values)
// BF16 rows take PanelBF16.
func matMulGEMM(p *Pool, g *GemmKernel, out []float32, w *Weight, x []float32, xb []uint16, T int) {
	ops := active.Ops(w.DType)
	R, C := w.Rows, w.Cols
	quads := R / gemmRows
	rb, _ := w.DType.RowBytes(C)
	row := func(r int) []byte { return w.Data[r*rb : (r+1)*rb] }
	per := gemmBlock(T, C)
	blocks := p.gemmScratch(p.Workers() * per)
	p.Run(quads, func(lo, hi, worker int) {
		gemmRowsOf(g, ops, w.DType, row, lo, hi, C, x, xb, T, blocks[worker*per:(worker+1)*per],
			func(r0, t0 int, o *[24]float32) {
				for t := 0; t < min(gemmToks, T-t0); t++ {
					copy(out[(t0+t)*R+r0:(t0+t)*R+r0+gemmRows], o[t*gemmRows:(t+1)*gemmRows])
				}
			})
	})
	if quads*gemmRows < R {
		matTile(out, w, x, quads*gemmRows, R, 0, T)
	}
}

// accAt is group gi's 24 partial-sum vectors in a.
func accAt(a []float32, gi int) *[24][16]float32 {
	return (*[24][16]float32)(unsafe.Pointer(&a[gi*384]))
}

// ffnRecBlock is the records one GEMM pass of the prefill FFN covers: their
// gate and up rows are 2·ffnRecBlock rows of the micro-kernel, their down
// columns one GemmDown call per four tokens.
const ffnRecBlock = 32

// ffnRecBlockBF16 is ffnRecBlock on the BF16 path (PanelBF16, DownBF16):
// the down tiles' accumulators (T·H floats a worker) are read and written
// once per block, 4 MiB at 256 tokens, which two threads at 32 records a
// block pulled from L3 at 20 GB/s each; 256-token 1B bf16 prefill,
// alternating, 32 → 128 records: 105-118 → 117-123 tok/s.
const ffnRecBlockBF16 = 128

// ffnBlock is one worker's storage for ffnPrefillGEMM over T tokens and
// blocks of rb records. The last gemmToks·H are the down tile's
// accumulators for a token tail.
func ffnBlock(T, H, rb int) int { return gemmBlock(T, H) + 3*T*rb + rb*H + gemmToks*H }

// ffnPrefillGEMM is FFNRecords' prefill for records [lo, hi) of one worker
// on a table with a GEMM: per block of records (never across two blocks of
// the caller), g and u of every token through the micro-kernel, then
// h = silu(g)·u and the down projection of the block four tokens at a time.
//
// On the activation-dot path (acts not nil: the block types' integer dots)
// g and u come from those dots, each row reused from L1 for every token,
// which outruns widening the rows to float32 (BenchmarkPrefillMatMul: Q4_0
// on VNNI, 5.0k against 4.4k tokens/s at 64 tokens), or, with tiles (from
// panelMinTokens tokens where the table has PanelAct), from the integer
// GEMM tile over panels of 16 rows packed into panel; the down projection
// still takes the float GEMM.
func ffnPrefillGEMM(g *GemmKernel, ops *Ops, dt format.DType, records *recordCursor, spans []span, rowBytes, lo, hi, H, rb int,
	x []float32, xb []uint16, T int, acc, block, act []float32, total int, acts []Q8Act, tiles *ActTiles, panel []byte) {
	gb := gemmBlock(T, H)
	gemm := block[:gb]
	gu := block[gb : gb+2*T*rb]
	hbuf := block[gb+2*T*rb : gb+3*T*rb]
	wide := block[gb+3*T*rb : ffnBlock(T, H, rb)-gemmToks*H]
	tail := block[ffnBlock(T, H, rb)-gemmToks*H : ffnBlock(T, H, rb)]
	// A down tile over tokens [t, t+gemmToks) adds into downAcc(t): acc,
	// or for a tail of fewer tokens (their h zero past T) tail, holding
	// their rows until downDone(t) copies them back. Per-record axpys for
	// the last T mod 6 tokens took 15 % of a 256-token Q4_0 prefill.
	downAcc := func(t int) *float32 {
		if t+gemmToks <= T {
			return &acc[t*H]
		}
		copy(tail, acc[t*H:T*H])
		clear(tail[(T-t)*H:])
		return &tail[0]
	}
	downDone := func(t int) {
		if t+gemmToks > T {
			copy(acc[t*H:T*H], tail[:(T-t)*H])
		}
	}
	var dgather []byte // a tiled block's down rows, whole (wholeDowns)
	for j0 := lo; j0 < hi; {
		// The block of records: at most rb, within one span.
		j1 := min(j0+rb, hi)
		for i := range spans {
			if spans[i].first > j0 {
				j1 = min(j1, spans[i].first)
				break
			}
		}
		n := j1 - j0
		row := func(r int) []byte {
			blk, k := records.at(j0 + r/2)
			if r%2 == 0 {
				return blk.GateRow(k)
			}
			return blk.UpRow(k)
		}
		quads := 2 * n / gemmRows
		stride := 2 * n // gu is (T, 2n): g of record i at 2i, u at 2i+1
		switch {
		case tiles != nil:
			gemmActRows(ops, dt, tiles, acts, row, 0, 2*n, gu, stride, panel)
		case acts != nil:
			for r := 0; r < 2*n; r++ {
				dotActTokens(ops, row(r), acts, gu[r:], stride)
			}
		default:
			gemmRowsOf(g, ops, dt, row, 0, quads, H, x, xb, T, gemm, func(r0, t0 int, o *[24]float32) {
				for t := 0; t < min(gemmToks, T-t0); t++ {
					copy(gu[(t0+t)*stride+r0:(t0+t)*stride+r0+gemmRows], o[t*gemmRows:(t+1)*gemmRows])
				}
			})
		}
		for t := 0; t < T; t++ {
			r0 := quads * gemmRows
			if acts != nil {
				r0 = 2 * n
			}
			xt := x[t*H : (t+1)*H]
			for r := r0; r < 2*n; r++ {
				gu[t*stride+r] = ops.Dot(row(r), xt)
			}
			active.SiLUMul(hbuf[t*n:(t+1)*n], gu[t*stride:t*stride+2*n])
			if act != nil {
				copy(act[t*total+j0:t*total+j0+n], hbuf[t*n:(t+1)*n])
			}
		}
		// down: y_t += Σ_i h[t, i]·down_i, the records contiguous in one block
		// (their down rows gathered whole where the block is tiled).
		db, dk := wholeDowns(records, j0, n, &dgather)
		t := 0
		if xb != nil && g.DownBF16 != nil && H%64 == 0 {
			// BF16 with rounded activations: records in pairs, their down
			// columns interleaved word by word, h rounded to BF16 in
			// matching pairs, one VDPBF16PS a pair.
			b, k0 := db, dk
			P := (n + 1) / 2
			words := unsafe.Slice((*uint16)(unsafe.Pointer(&wide[0])), 2*len(wide))
			wpair, zero := words[:P*2*H], words[P*2*H:P*2*H+H]
			clear(zero)
			col := func(i int) *uint16 {
				if i >= n {
					return &zero[0]
				}
				return (*uint16)(unsafe.Pointer(&b.DownRow(k0 + i)[0]))
			}
			for p := 0; p < P; p++ {
				a, b := col(2*p), col(2*p+1)
				for cb := 0; cb < H/64; cb++ {
					g.Interleave(&wpair[(cb*P+p)*128], (*uint16)(unsafe.Add(unsafe.Pointer(a), cb*128)),
						(*uint16)(unsafe.Add(unsafe.Pointer(b), cb*128)), 64)
				}
			}
			// g and u are spent: h rounded in their upper half, and the
			// pairs of six tokens at a time in their first 6P words.
			hp := unsafe.Slice((*uint32)(unsafe.Pointer(&gu[0])), 6*P)
			hb := unsafe.Slice((*uint16)(unsafe.Pointer(&gu[T*rb])), T*n)
			roundBF16(g, hb, nil, hbuf[:T*n])
			for ; t < T; t += gemmToks {
				for q := 0; q < gemmToks; q++ {
					if t+q >= T {
						for p := 0; p < P; p++ {
							hp[p*6+q] = 0
						}
						continue
					}
					row := hb[(t+q)*n : (t+q+1)*n]
					for p := 0; p < n/2; p++ {
						hp[p*6+q] = uint32(row[2*p]) | uint32(row[2*p+1])<<16
					}
					if n%2 == 1 {
						hp[(P-1)*6+q] = uint32(row[n-1])
					}
				}
				g.DownBF16(downAcc(t), H, &hp[0], &wpair[0], 128, P, H)
				downDone(t)
			}
			t = T
		} else if g.Down != nil && H%64 == 0 {
			// The block's down columns as float32 rows (widened once for
			// every token), h six tokens a record, six tokens a call.
			b, k0 := db, dk
			for i := 0; i < n; i++ {
				w := wide[i*H : (i+1)*H]
				d := b.DownRow(k0 + i)
				if dt == format.F32 {
					copy(w, F32s(d))
				} else {
					widen(ops, w, d)
				}
			}
			hp := gu[:6*n] // g and u are spent: h six tokens a record
			for ; t < T; t += gemmToks {
				for i := 0; i < n; i++ {
					for q := 0; q < gemmToks; q++ {
						hp[i*6+q] = 0
						if t+q < T {
							hp[i*6+q] = hbuf[(t+q)*n+i]
						}
					}
				}
				g.Down(downAcc(t), H, &hp[0], &wide[0], H, n, H)
				downDone(t)
			}
			t = T
		}
		if ops.GemmDown != nil {
			b, k0 := db, dk // the block's records are consecutive
			down := b.Downs(k0)
			for ; t+4 <= T; t += 4 {
				ops.GemmDown(acc[t*H:], H, hbuf[t*n:], n, down, b.DownStride, n, H)
			}
		}
		for ; t < T; t++ {
			for i := 0; i < n; i++ {
				ops.Axpy(acc[t*H:(t+1)*H], hbuf[t*n+i], db.DownRow(dk+i))
			}
		}
		j0 = j1
	}
}

// wholeDowns is the block holding records [j0, j0+n) (they lie in one)
// and j0's index in it — or, where that block is tiled (format.Tiled), a
// view of the n records' down rows gathered whole into *buf (grown as
// needed), index 0: the prefill's down projections read rows.
func wholeDowns(records *recordCursor, j0, n int, buf *[]byte) (*format.RecordBlock, int) {
	b, k0 := records.at(j0)
	if !b.Tiled() {
		return b, k0
	}
	R := b.RowBytes
	if cap(*buf) < n*R {
		*buf = make([]byte, n*R)
	}
	d := (*buf)[:n*R]
	for i := 0; i < n; i++ {
		b.CopyDown(d[i*R:(i+1)*R], k0+i)
	}
	return &format.RecordBlock{Down: d, DownStride: R, RowBytes: R, N: n}, 0
}
