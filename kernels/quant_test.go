package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sipack/sipack/format"
)

// TestQuantRoundTripBound: per block with scale d, Q8_0 reconstructs within
// d/2 plus the fp16 rounding of d (2^-11 relative, 2^-25 absolute for
// subnormal d) times |q| ≤ 127; Q4_0 within one step d (values of the sign
// opposite to the largest one clip at +7 steps) plus |q−8| ≤ 8 times it.
func TestQuantRoundTripBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
		for trial := 0; trial < 200; trial++ {
			n := 32 * (1 + rng.IntN(8))
			x := make([]float32, n)
			scale := math.Pow(10, rng.Float64()*6-4)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * scale)
			}
			if trial == 0 {
				clear(x[:32]) // an all-zero block
			}
			rb, _ := dt.RowBytes(n)
			q := make([]byte, rb)
			QuantizeRow(q, dt, x)
			y := make([]float32, n)
			DequantizeRow(y, q, dt)
			for b := 0; b < n/32; b++ {
				var amax float64
				for _, v := range x[b*32 : (b+1)*32] {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				d, qmax, step := amax/127, 127.0, 0.5
				if dt == format.Q4_0 {
					// Q4_0 maps the largest magnitude to −8 steps; the opposite end
					// (+8 steps) is clipped to +7, so the bound is one full step.
					d, qmax, step = amax/8, 8, 1
				}
				// fp16 rounds d by half an ulp: 2^-11 relative, or 2^-25 absolute below 2^-14 (subnormal).
				bound := step*d*(1+1e-6) + qmax*math.Max(d*math.Pow(2, -11), math.Pow(2, -25)) + 1e-30
				for i := b * 32; i < (b+1)*32; i++ {
					if e := math.Abs(float64(x[i] - y[i])); e > bound {
						t.Fatalf("%v n=%d [%d]: %g → %g, error %g > bound %g", dt, n, i, x[i], y[i], e, bound)
					}
				}
			}
		}
	}
}

func TestQuantKernelsMatchReference(t *testing.T) {
	forTables(t, testQuantKernelsMatchReference)
}

func testQuantKernelsMatchReference(t *testing.T, _ *Table) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
		for _, n := range []int{32, 64, 96, 256, 2048} {
			q, wf := randRow(rng, dt, n)
			x := randVec(rng, n)
			ref := dotQ80Ref
			aref := axpyQ80Ref
			if dt == format.Q4_0 {
				ref, aref = dotQ40Ref, axpyQ40Ref
			}
			got, want := Dot(q, dt, x), ref(q, x)
			if d := math.Abs(float64(got - want)); d > tol(wf, x) {
				t.Errorf("%v dot n=%d: fast %g reference %g", dt, n, got, want)
			}
			y1 := randVec(rng, n)
			y2 := append([]float32(nil), y1...)
			Axpy(y1, -0.7, q, dt)
			aref(y2, -0.7, q)
			for i := range y1 {
				if d := math.Abs(float64(y1[i] - y2[i])); d > 1e-6*(1+math.Abs(float64(y2[i]))) {
					t.Fatalf("%v axpy n=%d [%d]: %g vs %g", dt, n, i, y1[i], y2[i])
				}
			}
			// The dot against the dequantised row in float64 agrees too.
			var exact float64
			for i := range x {
				exact += float64(wf[i]) * float64(x[i])
			}
			if d := math.Abs(float64(got) - exact); d > tol(wf, x) {
				t.Errorf("%v dot n=%d: %g vs dequantised %g", dt, n, got, exact)
			}
		}
	}
}

// TestIntegerDotsMatchReference: the Q8-activation integer dots, fast path
// against reference exactly (integer sums; one float product per block),
// and both within the activation quantisation error of the float dot.
func TestIntegerDotsMatchReference(t *testing.T) {
	defer Use(Active().WithIntegerPath(true))()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0} {
		for _, n := range []int{32, 64, 256, 2048} {
			q, _ := randRow(rng, dt, n)
			x := randVec(rng, n)
			var a Q8Act
			QuantizeAct(&a, x, dt)
			ref := dotQ80Q8Ref
			if dt == format.Q4_0 {
				ref = dotQ40Q8Ref
			}
			got, want := DotQ8Act(q, dt, &a), ref(q, &a)
			if d := math.Abs(float64(got - want)); d > 1e-5*(1+math.Abs(float64(want))) {
				t.Errorf("%v n=%d: fast %g reference %g", dt, n, got, want)
			}
			// Against the float dot: each activation moves by ≤ d_x/2.
			wf := make([]float32, n)
			DequantizeRow(wf, q, dt)
			var exact, bound float64
			for i := range x {
				exact += float64(wf[i]) * float64(x[i])
				bound += math.Abs(float64(wf[i])) * float64(a.D[i/32]) / 2
			}
			if d := math.Abs(float64(got) - exact); d > bound*1.01+1e-5 {
				t.Errorf("%v n=%d: integer dot %g vs float %g, |Δ| %g > %g", dt, n, got, exact, d, bound)
			}
		}
	}
}

