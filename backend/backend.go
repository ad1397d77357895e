// Package backend is the seam between the forward pass and the hardware
// that runs it. The runner's forward pass is written once against these
// interfaces; the CPU implementation (backend/cpu) runs the kernel table of
// package kernels, and a GPU implementation is a second package behind its
// own build tag (backend/cuda), never an edit of the forward pass.
//
// A Device holds what a model keeps resident: its matrices, its small
// float32 parameters and, per sparse layer, the loaded prefix of FFN neuron
// records. An Exec is one sequence's worth of work on that device: its
// activation buffers, its threads, its gathered decode sets. A model has
// one Device; every State (a KV cache and its buffers: a session, a server
// slot) has its own Exec, so several sequences can run at once.
//
// Shapes: activations are row-major (T, n) for a batch of T tokens; a Buf's
// length is T·n. Weights keep the pack's layout and dtype: a Matrix is
// (rows, cols) row-major, a Records set holds neuron records
// gate row | up row | down column, each of the hidden size H.
package backend

import (
	"fmt"
	"time"

	"github.com/sipack/sipack/format"
)

// Buf is a float32 activation buffer on the device.
type Buf interface{ Len() int }

// Vector is a resident float32 parameter vector (RMSNorm weights, biases).
type Vector interface{ Len() int }

// Matrix is a resident (Rows, Cols) weight matrix in its stored dtype.
type Matrix interface {
	Rows() int
	Cols() int
	DType() format.DType
	Bytes() int // bytes of weight data one full read of it streams
}

// Records is a set of FFN neuron records in a fixed order: a layer's loaded
// ranks [0, Len) in rank order, or a decode set gathered from them.
type Records interface {
	Len() int
	Bytes() int
}

// Device is where a model's weights live. Making a weight resident may
// copy it (a discrete GPU) or use the mapped pack in place (the CPU, an
// integrated GPU); either way the pack must stay open while the device is.
type Device interface {
	Name() string
	Matrix(data []byte, dt format.DType, rows, cols int) (Matrix, error)
	Vector(v []float32) (Vector, error)
	// Records makes the loaded FFN records of one layer resident: blocks
	// of consecutive records of hidden size hidden (interleaved or split,
	// format.RecordBlock), ranks in order across the blocks.
	Records(blocks []format.RecordBlock, dt format.DType, hidden int) (Records, error)
	// ResidentBytes is what the device holds for the model (0 where the
	// weights are used in place).
	ResidentBytes() uint64
	// NewExec starts a sequence's worth of work whose host side runs on
	// pool's threads (the CPU's workers; the host side of a GPU).
	NewExec(pool Pool) (Exec, error)
	// HostScratchBytes bounds the host memory one pool of threads workers
	// keeps for this device's prefill batches of up to tokens tokens over a
	// context of ctx, for a model of these shapes: what a memory plan adds
	// once per pool.
	HostScratchBytes(tokens, hidden, intermediate, heads, kvHeads, headDim, ctx, threads int) uint64
	Close() error
}

// Pool is a set of host worker threads (kernels.Pool is the one the
// commands make). The runner takes one so that it need not link the CPU's
// kernels; it splits host-side work over it between an Exec's operations.
type Pool interface {
	// Workers is the number of workers, the caller included.
	Workers() int
	// RunStatic calls f on the n rows split into chunks dealt to the
	// workers in a fixed way (w is the worker, in [0, Workers())), and waits.
	RunStatic(n int, f func(lo, hi, w int))
}

