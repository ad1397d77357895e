package kernels

import (
	"fmt"
	"strings"

	"github.com/sipack/sipack/format"
)

// Ops is every operation the package runs over weights of one dtype, on one
// instruction set. Dot and Axpy are always set; the other fields are
// optional fast forms (nil: the caller composes them from Dot and Axpy), so
// a new dtype or ISA is a new row of a table, not an edit of a switch.
type Ops struct {
	// Dot is Σ_i w[i]·x[i] for a row w of len(x) elements.
	Dot func(w []byte, x []float32) float32
	// Axpy is y[i] += a·w[i] for a row w of len(y) elements.
	Axpy func(y []float32, a float32, w []byte)
	// Widen, where present, sets dst[i] to w[i] as float32 for a row w of
	// len(dst) elements (the prefill GEMM's widening; else zeros + Axpy).
	Widen func(dst []float32, w []byte)
	// DotRows, where present, sets out[r] to the Dot of row r of w, the
	// len(out) rows of len(x) elements lying back to back (a matrix's
	// rows for one token: no call a row); each the Dot's value to the bit.
	DotRows func(out []float32, w []byte, x []float32)
	// Dot4 is four Dots sharing the row w (prefill: the row is widened
	// once for four tokens).
	Dot4 func(w []byte, x0, x1, x2, x3 []float32, out *[4]float32)
	// Dot2 is the decode FFN's gate·x and up·x of one record in one pass
	// over x, prefetching next (a record to be computed soon, or nil;
	// gathered records are not where a hardware prefetcher looks).
	Dot2 func(a, b []byte, x []float32, out *[2]float32, next []byte)
	// Axpy4 is y += Σ_r a[r]·w[r] over four rows (y loaded and stored once).
	Axpy4 func(y []float32, a *[4]float32, w *[4][]byte)
	// AxpyTiles, where present, is the down projection of len(h) records
	// of a layout Tiled block (format.Tiled): y[c·64 : (c+1)·64] += Σ_q
	// h[q]·piece_q of chunk c, for c < len(y)/64, the pieces of chunk c
	// back to back from w[c·cstride:] — each chunk of y held in registers
	// while every record adds its piece, in record order, so each output
	// takes the single-row Axpy's multiply-adds in its order (the same
	// sums to the bit), from one ascending stream.
	AxpyTiles func(y, h []float32, w []byte, cstride int)
	// AxpyTilesGap, where present, is AxpyTiles for a run of fewer records
	// than its block holds, whose chunks lie apart (a routed group's
	// sub-block): the same sums, each record's piece of the next chunk
	// prefetched as its piece of this one is added.
	AxpyTilesGap func(y, h []float32, w []byte, cstride int)
	// GemmDown is the prefill down projection of four tokens over K
	// contiguous records: acc[t·accStride + i] += Σ_{j<K} h[t·hStride + j]·down_j[i],
	// down_j starting at down[j·recStride].
	GemmDown func(acc []float32, accStride int, h []float32, hStride int, down []byte, recStride, K, H int)

	// ActDot selects dots against activations converted once per token
	// (as llama.cpp does) instead of widening the weights: Q8 blocks and
	// integer dots for the block types, BF16 and VDPBF16PS for BF16 (ActBF16).
	// Both round the activations; the float path does not.
	ActDot bool
	// DotAct is the dot of a row with converted activations.
	DotAct func(w []byte, a *Q8Act) float32
	// Dot4Act is DotAct of one row against four tokens' activations (the
	// prefill's integer path: the row is unpacked once for the four), or nil.
	// (Pointers to the caller's arrays would escape through the func value
	// and allocate at every call: the four activations go by value.)
	Dot4Act func(w []byte, a0, a1, a2, a3 *Q8Act) [4]float32
	// PanelAct, where present, is the prefill's integer GEMM tile for the
	// block types and K-quants (gemmact.go, gemmactk.go): out[t·16 + r] is
	// the dot of row r of a panel packed by packPanel with token 8·tile + t
	// of the tiles.
	PanelAct func(panel []byte, tiles *ActTiles, tile int, out *[panelRows * panelToks]float32)
	// PanelSigned says PanelAct reads a panel of signed values (packPanel's
	// signed layout, arm64's SDOT) rather than unsigned ones (VPDPBUSD).
	PanelSigned bool
	// Axpy8Act, where present, is the decode FFN's down projection of
	// eight rows on the integer path (taken only while ActDot and the
	// table's Int8Down are set):
	// y += Σ_r a[r]·w[r] with the coefficients a[r]·d rounded to int8 per
	// block, as llama.cpp rounds the down projection's input to Q8
	// (axpy8Q40ActRef states the arithmetic). The float path stays exact.
	Axpy8Act func(y []float32, a *[8]float32, w *[8][]byte)
	// Dot2Act is Dot2 on the converted activations.
	Dot2Act func(a, b []byte, act *Q8Act, out *[2]float32, next []byte)
	// Quad says DotAct/Dot2Act read Q8Act.Quad, so quantising builds it.
	Quad bool
	// ActBF16 says the converted activations are Q8Act.B (BF16), not Q8.
	ActBF16 bool
	// PackRow, where the table has it, is packRowRef (packRowKRef for a
	// K-quant) for one row: the integer GEMM panel's packing (packPanel).
	PackRow func(dst, w []byte, nb int, signed bool)
	// PackPanel, where the table has it, packs a whole panel of panelRows
	// rows (row(r), nb blocks each) into dst at once, as PackRow would
	// row by row.
	PackPanel func(dst []byte, row func(r int) []byte, nb int, signed bool)
}