// TestIntegerPathMatVecAndFFN runs MatMul and FFNRecords over Q4_0/Q8_0
// weights on the integer path, with the fast kernels and with the
// references, for widths of whole 16-block chunks, one with a tail of
// blocks after the last chunk, and one with an odd number of blocks;
// one token (decode: four records at a time) and two. The down projection
// in float: the int8 one rounds each group of records with one scale, so
// its sums depend on where the groups fall (TestAxpy8ActMatchesReference
// tests its kernels, runner's TestFastAndGenericKernelsAgree its FFN).
func TestIntegerPathMatVecAndFFN(t *testing.T) {
	defer Use(Active().WithIntegerPath(true).WithInt8Down(false))()
	rng := rand.New(rand.NewPCG(17, 18))
	p := NewPool(2)
	defer p.Close()
	for _, dt := range []format.DType{format.Q4_0, format.Q8_0} {
		for _, c := range []struct{ H, T int }{{512, 2}, {544, 2}, {2048, 2}, {96, 2}, {512, 1}, {544, 1}, {2048, 1}, {512, 5}, {2048, 4}, {512, 30}, {576, 25}} {
			H, T := c.H, c.T
			const rows, records = 40, 23
			wb, _ := randRow(rng, dt, rows*H)
			w := &Weight{Data: wb, DType: dt, Rows: rows, Cols: H}
			ffn, _ := randRow(rng, dt, records*3*H)
			x := randVec(rng, T*H)
			run := func() ([]float32, []float32) {
				out := make([]float32, T*rows)
				MatMul(p, out, w, x)
				y := make([]float32, T*H)
				// Two blocks of records, split off the group-of-four boundary.
				rb, _ := dt.RowBytes(H)
				FFNRecords(p, y, recordBlocks(dt, H, format.Interleaved, ffn[:10*3*rb], ffn[10*3*rb:]), dt, H, x, nil)
				return out, y
			}
			out, y := run()
			// Every band layout gives the interleaved records' sums to the
			// bit on one thread (the tiled one through AxpyTiles where the
			// table has it); with more, a decode's chunks end at a tiled
			// block's end, so the partial sums are added in other groups.
			rb, _ := dt.RowBytes(H)
			p1 := NewPool(1)
			y1 := make([]float32, T*H)
			FFNRecords(p1, y1, recordBlocks(dt, H, format.Interleaved, ffn[:10*3*rb], ffn[10*3*rb:]), dt, H, x, nil)
			for _, l := range []format.Layout{format.Pairs, format.Runs, format.Tiled} {
				y2 := make([]float32, T*H)
				FFNRecords(p1, y2, recordBlocks(dt, H, l, ffn[:10*3*rb], ffn[10*3*rb:]), dt, H, x, nil)
				if !slices.Equal(y1, y2) {
					t.Fatalf("%v H=%d T=%d: layout %d gives another FFN than interleaved records", dt, H, T, l)
				}
			}
			if T == 1 {
				// Tiled views that start inside their blocks (First > 0: a
				// zero record before each) sum the same.
				inside := func(recs []byte) format.RecordBlock {
					b := recordBlocks(dt, H, format.Tiled, append(make([]byte, 3*rb), recs...))[0]
					return b.Sub(1, b.N)
				}
				views := []format.RecordBlock{inside(ffn[:10*3*rb]), inside(ffn[10*3*rb:])}
				yf := make([]float32, H)
				FFNRecords(p1, yf, views, dt, H, x, nil)
				if !slices.Equal(y1[:H], yf) {
					t.Fatalf("%v H=%d: tiled views from their blocks' second record differ", dt, H)
				}
			}
			p1.Close()
			restore := Use(referenceOf(Active()))
			wantOut, wantY := run()
			restore()
			// Outputs are sums of many large terms that cancel; the float
			// rounding of the two paths is relative to their typical size.
			rms := func(v []float32) float64 {
				var s float64
				for _, x := range v {
					s += float64(x) * float64(x)
				}
				return math.Sqrt(s / float64(len(v)))
			}
			tolOut, tolY := 1e-5*rms(wantOut), 1e-5*rms(wantY)
			for i := range out {
				if d := math.Abs(float64(out[i] - wantOut[i])); d > tolOut {
					t.Fatalf("%v H=%d T=%d matvec [%d]: fast %g reference %g", dt, H, T, i, out[i], wantOut[i])
				}
			}
			for i := range y {
				if d := math.Abs(float64(y[i] - wantY[i])); d > tolY {
					t.Fatalf("%v H=%d T=%d FFN [%d]: fast %g reference %g", dt, H, T, i, y[i], wantY[i])
				}
			}
		}
	}
}

