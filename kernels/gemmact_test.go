package kernels

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// panelDTypes are the dtypes with an integer GEMM tile.
var panelDTypes = []format.DType{format.Q4_0, format.Q8_0, format.Q4_K, format.Q6_K}

// panelCases are the shapes the tile tests take for dt (a K-quant's rows
// are whole super-blocks).
func panelCases(dt format.DType) []struct{ rows, cols, T int } {
	if dt.KQuant() {
		return []struct{ rows, cols, T int }{{16, 256, 8}, {16, 2048, 20}, {37, 512, 13}, {5, 768, 3}, {48, 256, 17}}
	}
	return []struct{ rows, cols, T int }{{16, 64, 8}, {16, 2048, 20}, {37, 512, 13}, {5, 96, 3}, {48, 256, 17}}
}

// TestPanelActMatchesReference: every table's integer GEMM tile against
// panelActRef on the same packed panel and tiles, and gemmActRows (packing,
// tiles, the tile and the rows after the last whole panel) against the
// reference dot of every row with every token's activations, for Q4_0,
// Q8_0, Q4_K and Q6_K, token counts that leave the last tile short, and
// rows that leave a panel short.
func TestPanelActMatchesReference(t *testing.T) {
	ran := false
	for _, tb := range Tables() {
		for _, dt := range panelDTypes {
			ops := tb.Ops(dt)
			if ops.PanelAct == nil {
				continue
			}
			ran = true
			rng := rand.New(rand.NewPCG(41, 42))
			for _, c := range panelCases(dt) {
				wb, _ := randRow(rng, dt, c.rows*c.cols)
				rb, _ := dt.RowBytes(c.cols)
				row := func(r int) []byte { return wb[r*rb : (r+1)*rb] }
				x := randVec(rng, c.T*c.cols)
				acts := quantizeTokens(nil, ops, x, c.cols, c.T)
				var tiles ActTiles
				buildActTiles(&tiles, acts, dt, ops.PanelSigned)
				nb := c.cols / format.QK
				panel := make([]byte, nb*panelBytes(dt))

				// The tile against its reference, on the first panel.
				packPanel(panel, dt, row, min(c.rows, panelRows), nb, ops.PanelSigned)
				for k := 0; k < tiles.Tiles(); k++ {
					var got, want [panelRows * panelToks]float32
					ops.PanelAct(panel, &tiles, k, &got)
					panelActRef(panel, &tiles, k, &want)
					for i := range got {
						if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
							t.Fatalf("%s %v %+v tile %d [t %d, r %d]: %g, reference %g", tb.Name, dt, c, k, i/panelRows, i%panelRows, got[i], want[i])
						}
					}
				}

				// The rows through gemmActRows against the reference dots.
				out := make([]float32, c.T*c.rows)
				gemmActRows(ops, dt, &tiles, acts, row, 0, c.rows, out, c.rows, panel)
				ref := Generic.Ops(dt).DotAct
				for tok := 0; tok < c.T; tok++ {
					for r := 0; r < c.rows; r++ {
						want := ref(row(r), &acts[tok])
						if d := math.Abs(float64(out[tok*c.rows+r] - want)); d > 1e-4*(1+math.Abs(float64(want))) {
							t.Fatalf("%s %v %+v [t %d, r %d]: %g, reference dot %g", tb.Name, dt, c, tok, r, out[tok*c.rows+r], want)
						}
					}
				}
			}
		}
	}
	if !ran {
		t.Skip("no table of this CPU has the integer GEMM tile (AVX-512 VNNI, arm64 SDOT)")
	}
}

