package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// BenchmarkFFNGatedDRAM: one decode token's FFN of a Llama-3.2-1B-shape
// layer (H 2048, N 8192) at γ 0.7, 2 threads, from memory (copies of the
// layer cycled, about 1 GiB a layout), in bands of 64 records laid out as
// version 1 packs do (interleaved records) and as version 2 packs do (each
// band's gate rows together, then its up|down pairs). "paper" computes the
// first 0.4·N records (a static set, or the compact decode set), "gate"
// dots the gate rows of all 0.7·N and computes up and down for 0.25·N,
// "hybrid" computes the first 0.125·N whole and, of the other loaded, up
// and down for 0.125·N by their gates — the same bytes (SetBytes: 0.4·N
// records for all three, so MB/s compares their speed).
func BenchmarkFFNGatedDRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const H, N, B = 2048, 8192, 64
	loaded, phi, k := 7*N/10, 4*N/10, N/4
	for _, dt := range []format.DType{format.BF16, format.Q4_0} {
		R, _ := dt.RowBytes(H)
		rec := 3 * R
		n := max(2, (1<<30)/(loaded*rec))
		layer, _ := randRow(rng, dt, B*3*H) // one band of distinct records, repeated
		type copyOf struct{ v1, v2 []format.RecordBlock }
		copies := make([]copyOf, n)
		for i := range copies {
			for lo := 0; lo < loaded; lo += B {
				m := min(B, loaded-lo)
				d := make([]byte, B*rec)
				copy(d, layer[:m*rec])
				copies[i].v1 = append(copies[i].v1, format.InterleavedBlock(d[:m*rec], R))
				copies[i].v2 = append(copies[i].v2, format.PutSplit(make([]byte, B*rec), d[:m*rec], B, R))
			}
		}
		x := randVec(rng, H)
		for i := range x {
			x[i] /= float32(math.Sqrt(H))
		}
		y := make([]float32, H)
		p := NewPool(2)
		for _, v := range []string{"paper", "gate", "hybrid"} {
			for _, layout := range []string{"v1", "v2"} {
				b.Run(fmt.Sprintf("%v-%s-%s", dt, v, layout), func(b *testing.B) {
					b.SetBytes(int64(phi * rec))
					for i := 0; i < b.N; i++ {
						blocks := copies[i%n].v1
						if layout == "v2" {
							blocks = copies[i%n].v2
						}
						switch v {
						case "paper":
							FFNRecords(p, y, blocks[:phi/B], dt, H, x, nil)
						case "gate":
							FFNGated(p, y, blocks, dt, H, x, 0, k, nil)
						default:
							FFNGated(p, y, blocks, dt, H, x, k/2, k-k/2, nil)
						}
					}
				})
			}
		}
		p.Close()
	}
}

// BenchmarkGateKeys: the gated FFN's ranking keys of a γ0.7 layer's gate
// dots (4710 after a hybrid's static records), through SiLUMul.
func BenchmarkGateKeys(b *testing.B) {
	g := make([]float32, 4710)
	keys := make([]uint32, len(g))
	for i := range g {
		g[i] = float32(i%200-100) / 30
	}
	for i := 0; i < b.N; i++ {
		GateKeys(keys, g)
	}
}