// Table holds the Ops of every dtype for one instruction set, and the two
// machine probes. Tables are built once at start; Generic is the pure-Go
// reference as a plain value.
type Table struct {
	Name string
	ops  [format.LastDType + 1]Ops
	// FMAPeak runs iters × 10 dependent-free multiply-add chains of
	// FMALanes float32 lanes each (the benchmark's compute ceiling).
	FMAPeak  func(iters int) float32
	FMALanes int
	// SumBytes reads every byte of b (the bandwidth probe).
	SumBytes func(b []byte) uint64
	// PrefetchL2 asks for every cache line of b into L2 (a hint: the
	// reference does nothing).
	PrefetchL2 func(b []byte)
	// Gemm is the prefill micro-kernel over float32 rows, or nil (prefill
	// then takes the Dot4/GemmDown tiles).
	Gemm *GemmKernel
	// ExpSubSum sets x[i] = e^(x[i] − m) and returns their sum (the
	// softmax of attention; see expSubSumRef).
	ExpSubSum func(x []float32, m float32) float32
	// Max is the largest of x (len(x) ≥ 1), Scale sets x[i] *= s: the
	// softmax's other two passes (maxRef, scaleRef).
	Max   func(x []float32) float32
	Scale func(x []float32, s float32)
	// AttnValues, where present, is the decode attention's weighted sum of
	// values for four query heads over a 64-wide slice of the head
	// dimension: out[h·64 + d] = Σ_{i<n} p[h][i]·v[i·vstride + d] for h < 4,
	// d < 64 (attnValues4Ref), each value row read once for the four.
	AttnValues func(out []float32, p *[4][]float32, v []float32, vstride, n int)
	// AttnScores, where present, is the decode attention's scores of four
	// query heads (q: four rows of hd, hd a multiple of 64) against n keys:
	// sc[h][i] = scale·Σ_d q[h·hd + d]·k[i·kstride + d] (attnScores4Ref),
	// each key row read once for the four.
	AttnScores func(sc *[4][]float32, q, k []float32, kstride, hd, n int, scale float32)
	// Quantize quantises whole blocks of activations to Q8 (see
	// quantizeBlocksRef): a decode step quantises about fifty vectors.
	Quantize func(q []int8, d []float32, s []int32, x []float32)
	// SiLUMul sets h[i] = silu(gu[2i])·gu[2i+1] (the prefill FFN's gate
	// and up outputs, in pairs).
	SiLUMul func(h, gu []float32)
	// SiLUVec is how many values SiLUMul computes in one vector, the same
	// whatever their neighbours (16 on AVX-512, 8 on AVX2, 4 on NEON); 0
	// where it is the scalar SiLU throughout. The decode FFN pads its
	// groups to it (siluMul).
	SiLUVec int
	// PrefillBF16 says the prefill GEMM takes BF16 rows through
	// Gemm.PanelBF16, the activations rounded to BF16 (set where the CPU
	// has it; WithBF16Prefill(false) turns it off).
	PrefillBF16 bool
	// Int8Down says the integer path's decode FFN takes the int8 down
	// projection (Ops.Axpy8Act) where the dtype has one; off, the down
	// projection stays in float (Axpy4), exact. On in the AVX2 table, where
	// the float one held q4_k_m's decode back (BenchmarkInt8DownOverFloat:
	// the FFN 1.3× as fast), and within 0.2 % of its held-out perplexity
	// (eval's TestInt8DownKeepsPerplexity); off on AVX-512, whose float one
	// is as fast for q4_0 and q8_0. WithInt8Down switches it.
	Int8Down bool
}

