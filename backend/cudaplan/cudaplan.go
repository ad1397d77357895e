// Package cudaplan is the host side of the CUDA backend that needs no GPU:
// the kernels' names, signatures and launch shapes, kernel argument
// packing checked against the signatures, record address tables and
// decode-set gathering, and buffer sizing. It has no cgo and no build tag,
// so the normal build tests it; backend/cuda (build tag cuda) runs it.
//
// The constants mirror the #defines of backend/cuda/kernels/sipack.cu and
// Signatures mirrors its kernel parameter lists; TestMirrorsKernelSource
// reads the .cu file and fails when either drifts.
package cudaplan

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// Launch-shape constants, as sipack.cu defines them.
const (
	QK           = 32  // weights per quantisation block (SIP_QK)
	Warps        = 8   // warps per block of the warp-per-row kernels (SIP_WARPS)
	TileM        = 64  // tiled GEMM output rows per block (SIP_TILE_M)
	TileN        = 32  // tiled GEMM tokens per block (SIP_TILE_N)
	TileK        = 32  // tiled GEMM reduction step (SIP_TILE_K)
	GemmThreads  = 256 // SIP_GEMM_THREADS
	DownThreads  = 128 // split-K down projection threads per block (SIP_DOWN_THREADS)
	AttThreads   = 128 // attention threads per (token, head) (SIP_ATT_THREADS)
	AttChunk     = 32  // keys scored per attention step (SIP_ATT_CHUNK)
	MaxHeadDim   = 256 // SIP_MAX_HEAD_DIM
	EWThreads    = 256 // element-wise kernels (SIP_EW_THREADS)
	VoteThreads  = 256 // voting threads per token (SIP_VOTE_THREADS)
	RoPEThreads  = 64
	WarpMaxBatch = 4    // batches of at most this many tokens take the warp-per-row kernels
	NormMax      = 8192 // most values a fused RMSNorm prologue stages (SIP_NORM_MAX)
	TopKThreads  = 1024 // SIP_TOPK_THREADS
	TopKMax      = 256  // most candidates sip_topk returns (SIP_TOPK_MAX)
)

// Kernel names (extern "C" in sipack.cu).
const (
	KEmbed          = "sip_embed"
	KRMSNorm        = "sip_rmsnorm"
	KAddBias        = "sip_add_bias"
	KAdd            = "sip_add"
	KRoPE           = "sip_rope"
	KMatVec         = "sip_matvec"
	KMatMul         = "sip_matmul"
	KFFNGateUp      = "sip_ffn_gateup"
	KFFNGateUpTiled = "sip_ffn_gateup_tiled"
	KFFNDownPartial = "sip_ffn_down_partial"
	KReduceSplits   = "sip_reduce_splits"
	KFFNDownTiled   = "sip_ffn_down_tiled"
	KAttention      = "sip_attention"
	KVote           = "sip_vote"
	KKVAppend       = "sip_kv_append"
	KArgmax         = "sip_argmax"
	KMatVecFused    = "sip_matvec_fused"
	KFFNGateUpNorm  = "sip_ffn_gateup_norm"
	KAttentionRoPE  = "sip_attention_rope"
	KRoute          = "sip_route"
	KTopK           = "sip_topk"
)

// Signatures lists every kernel's parameters: p a device pointer, i an
// int (32-bit), f a float.
var Signatures = map[string]string{
	KEmbed:          "pppiii",
	KRMSNorm:        "pppif",
	KAddBias:        "ppii",
	KAdd:            "ppi",
	KRoPE:           "ppiip",
	KMatVec:         "pppiiiii",
	KMatMul:         "pppiiiiii",
	KFFNGateUp:      "pppiiiii",
	KFFNGateUpTiled: "pppiiiiii",
	KFFNDownPartial: "pppiiiiii",
	KReduceSplits:   "ppiip",
	KFFNDownTiled:   "pppiiiiii",
	KAttention:      "pppppiiiifi",
	KVote:           "ppii",
	KKVAppend:       "ppppiipi",
	KArgmax:         "ppipp",
	KMatVecFused:    "ppppppiiipiiiippfp",
	KFFNGateUpNorm:  "pppiiiiippf",
	KAttentionRoPE:  "ppppppppiiiifipp",
	KRoute:          "pppiiiiiip",
	KTopK:           "ppiip",
}

// Dim3 is a grid or block size.
type Dim3 [3]int

