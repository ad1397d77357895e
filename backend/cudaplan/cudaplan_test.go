package cudaplan

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sipack/sipack/format"
)

const kernelSource = "../cuda/kernels/sipack.cu"

// TestMirrorsKernelSource: every SIP_ constant the kernels use has the same
// value here, and every kernel's parameter list matches Signatures (kind
// by kind), so a launch packed against Signatures fits the kernel.
func TestMirrorsKernelSource(t *testing.T) {
	src, err := os.ReadFile(kernelSource)
	if err != nil {
		t.Fatal(err)
	}
	defines := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (SIP_[A-Z0-9_]+) (\d+)`).FindAllStringSubmatch(string(src), -1) {
		v, _ := strconv.Atoi(m[2])
		defines[m[1]] = v
	}
	want := map[string]int{
		"SIP_QK": QK, "SIP_WARPS": Warps, "SIP_TILE_M": TileM, "SIP_TILE_N": TileN, "SIP_TILE_K": TileK,
		"SIP_GEMM_THREADS": GemmThreads, "SIP_DOWN_THREADS": DownThreads, "SIP_ATT_THREADS": AttThreads,
		"SIP_ATT_CHUNK": AttChunk, "SIP_MAX_HEAD_DIM": MaxHeadDim, "SIP_EW_THREADS": EWThreads, "SIP_VOTE_THREADS": VoteThreads,
		"SIP_NORM_MAX": NormMax, "SIP_TOPK_THREADS": TopKThreads, "SIP_TOPK_MAX": TopKMax,
		"SIP_F32": int(format.F32), "SIP_F16": int(format.F16), "SIP_BF16": int(format.BF16),
		"SIP_Q8_0": int(format.Q8_0), "SIP_Q4_0": int(format.Q4_0),
	}
	for name, v := range want {
		got, ok := defines[name]
		if !ok {
			t.Errorf("%s not defined in %s", name, kernelSource)
		} else if got != v {
			t.Errorf("%s is %d in the kernels, %d here", name, got, v)
		}
	}
	if TileM*TileK%GemmThreads != 0 || TileN*TileK%GemmThreads != 0 || (TileM/4)*(TileN/2) != GemmThreads {
		t.Errorf("tiles %d×%d×%d do not divide over %d threads as the GEMM assumes", TileM, TileN, TileK, GemmThreads)
	}
	kernels := map[string]string{}
	for _, m := range regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`).FindAllStringSubmatch(string(src), -1) {
		var sig strings.Builder
		for _, p := range strings.Split(m[2], ",") {
			p = strings.TrimSpace(p)
			switch {
			case strings.Contains(p, "*"):
				sig.WriteByte('p')
			case strings.HasPrefix(p, "int "):
				sig.WriteByte('i')
			case strings.HasPrefix(p, "float "):
				sig.WriteByte('f')
			default:
				t.Errorf("kernel %s: parameter %q of unknown kind", m[1], p)
			}
		}
		kernels[m[1]] = sig.String()
	}
	for name, sig := range Signatures {
		if got, ok := kernels[name]; !ok {
			t.Errorf("kernel %s not in %s", name, kernelSource)
		} else if got != sig {
			t.Errorf("kernel %s: parameters %q in the source, %q here", name, got, sig)
		}
	}
	for name := range kernels {
		if _, ok := Signatures[name]; !ok {
			t.Errorf("kernel %s has no signature here", name)
		}
	}
}

