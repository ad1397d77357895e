package runner

import (
	"errors"
	"fmt"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/format"
)

// RuntimeBytes is what a sirun process holds before it loads a pack: the Go
// runtime, the binary's code and its package data (the peak RSS of
// `sirun --help` is 13.0-13.5 MiB on linux/amd64, and the runtime's own
// structures grow with the threads and the heap; TestMemBudgetHolds finds
// each run's peak RSS within its plan). A memory budget counts it.
const RuntimeBytes = 15 << 20

// MemoryPlan is what running a pack holds in memory, part by part; a
// memory budget (sirun --mem-budget) covers all of it.
type MemoryPlan struct {
	Prefix    uint64 // preamble, index and dense section: mapped (and touched) whole
	BandBytes uint64 // one band of FFN records, mapped; a load maps Bands of them
	Bands     int    // bands the plan loads
	KV        uint64 // the KV caches: sequences × 2 (K, V) × element size × layers × ctx × kv heads × head_dim
	Buffers   uint64 // per sequence: a prefill batch's activations and logits, the compact per-prompt records
	Scratch   uint64 // the device's host scratch for a prefill batch on Threads workers (one pool for all sequences)
	Tokenizer uint64 // the index read into memory and the parsed tokenizer (≈ 4× its JSON)
	Runtime   uint64 // RuntimeBytes
}

// Total is the plan's bytes.
func (m MemoryPlan) Total() uint64 {
	return m.Prefix + uint64(m.Bands)*m.BandBytes + m.KV + m.Buffers + m.Scratch + m.Tokenizer + m.Runtime
}

// Heap is the part the Go runtime allocates (everything but the mapped
// pack and the binary's code): sirun sets it as the runtime's soft memory
// limit so that garbage collection keeps the heap near it.
func (m MemoryPlan) Heap() uint64 { return m.KV + m.Buffers + m.Scratch + m.Tokenizer + m.Runtime/2 }

// String lists the parts in MiB.
func (m MemoryPlan) String() string {
	return fmt.Sprintf("%s = index and dense weights %s + %d × %s bands + KV cache %s + buffers %s + kernel scratch %s + tokenizer %s + Go runtime and code %s",
		mib(m.Total()), mib(m.Prefix), m.Bands, mib(m.BandBytes), mib(m.KV), mib(m.Buffers), mib(m.Scratch), mib(m.Tokenizer), mib(m.Runtime))
}

func mib(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// PlanBatch is the longest prefill batch: Session.Prefill runs a longer
// prompt in batches of this many tokens, so the activations a memory plan
// counts hold for a prompt of any length.
const PlanBatch = 512

// MemoryNeeds is what a run asks of memory besides the pack's bytes.
type MemoryNeeds struct {
	Ctx       int            // KV cache tokens per sequence (0: the model's context, at most 4096)
	KVType    backend.KVType // the caches' element type
	Sequences int            // sequences run at once, each with its own KV cache and buffers (0: 1)
	// Compact is the number of records per sparse layer each sequence's
	// compact per-prompt buffer holds: the φ count less the δ count (0 when
	// every loaded neuron is computed, or with --gather).
	Compact int
	// MinRanks is the least number of ranks per sparse layer the run must
	// load (the φ count when it selects: φ ≤ γ).
	MinRanks int
	Threads  int // the kernels' worker threads (0: 1)
	// Device is the device the run uses: its HostScratchBytes is the
	// plan's Scratch (the CPU's kernels keep theirs in the pool, a GPU's
	// host side keeps none). It must be set.
	Device backend.Device
}

// PlanMemory is the memory plan of loading every band of p (Bands: the
// bands the pack holds) for the run n describes. The activations are those
// of a prefill batch of min(ctx, PlanBatch) tokens: per token the residual,
// the normed input and the FFN output (3·H), q, k, v and the attention
// output and the FFN activations over N neurons (voting); and one token's
// logits (a prompt's logits are its last token's).
func PlanMemory(p *format.Pack, n MemoryNeeds) MemoryPlan {
	c := &p.Index.Config
	ctx, seqs := n.Ctx, uint64(max(1, n.Sequences))
	if ctx == 0 {
		ctx = min(c.MaxPositionEmbeddings, 4096)
	}
	T := min(ctx, PlanBatch)
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	act := uint64(4*T*(3*c.HiddenSize+2*qDim+2*kvDim+c.IntermediateSize) + 4*c.VocabSize)
	compact := uint64(len(p.Index.SparseLayers)*n.Compact) * p.Index.RecordBytes
	bands := 0
	if p.Preamble.BandCount > 0 {
		bands = (p.AvailableRanks() + p.Index.BandNeurons - 1) / p.Index.BandNeurons
	}
	return MemoryPlan{
		Prefix:    p.Preamble.FFNOff,
		BandBytes: p.Preamble.BandBytes,
		Bands:     bands,
		KV:        seqs * uint64(2*n.KVType.Size()*c.NumLayers*ctx*kvDim),
		Buffers:   seqs * (act + compact),
		Scratch:   n.Device.HostScratchBytes(T, c.HiddenSize, c.IntermediateSize, c.NumHeads, c.NumKVHeads, c.HeadDim, ctx, max(1, n.Threads)),
		Tokenizer: p.Preamble.IndexLen + 4*uint64(len(p.Index.TokenizerJSON)),
		Runtime:   RuntimeBytes,
	}
}

// PlanForBudget returns the largest γ (a whole number of bands, at most
// what the pack holds) whose plan fits in budget bytes, and that plan. A
// budget below the plan of one band is refused with the parts in MiB.
func PlanForBudget(path string, budget uint64, n MemoryNeeds) (float64, MemoryPlan, error) {
	if n.Device == nil {
		return 0, MemoryPlan{}, errors.New("memory plan: no device")
	}
	p, err := format.Open(path, format.OpenOptions{HeaderOnly: true})
	if err != nil {
		return 0, MemoryPlan{}, err
	}
	defer p.Close()
	return planForBudget(p, budget, n)
}

func planForBudget(p *format.Pack, budget uint64, needs MemoryNeeds) (float64, MemoryPlan, error) {
	full := PlanMemory(p, needs)
	n := p.Index.Config.IntermediateSize
	if full.Bands == 0 { // no sparse layers: all or nothing
		if full.Total() > budget {
			return 0, full, fmt.Errorf("memory budget %s is below what this pack needs: %s", mib(budget), full)
		}
		return 1, full, nil
	}
	B := p.Index.BandNeurons
	least := full
	least.Bands = max(1, (needs.MinRanks+B-1)/B)
	if least.Bands > full.Bands {
		return 0, least, fmt.Errorf("this run needs %d ranks per sparse layer (φ); the pack holds %d", needs.MinRanks, p.AvailableRanks())
	}
	if least.Total() > budget {
		return 0, least, fmt.Errorf("memory budget %s is below the least this run needs (%d band(s), γ = %.3f): %s", mib(budget), least.Bands, float64(min(n, least.Bands*B))/float64(n), least)
	}
	plan := full
	plan.Bands = min(full.Bands, least.Bands+int((budget-least.Total())/full.BandBytes))
	ranks := min(plan.Bands*p.Index.BandNeurons, p.AvailableRanks())
	return float64(ranks) / float64(n), plan, nil
}

// GammaForBudget is PlanForBudget's γ for one sequence on dev with a KV
// cache of ctx tokens that computes every loaded neuron.
func GammaForBudget(path string, budget uint64, ctx int, dev backend.Device) (float64, error) {
	g, _, err := PlanForBudget(path, budget, MemoryNeeds{Ctx: ctx, Device: dev})
	return g, err
}
