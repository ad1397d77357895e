package kernels

import (
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
)

// referenceOf is the reference for tb: Generic with tb's choice of integer
// or float path per block type (the integer path rounds the activations,
// so a fast integer path is compared with the reference integer dots).
func referenceOf(tb *Table) *Table {
	c := Generic
	for _, dt := range []format.DType{format.Q8_0, format.Q4_0, format.BF16} {
		c.ops[dt].ActDot = tb.ops[dt].ActDot
	}
	return &c
}

// forTables runs f once with every table this CPU can run active. Under
// -short (make test-arm64: qemu, whose soft floats run these tests 20-80×
// slower) it leaves out the generic table where a fast one is there: its
// Go is what the native suite runs, and the fast tables' are what only
// this CPU can.
func forTables(t *testing.T, f func(t *testing.T, tb *Table)) {
	tables := Tables()
	if testing.Short() && len(tables) > 1 {
		tables = tables[1:]
	}
	for _, tb := range tables {
		t.Run(tb.Name, func(t *testing.T) {
			defer Use(tb)()
			f(t, tb)
		})
	}
}

// TestGenericTableIsReference: every function in the generic table is a
// pure-Go reference (named …Ref), none a fast kernel or an adapter of one,
// and Generic is the first table. (Planting the AVX2 BF16 dot adapter in
// Generic makes it fail.)
func TestGenericTableIsReference(t *testing.T) {
	if Tables()[0] != &Generic && !strings.HasPrefix(Tables()[0].Name, "generic") {
		t.Fatalf("first table is %q, want generic", Tables()[0].Name)
	}
	check := func(where string, v reflect.Value) {
		if v.Kind() != reflect.Func || v.IsNil() {
			return
		}
		name := runtime.FuncForPC(v.Pointer()).Name()
		if !strings.HasPrefix(name, "github.com/sipack/sipack/kernels.") || !strings.HasSuffix(name, "Ref") {
			t.Errorf("generic table %s is %s, not a reference", where, name)
		}
	}
	for dt := range Generic.ops {
		v := reflect.ValueOf(Generic.ops[dt])
		for i := 0; i < v.NumField(); i++ {
			check(format.DType(dt).String()+"."+v.Type().Field(i).Name, v.Field(i))
		}
		if Generic.ops[dt].ActDot || Generic.ops[dt].Quad {
			t.Errorf("generic table %v takes the integer path: the reference is the float one", format.DType(dt))
		}
	}
	check("FMAPeak", reflect.ValueOf(Generic.FMAPeak))
	check("SumBytes", reflect.ValueOf(Generic.SumBytes))
	for _, dt := range []format.DType{format.F32, format.F16, format.BF16, format.Q8_0, format.Q4_0} {
		for _, tb := range Tables() {
			if o := tb.Ops(dt); o.Dot == nil || o.Axpy == nil || (o.ActDot && o.DotAct == nil) {
				t.Errorf("table %s, %v: Dot, Axpy (and DotQ8 on the integer path) must be set", tb.Name, dt)
			}
		}
	}
}

// TestUseSwapsTheWholeTable: after Use(&Generic) every operation the
// package dispatches is the reference, the prefill GEMM and the integer
// choice included (swapping variables one by one would leave those on the
// fast path).
func TestUseSwapsTheWholeTable(t *testing.T) {
	defer Use(&Generic)()
	if Active().Name != "generic" || IntegerPath(format.Q4_0) || IntegerPath(format.Q8_0) {
		t.Fatalf("after Use(&Generic): active %q, integer Q4_0 %v Q8_0 %v", Active().Name, IntegerPath(format.Q4_0), IntegerPath(format.Q8_0))
	}
	name := runtime.FuncForPC(reflect.ValueOf(Active().Ops(format.BF16).GemmDown).Pointer()).Name()
	if !strings.HasSuffix(name, "gemmDownBF16Ref") {
		t.Fatalf("after Use(&Generic) the BF16 prefill GEMM is %s", name)
	}
}

