package runner

import (
	"strings"
	"testing"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

// onebShape is a pack header of Llama-3.2-1B's shape (bf16, 64-neuron
// bands, every layer sparse): the budget arithmetic on a model CI cannot
// run (2.5 GB).
func onebShape() *format.Pack {
	const N, H, L, B = 8192, 2048, 16, 64
	rec := uint64(3 * H * 2)
	band := uint64(L*B) * rec // 12 MiB
	ffnOff := uint64(900 << 20)
	p := &format.Pack{
		Preamble: format.Preamble{IndexLen: 10 << 20, FFNOff: ffnOff, BandBytes: band, BandCount: N / B, FileLen: ffnOff + N/B*band},
		Index: &format.Index{
			Config:       format.ModelConfig{HiddenSize: H, IntermediateSize: N, NumLayers: L, NumHeads: 32, NumKVHeads: 8, HeadDim: 64, VocabSize: 128256, MaxPositionEmbeddings: 131072},
			BandNeurons:  B,
			RanksPresent: N,
			RecordBytes:  rec,
			SparseLayers: make([]format.SparseLayer, L),
		},
	}
	p.FileSize = int64(p.Preamble.FileLen)
	p.Index.TokenizerJSON = make([]byte, 9<<20)
	return p
}

func TestMemoryPlan1BShape(t *testing.T) {
	p := onebShape()
	plan := PlanMemory(p, MemoryNeeds{Device: cpu.New(), Ctx: 2048})
	// KV: 2 × 4 B × 16 layers × 2048 tokens × 8 kv heads × 64 = 128 MiB.
	if plan.KV != 128<<20 {
		t.Errorf("KV %d, want 128 MiB", plan.KV)
	}
	// Activations of a 512-token batch, 4 B × 512 × (3·2048 + 2·2048 + 2·512 + 8192), and one row of logits.
	if want := uint64(4*512*(3*2048+2*2048+2*512+8192) + 4*128256); plan.Buffers != want {
		t.Errorf("buffers %d, want %d", plan.Buffers, want)
	}
	// The kernels' scratch for a 512-token batch on one worker (Threads 0).
	if want := kernels.PrefillScratchBytes(512, 2048, 8192, 32, 8, 64, 2048, 1); plan.Scratch != want {
		t.Errorf("scratch %d, want %d", plan.Scratch, want)
	}
	// A device whose host side keeps no scratch (a GPU's) plans none.
	if gpu := PlanMemory(p, MemoryNeeds{Device: noHostScratch{cpu.New()}, Ctx: 2048}); gpu.Scratch != 0 || gpu.Total() != plan.Total()-plan.Scratch {
		t.Errorf("no host scratch: %+v", gpu)
	}
	if plan.Bands != 128 || plan.Tokenizer != 10<<20+4*(9<<20) || plan.Runtime != RuntimeBytes {
		t.Errorf("plan %+v", plan)
	}
	// Two sequences double the KV caches and buffers; a compact buffer of
	// 100 records adds sparse layers × 100 × record bytes to each.
	two := PlanMemory(p, MemoryNeeds{Device: cpu.New(), Ctx: 2048, Sequences: 2, Compact: 100})
	if two.KV != 2*plan.KV || two.Buffers != 2*(plan.Buffers+16*100*p.Index.RecordBytes) {
		t.Errorf("two sequences: %+v", two)
	}
	// A 2 GiB budget: the largest whole number of bands that fits.
	const budget uint64 = 2 << 30
	g, got, err := planForBudget(p, budget, MemoryNeeds{Device: cpu.New(), Ctx: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if got.Total() > budget || got.Total()+got.BandBytes <= budget && got.Bands < 128 {
		t.Errorf("budget %d: plan %s (%d bytes) is not the largest that fits", budget, got, got.Total())
	}
	if want := float64(got.Bands*64) / 8192; g != want {
		t.Errorf("γ %v, want %v", g, want)
	}
	// Too small a budget is refused with the parts in MiB, no raw bytes.
	_, _, err = planForBudget(p, 1<<30, MemoryNeeds{Device: cpu.New(), Ctx: 2048})
	if err == nil || !strings.Contains(err.Error(), "1.00 GiB") || !strings.Contains(err.Error(), "KV cache 128.0 MiB") {
		t.Errorf("1 GiB budget: %v", err)
	}
	// φ ≤ γ: a run computing 40 % needs at least the bands holding them.
	_, got, err = planForBudget(p, 8<<30, MemoryNeeds{Device: cpu.New(), Ctx: 2048, MinRanks: 3276})
	if err != nil || got.Bands < 52 {
		t.Errorf("MinRanks 3276: %v, %d bands", err, got.Bands)
	}
}

// noHostScratch is a device whose host side keeps no kernel scratch.
type noHostScratch struct{ backend.Device }

func (noHostScratch) HostScratchBytes(tokens, hidden, intermediate, heads, kvHeads, headDim, ctx, threads int) uint64 {
	return 0
}
