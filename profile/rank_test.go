package profile

import (
	"slices"
	"testing"

	"github.com/sipack/sipack/format"
)

func handProfile(task string, sums ...[]float64) *Profile {
	return &Profile{Format: FileFormat, Version: 1, Task: task, Tokens: 2, Prompts: 1,
		Layers: len(sums), Neurons: len(sums[0]), Sums: sums}
}

// TestRankOrderRule checks the ranking on hand-made numbers:
// base = top ⌊δN⌋ by task score, the rest by secondary score, ties by index.
func TestRankOrderRule(t *testing.T) {
	task := handProfile("a", []float64{5, 1, 9, 1, 0, 7, 3, 3, 2, 8})
	other := handProfile("b", []float64{0, 10, 0, 0, 4, 0, 4, 0, 6, 0})
	// δ = 0.3: base = neurons 2 (9), 9 (8), 5 (7).
	// Secondary = mean of normalised task (sum 39) and other (sum 24) profiles.
	sec := SecondaryScores([]*Profile{task, other})
	order, err := RankOrder(task, sec, 0.3, []int{0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := order.Perms[0]
	// Secondary values of the rest, ×(2·39·24): neuron 0: 5·24=120; 1: 24+390=414; 3: 24;
	// 4: 0+156=156; 6: 72+156=228; 7: 72; 8: 48+234=282.
	want := []uint32{2, 9, 5, 1, 8, 6, 4, 0, 7, 3}
	if !slices.Equal(got, want) {
		t.Fatalf("rank order %v, want %v", got, want)
	}
	if order.BaseFraction != float32(0.3) || order.Provenance.Task != "a" {
		t.Fatalf("provenance %+v", order.Provenance)
	}
	// Ties: equal task scores keep index order.
	tie := handProfile("t", []float64{1, 1, 1, 1})
	o2, _ := RankOrder(tie, nil, 0.5, []int{0}, nil)
	if !slices.Equal(o2.Perms[0], []uint32{0, 1, 2, 3}) {
		t.Fatalf("ties %v, want index order", o2.Perms[0])
	}
	if _, err := RankOrder(task, sec, 0, []int{0}, nil); err == nil {
		t.Fatal("δ = 0 accepted")
	}
	if _, err := RankOrder(task, sec, 1.5, []int{0}, nil); err == nil {
		t.Fatal("δ = 1.5 accepted")
	}
}

func TestCheck(t *testing.T) {
	c := &format.ModelConfig{NumLayers: 1, IntermediateSize: 4}
	p := handProfile("a", []float64{1, 2, 3, 4})
	p.ModelHash = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	var h [32]byte
	if err := Check(p, c, h, "a.prof"); err == nil {
		t.Fatal("profile of another model accepted")
	}
	copy(h[:], []byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff})
	if err := Check(p, c, h, "a.prof"); err != nil {
		t.Fatal(err)
	}
	c.IntermediateSize = 8
	if err := Check(p, c, h, "a.prof"); err == nil {
		t.Fatal("profile of another shape accepted")
	}
}