// TestFFNDecodeQ40Float64: the one-token Q4_0 FFN (four records at a time,
// records across two blocks, 1 and 2 workers) on the float path against
// float64 over the dequantised weights.
func TestFFNDecodeQ40Float64(t *testing.T) {
	defer Use(Active().WithIntegerPath(false))()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ H, records, threads int }{{512, 23, 1}, {512, 23, 2}, {2048, 9, 2}, {96, 6, 1}} {
		H := c.H
		ffn, f := randRow(rng, format.Q4_0, c.records*3*H)
		x := randVec(rng, H)
		rb, _ := format.Q4_0.RowBytes(H)
		split := min(5, c.records) * 3 * rb
		p := NewPool(c.threads)
		y := make([]float32, H)
		act := make([]float32, c.records)
		FFNRecords(p, y, recordBlocks(format.Q4_0, H, format.Pairs, ffn[:split], ffn[split:]), format.Q4_0, H, x, act)
		p.Close()
		want := make([]float64, H)
		var rms float64
		for j := 0; j < c.records; j++ {
			rec := f[j*3*H : (j+1)*3*H]
			var g, u float64
			for i := 0; i < H; i++ {
				g += float64(rec[i]) * float64(x[i])
				u += float64(rec[H+i]) * float64(x[i])
			}
			h := g / (1 + math.Exp(-g)) * u
			if d := math.Abs(float64(act[j]) - h); d > 1e-4*(1+math.Abs(h)) {
				t.Fatalf("H=%d record %d: activation %g, want %g", H, j, act[j], h)
			}
			for i := 0; i < H; i++ {
				want[i] += h * float64(rec[2*H+i])
			}
		}
		for _, v := range want {
			rms += v * v
		}
		rms = math.Sqrt(rms / float64(H))
		for i := range y {
			if d := math.Abs(float64(y[i]) - want[i]); d > 1e-5*rms {
				t.Fatalf("H=%d threads=%d [%d]: %g, want %g", H, c.threads, i, y[i], want[i])
			}
		}
	}
}

// TestMatMulSharedEqualsMatMul: several weights over one input, quantised
// once, give exactly what one MatMul per weight gives (integer path; BF16
// prefill GEMM, the input rounded once), and the float path (and mixed
// dtypes) falls back to MatMul.
func TestMatMulSharedEqualsMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	p := NewPool(2)
	defer p.Close()
	for _, intDot := range []bool{true, false} {
		restore := Use(Active().WithIntegerPath(intDot))
		defer restore()
		for _, dts := range [][3]format.DType{{format.Q4_0, format.Q4_0, format.Q4_0}, {format.Q8_0, format.Q8_0, format.Q8_0}, {format.Q4_0, format.BF16, format.Q4_0},
			{format.BF16, format.BF16, format.BF16}} {
			const H = 512
			T := 3
			if dts[0] == format.BF16 {
				T = 26 // the prefill GEMM, x rounded to BF16 once for all three
			}
			rows := []int{37, 8, 8}
			var ws []*Weight
			var outs, wants [][]float32
			for i, dt := range dts {
				wb, _ := randRow(rng, dt, rows[i]*H)
				ws = append(ws, &Weight{Data: wb, DType: dt, Rows: rows[i], Cols: H})
				outs = append(outs, make([]float32, T*rows[i]))
				wants = append(wants, make([]float32, T*rows[i]))
			}
			x := randVec(rng, T*H)
			MatMulShared(p, outs, ws, x)
			for i, w := range ws {
				MatMul(p, wants[i], w, x)
				if !slices.Equal(outs[i], wants[i]) {
					t.Fatalf("integer %v, %v: weight %d differs from its own MatMul", intDot, dts, i)
				}
			}
		}
	}
}

