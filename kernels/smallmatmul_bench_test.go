package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkSmallMatMul times a decode step's router (runner's --select
// router): z = U·x, then the groups' scores V·z, U and V in Q8_0, one
// token, cache-hot, on a pool of two and of one — the shapes of the tiny
// model (H 256, rank 32, 96 groups) and of a 1B model (H 2048, rank 64, 64
// and 256 groups). Matvecs of at most matInline bytes run on the calling
// goroutine alone (runRows), so the two pools' figures meet there.
func BenchmarkSmallMatMul(b *testing.B) {
	for _, sh := range [][3]int{{256, 32, 96}, {2048, 64, 64}, {2048, 64, 256}} {
		H, r, g := sh[0], sh[1], sh[2]
		rng := rand.New(rand.NewPCG(1, 2))
		ud, _ := randRow(rng, format.Q8_0, r*H)
		vd, _ := randRow(rng, format.Q8_0, g*r)
		U := &Weight{Data: ud, DType: format.Q8_0, Rows: r, Cols: H}
		V := &Weight{Data: vd, DType: format.Q8_0, Rows: g, Cols: r}
		x := randVec(rng, H)
		z, sc := make([]float32, r), make([]float32, g)
		for _, threads := range []int{2, 1} {
			p := NewPool(threads)
			b.Run(fmt.Sprintf("H%d-r%d-g%d-threads%d", H, r, g, threads), func(b *testing.B) {
				for range b.N {
					MatMul(p, z, U, x)
					MatMul(p, sc, V, z)
				}
			})
			p.Close()
		}
	}
}
