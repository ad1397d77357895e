package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sipack/sipack/format"
)

var dtypes = []format.DType{format.BF16, format.F16, format.F32}

func randRow(rng *rand.Rand, dt format.DType, n int) ([]byte, []float32) {
	if dt.Quantized() {
		// Block types: n normal values quantised (n a multiple of 32),
		// and their dequantised values.
		f := make([]float32, n)
		for i := range f {
			f[i] = float32(rng.NormFloat64())
		}
		rb, _ := dt.RowBytes(n)
		b := make([]byte, rb)
		QuantizeRow(b, dt, f)
		DequantizeRow(f, b, dt)
		return b, f
	}
	b := make([]byte, n*dt.Size())
	f := make([]float32, n)
	for i := range f {
		v := float32(rng.NormFloat64())
		switch dt {
		case format.BF16:
			h := F32ToBF16(v)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			f[i] = BF16ToF32(h)
		case format.F16:
			h := F32ToF16(v)
			binary.LittleEndian.PutUint16(b[2*i:], h)
			f[i] = F16ToF32(h)
		case format.F32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
			f[i] = v
		}
	}
	return b, f
}

func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// tol bounds the difference of two float32 sums of the same n products in
// different orders: each is within γ_n·Σ|w_i x_i| (γ_n ≈ n·2^-24) of the
// exact sum, so they differ by at most 2·γ_n·Σ. (A √n "typical" bound was
// used first; the fuzzer found inputs — many equal terms — that exceed it,
// kept in testdata/fuzz/FuzzDot.)
func tol(w, x []float32) float64 {
	var s float64
	for i := range x {
		s += math.Abs(float64(w[i] * x[i]))
	}
	return 2*float64(len(x)+2)*6e-8*s + 1e-6
}

func refDot(dt format.DType, w []byte, x []float32) float32 {
	switch dt {
	case format.BF16:
		return dotBF16Ref(w, x)
	case format.F16:
		return dotF16Ref(w, x)
	}
	return dotF32Ref(w, x)
}

// TestFastMatchesReference: every fast path against the pure-Go reference
// on random lengths, ragged tails (n not a multiple of 8, 32) included.
func TestFastMatchesReference(t *testing.T) {
	forTables(t, testFastMatchesReference)
}