// TestQuantizeActRoundsAsMathRound: the activation quantiser rounds half
// away from zero (math.Round) on random blocks and on exact halves, and its
// block sums and four-block (Quad) layout agree with the values.
func TestQuantizeActRoundsAsMathRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	x := randVec(rng, 4*format.QK)
	// Block 1: 127 sets d = 1, so these land exactly on halves.
	for i, v := range []float32{127, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 63.5, -126.5, 0.49999997} {
		x[format.QK+i] = v
	}
	var a Q8Act
	QuantizeAct(&a, x, format.Q8_0)
	for b := 0; b < 4; b++ {
		xs := x[b*format.QK : (b+1)*format.QK]
		d := absMax(xs) / 127
		var s int32
		for i, v := range xs {
			want := int8(math.Round(float64(v * (1 / d))))
			if a.Q[b*format.QK+i] != want {
				t.Fatalf("block %d [%d]: %g quantised to %d, math.Round gives %d", b, i, v, a.Q[b*format.QK+i], want)
			}
			s += int32(want)
		}
		if a.S[b] != s || a.D[b] != d {
			t.Fatalf("block %d: sum %d scale %g, want %d %g", b, a.S[b], a.D[b], s, d)
		}
	}
	g := quadLayout(nil, a.Q)
	for k := 0; k < 4; k++ {
		for i := 0; i < 16; i++ {
			if int8(g[16*k+i]) != a.Q[k*format.QK+i] || int8(g[64+16*k+i]) != a.Q[k*format.QK+16+i] {
				t.Fatalf("quad layout differs at block %d, %d", k, i)
			}
		}
	}
	for i := 0; i < 16; i++ {
		k, j := i/4, 4*(i%4)
		var s int32
		for _, v := range append(slices.Clone(a.Q[k*format.QK+j:k*format.QK+j+4]), a.Q[k*format.QK+16+j:k*format.QK+16+j+4]...) {
			s += int32(v)
		}
		if got := int32(binary.LittleEndian.Uint32(g[128+4*i:])); got != -8*s {
			t.Fatalf("quad offset %d: %d, want %d", i, got, -8*s)
		}
	}
}

// TestQuantizeMatchesReference: every table's Quantize gives the
// reference's codes, scales and sums value for value: random blocks, a
// zero block, values landing on halves (d = 1), just below a half, and
// large and tiny magnitudes.
func TestQuantizeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const nb = 70
	x := randVec(rng, nb*format.QK)
	clear(x[2*format.QK : 3*format.QK]) // block 2: d = 0
	for i, v := range []float32{127, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 63.5, -126.5, 0.49999997, -0.49999997, 126.49999, -0} {
		x[3*format.QK+i] = v // block 3: d = 1
	}
	for i := 0; i < format.QK; i++ {
		x[4*format.QK+i] = float32(rng.NormFloat64()) * 1e30 // block 4: large
		x[5*format.QK+i] = float32(rng.NormFloat64()) * 1e-30
	}
	want := struct {
		q []int8
		d []float32
		s []int32
	}{make([]int8, len(x)), make([]float32, nb), make([]int32, nb)}
	quantizeBlocksRef(want.q, want.d, want.s, x)
	for _, tb := range Tables() {
		q, d, s := make([]int8, len(x)), make([]float32, nb), make([]int32, nb)
		tb.Quantize(q, d, s, x)
		for b := 0; b < nb; b++ {
			if d[b] != want.d[b] || s[b] != want.s[b] {
				t.Fatalf("%s block %d: scale %g sum %d, reference %g %d", tb.Name, b, d[b], s[b], want.d[b], want.s[b])
			}
			for i := b * format.QK; i < (b+1)*format.QK; i++ {
				if q[i] != want.q[i] {
					t.Fatalf("%s block %d [%d]: %g quantised to %d, reference %d", tb.Name, b, i%format.QK, x[i], q[i], want.q[i])
				}
			}
		}
	}
}