// Exec runs the operations of the forward pass for one sequence. Its
// methods are not safe for concurrent use; different Execs of one Device
// are.
type Exec interface {
	// Alloc returns a zeroed buffer of n floats; Slice views n floats of b
	// from off; Read copies b to the host, Write copies src from the host
	// into b (the first min(len(src), b.Len()) floats of each).
	Alloc(n int) Buf
	Slice(b Buf, off, n int) Buf
	Read(dst []float32, b Buf)
	Write(b Buf, src []float32)

	// Embed writes the rows of table for tokens into out (T, cols).
	Embed(out Buf, table Matrix, tokens []int) error
	// RMSNorm: out_t = x_t / sqrt(mean(x_t²) + eps) ⊙ w for every row t.
	RMSNorm(out, x Buf, w Vector, eps float32)
	// MatMul: outs[i] (T, rows_i) = x (T, cols) · ws[i]ᵀ; the weights share
	// the input, so a backend may prepare x once for all of them.
	MatMul(outs []Buf, ws []Matrix, x Buf)
	// AddBias adds b to every row of x; Add does x += y.
	AddBias(x Buf, b Vector)
	Add(x, y Buf)
	// RoPE rotates every head of x (T, heads·headDim), token t at position
	// pos+t, with inverse frequencies invFreq (headDim/2): HF's rotate_half.
	RoPE(x Buf, T, headDim, pos int, invFreq []float64)
	// Attention appends k and v (T, kvHeads·headDim) to the cache of one
	// layer at positions pos..pos+T−1, then writes to out (T, heads·headDim)
	// the causal softmax attention of q over the cache (query head h reads
	// kv head h/(heads/kvHeads); scores scaled by 1/sqrt(headDim)).
	Attention(out, q, k, v Buf, cache *KVCache, layer, pos, T int)
	// FFN writes to out (T, H) the SwiGLU FFN of x (T, H) over recs:
	// Σ_j silu(g_j·x)·(u_j·x)·d_j. If act is not nil it receives the
	// activations h as (T, recs.Len()) on the host.
	FFN(out, x Buf, recs Records, act []float32)
	// Gather returns the decode set ranks (ascending) of all, a layer's
	// loaded records; ranks [0, static) are its static prefix. compact asks
	// for the rest to be copied contiguous where that is faster than
	// gathering in place.
	Gather(all Records, ranks []int, static int, compact bool) (Records, error)
	// Err is the first error of an operation that has no error result (a
	// failed kernel launch or copy on a GPU); once set, the Exec's results
	// are not to be used. The CPU never sets it.
	Err() error
	Close()
}

// GroupGatherer is an Exec that gathers a decode set of whole groups
// without a list of ranks (the router's plan, every decode token): ranks
// [0, static), then for each of groups (ascending, each g ≥ static/G) the
// ranks [gG, min((g+1)G, all.Len())) above static. reuse, if not nil, is
// a set this method returned before, whose storage it may take over (that
// set is then no longer valid). The result is what Gather of the same
// ranks returns.
type GroupGatherer interface {
	GatherGroups(all Records, static, G int, groups []int32, reuse Records) (Records, error)
}

// GatherGroups gathers a decode set of whole groups as GroupGatherer
// says: through e's own GatherGroups where it has one, else as the ranks
// they hold through Gather.
func GatherGroups(e Exec, all Records, static, G int, groups []int32, reuse Records) (Records, error) {
	if gg, ok := e.(GroupGatherer); ok {
		return gg.GatherGroups(all, static, G, groups, reuse)
	}
	n := all.Len()
	ranks := make([]int, 0, static+len(groups)*G)
	for r := range min(static, n) {
		ranks = append(ranks, r)
	}
	for _, g := range groups {
		for r := max(static, int(g)*G); r < min(n, (int(g)+1)*G); r++ {
			ranks = append(ranks, r)
		}
	}
	return e.Gather(all, ranks, static, false)
}

// TopKer is an Exec that finds a row's largest values where the row is (a
// GPU), so a sampled decode step reads back its candidates, not the logits.
type TopKer interface {
	// TopK fills ids and vals (of one length k, 1 ≤ k ≤ MaxTopK) with the
	// indices and values of b's k largest floats (ties: the lower index) in
	// index order, and reports whether all of b is finite.
	TopK(b Buf, ids []int32, vals []float32) bool
	MaxTopK() int
}

// GroupRouter is an Exec that chooses the router's groups where the scores
// are (a GPU), so a routed decode token neither waits for the host nor
// uploads a table. Of the n groups first.. it takes the k of largest
// scores[first+i] (ties: the lower group first) and returns the decode set
// GatherGroups(all, static, G, those groups) computes, possibly with
// records that add nothing (zeros) to fill each group to G entries. reuse
// is as GroupGatherer's.
type GroupRouter interface {
	RouteGroups(all Records, scores Buf, first, n, k, static, G int, reuse Records) (Records, error)
}

