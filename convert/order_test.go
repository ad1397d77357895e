package convert

import (
	"slices"
	"testing"
)

func TestRandomOrderIsAPermutation(t *testing.T) {
	o := RandomOrder([]int{0, 3}, 100, 9)
	for _, l := range []int{0, 3} {
		p := slices.Clone(o.Perms[l])
		slices.Sort(p)
		for i, v := range p {
			if int(v) != i {
				t.Fatalf("layer %d: not a permutation", l)
			}
		}
	}
	if slices.Equal(o.Perms[0], o.Perms[3]) {
		t.Fatal("layers share one shuffle")
	}
	if !slices.Equal(RandomOrder([]int{0}, 100, 9).Perms[0], o.Perms[0]) {
		t.Fatal("same seed, different order")
	}
}