func testFastMatchesReference(t *testing.T, tb *Table) {
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 100, 256, 1000, 2048, 2051}
	for _, dt := range dtypes {
		for _, n := range lengths {
			wb, wf := randRow(rng, dt, n)
			x := randVec(rng, n)
			got, want := Dot(wb, dt, x), refDot(dt, wb, x)
			if d := math.Abs(float64(got - want)); d > tol(wf, x) {
				t.Errorf("%v dot n=%d: fast %g, reference %g (|Δ| %g > %g)", dt, n, got, want, d, tol(wf, x))
			}
			y1, y2 := randVec(rng, n), make([]float32, n)
			copy(y2, y1)
			Axpy(y1, 0.37, wb, dt)
			switch dt {
			case format.BF16:
				axpyBF16Ref(y2, 0.37, wb)
			case format.F16:
				axpyF16Ref(y2, 0.37, wb)
			default:
				axpyF32Ref(y2, 0.37, wb)
			}
			for i := range y1 {
				// One multiply-add per element: FMA rounds once, the reference twice.
				if d := math.Abs(float64(y1[i] - y2[i])); d > 2.4e-7*math.Abs(float64(y2[i]))+1e-7 {
					t.Fatalf("%v axpy n=%d [%d]: %g vs %g", dt, n, i, y1[i], y2[i])
				}
			}
		}
	}
	for _, dt := range []format.DType{format.BF16, format.F16} {
		dot4 := tb.Ops(dt).Dot4
		if dot4 == nil {
			continue
		}
		for _, n := range lengths {
			wb, wf := randRow(rng, dt, n)
			xs := [4][]float32{randVec(rng, n), randVec(rng, n), randVec(rng, n), randVec(rng, n)}
			var o [4]float32
			dot4(wb, xs[0], xs[1], xs[2], xs[3], &o)
			for j := range xs {
				if d := math.Abs(float64(o[j] - refDot(dt, wb, xs[j]))); d > tol(wf, xs[j]) {
					t.Errorf("%v dot4 n=%d lane %d: %g vs %g", dt, n, j, o[j], refDot(dt, wb, xs[j]))
				}
			}
		}
	}
	// The decode FFN's fused kernels of the 16-bit types: the gate/up pair
	// of dots and the four-row axpy.
	for _, dt := range []format.DType{format.BF16, format.F16} {
		dot2, axpy4 := tb.Ops(dt).Dot2, tb.Ops(dt).Axpy4
		if dot2 == nil || axpy4 == nil {
			continue // composed from Dot and Axpy, tested above
		}
		for _, n := range lengths {
			a, af := randRow(rng, dt, n)
			b, bf := randRow(rng, dt, n)
			next, _ := randRow(rng, dt, 3*n)
			x := randVec(rng, n)
			var o [2]float32
			dot2(a, b, x, &o, next)
			if d := math.Abs(float64(o[0] - refDot(dt, a, x))); d > tol(af, x) {
				t.Errorf("%v dot2 n=%d row a: %g vs %g", dt, n, o[0], refDot(dt, a, x))
			}
			if d := math.Abs(float64(o[1] - refDot(dt, b, x))); d > tol(bf, x) {
				t.Errorf("%v dot2 n=%d row b: %g vs %g", dt, n, o[1], refDot(dt, b, x))
			}
			var w [4][]byte
			var wf [4][]float32
			for r := range w {
				w[r], wf[r] = randRow(rng, dt, n)
			}
			coef := [4]float32{0.37, -1.25, 2.5, 0.01}
			y1 := randVec(rng, n)
			y0 := append([]float32(nil), y1...)
			axpy4(y1, &coef, &w)
			for i := range y1 {
				want, mag := float64(y0[i]), math.Abs(float64(y0[i]))
				for r := range w {
					want += float64(coef[r]) * float64(wf[r][i])
					mag += math.Abs(float64(coef[r]) * float64(wf[r][i]))
				}
				if d := math.Abs(float64(y1[i]) - want); d > 6e-7*mag+1e-7 {
					t.Fatalf("%v axpy4 n=%d [%d]: %g vs %g", dt, n, i, y1[i], want)
				}
			}
		}
	}
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	if SumBytes(b) != sumBytesRef(b) {
		t.Error("SumBytes differs from the reference")
	}
}

// TestMatMulAndFFNMatchReference compares the threaded MatMul (with the
// four-token path) and FFNRecords against a plain float64 computation.
//
// Every table this CPU runs; the block types on the shapes they allow
// (widths of whole blocks) and, where the table takes their integer path
// (which rounds the activations), only where the float prefill GEMM runs.
func TestMatMulAndFFNMatchReference(t *testing.T) {
	forTables(t, testMatMulAndFFNMatchReference)
}