// Voter is an Exec that counts SelectInfer's prefill votes where the FFN
// activations are (a GPU), so they need not come to the host. The runner
// uses it when the Exec has it and no one asked for the activations;
// otherwise it counts on the host from FFN's act.
type Voter interface {
	// Vote adds, for every token of the last FFN the Exec ran, one vote to
	// counts[j] for each of the k records j of largest |h| (ties: the lower
	// j first). counts has one entry per record of that FFN.
	Vote(counts []int32, k int)
}

// KVCache is one sequence's key and value cache: Layers × Ctx positions of
// KVDim values each, for keys and for values, laid out as the backend
// chooses within a layer (the CPU's is head-major: each key/value head's
// Ctx rows together), in element type Type. Keys and Values are Bufs of
// Floats() floats; an f16 cache packs two halves into each float's bytes,
// the element at index e (of Layers·Ctx·KVDim) at byte 2e.
type KVCache struct {
	Layers, Ctx, KVDim int
	Heads, HeadDim     int // query heads and head size, for Attention
	Type               KVType
	Keys, Values       Buf
}

// Floats is the length of Keys and of Values in floats.
func (c *KVCache) Floats() int { return (c.Type.Size()*c.Layers*c.Ctx*c.KVDim + 3) / 4 }

// Bytes is the cache's size.
func (c *KVCache) Bytes() int { return 2 * c.Type.Size() * c.Layers * c.Ctx * c.KVDim }

// KVType is a KV cache's element type.
type KVType uint8

const (
	KVF32 KVType = iota // float32
	KVF16               // IEEE binary16, rounded to nearest even as it is written
)

// Size is the bytes of one element.
func (t KVType) Size() int {
	if t == KVF16 {
		return 2
	}
	return 4
}

func (t KVType) String() string {
	switch t {
	case KVF32:
		return "f32"
	case KVF16:
		return "f16"
	}
	return fmt.Sprintf("KVType(%d)", uint8(t))
}

// ParseKVType is the KVType named s: f32 or f16 (llama.cpp's --cache-type
// names).
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "f32":
		return KVF32, nil
	case "f16":
		return KVF16, nil
	}
	return 0, fmt.Errorf("unknown cache type %q (want f32 or f16)", s)
}

// KVTyper is a Device whose Attention takes caches of other element types
// than KVF32, the one every Device takes.
type KVTyper interface {
	TakesKV(t KVType) bool
}

// TakesKV reports whether dev's Attention takes a cache of element type t.
func TakesKV(dev Device, t KVType) bool {
	if kt, ok := dev.(KVTyper); ok {
		return kt.TakesKV(t)
	}
	return t == KVF32
}

// Argmaxer is an Exec that finds a row's largest value where the row is
// (a GPU), so greedy decoding reads back a token id, not the logits. The
// runner uses it for greedy decode steps when the Exec has it.
type Argmaxer interface {
	// Argmax returns the index of the largest of b's floats, as
	// runner.Argmax scans them (the lower index on ties; NaN never chosen
	// unless b's first float is NaN, then 0), and whether all are finite.
	Argmax(b Buf) (int, bool)
}

// KernelTimer is a Device that times its kernels one by one (a GPU's, by
// events on its stream): where operations are queued, a host clock sees
// the queueing, not the work. sirun bench --ops reads it.
type KernelTimer interface {
	// TimeKernels starts (or stops) timing the launches of Execs started
	// afterwards; they launch one by one while it is on (no graphs).
	TimeKernels(on bool)
	// KernelTimes waits for the device and returns, by kernel name, what
	// its launches took since the last call (or since timing started).
	KernelTimes() (map[string]KernelTime, error)
}

// KernelTime is what the launches of one kernel took.
type KernelTime struct {
	Launches int
	Time     time.Duration
	// Bytes is the weights and cache the launches read, where the kernel
	// counts them (matrices, FFN records, the KV cache, the logits); 0
	// for the rest.
	Bytes int64
}