// BenchmarkQuantize: one 2048-wide activation vector, the active table;
// Quad adds the layout the Q4_0 VNNI kernels read.
func BenchmarkQuantize(b *testing.B)     { benchQuantize(b, false) }
func BenchmarkQuantizeQuad(b *testing.B) { benchQuantize(b, true) }

func benchQuantize(b *testing.B, quad bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := randVec(rng, 2048)
	var a Q8Act
	b.SetBytes(4 * int64(len(x)))
	for i := 0; i < b.N; i++ {
		quantizeAct(&a, x, quad)
	}
}

// TestAxpy8ActMatchesReference: every table's int8 down projection
// (Ops.Axpy8Act) computes axpy8Q40ActRef's arithmetic (up to the last bit
// of a fused multiply-add), over whole chunks, a tail of blocks, and rows
// whose coefficients span orders of magnitude (the small ones round
// coarsest) or are zero.
func TestAxpy8ActMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	coefs := [][8]float32{
		{0.5, -1.25, 3, -0.01, 0.7, -0.2, 1e-3, 2},
		{1e-4, -3e-6, 40, 0, -0.5, 1, 1e-9, -8},
		{},
	}
	tested := 0
	for _, tb := range Tables() {
		for _, dt := range []format.DType{format.Q4_0, format.Q8_0, format.Q4_K} {
			axpy8 := tb.Ops(dt).Axpy8Act
			if axpy8 == nil {
				continue
			}
			tested++
			for _, nb := range []int{1, 8, 16, 64, 80} {
				n := nb * dt.BlockElems()
				var w [8][]byte
				for r := range w {
					w[r], _ = randRow(rng, dt, n)
				}
				for _, a := range coefs {
					y1 := randVec(rng, n)
					y2 := append([]float32(nil), y1...)
					axpy8(y1, &a, &w)
					axpy8ActRef(dt)(y2, &a, &w)
					for i := range y1 {
						if y1[i] != y2[i] && math.Abs(float64(y1[i]-y2[i])) > 1e-7*math.Abs(float64(y2[i])) {
							t.Fatalf("%s %v nb=%d a=%v [%d]: %g vs reference %g", tb.Name, dt, nb, a, i, y1[i], y2[i])
						}
					}
				}
			}
		}
	}
	t.Logf("%d table × dtype pair(s) with an int8 down projection", tested)
}

// TestAxpy8ActRefBound: the reference stays within the rounding it states
// of the exact sum Σ_r a[r]·w[r]: per block, half its scale s = max_r
// |a[r]·d_r|/127 per unit of |q − 8| per row.
func TestAxpy8ActRefBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const nb = 8
	n := nb * format.QK
	for _, c := range []struct {
		dt  format.DType
		ref func([]float32, *[8]float32, *[8][]byte)
	}{{format.Q4_0, axpy8Q40ActRef}, {format.Q8_0, axpy8Q80ActRef}} {
		bb, _ := c.dt.RowBytes(format.QK) // a block's bytes
		var w [8][]byte
		var wf [8][]float32
		for r := range w {
			w[r], wf[r] = randRow(rng, c.dt, n)
		}
		a := [8]float32{0.5, -1.25, 3, -0.01, 0.7, -0.2, 1e-3, 2}
		y := make([]float32, n)
		c.ref(y, &a, &w)
		for b := 0; b < nb; b++ {
			m := 0.0
			for r := range w {
				d := float64(F16ToF32(uint16(w[r][b*bb]) | uint16(w[r][b*bb+1])<<8))
				m = max(m, math.Abs(float64(a[r])*d))
			}
			s := m / 127
			for i := b * format.QK; i < (b+1)*format.QK; i++ {
				exact, bound := 0.0, 1e-6*math.Abs(float64(y[i]))
				for r := range w {
					exact += float64(a[r]) * float64(wf[r][i])
					d := float64(F16ToF32(uint16(w[r][b*bb]) | uint16(w[r][b*bb+1])<<8))
					bound += s / 2 * math.Abs(float64(wf[r][i])/d)
				}
				if diff := math.Abs(float64(y[i]) - exact); diff > bound {
					t.Fatalf("%v [%d]: %g, exact %g: off by %g, bound %g", c.dt, i, y[i], exact, diff, bound)
				}
			}
		}
	}
}