// Launch is one kernel launch's shape.
type Launch struct {
	Kernel      string
	Grid, Block Dim3
	// Reads is the weights and cache bytes the launch reads where the
	// caller counts them (0 otherwise): the GB/s of a timed launch.
	Reads int64
}

func (l Launch) String() string {
	return fmt.Sprintf("%s<<<(%d,%d,%d), (%d,%d,%d)>>>", l.Kernel, l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2])
}

// Threads is the number of threads the launch starts.
func (l Launch) Threads() int {
	return l.Grid[0] * l.Grid[1] * l.Grid[2] * l.Block[0] * l.Block[1] * l.Block[2]
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func launch(k string, gx, gy, bx int) Launch {
	return Launch{Kernel: k, Grid: Dim3{max(1, gx), max(1, gy), 1}, Block: Dim3{bx, 1, 1}}
}

// Embed: one thread per output value, T rows.
func Embed(cols, T int) Launch { return launch(KEmbed, ceilDiv(cols, EWThreads), T, EWThreads) }

// RMSNorm: one block per row.
func RMSNorm(T int) Launch { return launch(KRMSNorm, T, 1, EWThreads) }

// Elementwise: one thread per value of total (KAdd, KAddBias).
func Elementwise(kernel string, total int) Launch {
	return launch(kernel, ceilDiv(total, EWThreads), 1, EWThreads)
}

// RoPE: one block per (head, token).
func RoPE(heads, T int) Launch { return launch(KRoPE, heads, T, RoPEThreads) }

// MatMul picks the kernel of out (T, rows) = x (T, cols) · Wᵀ: a warp per
// row and token for small batches (decode is bandwidth-bound: every block
// streams rows once), tiles of 64 rows × 32 tokens otherwise (prefill
// reuses each weight tile for 32 tokens).
func MatMul(rows, T int) Launch {
	if T <= WarpMaxBatch {
		return launch(KMatVec, ceilDiv(rows, Warps), T, 32*Warps)
	}
	return launch(KMatMul, ceilDiv(rows, TileM), ceilDiv(T, TileN), GemmThreads)
}

// FFNGateUp picks the kernel computing h (T, n) for n records: a warp per
// record and token for small batches, the tiled GEMM otherwise.
func FFNGateUp(n, T int) Launch {
	if T <= WarpMaxBatch {
		return launch(KFFNGateUp, ceilDiv(n, Warps), T, 32*Warps)
	}
	return launch(KFFNGateUpTiled, ceilDiv(n, TileM), ceilDiv(T, TileN), GemmThreads)
}

// MatVecFused: one decode token's matvecs over rows in all (a warp a row).
func MatVecFused(rows int) Launch { return launch(KMatVecFused, ceilDiv(rows, Warps), 1, 32*Warps) }

// FFNGateUpNorm: one decode token's gate and up over n records, a warp a record.
func FFNGateUpNorm(n int) Launch { return launch(KFFNGateUpNorm, ceilDiv(n, Warps), 1, 32*Warps) }

// AttentionRoPE: one decode token's attention, splits blocks per query head.
func AttentionRoPE(heads, splits int) Launch {
	return launch(KAttentionRoPE, heads, splits, AttThreads)
}

// AttSplitKeys and MaxAttSplits size a decode token's attention split
// (flash-decoding): a block per head and AttSplitKeys keys, at most
// MaxAttSplits a head. One block a head leaves most of a big GPU idle at
// a long context (32 heads, 132 SMs on an H100).
const (
	AttSplitKeys = 256
	MaxAttSplits = 16
)

// AttSplits is the splits a head's attention over n positions takes.
func AttSplits(n int) int { return min(MaxAttSplits, max(1, ceilDiv(n, AttSplitKeys))) }

// AttPartFloats is the float32s of the splits' partial results a launch
// of heads × splits blocks leaves (m, l and a head's values each).
func AttPartFloats(heads, splits int) int { return heads * splits * (MaxHeadDim + 2) }

// TopK: one block finds a row's largest values.
func TopK() Launch { return launch(KTopK, 1, 1, TopKThreads) }

// Route: one block chooses the router's groups and writes the table.
func Route() Launch { return launch(KRoute, 1, 1, EWThreads) }

// Argmax: one block reduces the whole row (a decode token's logits).
func Argmax() Launch { return launch(KArgmax, 1, 1, EWThreads) }

// Attention: one block per (head, token).
func Attention(heads, T int) Launch { return launch(KAttention, heads, T, AttThreads) }

// KVAppend: one thread per value of T tokens' keys (and values).
func KVAppend(T, kvDim int) Launch {
	return launch(KKVAppend, ceilDiv(T*kvDim, EWThreads), 1, EWThreads)
}

// Vote: one block per token.
func Vote(T int) Launch { return launch(KVote, T, 1, VoteThreads) }

// ColsPerThread is the number of consecutive hidden columns one thread of
// the split-K down projection owns: one 16-byte load of a 16-bit row, one
// float4, or one quantisation block.
func ColsPerThread(dt format.DType) int {
	switch {
	case dt.Quantized():
		return QK
	case dt == format.F32:
		return 4
	}
	return 8
}

// Down is the plan of one token's down projection over n records.
type Down struct {
	Partial Launch // KFFNDownPartial: grid (column blocks, Splits)
	Reduce  Launch // KReduceSplits
	Splits  int    // record ranges, each summed by its own blocks
	Chunk   int    // records per range
}

// MinChunk is the fewest records a split of the down projection sums: below
// it a block's fixed cost outweighs its share of the stream.
const MinChunk = 16

// MaxSplits is the most splits a down projection uses on a device with sms
// multiprocessors for hidden size H: enough blocks to fill the device about
// four times over.
func MaxSplits(H int, dt format.DType, sms int) int {
	colBlocks := ceilDiv(H, DownThreads*ColsPerThread(dt))
	return max(1, 4*max(1, sms)/colBlocks)
}

// FFNDown plans the decode down projection over n records of hidden size H:
// the records are cut into Splits ranges of Chunk (at least MinChunk), each
// range's blocks write partial sums, and one reduction adds them — no
// global atomics, and the sum's order is fixed, so runs are reproducible.
func FFNDown(n, H int, dt format.DType, sms int) Down {
	s := min(MaxSplits(H, dt, sms), max(1, n/MinChunk))
	chunk := ceilDiv(n, s)
	if chunk > 0 {
		s = ceilDiv(n, chunk)
	}
	colBlocks := ceilDiv(H, DownThreads*ColsPerThread(dt))
	return Down{
		Partial: launch(KFFNDownPartial, colBlocks, s, DownThreads),
		Reduce:  launch(KReduceSplits, ceilDiv(H, EWThreads), 1, EWThreads),
		Splits:  s, Chunk: chunk,
	}
}

// FFNDownTiled: y (T, H) = h (T, n) · D for a batch, tiled 64 columns × 32 tokens.
func FFNDownTiled(H, T int) Launch {
	return launch(KFFNDownTiled, ceilDiv(H, TileM), ceilDiv(T, TileN), GemmThreads)
}

// Vec reports whether rows of n values of dt at the given device addresses
// may be read with 16-byte loads: a 16-bit or f32 type, n a whole number of
// 16-byte chunks, every address 16-byte aligned. Block types are read
// block by block and never take this path.
func Vec(dt format.DType, n int, addrs ...uint64) bool {
	if dt.Quantized() || dt.Size() == 0 || (n*dt.Size())%16 != 0 {
		return false
	}
	for _, a := range addrs {
		if a%16 != 0 {
			return false
		}
	}
	return true
}

// CheckAttention refuses head shapes the attention kernel cannot run.
func CheckAttention(heads, kvHeads, headDim int) error {
	switch {
	case headDim < 2 || headDim%2 != 0 || headDim > MaxHeadDim:
		return fmt.Errorf("cuda backend: head size %d not supported (even, at most %d)", headDim, MaxHeadDim)
	case kvHeads < 1 || heads%kvHeads != 0:
		return fmt.Errorf("cuda backend: %d query heads are not a multiple of %d kv heads", heads, kvHeads)
	}
	return nil
}

// Args packs one launch's kernel parameters in the form the driver API
// takes (an array of pointers to the values), each value in its own 8-byte
// slot, checking every value against the kernel's signature.
type Args struct {
	kernel string
	sig    string
	slots  [24]uint64
	ptrs   [24]unsafe.Pointer
	n      int
	err    error
}

// NewArgs starts the parameters of kernel.
func NewArgs(kernel string) *Args {
	a := &Args{}
	a.Reset(kernel)
	return a
}

// Reset starts over for kernel, reusing a's storage.
func (a *Args) Reset(kernel string) *Args {
	a.kernel, a.n, a.err = kernel, 0, nil
	var ok bool
	if a.sig, ok = Signatures[kernel]; !ok {
		a.err = fmt.Errorf("cuda backend: unknown kernel %q", kernel)
	}
	return a
}

func (a *Args) put(kind byte, v uint64) *Args {
	if a.err != nil {
		return a
	}
	if a.n >= len(a.sig) || a.sig[a.n] != kind {
		a.err = fmt.Errorf("cuda backend: %s parameter %d: got kind %c, signature %q", a.kernel, a.n, kind, a.sig)
		return a
	}
	a.slots[a.n] = v
	a.n++
	return a
}

// Ptr adds a device address.
func (a *Args) Ptr(p uint64) *Args { return a.put('p', p) }

// Int adds a 32-bit int; values outside int32 are an error.
func (a *Args) Int(v int) *Args {
	if v < math.MinInt32 || v > math.MaxInt32 {
		if a.err == nil {
			a.err = fmt.Errorf("cuda backend: %s parameter %d: %d does not fit a 32-bit int", a.kernel, a.n, v)
		}
		return a
	}
	return a.put('i', uint64(uint32(int32(v))))
}

// F32 adds a float.
func (a *Args) F32(v float32) *Args { return a.put('f', uint64(math.Float32bits(v))) }

// Params returns the parameter pointers for cuLaunchKernel, or the first
// packing error (a wrong kind, a missing parameter, an overflow).
func (a *Args) Params() ([]unsafe.Pointer, error) {
	if a.err != nil {
		return nil, a.err
	}
	if a.n != len(a.sig) {
		return nil, fmt.Errorf("cuda backend: %s takes %d parameters, got %d", a.kernel, len(a.sig), a.n)
	}
	for i := 0; i < a.n; i++ {
		a.ptrs[i] = unsafe.Pointer(&a.slots[i])
	}
	return a.ptrs[:a.n], nil
}

// Slot returns parameter i as packed (for tests).
func (a *Args) Slot(i int) uint64 { return a.slots[i] }

// Table lists the device address of every record of blocks placed at the
// device addresses bases, block b holding counts[b] records of recBytes:
// record i of the set is table entry i.
func Table(bases []uint64, counts []int, recBytes int) []uint64 {
	var t []uint64
	for b, base := range bases {
		for k := 0; k < counts[b]; k++ {
			t = append(t, base+uint64(k*recBytes))
		}
	}
	return t
}

// Gather returns the table of the decode set ranks of all: ranks must
// ascend strictly within [0, len(all)). The static prefix and the voted
// ranks are read in place by address, so nothing is copied.
func Gather(all []uint64, ranks []int) ([]uint64, error) {
	out := make([]uint64, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= len(all) || (i > 0 && r <= ranks[i-1]) {
			return nil, fmt.Errorf("cuda backend: decode set not ascending within [0, %d): rank %d", len(all), r)
		}
		out[i] = all[r]
	}
	return out, nil
}

// Scratch is the per-Exec device scratch an FFN needs: h (T, n) floats and
// the down projection's partial sums (MaxSplits × H floats), in floats.
func Scratch(T, n, H int, dt format.DType, sms int) (act, partial int) {
	return T * n, MaxSplits(H, dt, sms) * H
}

// ParseDevice reads a --device value: "cpu" (or empty), "cuda" (the first
// GPU) or "cuda:N". gpu reports whether it names a GPU.
func ParseDevice(name string) (ordinal int, gpu bool, err error) {
	switch {
	case name == "" || name == "cpu":
		return 0, false, nil
	case name == "cuda":
		return 0, true, nil
	case len(name) > 5 && name[:5] == "cuda:":
		n := 0
		for _, c := range name[5:] {
			if c < '0' || c > '9' || n > 1<<20 {
				return 0, false, fmt.Errorf("--device %q: want cpu, cuda or cuda:N", name)
			}
			n = 10*n + int(c-'0')
		}
		return n, true, nil
	}
	return 0, false, fmt.Errorf("--device %q: want cpu, cuda or cuda:N", name)
}

// Values returns the packed parameter values themselves (one 8-byte slot
// each), for a driver that passes values rather than pointers to them.
func (a *Args) Values() ([]uint64, error) {
	if _, err := a.Params(); err != nil {
		return nil, err
	}
	return a.slots[:a.n], nil
}