// TestArgs: values land in their slots bit-exactly, and every packing
// mistake is an error, never a launch.
func TestArgs(t *testing.T) {
	a := NewArgs(KRMSNorm).Ptr(0xdead0000beef).Ptr(16).Ptr(32).Int(-5).F32(1e-5)
	p, err := a.Params()
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 5 {
		t.Fatalf("%d params", len(p))
	}
	if *(*uint64)(p[0]) != 0xdead0000beef {
		t.Errorf("pointer slot %#x", *(*uint64)(p[0]))
	}
	if got := *(*int32)(p[3]); got != -5 { // the driver reads 4 bytes: little-endian low half
		t.Errorf("int slot reads %d", got)
	}
	if got := *(*float32)(p[4]); got != 1e-5 {
		t.Errorf("float slot reads %g", got)
	}
	bad := []*Args{
		NewArgs("sip_nonesuch"),
		NewArgs(KAdd).Ptr(1).Int(2),               // wrong kind
		NewArgs(KAdd).Ptr(1).Ptr(2),               // too few
		NewArgs(KAdd).Ptr(1).Ptr(2).Int(3).Int(4), // too many
	}
	if big := int64(math.MaxInt32) + 1; strconv.IntSize == 64 { // an int past int32 (none on 32-bit platforms)
		bad = append(bad, NewArgs(KAdd).Ptr(1).Ptr(2).Int(int(big)))
	}
	for i, b := range bad {
		if _, err := b.Params(); err == nil {
			t.Errorf("bad packing %d accepted", i)
		}
	}
	// Reset reuses the storage and clears the error.
	b := bad[1].Reset(KAdd).Ptr(1).Ptr(2).Int(3)
	if _, err := b.Params(); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

// TestLaunchShapes: every launch covers its work exactly once over whole
// blocks; batches switch from the warp kernels to the tiles past WarpMaxBatch.
func TestLaunchShapes(t *testing.T) {
	for _, rows := range []int{1, 7, 8, 9, 63, 64, 65, 2048, 128256} {
		for _, T := range []int{1, 2, 4, 5, 31, 32, 33, 256} {
			l := MatMul(rows, T)
			switch {
			case T <= WarpMaxBatch:
				if l.Kernel != KMatVec || l.Grid[0]*Warps < rows || (l.Grid[0]-1)*Warps >= rows || l.Grid[1] != T {
					t.Errorf("MatMul(%d, %d) = %v", rows, T, l)
				}
			default:
				if l.Kernel != KMatMul || l.Grid[0]*TileM < rows || (l.Grid[0]-1)*TileM >= rows || l.Grid[1]*TileN < T || (l.Grid[1]-1)*TileN >= T {
					t.Errorf("MatMul(%d, %d) = %v", rows, T, l)
				}
			}
			if g := FFNGateUp(rows, T); (T <= WarpMaxBatch) != (g.Kernel == KFFNGateUp) {
				t.Errorf("FFNGateUp(%d, %d) = %v", rows, T, g)
			}
		}
	}
	if l := Embed(300, 3); l.Grid[0]*l.Block[0] < 300 || l.Grid[1] != 3 {
		t.Errorf("Embed = %v", l)
	}
	if l := Elementwise(KAdd, 0); l.Grid[0] != 1 {
		t.Errorf("an empty element-wise launch has grid %v (the driver refuses 0)", l.Grid)
	}
}

// TestFFNDown: the splits cover the records exactly, none is empty, each
// holds at least MinChunk records unless there are fewer, the column blocks
// cover H, and the splits stay within MaxSplits (the partial buffer size).
func TestFFNDown(t *testing.T) {
	for _, dt := range []format.DType{format.F32, format.F16, format.BF16, format.Q8_0, format.Q4_0} {
		for _, H := range []int{64, 256, 2048, 3072, 4096, 8192} {
			for _, sms := range []int{1, 8, 132} {
				for _, n := range []int{0, 1, 15, 16, 17, 300, 3276, 5734, 8192} {
					d := FFNDown(n, H, dt, sms)
					ms := MaxSplits(H, dt, sms)
					switch {
					case d.Splits < 1 || d.Splits > ms:
						t.Fatalf("%v H=%d n=%d sms=%d: %d splits, max %d", dt, H, n, sms, d.Splits, ms)
					case d.Splits*d.Chunk < n || (n > 0 && (d.Splits-1)*d.Chunk >= n):
						t.Fatalf("%v H=%d n=%d: %d splits of %d do not cover exactly", dt, H, n, d.Splits, d.Chunk)
					case n >= MinChunk && d.Chunk < MinChunk:
						t.Fatalf("%v H=%d n=%d: chunk %d below %d", dt, H, n, d.Chunk, MinChunk)
					case d.Partial.Grid[0]*DownThreads*ColsPerThread(dt) < H:
						t.Fatalf("%v H=%d: column blocks %d do not cover", dt, H, d.Partial.Grid[0])
					case d.Partial.Grid[1] != d.Splits:
						t.Fatalf("grid %v for %d splits", d.Partial.Grid, d.Splits)
					}
					if _, p := Scratch(1, n, H, dt, sms); p < d.Splits*H {
						t.Fatalf("scratch %d floats for %d splits of %d", p, d.Splits, H)
					}
				}
			}
		}
	}
}

func TestVec(t *testing.T) {
	cases := []struct {
		dt    format.DType
		n     int
		addrs []uint64
		want  bool
	}{
		{format.BF16, 2048, []uint64{0, 4096}, true},
		{format.BF16, 2052, []uint64{0}, false}, // 4104 bytes: not whole 16-byte chunks
		{format.F16, 2048, []uint64{0, 8}, false},
		{format.F32, 4, []uint64{16}, true},
		{format.F32, 6, nil, false},
		{format.Q8_0, 2048, []uint64{0}, false},
		{format.Q4_0, 2048, []uint64{0}, false},
	}
	for _, c := range cases {
		if got := Vec(c.dt, c.n, c.addrs...); got != c.want {
			t.Errorf("Vec(%v, %d, %v) = %v", c.dt, c.n, c.addrs, got)
		}
	}
}

// TestTableAndGather: record i of blocks is at its block's base plus its
// index in the block; a decode set's table is the selected entries, and
// bad sets are refused as the CPU backend refuses them.
func TestTableAndGather(t *testing.T) {
	const rec = 96
	all := Table([]uint64{1 << 20, 1 << 30, 5 << 30}, []int{3, 0, 2}, rec)
	want := []uint64{1 << 20, 1<<20 + rec, 1<<20 + 2*rec, 5 << 30, 5<<30 + rec}
	if len(all) != len(want) {
		t.Fatalf("table %v", all)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("table[%d] = %#x, want %#x", i, all[i], want[i])
		}
	}
	g, err := Gather(all, []int{0, 2, 4})
	if err != nil || len(g) != 3 || g[0] != want[0] || g[1] != want[2] || g[2] != want[4] {
		t.Fatalf("Gather = %v, %v", g, err)
	}
	if g, err := Gather(all, nil); err != nil || len(g) != 0 {
		t.Errorf("empty decode set: %v, %v", g, err)
	}
	for _, bad := range [][]int{{3, 2}, {1, 1}, {-1}, {5}} {
		if _, err := Gather(all, bad); err == nil {
			t.Errorf("decode set %v accepted", bad)
		}
	}
}

func TestCheckAttention(t *testing.T) {
	if err := CheckAttention(32, 8, 64); err != nil {
		t.Error(err)
	}
	for _, c := range [][3]int{{32, 8, 512}, {32, 8, 63}, {30, 8, 64}, {8, 0, 64}} {
		if CheckAttention(c[0], c[1], c[2]) == nil {
			t.Errorf("heads %d kv %d head dim %d accepted", c[0], c[1], c[2])
		}
	}
}

func TestParseDevice(t *testing.T) {
	for in, want := range map[string][2]int{"": {0, 0}, "cpu": {0, 0}, "cuda": {0, 1}, "cuda:0": {0, 1}, "cuda:3": {3, 1}} {
		n, gpu, err := ParseDevice(in)
		if err != nil || n != want[0] || gpu != (want[1] == 1) {
			t.Errorf("ParseDevice(%q) = %d, %v, %v", in, n, gpu, err)
		}
	}
	for _, bad := range []string{"gpu", "cuda:", "cuda:-1", "cuda:x", "CUDA", "cuda:99999999999"} {
		if _, _, err := ParseDevice(bad); err == nil {
			t.Errorf("ParseDevice(%q) accepted", bad)
		}
	}
}