func testMatMulAndFFNMatchReference(t *testing.T, tb *Table) {
	rng := rand.New(rand.NewPCG(3, 4))
	skip := func(dt format.DType, width, rows, T int) bool {
		if !dt.Quantized() {
			return false
		}
		return width%32 != 0 || tb.Ops(dt).ActDot // the integer path rounds activations: TestIntegerPathMatVecAndFFN
	}
	for _, threads := range []int{1, 2, 3} {
		p := NewPool(threads)
		for _, dt := range append(dtypes, format.Q8_0, format.Q4_0) {
			// One token over 6, 12 and 20 rows of 1024: weights on both
			// sides of matInline (the calling goroutine alone, or the pool).
			for _, shape := range [][3]int{{5, 13, 1}, {17, 64, 6}, {33, 100, 4}, {8, 2051, 9}, {13, 544, 26}, {6, 1024, 1}, {12, 1024, 1}, {20, 1024, 1}} {
				rows, cols, T := shape[0], shape[1], shape[2]
				if skip(dt, cols, rows, T) {
					continue
				}
				wb, wf := randRow(rng, dt, rows*cols)
				w := &Weight{Data: wb, DType: dt, Rows: rows, Cols: cols}
				x := randVec(rng, T*cols)
				xw := roundedActs(tb, dt, x, rows, cols, T) // what the weights meet
				out := make([]float32, T*rows)
				MatMul(p, out, w, x)
				for tt := 0; tt < T; tt++ {
					for r := 0; r < rows; r++ {
						want := 0.0
						for c := 0; c < cols; c++ {
							want += float64(wf[r*cols+c]) * float64(xw[tt*cols+c])
						}
						if d := math.Abs(float64(out[tt*rows+r]) - want); d > tol(wf[r*cols:(r+1)*cols], xw[tt*cols:(tt+1)*cols]) {
							t.Fatalf("%v MatMul %v threads %d [%d,%d]: %g vs %g", dt, shape, threads, tt, r, out[tt*rows+r], want)
						}
					}
				}
			}
			// FFN over blocks of records: ragged H (40), the prefill GEMM path
			// (H a multiple of 16, T ≥ 4, with a token tail), and blocks of
			// varied lengths so record tiles straddle block boundaries.
			for _, fs := range []struct {
				H, T   int
				counts []int
			}{{40, 3, []int{5, 1, 7}}, {64, 9, []int{20, 3, 17}}, {48, 16, []int{33}}, {32, 5, []int{1, 1, 1, 16, 2}},
				// The prefill GEMM over two column blocks, record blocks of
				// more than one GEMM pass, odd record counts, a token tail.
				{544, 26, []int{40, 7, 33}}, {64, 24, []int{3}}, {576, 30, []int{35, 2}},
				// More records than one BF16 pass (ffnRecBlockBF16) in a span.
				{128, 25, []int{300, 5}},
				// One token: the decode path (fused gate/up dots prefetching
				// the next record, the four-record down projection), with a
				// ragged H, groups of four across blocks and H = 2048.
				{100, 1, []int{9, 3, 6}}, {64, 1, []int{1, 1, 1, 16, 2}}, {2048, 1, []int{13}},
				// A width with a tail past 32 (the row dots' and pair dots'
				// kernels end at the same column: the split layout's single
				// gate dots equal the interleaved records' pairs).
				{72, 1, []int{5, 3}},
				// A split block of more than one run of its two passes
				// (splitRun), the second run odd.
				{64, 1, []int{2*splitRun + 3, 5}}} {
				H, T, counts := fs.H, fs.T, fs.counts
				total := 0
				for _, c := range counts {
					total += c
				}
				if skip(dt, H, 2*total, T) {
					continue
				}
				blocks, recs := randRecords(rng, dt, H, counts)
				x := randVec(rng, T*H)
				xw := roundedActs(tb, dt, x, 2*total, H, T)
				y := make([]float32, T*H)
				act := make([]float32, T*len(recs))
				// The split layouts of version 2 and 3 bands are checked
				// against the reference with 2 threads (one or the other
				// by the case), and bit for bit against the interleaved one
				// with 1 (more threads sum in the order the workers claim
				// records).
				layout := format.Interleaved
				if threads == 2 {
					layout = format.Layout(1 + (H/8+T+len(counts))%3)
				}
				FFNRecords(p, y, recordBlocks(dt, H, layout, blocks...), dt, H, x, act)
				if threads == 1 {
					for _, l := range []format.Layout{format.Pairs, format.Runs, format.Tiled} {
						y2, act2 := make([]float32, T*H), make([]float32, T*len(recs))
						FFNRecords(p, y2, recordBlocks(dt, H, l, blocks...), dt, H, x, act2)
						if !slices.Equal(y, y2) || !slices.Equal(act, act2) {
							t.Fatalf("%v FFN H=%d T=%d: records in layout %d give another result than interleaved", dt, H, T, l)
						}
					}
				}
				downBF16 := dt == format.BF16 && tb.PrefillBF16 && tb.Gemm != nil && tb.Gemm.DownBF16 != nil &&
					gemmFits(tb, dt, 2*total, H, T) && H%64 == 0
				for tt := 0; tt < T; tt++ {
					want, mag := make([]float64, H), make([]float64, H)
					for j, r := range recs {
						var g, u, gAbs, uAbs float64
						for i := 0; i < H; i++ {
							g += float64(r[i]) * float64(xw[tt*H+i])
							u += float64(r[H+i]) * float64(xw[tt*H+i])
							gAbs += math.Abs(float64(r[i]) * float64(xw[tt*H+i]))
							uAbs += math.Abs(float64(r[H+i]) * float64(xw[tt*H+i]))
						}
						silu := g / (1 + math.Exp(-g))
						h := silu * u
						// Each dot is within 2·γ_H·Σ|terms| (see tol); silu' ≤ 1.1.
						eps := 2 * float64(H+2) * 6e-8
						if math.Abs(h-float64(act[tt*len(recs)+j])) > eps*(1.1*gAbs*math.Abs(u)+math.Abs(silu)*uAbs)+1e-5*(1+math.Abs(h)) {
							t.Fatalf("%v FFN H=%d T=%d act [%d,%d]: %g vs %g", dt, H, T, tt, j, act[tt*len(recs)+j], h)
						}
						hd := h
						if downBF16 {
							// The BF16 down projection rounds the kernel's own h
							// (the token tail included: it takes the same tile).
							hd = float64(BF16ToF32(F32ToBF16(act[tt*len(recs)+j])))
						}
						for i := 0; i < H; i++ {
							want[i] += hd * float64(r[2*H+i])
							mag[i] += math.Abs(hd * float64(r[2*H+i]))
						}
					}
					for i := range want {
						// Relative to Σ|h·d|: the sum cancels, its rounding does not.
						if math.Abs(want[i]-float64(y[tt*H+i])) > 1e-4*(1+mag[i]) {
							t.Fatalf("%v FFN H=%d T=%d y [%d,%d]: %g vs %g", dt, H, T, tt, i, y[tt*H+i], want[i])
						}
					}
				}
			}
		}
		p.Close()
	}
}

