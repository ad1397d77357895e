package convert

import (
	"math/rand/v2"

	"github.com/sipack/sipack/format"
)

// RandomOrder is the random-loading ablation: an independent seeded shuffle per layer.
func RandomOrder(sparse []int, N int, seed uint64) *Order {
	rng := rand.New(rand.NewPCG(seed, 0x51ba))
	order := &Order{Perms: map[int][]uint32{}, Provenance: format.Provenance{Order: "random", Seed: seed}}
	for _, l := range sparse {
		perm := make([]uint32, N)
		for i, v := range rng.Perm(N) {
			perm[i] = uint32(v)
		}
		order.Perms[l] = perm
	}
	return order
}

// SparseLayers lists the layers not kept dense, in order.
func SparseLayers(c *format.ModelConfig, dense []int) []int {
	isDense := map[int]bool{}
	for _, l := range dense {
		isDense[l] = true
	}
	var out []int
	for l := 0; l < c.NumLayers; l++ {
		if !isDense[l] {
			out = append(out, l)
		}
	}
	return out
}
