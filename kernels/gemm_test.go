package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// TestMatMulPrefill: MatMul over many tokens (the prefill GEMM where the
// table has one: whole groups of 4 rows × 6 tokens in the micro-kernel,
// column blocks of 512 or panels of the whole width, the ragged rows and
// tokens through the tiles)
// against float64 over the dequantised weights and the activations as the
// weights meet them (rounded to BF16 where the BF16 GEMM takes VDPBF16PS),
// within the float32 rounding bound of a sum of n products, for every
// dtype and table.
func TestMatMulPrefill(t *testing.T) {
	forTables(t, func(t *testing.T, tb *Table) {
		rng := rand.New(rand.NewPCG(31, 32))
		p := NewPool(2)
		defer p.Close()
		for _, dt := range []format.DType{format.F32, format.BF16, format.F16, format.Q8_0, format.Q4_0} {
			for _, c := range []struct{ rows, cols, T int }{{8, 64, 24}, {13, 544, 29}, {4, 1056, 36}, {37, 512, 25}, {3, 96, 30}, {64, 2048, 31}, {9, 64, 7},
				// Wider than a default block of panels holds (its storage grows).
				{4, 40960, 24}} {
				wb, wf := randRow(rng, dt, c.rows*c.cols)
				w := &Weight{Data: wb, DType: dt, Rows: c.rows, Cols: c.cols}
				x := randVec(rng, c.T*c.cols)
				xw := roundedActs(tb, dt, x, c.rows, c.cols, c.T) // what the weights meet
				out := make([]float32, c.T*c.rows)
				MatMul(p, out, w, x)
				for tok := 0; tok < c.T; tok++ {
					xt := xw[tok*c.cols : (tok+1)*c.cols]
					for r := 0; r < c.rows; r++ {
						wr := wf[r*c.cols : (r+1)*c.cols]
						var exact float64
						for i := range xt {
							exact += float64(wr[i]) * float64(xt[i])
						}
						bound := tol(wr, xt)
						if tb.Ops(dt).ActDot {
							bound = 1e9 // the integer path rounds activations: TestIntegerDotsMatchReference bounds it
						}
						if d := math.Abs(float64(out[tok*c.rows+r]) - exact); d > bound {
							t.Fatalf("%v %dx%d T=%d [t %d, r %d]: %g, want %g (|Δ| %g > %g)", dt, c.rows, c.cols, c.T, tok, r, out[tok*c.rows+r], exact, d, bound)
						}
					}
				}
			}
		}
	})
}

