package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// TestDotRowsIsDotARow: a table's DotRows gives every row the value its
// Dot gives that row, to the bit (a matrix's rows for one token go
// through it, and a row's value must not depend on the path), for widths
// its kernel takes (multiples of 64) and others; and MatMul of one token
// gives the same.
func TestDotRowsIsDotARow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tested := 0
	for _, tb := range Tables() {
		for _, dt := range []format.DType{format.BF16, format.F16} {
			ops := tb.Ops(dt)
			if ops.DotRows == nil {
				continue
			}
			tested++
			for _, n := range []int{64, 2048, 72, 192} {
				for _, rows := range []int{1, 3, 17} {
					w := make([]byte, 0, rows*2*n)
					for range rows {
						b, _ := randRow(rng, dt, n)
						w = append(w, b...)
					}
					x := randVec(rng, n)
					got := make([]float32, rows)
					ops.DotRows(got, w, x)
					for r := range rows {
						if want := ops.Dot(w[2*n*r:2*n*(r+1)], x); got[r] != want {
							t.Fatalf("%s %v n=%d rows=%d: row %d DotRows %g, Dot %g", tb.Name, dt, n, rows, r, got[r], want)
						}
					}
					// MatMul of the one token, with this table active,
					// over the pool's row ranges.
					restore := Use(tb)
					mm := make([]float32, rows)
					pool := NewPool(2)
					MatMul(pool, mm, &Weight{Data: w, DType: dt, Rows: rows, Cols: n}, x)
					pool.Close()
					restore()
					for r := range rows {
						if mm[r] != got[r] {
							t.Fatalf("%s %v n=%d rows=%d: row %d MatMul %g, DotRows %g", tb.Name, dt, n, rows, r, mm[r], got[r])
						}
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Log("no table on this CPU has DotRows")
	}
}