func FuzzDot(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, uint8(0))
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		dt := dtypes[int(which)%len(dtypes)]
		n := len(raw) / (dt.Size() + 4)
		w, xb := raw[:n*dt.Size()], raw[n*dt.Size():n*dt.Size()+4*n]
		x := make([]float32, n)
		wf := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(xb[4*i:]))
			if math.IsNaN(float64(x[i])) || math.Abs(float64(x[i])) > 1e6 {
				x[i] = 1
			}
		}
		for i := range wf {
			switch dt {
			case format.BF16:
				wf[i] = BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
			case format.F16:
				wf[i] = F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
			default:
				wf[i] = math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))
			}
			if math.IsNaN(float64(wf[i])) || math.IsInf(float64(wf[i]), 0) || math.Abs(float64(wf[i])) > 1e6 {
				return // NaN/Inf/huge inputs: both sides are NaN or overflow differently
			}
		}
		got, want := Dot(w, dt, x), refDot(dt, w, x)
		if d := math.Abs(float64(got - want)); d > tol(wf, x) {
			t.Fatalf("%v n=%d: fast %g reference %g", dt, n, got, want)
		}
	})
}

// TestSiLUMatchesFloat64: the fast SiLU against x/(1+e^-x) in float64, on
// a grid over the range where it matters and on random values: within 4 ulp
// relative (or 1e-30 absolute near the underflow); expf within 2 ulp.
func TestSiLUMatchesFloat64(t *testing.T) {
	check := func(x float32) {
		got, want := float64(SiLU(x)), float64(x)/(1+math.Exp(-float64(x)))
		if got == want || math.IsNaN(want) {
			return
		}
		if d := math.Abs(got - want); d > 4*6e-8*math.Abs(want)+1e-30 {
			t.Fatalf("SiLU(%g) = %g, float64 reference %g", x, got, want)
		}
	}
	for x := float32(-120); x <= 120; x += 0.001 {
		check(x)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 100000; i++ {
		check(float32(rng.NormFloat64() * 8))
	}
	for _, x := range []float32{0, -0.0, 88.7, 88.8, -88.7, -88.8, 1e-30, -1e-30, float32(math.Inf(1)), float32(math.Inf(-1))} {
		check(x)
	}
	if v := SiLU(float32(math.NaN())); v == v {
		t.Fatalf("SiLU(NaN) = %g", v)
	}
	for x := float32(-87); x <= 88; x += 0.01 {
		if got, want := float64(expf(x)), math.Exp(float64(x)); math.Abs(got-want) > 2*6e-8*want {
			t.Fatalf("expf(%g) = %g, want %g", x, got, want)
		}
	}
}

// FuzzFFNDecode: the one-token FFN over records (the fused gate/up dots
// with their prefetch, the four-record down projections, the integer paths)
// against the pure-Go reference path, on fuzzed widths, record counts,
// block splits and seeds. The two paths round differently, and SiLU's
// exponential tail magnifies a dot's rounding (its first seed failed a
// plain relative tolerance by 1.5e-3 with g near −8), so the bound carries
// each dot's worst-case rounding, 2(n+2)·2⁻²⁴·Σ|w·x|, through SiLU(g)·u and
// the down projection.
func FuzzFFNDecode(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(2), uint64(1))
	f.Add(uint8(1), uint8(9), uint8(5), uint64(2))
	f.Add(uint8(3), uint8(4), uint8(1), uint64(3))
	f.Add(uint8(19), uint8(4), uint8(0), uint64(0xe3236fc3))
	f.Fuzz(func(t *testing.T, shape, recs, split uint8, seed uint64) {
		types := []format.DType{format.BF16, format.F16, format.Q8_0, format.Q4_0}
		widths := []int{64, 96, 512, 544, 2048}
		dt, H := types[int(shape)%len(types)], widths[int(shape/4)%len(widths)]
		if !dt.Quantized() && shape&0x80 != 0 {
			H += 8 // a ragged width for the 16-bit types
		}
		n := 1 + int(recs)%13
		rng := rand.New(rand.NewPCG(seed, uint64(shape)))
		var blocks [][]byte
		var rows [][]float32 // per record: gate, up, down
		for left := n; left > 0; {
			c := min(left, 1+int(split)%5)
			b, vals := randRow(rng, dt, c*3*H)
			blocks = append(blocks, b)
			for j := 0; j < c; j++ {
				rows = append(rows, vals[3*j*H:(3*j+3)*H])
			}
			left -= c
		}
		x := randVec(rng, H)
		p := NewPool(2)
		defer p.Close()
		fast := make([]float32, H)
		FFNRecords(p, fast, recordBlocks(dt, H, format.Interleaved, blocks...), dt, H, x, nil)
		restore := Use(referenceOf(Active()))
		ref := make([]float32, H)
		FFNRecords(p, ref, recordBlocks(dt, H, format.Layout(1+int(split)%3), blocks...), dt, H, x, nil)
		restore()
		// Δh_j from the dots' rounding, then each y[i]'s bound.
		eps := 2 * float64(H+2) * 6e-8
		dh := make([]float64, n)
		for j, r := range rows {
			var g, u, gAbs, uAbs float64
			for i := 0; i < H; i++ {
				g += float64(r[i]) * float64(x[i])
				u += float64(r[H+i]) * float64(x[i])
				gAbs += math.Abs(float64(r[i]) * float64(x[i]))
				uAbs += math.Abs(float64(r[H+i]) * float64(x[i]))
			}
			if dt.Quantized() {
				// Each activation is rounded to its block's Q8 step: the
				// paths share it, but g and u above do not include it.
				gAbs, uAbs = 1.1*gAbs, 1.1*uAbs
			}
			silu := g / (1 + math.Exp(-g))
			dh[j] = 1.1*eps*gAbs*(math.Abs(u)+eps*uAbs) + math.Abs(silu)*eps*uAbs + 1e-6*math.Abs(silu*u)
		}
		for i := range ref {
			var bound, mag float64
			for j, r := range rows {
				bound += dh[j] * math.Abs(float64(r[2*H+i]))
				mag += math.Abs(float64(r[2*H+i]))
			}
			if d := math.Abs(float64(fast[i] - ref[i])); d > 2*bound+1e-5*(1+mag) {
				t.Fatalf("%v H=%d records=%d [%d]: fast %g, reference %g (bound %g)", dt, H, n, i, fast[i], ref[i], 2*bound)
			}
		}
	})
}

