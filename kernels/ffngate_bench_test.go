package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkFFNGatedDRAM: one decode token's FFN of a Llama-3.2-1B-shape
// layer (H 2048, N 8192) at γ 0.7, 2 threads, from memory (copies of the
// layer cycled, about 1 GiB): "paper" computes 0.4·N contiguous records
// (the compact decode set), "gate" dots the gate rows of all 0.7·N and
// computes up and down for 0.25·N — the same bytes (SetBytes: φ's 0.4·N
// records for both, so MB/s compares their speed); "gates" is the gate
// dots and the choice alone (k = 0).
func BenchmarkFFNGatedDRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const H, N = 2048, 8192
	loaded, phi, k := 7*N/10, 4*N/10, N/4
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		rb, _ := dt.RowBytes(H)
		rec := 3 * rb
		n := max(2, (1<<30)/(loaded*rec))
		layer, _ := randRow(rng, dt, 64*3*H) // 64 distinct records, repeated
		copies := make([][]byte, n)
		for i := range copies {
			d := make([]byte, loaded*rec)
			for j := 0; j < loaded; j++ {
				copy(d[j*rec:(j+1)*rec], layer[(j%64)*rec:])
			}
			copies[i] = d
		}
		x := randVec(rng, H)
		for i := range x {
			x[i] /= float32(math.Sqrt(H))
		}
		y := make([]float32, H)
		p := NewPool(2)
		for _, v := range []struct {
			name string
			k    int
		}{{"paper", -1}, {"gate", k}, {"gates", 0}} {
			ga, ua := gateAhead, udAhead
			if e := os.Getenv("GA"); e != "" {
				fmt.Sscan(e, &gateAhead)
			}
			if e := os.Getenv("UA"); e != "" {
				fmt.Sscan(e, &udAhead)
			}
			defer func() { gateAhead, udAhead = ga, ua }()
			b.Run(fmt.Sprintf("%v-%s", dt, v.name), func(b *testing.B) {
				b.SetBytes(int64(phi * rec))
				for i := 0; i < b.N; i++ {
					c := copies[i%n]
					if v.k < 0 {
						FFNRecords(p, y, recordBlocks(dt, H, false, c[:phi*rec]), dt, H, x, nil)
					} else {
						FFNGated(p, y, recordBlocks(dt, H, false, c), dt, H, x, v.k, nil)
					}
				}
			})
		}
		// The gate rows alone, contiguous (a layout that kept them apart).
		gcopies := make([][]byte, 3*n)
		for i := range gcopies {
			gcopies[i] = make([]byte, loaded*rb)
			for j := 0; j < loaded; j++ {
				copy(gcopies[i][j*rb:(j+1)*rb], layer[(j%64)*rec:])
			}
		}
		b.Run(fmt.Sprintf("%v-gates-contiguous", dt), func(b *testing.B) {
			b.SetBytes(int64(phi * rec))
			ops := active.Ops(dt)
			var acts []Q8Act
			if ops.ActDot {
				acts = quantizeTokens(p, ops, x, H, 1)
			}
			g, keys := p.gateScratch(loaded)
			for i := 0; i < b.N; i++ {
				c := gcopies[i%len(gcopies)]
				p.Run(loaded, func(lo, hi, _ int) {
					records := recordCursor{blocks: []format.RecordBlock{{Gate: c, GateStride: rb, RowBytes: rb, N: loaded}}, spans: []span{{0, 0}}}
					gateDots(g, keys, &records, ops, lo, hi, x, acts)
				})
			}
		})
		p.Close()
	}
}
