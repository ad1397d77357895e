package profile

import (
	"encoding/hex"
	"fmt"
	"sort"

	"github.com/sipack/sipack/convert"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/runner"
)

// Check refuses a profile of another model or shape. Imported neuron
// lists carry no model identity and are checked by shape only.
func Check(p *Profile, c *format.ModelConfig, sourceHash [format.HashSize]byte, name string) error {
	if p.Layers != c.NumLayers || p.Neurons != c.IntermediateSize {
		return fmt.Errorf("profile %s has %d layers × %d neurons, the model %d × %d: %w", name, p.Layers, p.Neurons, c.NumLayers, c.IntermediateSize, ErrOtherModel)
	}
	if p.ModelHash != "" && p.ModelHash != hex.EncodeToString(sourceHash[:]) {
		return fmt.Errorf("profile %s was made from model %.16s…, this checkpoint is %.16s…: %w", name, p.ModelHash, hex.EncodeToString(sourceHash[:]), ErrOtherModel)
	}
	return nil
}

// SecondaryScores is the model-wide score: per layer, the mean over profiles
// of each profile's per-token scores normalised to sum to 1 in that layer, so
// that every task weighs the same.
func SecondaryScores(profiles []*Profile) [][]float64 {
	if len(profiles) == 0 {
		return nil
	}
	L, N := profiles[0].Layers, profiles[0].Neurons
	out := make([][]float64, L)
	for l := range out {
		out[l] = make([]float64, N)
	}
	for _, p := range profiles {
		for l, s := range p.Scores() {
			var total float64
			for _, v := range s {
				total += v
			}
			if total == 0 {
				continue
			}
			for n, v := range s {
				out[l][n] += v / total / float64(len(profiles))
			}
		}
	}
	return out
}

// RankOrder ranks each sparse layer's neurons as SelectInfer does: the top
// ⌊δ·N⌋ by the task score first (the base neurons), then the others by the
// secondary score; ties are broken by original index. With budgets (per sparse layer, in sparse's order; Budgets) a layer's
// base neurons are its share of δ instead, and the order carries them.
func RankOrder(task *Profile, secondary [][]float64, delta float64, sparse []int, budgets [][]float32) (*convert.Order, error) {
	if !(delta > 0 && delta <= 1) {
		return nil, fmt.Errorf("--base must be in (0, 1], got %v", delta)
	}
	if secondary == nil {
		secondary = SecondaryScores([]*Profile{task})
	}
	scores := task.Scores()
	N := task.Neurons
	nb := int(delta * float64(N))
	order := &convert.Order{Perms: map[int][]uint32{}, Scores: map[int][]float32{}, BaseFraction: float32(delta)}
	if budgets != nil {
		if len(budgets) != len(sparse) {
			return nil, fmt.Errorf("%d layer budgets for %d sparse layers", len(budgets), len(sparse))
		}
		order.Budgets = map[int][]float32{}
	}
	for si, l := range sparse {
		nb := nb
		if budgets != nil {
			order.Budgets[l] = budgets[si]
			nb = format.Count(format.BudgetAt(budgets[si], delta), N)
		}
		ts, ss := scores[l], secondary[l]
		ids := byScore(ts)
		base := append([]int(nil), ids[:nb]...)
		rest := append([]int(nil), ids[nb:]...)
		sort.Ints(rest) // ties in the secondary order fall back to original index
		sort.SliceStable(rest, func(a, b int) bool { return ss[rest[a]] > ss[rest[b]] })
		perm := make([]uint32, 0, N)
		score := make([]float32, 0, N)
		for _, n := range append(base, rest...) {
			perm = append(perm, uint32(n))
			score = append(score, float32(ts[n]))
		}
		order.Perms[l], order.Scores[l] = perm, score
	}
	how := "profile"
	if task.Continue != "" {
		how += "+" + task.Continue // the profile's prompts were followed by their answers or references
	}
	order.Provenance = format.Provenance{Order: how, Task: task.Task, Prompts: uint64(task.Prompts), Tokens: uint64(task.Tokens), GenTokens: uint32(task.GenTokens)}
	if b, err := hex.DecodeString(task.ModelHash); err == nil && len(b) == format.HashSize {
		copy(order.Provenance.ProfileModelHash[:], b)
	}
	return order, nil
}

// byScore is the indices of s, largest score first (ties: lower index).
func byScore(s []float64) []int {
	ids := make([]int, len(s))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return s[ids[a]] > s[ids[b]] })
	return ids
}

// modelPerms is, per layer of m, its rank order: perm[l][rank] = original
// neuron, the identity for dense layers.
func modelPerms(m *runner.Model) [][]uint32 {
	perm := make([][]uint32, m.Config.NumLayers)
	for l := range perm {
		if si, ok := m.Pack.SparseIndex(l); ok {
			perm[l] = m.Pack.Index.SparseLayers[si].Perm
		} else {
			perm[l] = make([]uint32, m.Config.IntermediateSize)
			for i := range perm[l] {
				perm[l][i] = uint32(i)
			}
		}
	}
	return perm
}