// roundedActs is x as the weights of dt meet it on table tb for a rows ×
// cols product over T tokens: rounded to BF16 where BF16 takes the
// rounded-activation dots (and the float prefill GEMM does not run), else x.
func roundedActs(tb *Table, dt format.DType, x []float32, rows, cols, T int) []float32 {
	o := tb.Ops(dt)
	gemm := gemmFits(tb, dt, rows, cols, T)
	viaTile := gemm && dt == format.BF16 && tb.PrefillBF16 // the BF16 prefill GEMM rounds
	if !viaTile && (!(o.ActDot && o.ActBF16) || gemm) {
		return x
	}
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = BF16ToF32(F32ToBF16(v))
	}
	return r
}

// TestDotMatchesPairDot: a row's dot is the same to the bit taken alone
// (Dot, DotAct) or in a pair (Dot2, Dot2Act, either place) on every table,
// 16-bit rows and the block types' integer path, at widths with and without
// a ragged tail — the split FFN takes gate rows alone and up rows in
// pairs, and must give the interleaved records' result.
func TestDotMatchesPairDot(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(21, 22))
		for _, dt := range []format.DType{format.BF16, format.F16} {
			ops := tb.Ops(dt)
			if ops.Dot2 == nil {
				continue
			}
			for _, n := range []int{32, 40, 64, 72, 100, 128, 200, 2048} {
				a, _ := randRow(rng, dt, n)
				b, _ := randRow(rng, dt, n)
				x := randVec(rng, n)
				var out [2]float32
				ops.Dot2(a, b, x, &out, nil)
				da, db := ops.Dot(a, x), ops.Dot(b, x)
				if math.Float32bits(da) != math.Float32bits(out[0]) || math.Float32bits(db) != math.Float32bits(out[1]) {
					t.Errorf("%v n %d: Dot %v, %v; Dot2 %v", dt, n, da, db, out)
				}
			}
		}
		// The block types' integer path: DotAct against Dot2Act.
		for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
			ops := tb.Ops(dt)
			if !ops.ActDot || ops.Dot2Act == nil {
				continue
			}
			for _, n := range []int{32, 64, 96, 512, 544, 2048} {
				a, _ := randRow(rng, dt, n)
				b, _ := randRow(rng, dt, n)
				acts := quantizeTokens(nil, ops, randVec(rng, n), n, 1)
				var out [2]float32
				ops.Dot2Act(a, b, &acts[0], &out, nil)
				da, db := ops.DotAct(a, &acts[0]), ops.DotAct(b, &acts[0])
				if math.Float32bits(da) != math.Float32bits(out[0]) || math.Float32bits(db) != math.Float32bits(out[1]) {
					t.Errorf("%v n %d: DotAct %v, %v; Dot2Act %v", dt, n, da, db, out)
				}
			}
		}
	})
}