// Ops returns the operations for dtype dt.
func (t *Table) Ops(dt format.DType) *Ops { return &t.ops[dt] }

// Generic is the reference table: every entry is a pure-Go function whose
// doc comment states the math; every fast table is tested against it.
var Generic = Table{
	Name:      "generic",
	SiLUMul:   siluMulRef,
	Quantize:  quantizeBlocksRef,
	ExpSubSum: expSubSumRef,
	Max:       maxRef,
	Scale:     scaleRef,
	ops: [format.LastDType + 1]Ops{
		format.F32:  {Dot: dotF32Ref, Axpy: axpyF32Ref},
		format.F16:  {Dot: dotF16Ref, Axpy: axpyF16Ref, Dot4: dot4F16Ref, GemmDown: gemmDownF16Ref},
		format.BF16: {Dot: dotBF16Ref, Axpy: axpyBF16Ref, Dot4: dot4BF16Ref, GemmDown: gemmDownBF16Ref, DotAct: dotBF16ActRef, ActBF16: true},
		format.Q8_0: {Dot: dotQ80Ref, Axpy: axpyQ80Ref, Axpy4: axpy4Q80Ref, DotAct: dotQ80Q8Ref},
		format.Q4_0: {Dot: dotQ40Ref, Axpy: axpyQ40Ref, Axpy4: axpy4Q40Ref, DotAct: dotQ40Q8Ref},
		format.Q4_K: {Dot: dotQ4KRef, Axpy: axpyQ4KRef, Axpy4: axpy4Q4KRef, DotAct: dotQ4KQ8Ref},
		format.Q6_K: {Dot: dotQ6KRef, Axpy: axpyQ6KRef, Axpy4: axpy4Q6KRef, DotAct: dotQ6KQ8Ref},
	},
	FMAPeak: fmaPeakRef, FMALanes: 1, SumBytes: sumBytesRef, PrefetchL2: prefetchL2Ref,
}

// prefetchL2Ref is PrefetchL2's reference: a hint it need not act on.
func prefetchL2Ref([]byte) {}

// tables lists the tables this CPU can run, Generic first and the
// preferred one last (filled at init by the architecture's file).
var tables = []*Table{&Generic}

// active is the table in use: the last of tables, unless a command or a
// test chose another (Use).
var active = &Generic

// Tables returns every table this CPU can run, the reference first.
func Tables() []*Table { return tables }

// Active returns the table in use.
func Active() *Table { return active }

// Use makes t the table in use and returns the function that restores the
// previous one. For tests and benchmarks comparing tables; it must not run
// while kernels do.
func Use(t *Table) (restore func()) {
	prev := active
	active = t
	return func() { active = prev }
}