// TestBF16ActDots: the VDPBF16PS dots (where the CPU has them) equal the
// reference over the same rounded activations within the summation bound,
// on ragged widths; and the rounded path stays within the rounding bound of
// the exact dot: |Σ w·(x − bf16(x))| ≤ Σ|w·x|·2⁻⁸.
func TestBF16ActDots(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, tb := range Tables() {
		o := tb.Ops(format.BF16)
		if !o.ActBF16 || o.DotAct == nil || o.Dot2Act == nil {
			continue
		}
		for _, n := range []int{32, 64, 96, 128, 160, 2048, 2080, 40} {
			a, af := randRow(rng, format.BF16, n)
			b, bf := randRow(rng, format.BF16, n)
			next, _ := randRow(rng, format.BF16, 3*n)
			x := randVec(rng, n)
			var act Q8Act
			convertAct(&act, x, o)
			xr := make([]float32, n)
			for i := range xr {
				xr[i] = BF16ToF32(act.B[i])
			}
			var out [2]float32
			o.Dot2Act(a, b, &act, &out, next)
			for i, c := range []struct {
				got float32
				w   []byte
				wf  []float32
			}{{o.DotAct(a, &act), a, af}, {out[0], a, af}, {out[1], b, bf}} {
				want := dotBF16BRef(c.w, act.B)
				if d := math.Abs(float64(c.got - want)); d > tol(c.wf, xr) {
					t.Errorf("%s n=%d case %d: %g, reference %g", tb.Name, n, i, c.got, want)
				}
				exact, mag := 0.0, 0.0
				for k := range x {
					exact += float64(c.wf[k]) * float64(x[k])
					mag += math.Abs(float64(c.wf[k]) * float64(x[k]))
				}
				if d := math.Abs(float64(c.got) - exact); d > mag/256+tol(c.wf, xr) {
					t.Errorf("%s n=%d case %d: rounded %g vs exact %g beyond the BF16 bound", tb.Name, n, i, c.got, exact)
				}
			}
		}
	}
}

// TestDot4Act: the four-token integer dot of every table that has one
// equals DotAct token by token (the same integer sums; float sums in
// another order, so within 1e-5 of their magnitude), on widths with and
// without a tail after whole chunks of 16 blocks.
func TestDot4Act(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, tb := range Tables() {
		for _, dt := range []format.DType{format.Q4_0, format.Q8_0} {
			o := tb.Ops(dt)
			if o.Dot4Act == nil {
				continue
			}
			for _, n := range []int{512, 2048, 544, 64} {
				w, _ := randRow(rng, dt, n)
				var acts [4]Q8Act
				var a [4]*Q8Act
				for q := range acts {
					convertAct(&acts[q], randVec(rng, n), o)
					a[q] = &acts[q]
				}
				got := o.Dot4Act(w, a[0], a[1], a[2], a[3])
				for q := range acts {
					want := o.DotAct(w, &acts[q])
					if d := math.Abs(float64(got[q] - want)); d > 1e-5*(1+math.Abs(float64(want))) {
						t.Fatalf("%s %v n=%d token %d: %g, DotAct %g", tb.Name, dt, n, q, got[q], want)
					}
				}
			}
		}
	}
}

// TestWiden: every table's Widen writes each element exactly (16-bit to
// float32 is exact), over stale destination values, with tails.
func TestWiden(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, tb := range Tables() {
		for _, dt := range []format.DType{format.BF16, format.F16} {
			o := tb.Ops(dt)
			if o.Widen == nil {
				continue
			}
			for _, n := range []int{16, 40, 544, 2048} {
				w, wf := randRow(rng, dt, n)
				dst := randVec(rng, n) // stale values must be overwritten
				o.Widen(dst, w)
				for i := range dst {
					if dst[i] != wf[i] {
						t.Fatalf("%s %v n=%d [%d]: %g, want %g", tb.Name, dt, n, i, dst[i], wf[i])
					}
				}
			}
		}
	}
}

// TestSiLUMul: every table's silu(g)·u over pairs against float64, within
// 4 float32 ulps (expf's 1.7, the divide and the product), over ordinary
// values, the ends of exp's range and beyond, and lengths with a tail.
func TestSiLUMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 94))
	for _, tb := range Tables() {
		for _, n := range []int{16, 37, 512} {
			gu := make([]float32, 2*n)
			for i := range gu {
				gu[i] = float32(rng.NormFloat64() * 4)
			}
			for i, g := range []float32{0, -87.5, 88.8, -100, 100, 1e-8, -30} {
				if 2*i < len(gu) {
					gu[2*i] = g
				}
			}
			h := randVec(rng, n)
			tb.SiLUMul(h, gu)
			for i := range h {
				g, u := float64(gu[2*i]), float64(gu[2*i+1])
				want := g / (1 + math.Exp(-g)) * u
				if d := math.Abs(float64(h[i]) - want); d > 4*math.Abs(want)*(1.0/(1<<23))+1e-30 {
					t.Fatalf("%s n=%d [%d]: silu(%g)·%g = %g, want %g", tb.Name, n, i, g, u, h[i], want)
				}
			}
		}
	}
}