// TestRoundBF16MatchesReference: every table's RoundBF16 is F32ToBF16 bit
// for bit (ties to even, subnormals kept, NaN quiet with its sign,
// infinities), with and without the float32 copy, over lengths with and
// without a tail.
func TestRoundBF16MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001), math.Float32frombits(0x7f800001),
		math.Float32frombits(0x00000001), math.Float32frombits(0x80008000), math.Float32frombits(0x3f808000),
		math.Float32frombits(0x3f818000), math.Float32frombits(0x7f7fffff), math.Float32frombits(0x3f80ffff)}
	tested := 0
	for _, tb := range Tables() {
		if tb.Gemm == nil || tb.Gemm.RoundBF16 == nil {
			continue
		}
		tested++
		for _, n := range []int{16, 37, 256, 1000} {
			x := make([]float32, n)
			for i := range x {
				if i < len(special) && n > 16 {
					x[i] = special[i]
					continue
				}
				x[i] = math.Float32frombits(rng.Uint32())
			}
			want, wantR := make([]uint16, n), make([]float32, n)
			roundBF16Ref(want, wantR, x)
			got, gotR := make([]uint16, n), make([]float32, n)
			tb.Gemm.RoundBF16(got, gotR, x)
			only := make([]uint16, n)
			tb.Gemm.RoundBF16(only, nil, x)
			for i := range x {
				if got[i] != want[i] || only[i] != want[i] || math.Float32bits(gotR[i]) != math.Float32bits(wantR[i]) {
					t.Fatalf("%s, n %d: x[%d] = %#08x: got %#04x (%#04x without xr), %#08x, want %#04x, %#08x", tb.Name, n, i,
						math.Float32bits(x[i]), got[i], only[i], math.Float32bits(gotR[i]), want[i], math.Float32bits(wantR[i]))
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no table with a RoundBF16 kernel on this CPU")
	}
}

// TestPanelFoldMatchesTile: a panel tile (rows packed, accumulators from
// zero and folded in registers) gives the sums of Tile over the same rows
// folded by Fold, bit for bit (the same products in the same lanes, the
// same order of the fold), for every table with a Panel and for PanelF16
// against its rows widened. (A wrong lane order in the fold fails it.)
func TestPanelFoldMatchesTile(t *testing.T) {
	tested := 0
	for _, tb := range Tables() {
		g := tb.Gemm
		if g == nil || g.Panel == nil {
			continue
		}
		tested++
		rng := rand.New(rand.NewPCG(13, 14))
		for _, n := range []int{64, 320, 2048} {
			var rows [4][]float32
			var rowsF16 [4][]uint16
			var wp [4]*float32
			for i := range rows {
				rowsF16[i] = make([]uint16, n)
				rows[i] = make([]float32, n)
				for c := range rows[i] {
					rowsF16[i][c] = F32ToF16(float32(rng.NormFloat64()))
					rows[i][c] = F16ToF32(rowsF16[i][c])
				}
				wp[i] = &rows[i][0]
			}
			var xp [6]*float32
			for j := range xp {
				xp[j] = &randVec(rng, n)[0]
			}
			var acc [24][16]float32
			var want, got [24]float32
			g.Tile(&wp, &xp, n, &acc)
			g.Fold(&acc, &want)
			panel := make([]float32, 4*n)
			packWidePanel(panel, make([]float32, n), tb.Ops(format.F32), func(r int) []byte { return f32Bytes(rows[r]) }, 0, n)
			g.Panel(&panel[0], &xp, n, &got)
			check := func(what string) {
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %s, n %d: out[%d] = %v, Tile and Fold give %v", tb.Name, what, n, i, got[i], want[i])
					}
				}
			}
			check("Panel")
			if g.PanelF16 != nil {
				p16 := make([]uint16, 4*n)
				packF16Panel(p16, func(r int) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&rowsF16[r][0])), 2*n) }, 0, n)
				got = [24]float32{}
				g.PanelF16(&p16[0], &xp, n, &got)
				check("PanelF16")
				if g.PackF16 != nil {
					var w16 [4]*uint16
					for i := range w16 {
						w16[i] = &rowsF16[i][0]
					}
					written := make([]uint16, 4*n)
					got = [24]float32{}
					g.PackF16(&w16, &written[0], &xp, n, &got)
					check("PackF16")
					if !slices.Equal(written, p16) {
						t.Fatalf("%s, n %d: PackF16 wrote a panel other than packF16Panel's", tb.Name, n)
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no table with a Panel tile")
	}
}

// TestFoldMatchesReference: every table's Fold sums all 16 lanes of each
// accumulator (as hsum24Ref does, within float32 reassociation), on
// accumulators with every lane set — tiles that fill fewer lanes leave the
// rest zero, which would hide a fold that skips them.
func TestFoldMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tb := range Tables() {
		if tb.Gemm == nil {
			continue
		}
		var acc [24][16]float32
		for i := range acc {
			for l := range acc[i] {
				acc[i][l] = float32(rng.NormFloat64())
			}
		}
		var got, want [24]float32
		tb.Gemm.Fold(&acc, &got)
		hsum24Ref(&acc, &want)
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-5 {
				t.Fatalf("%s: out[%d] = %g, reference %g", tb.Name, i, got[i], want[i])
			}
		}
	}
}