// register appends the architecture's tables (in order of preference) and
// activates the best; a command may pick another by name (Named, Use).
func register(ts ...*Table) {
	tables = append(tables, ts...)
	active = tables[len(tables)-1]
}

// Named is the table of that name (Table.Name), for a command that lets its
// user pick one: benchmarks on another instruction set, the float reference.
func Named(name string) (*Table, error) {
	var names []string
	for _, t := range tables {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return nil, fmt.Errorf("no kernel table %q on this CPU (it has %s)", name, strings.Join(names, ", "))
}

// WithIntegerPath returns a copy of t whose block types (Q8_0, Q4_0, Q4_K,
// Q6_K) take the integer path (on) or the float path; the name says which.
func (t *Table) WithIntegerPath(on bool) *Table {
	c := *t
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0, format.Q4_K, format.Q6_K} {
		c.ops[dt].ActDot = on && c.ops[dt].DotAct != nil
	}
	c.Name += map[bool]string{true: "+int", false: "+float"}[on]
	return &c
}

// WithInt8Down returns a copy of t whose integer path computes the decode
// FFN's down projection with its coefficients rounded to int8 (Axpy8Act,
// where the dtype has it: on) or in float (Axpy4: off).
func (t *Table) WithInt8Down(on bool) *Table {
	c := *t
	c.Int8Down = on
	c.Name += map[bool]string{true: "+int8down", false: "+exactdown"}[on]
	return &c
}

// IntegerReference is the reference of t's integer path: Generic with the
// block types' integer dots, and the int8 down projection (Axpy8Act) where
// t takes one, so a table and its reference do the same arithmetic.
func (t *Table) IntegerReference() *Table {
	c := Generic.WithIntegerPath(true)
	down := false
	for dt := range c.ops {
		if t.Int8Down && t.ops[dt].Axpy8Act != nil {
			c.ops[dt].Axpy8Act, down = axpy8ActRef(format.DType(dt)), true
		}
	}
	if down {
		c.Int8Down = true
		c.Name += "+int8down"
	}
	return c
}

// WithBF16Rounding returns a copy of t whose BF16 decode dots round the
// activations to BF16 (on, where the table has VDPBF16PS kernels) or take
// the exact float path.
func (t *Table) WithBF16Rounding(on bool) *Table {
	c := *t
	o := &c.ops[format.BF16]
	o.ActDot = on && o.ActBF16 && o.DotAct != nil
	c.Name += map[bool]string{true: "+bf16act", false: "+exact"}[on]
	return &c
}

// WithBF16Prefill returns a copy of t whose prefill GEMM takes BF16 rows
// through VDPBF16PS against activations rounded to BF16 (on, where the
// table has the kernel) or widens them to float32 (exact).
func (t *Table) WithBF16Prefill(on bool) *Table {
	c := *t
	c.PrefillBF16 = on && c.Gemm != nil && c.Gemm.PanelBF16 != nil && c.Gemm.PackBF16 != nil
	c.Name += map[bool]string{true: "+bf16gemm", false: "+exactgemm"}[on]
	return &c
}

// derive copies t under a new name, for a table that extends another.
func derive(t *Table, name string) *Table {
	c := *t
	c.Name = name
	return &c
}

// Dot returns Σ_i w[i]·x[i] for a row w of len(x) elements of dtype dt.
func Dot(w []byte, dt format.DType, x []float32) float32 { return active.ops[dt].Dot(w, x) }

// Axpy does y[i] += a·w[i] for a row w of len(y) elements of dtype dt.
func Axpy(y []float32, a float32, w []byte, dt format.DType) { active.ops[dt].Axpy(y, a, w) }

// DotQ8Act is the dot of a row with activations converted for its dtype.
func DotQ8Act(w []byte, dt format.DType, a *Q8Act) float32 { return active.ops[dt].DotAct(w, a) }

// IntegerPath reports whether weights of dtype dt take the integer path.
func IntegerPath(dt format.DType) bool { return active.ops[dt].ActDot }