// TestPanelLayouts: both panel layouts (unsigned for VPDPBUSD, signed for
// SDOT) with their tiles give, through panelActRef, the reference dot of
// every row with every token, on any CPU (the tiles' kernels are checked
// against panelActRef above where the CPU has them).
func TestPanelLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, cols, T = 16, 512, 11
	for _, dt := range panelDTypes {
		ops := Generic.Ops(dt)
		wb, _ := randRow(rng, dt, rows*cols)
		rb, _ := dt.RowBytes(cols)
		row := func(r int) []byte { return wb[r*rb : (r+1)*rb] }
		acts := quantizeTokens(nil, ops, randVec(rng, T*cols), cols, T)
		nb := cols / format.QK
		for _, signed := range []bool{false, true} {
			var tiles ActTiles
			buildActTiles(&tiles, acts, dt, signed)
			panel := make([]byte, nb*panelBytes(dt))
			packPanel(panel, dt, row, rows, nb, signed)
			for k := 0; k < tiles.Tiles(); k++ {
				var got [panelRows * panelToks]float32
				panelActRef(panel, &tiles, k, &got)
				for tok := k * panelToks; tok < min(T, (k+1)*panelToks); tok++ {
					for r := 0; r < rows; r++ {
						want := ops.DotAct(row(r), &acts[tok])
						if v := got[(tok-k*panelToks)*panelRows+r]; math.Abs(float64(v-want)) > 1e-4*(1+math.Abs(float64(want))) {
							t.Fatalf("%v signed=%v [t %d, r %d]: %g, reference dot %g", dt, signed, tok, r, v, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkPackPanel: one 16-row panel of a 2048-wide matrix of each
// dtype with a panel, the integer GEMM tile's packing (reported per packed
// weight byte).
func BenchmarkPackPanel(b *testing.B) {
	for _, dt := range panelDTypes {
		b.Run(dt.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			const cols = 2048
			wb, _ := randRow(rng, dt, panelRows*cols)
			rb, _ := dt.RowBytes(cols)
			panel := make([]byte, cols/format.QK*panelBytes(dt))
			b.SetBytes(int64(len(wb)))
			for i := 0; i < b.N; i++ {
				packPanel(panel, dt, func(r int) []byte { return wb[r*rb : (r+1)*rb] }, panelRows, cols/format.QK, false)
			}
		})
	}
}

// TestPackRowMatchesReference: every table's PackRow writes what
// packRowRef (packRowKRef for the K-quants) writes, byte for byte, for each
// row place of a panel, every dtype with a panel, signed and unsigned, and
// touches nothing else.
func TestPackRowMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tested := 0
	for _, tb := range Tables() {
		for _, dt := range panelDTypes {
			fast := tb.Ops(dt).PackRow
			if fast == nil {
				continue
			}
			tested++
			ref, nbs := func(dst, w []byte, nb int, signed bool) { packRowRef(dst, w, dt, nb, signed) }, []int{1, 3, 64}
			if dt.KQuant() {
				ref, nbs = func(dst, w []byte, nb int, signed bool) { packRowKRef(dst, w, dt, nb, signed) }, []int{8, 24, 64}
			}
			for _, nb := range nbs {
				w, _ := randRow(rng, dt, nb*format.QK)
				for _, signed := range []bool{false, true} {
					for _, r := range []int{0, 5, panelRows - 1} {
						got, want := make([]byte, nb*panelBytes(dt)), make([]byte, nb*panelBytes(dt))
						for i := range got {
							got[i] = byte(rng.Uint32())
							want[i] = got[i]
						}
						fast(got[4*r:], w, nb, signed)
						ref(want[4*r:], w, nb, signed)
						if !bytes.Equal(got, want) {
							t.Fatalf("%s %v nb %d signed %v row %d: PackRow differs from the reference", tb.Name, dt, nb, signed, r)
						}
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no table with a PackRow kernel")
	}
}

// TestPackPanelMatchesReference: every table's whole-panel packing writes
// what packRowKRef writes row by row, byte for byte, signed and unsigned,
// the rows allocated apart (their distances any, some before row 0).
func TestPackPanelMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	tested := 0
	for _, tb := range Tables() {
		for _, dt := range panelDTypes {
			fast := tb.Ops(dt).PackPanel
			if fast == nil {
				continue
			}
			tested++
			for _, nb := range []int{8, 24, 64} {
				rows := make([][]byte, panelRows)
				for r := range rows {
					rows[r], _ = randRow(rng, dt, nb*format.QK)
				}
				row := func(r int) []byte { return rows[r] }
				for _, signed := range []bool{false, true} {
					got, want := make([]byte, nb*panelBytes(dt)), make([]byte, nb*panelBytes(dt))
					fast(got, row, nb, signed)
					for r := range rows {
						packRowKRef(want[4*r:], rows[r], dt, nb, signed)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("%s %v nb %d signed %v: PackPanel differs from packRowKRef", tb.Name, dt, nb, signed)
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no table with a PackPanel kernel")
	}
}

// BenchmarkPanelAct: each table's integer GEMM tile (16 rows × 8 tokens of
// a 2048-wide packed panel, from cache), in GOP/s (2 per weight and token).
func BenchmarkPanelAct(b *testing.B) {
	for _, tb := range Tables() {
		for _, dt := range panelDTypes {
			ops := tb.Ops(dt)
			if ops.PanelAct == nil {
				continue
			}
			b.Run(fmt.Sprintf("%s/%v", tb.Name, dt), func(b *testing.B) {
				const cols = 2048
				rng := rand.New(rand.NewPCG(3, 4))
				wb, _ := randRow(rng, dt, panelRows*cols)
				rb, _ := dt.RowBytes(cols)
				acts := quantizeTokens(nil, ops, randVec(rng, panelToks*cols), cols, panelToks)
				var tiles ActTiles
				buildActTiles(&tiles, acts, dt, ops.PanelSigned)
				nb := cols / format.QK
				panel := make([]byte, nb*panelBytes(dt))
				packPanel(panel, dt, func(r int) []byte { return wb[r*rb : (r+1)*rb] }, panelRows, nb, ops.PanelSigned)
				var out [panelRows * panelToks]float32
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ops.PanelAct(panel, &tiles, 0, &out)
				}
				b.ReportMetric(float64(b.N)*2*panelRows*panelToks*cols/b.Elapsed().Seconds()/1e9, "GOP/s")
			})
		}
	}
}