// TestSoftmax: Softmax on every table against float64, each probability
// within 4 float32 ulps of its value plus 1e-9 of the row's largest (the
// exponentials' 2 ulps, the sum's rounding, the final scale), over rows
// of 1 to 300 scores with a tail, a spread that sends some exponentials
// below the float32 range, and equal scores.
// TestLogSumExp: on every table, within 2e-6 of the float64 normaliser
// (log Σ e^x over the largest vocabularies, logits as spread as a model's).
func TestLogSumExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	for _, tb := range Tables() {
		restore := Use(tb)
		for _, n := range []int{1, 9, 4096, 128256} {
			for _, spread := range []float64{0.1, 3, 30} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64()*spread) + 5
				}
				m := math.Inf(-1)
				for _, v := range x {
					m = math.Max(m, float64(v))
				}
				var sum float64
				for _, v := range x {
					sum += math.Exp(float64(v) - m)
				}
				want := m + math.Log(sum)
				if got := LogSumExp(x); math.Abs(got-want) > 2e-6 {
					t.Fatalf("%s n=%d spread %g: %.9g, want %.9g", tb.Name, n, spread, got, want)
				}
			}
		}
		restore()
	}
}

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	for _, tb := range Tables() {
		restore := Use(tb)
		for _, n := range []int{1, 15, 16, 37, 300} {
			for _, spread := range []float64{1, 8, 60} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * spread)
				}
				if n > 3 {
					x[1], x[2] = x[0], x[0]
				}
				want := make([]float64, n)
				m := math.Inf(-1)
				for _, v := range x {
					m = math.Max(m, float64(v))
				}
				var sum float64
				for i, v := range x {
					want[i] = math.Exp(float64(v) - m)
					sum += want[i]
				}
				Softmax(x)
				for i := range x {
					w := want[i] / sum
					if d := math.Abs(float64(x[i]) - w); d > 4*w*(1.0/(1<<23))+1e-9 {
						t.Fatalf("%s n=%d spread %g [%d]: %g, want %g", tb.Name, n, spread, i, x[i], w)
					}
				}
			}
		}
		restore()
	}
}

// TestMaxScale: every table's Max and Scale against maxRef and scaleRef,
// over lengths around the kernels' 16 and 64 and the largest value placed
// first, last and in a tail.
func TestMaxScale(t *testing.T) {
	rng := rand.New(rand.NewPCG(97, 98))
	for _, tb := range Tables() {
		for _, n := range []int{1, 15, 16, 17, 63, 64, 65, 300} {
			for _, at := range []int{0, n - 1, n / 2} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64()*10 - 50)
				}
				x[at] = 7
				if got := tb.Max(x); got != 7 {
					t.Fatalf("%s n=%d max at %d: %g, want 7", tb.Name, n, at, got)
				}
				y := slices.Clone(x)
				tb.Scale(x, 0.37)
				scaleRef(y, 0.37)
				if !slices.Equal(x, y) {
					t.Fatalf("%s n=%d: Scale differs from scaleRef", tb.Name, n)
				}
			}
		}
	}
}

// TestAxpyTilesGapIsAxpyTiles: a table's Gap kernel (the tiled down
// projection of a sub-block, prefetching the next chunk's pieces) gives
// AxpyTiles' sums to the bit, for runs of a block at every offset and
// length short of the whole block. (Planting a Gap kernel that steps a
// piece too far makes it fail.)
func TestAxpyTilesGapIsAxpyTiles(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(31, 32))
		const H, B = 256, 24
		for _, dt := range []format.DType{format.BF16, format.F16, format.Q8_0, format.Q4_0} {
			ops := tb.Ops(dt)
			if ops.AxpyTilesGap == nil {
				continue
			}
			R, _ := dt.RowBytes(H)
			recs, _ := randRow(rng, dt, B*3*H)
			blk := format.PutBlock(make([]byte, B*3*R), recs, B, R, format.Tiled, format.TileBytes(dt), format.TileGroups{})
			T := blk.Tile
			for j0 := 0; j0 < B; j0 += 5 {
				for n := 1; j0+n <= B && n < B; n += 3 {
					h := randVec(rng, n)
					y0 := randVec(rng, H)
					want, got := slices.Clone(y0), slices.Clone(y0)
					o := (blk.First + j0) * T
					ops.AxpyTiles(want, h, blk.Down[o:], blk.TileCap*T)
					ops.AxpyTilesGap(got, h, blk.Down[o:], blk.TileCap*T)
					if !slices.Equal(got, want) {
						t.Fatalf("%v records [%d, %d) of %d: the Gap kernel's sums differ from AxpyTiles'", dt, j0, j0+n, B)
					}
				}
			}
		}
	})
}
