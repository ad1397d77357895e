//go:build cuda || cudaemu

package cuda

// The kernels against their oracle: every operation of the seam on the GPU
// and on the CPU backend running kernels.Generic (the pure-Go references),
// same inputs, random shapes with ragged tails, every dtype. Tolerances are
// derived from float32 error bounds, not guessed: two float32 sums of the
// same n products in different orders differ by at most 2·γ_n·Σ|terms|,
// γ_n ≈ (n+2)·2⁻²⁴ (kernels' tol), and the FFN's bound carries the dots'
// through SiLU and the down projection as kernels' FuzzFFNDecode does.
//
// These tests need a GPU: gorgonia.org/cu exits the test binary at start
// when there is none. They run on the device machine from the folder
// `make device-check` prepares.

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"unsafe"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/backend/cudaplan"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
)

const ulp = 6e-8 // 2⁻²⁴ rounded up

var dtypes = []format.DType{format.F32, format.F16, format.BF16, format.Q8_0, format.Q4_0}

// pair is the same work on both backends.
type pair struct {
	gd *Device
	ge *Exec
	cd *cpu.Device
	ce backend.Exec
}

func newPair(t *testing.T) *pair {
	t.Helper()
	restore := kernels.Use(&kernels.Generic)
	t.Cleanup(restore)
	gd, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gd.Close(); err != nil {
			t.Error(err)
		}
	})
	ge, err := gd.NewExec(kernels.NewPool(1))
	if err != nil {
		t.Fatal(err)
	}
	cd := cpu.New()
	ce, err := cd.NewExec(kernels.NewPool(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ge.Close(); ce.Close() })
	t.Logf("device: %s", gd.Name())
	return &pair{gd: gd, ge: ge.(*Exec), cd: cd, ce: ce}
}

// bufs returns a GPU and a CPU buffer holding v.
func (p *pair) bufs(t *testing.T, v []float32) (backend.Buf, backend.Buf) {
	t.Helper()
	g := p.ge.Alloc(len(v))
	if len(v) > 0 {
		done := p.gd.enter()
		if err := p.gd.drv.htod(dp(g), unsafe.Pointer(&v[0]), 4*len(v)); err != nil {
			t.Fatal(err)
		}
		done()
	}
	c := p.ce.Alloc(len(v))
	copy(cpu.F32(c), v)
	return g, c
}

// read returns the GPU buffer's values, failing on any recorded error.
func (p *pair) read(t *testing.T, g backend.Buf) []float32 {
	t.Helper()
	out := make([]float32, g.Len())
	p.ge.Read(out, g)
	if err := p.ge.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func randVec(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// randRow returns n random values stored as dt and their stored values.
func randRow(rng *rand.Rand, dt format.DType, n int) ([]byte, []float32) {
	f := randVec(rng, n)
	rb, _ := dt.RowBytes(n)
	b := make([]byte, rb)
	switch dt {
	case format.Q8_0, format.Q4_0:
		kernels.QuantizeRow(b, dt, f)
	case format.F32:
		for i, v := range f {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	case format.BF16:
		for i, v := range f {
			binary.LittleEndian.PutUint16(b[2*i:], kernels.F32ToBF16(v))
		}
	case format.F16:
		for i, v := range f {
			binary.LittleEndian.PutUint16(b[2*i:], kernels.F32ToF16(v))
		}
	}
	kernels.ToF32(f, b, dt)
	return b, f
}

// widths are row lengths per dtype: whole blocks for the block types,
// ragged tails (not whole 16-byte chunks) for the others.
func widths(dt format.DType) []int {
	var w []int
	switch {
	case dt.Quantized():
		w = []int{32, 96, 2048}
	case dt == format.F32:
		w = []int{6, 36, 256}
	default:
		w = []int{20, 72, 256, 2052}
	}
	if Emulated {
		return w[:2] // the CPU emulator is slow: the narrow ones
	}
	return w
}

// pick returns all on a GPU and short in the emulator.
func pick(all, short []int) []int {
	if Emulated {
		return short
	}
	return all
}

// dotTol bounds two float32 orders of Σ w_i·x_i, each product's operands
// rounded by rel (tcRel) on the GPU.
func dotTol(w, x []float32, rel float64) float64 {
	var s float64
	for i := range x {
		s += math.Abs(float64(w[i]) * float64(x[i]))
	}
	return (2*float64(len(x)+2)*ulp+rel)*s + 1e-6
}

// tcRel is what the tiled GEMM's tensor-core operands add to a product's
// relative error: a BF16 pack's activations rounded to bf16 (2⁻⁸), a
// quantised pack's weights and activations (2·2⁻⁸), an f16 pack's
// activations to half (2⁻¹¹); f32 weights and the warp kernels round
// nothing.
func tcRel(dt format.DType, tiled bool) float64 {
	switch {
	case !tiled || dt == format.F32:
		return 0
	case dt == format.BF16:
		return 0x1p-8
	case dt == format.F16:
		return 0x1p-11
	}
	return 2 * 0x1p-8
}

func TestMatMul(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, dt := range dtypes {
		for _, cols := range widths(dt) {
			for _, rows := range pick([]int{1, 7, 65, 300}, []int{7, 65}) {
				for _, T := range pick([]int{1, 3, 5, 37}, []int{1, 5, 37}) {
					data, wf := randRow(rng, dt, rows*cols)
					gw, err := p.gd.Matrix(data, dt, rows, cols)
					if err != nil {
						t.Fatal(err)
					}
					cw, _ := p.cd.Matrix(data, dt, rows, cols)
					x := randVec(rng, T*cols)
					if T == 37 && dt != format.F16 {
						// Activations past half's range (65504): the tensor
						// cores take them as bf16, in float32's range.
						for i := range x {
							x[i] *= 1e5
						}
					}
					gx, cx := p.bufs(t, x)
					gout, cout := p.bufs(t, make([]float32, T*rows))
					p.ge.MatMul([]backend.Buf{gout}, []backend.Matrix{gw}, gx)
					p.ce.MatMul([]backend.Buf{cout}, []backend.Matrix{cw}, cx)
					got, want := p.read(t, gout), cpu.F32(cout)
					for tt := 0; tt < T; tt++ {
						for r := 0; r < rows; r++ {
							i := tt*rows + r
							tol := dotTol(wf[r*cols:(r+1)*cols], x[tt*cols:(tt+1)*cols], tcRel(dt, T > cudaplan.WarpMaxBatch))
							if d := math.Abs(float64(got[i] - want[i])); !(d <= tol) {
								t.Fatalf("%v %d×%d T=%d [%d,%d]: gpu %g, cpu %g (|Δ| %g > %g)", dt, rows, cols, T, tt, r, got[i], want[i], d, tol)
							}
						}
					}
				}
			}
		}
	}
}

// TestEmbedNormAdd: Embed widens exactly; RMSNorm sums squares in double on
// both sides, so only the last multiplications may round differently;
// Add and AddBias are one rounding each, identical.
func TestEmbedNormAdd(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, dt := range dtypes {
		for _, cols := range widths(dt) {
			const vocab = 50
			data, _ := randRow(rng, dt, vocab*cols)
			gw, _ := p.gd.Matrix(data, dt, vocab, cols)
			cw, _ := p.cd.Matrix(data, dt, vocab, cols)
			toks := []int{0, 49, 7, 7, 23}
			gout, cout := p.bufs(t, make([]float32, len(toks)*cols))
			if err := p.ge.Embed(gout, gw, toks); err != nil {
				t.Fatal(err)
			}
			p.ce.Embed(cout, cw, toks)
			got, want := p.read(t, gout), cpu.F32(cout)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v embed [%d]: gpu %g, cpu %g", dt, i, got[i], want[i])
				}
			}
			if err := p.ge.Embed(gout, gw, []int{vocab}); err == nil {
				t.Fatal("token id outside the vocabulary accepted")
			}

			w := randVec(rng, cols)
			gv, _ := p.gd.Vector(w)
			cv, _ := p.cd.Vector(w)
			gn, cn := p.bufs(t, make([]float32, len(toks)*cols))
			p.ge.RMSNorm(gn, gout, gv, 1e-5)
			p.ce.RMSNorm(cn, cout, cv, 1e-5)
			got, want = p.read(t, gn), cpu.F32(cn)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 4*ulp*math.Abs(float64(want[i]))+1e-30 {
					t.Fatalf("%v rmsnorm [%d]: gpu %g, cpu %g", dt, i, got[i], want[i])
				}
			}
			p.ge.AddBias(gn, gv)
			p.ce.AddBias(cn, cv)
			p.ge.Add(gn, gout)
			p.ce.Add(cn, cout)
			got, want = p.read(t, gn), cpu.F32(cn)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 8*ulp*(math.Abs(float64(want[i]))+1) {
					t.Fatalf("%v add [%d]: gpu %g, cpu %g", dt, i, got[i], want[i])
				}
			}
			// Write a row from the host between launches (a pass resumed at a
			// layer), then add onto it: the copy lands after the launches
			// before it and before those after.
			row := randVec(rng, cols)
			p.ge.Add(gout, gn)
			p.ge.Write(p.ge.Slice(gout, cols, cols), row)
			p.ge.Add(gout, gn)
			p.ce.Add(cout, cn)
			p.ce.Write(p.ce.Slice(cout, cols, cols), row)
			p.ce.Add(cout, cn)
			got, want = p.read(t, gout), cpu.F32(cout)
			for i := range want {
				if d := math.Abs(float64(got[i] - want[i])); d > 8*ulp*(math.Abs(float64(want[i]))+1) {
					t.Fatalf("%v write between adds [%d]: gpu %g, cpu %g", dt, i, got[i], want[i])
				}
			}
		}
	}
}

// TestRoPE: the angle is the same float32 product and cos/sin the same
// double values on both sides; the GPU may fuse a·c − b·s into one
// multiply-add, so each output may differ by the rounding of its terms.
func TestRoPE(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, hd := range []int{16, 64, 128} {
		inv := make([]float64, hd/2)
		for i := range inv {
			inv[i] = 1 / math.Pow(500000, float64(2*i)/float64(hd))
			if i%3 == 0 {
				inv[i] /= 8 // llama3 scaling divides low frequencies
			}
		}
		for _, T := range []int{1, 6} {
			for _, pos := range []int{0, 17, 4000} {
				heads := 3
				x := randVec(rng, T*heads*hd)
				gx, cx := p.bufs(t, x)
				p.ge.RoPE(gx, T, hd, pos, inv)
				p.ce.RoPE(cx, T, hd, pos, inv)
				got, want := p.read(t, gx), cpu.F32(cx)
				for i := range want {
					// Output i mixes x[i] and its pair partner: |a·c| + |b·s| ≤ |a| + |b|.
					partner := i + hd/2
					if i%hd >= hd/2 {
						partner = i - hd/2
					}
					tol := 4*ulp*(math.Abs(float64(x[i]))+math.Abs(float64(x[partner]))) + 1e-7
					if d := math.Abs(float64(got[i] - want[i])); d > tol {
						t.Fatalf("rope hd=%d T=%d pos=%d [%d]: gpu %g, cpu %g", hd, T, pos, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestAttention: GQA attention over a cache filled by earlier calls. Each
// score may differ by δ = 2(d+2)·2⁻²⁴·Σ|q·k|·scale; a softmax weight then
// by a factor e^{±2δ} (plus a few roundings of exp and the sum over n
// keys), and the output by that times Σ p_i|v_i| plus the sum's reordering.
func TestAttention(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(4, 4))
	shapes := [][3]int{{4, 2, 32}, {8, 8, 64}, {32, 8, 64}, {6, 2, 128}}
	if Emulated {
		shapes = [][3]int{{4, 2, 32}, {6, 2, 128}}
	}
	for _, shape := range shapes {
		heads, kvHeads, hd := shape[0], shape[1], shape[2]
		const layers, ctx = 2, 90
		kvDim := kvHeads * hd
		gk, ck := p.bufs(t, make([]float32, layers*ctx*kvDim))
		gv, cv := p.bufs(t, make([]float32, layers*ctx*kvDim))
		gc := &backend.KVCache{Layers: layers, Ctx: ctx, KVDim: kvDim, Heads: heads, HeadDim: hd, Keys: gk, Values: gv}
		cc := &backend.KVCache{Layers: layers, Ctx: ctx, KVDim: kvDim, Heads: heads, HeadDim: hd, Keys: ck, Values: cv}
		pos := 0
		for _, T := range []int{37, 1, 1, 40} { // a prompt, two decode steps, a second prompt past a chunk edge
			for layer := 0; layer < layers; layer++ {
				q, k, v := randVec(rng, T*heads*hd), randVec(rng, T*kvDim), randVec(rng, T*kvDim)
				gq, cq := p.bufs(t, q)
				gkk, ckk := p.bufs(t, k)
				gvv, cvv := p.bufs(t, v)
				gout, cout := p.bufs(t, make([]float32, T*heads*hd))
				p.ge.Attention(gout, gq, gkk, gvv, gc, layer, pos, T)
				p.ce.Attention(cout, cq, ckk, cvv, cc, layer, pos, T)
				got, want := p.read(t, gout), cpu.F32(cout)
				keys := cpu.F32(ck)[layer*ctx*kvDim:]
				vals := cpu.F32(cv)[layer*ctx*kvDim:]
				scale := 1 / math.Sqrt(float64(hd))
				for tt := 0; tt < T; tt++ {
					n := pos + tt + 1
					for h := 0; h < heads; h++ {
						kvh := (h / (heads / kvHeads)) * hd
						qv := q[tt*heads*hd+h*hd : tt*heads*hd+(h+1)*hd]
						s := make([]float64, n)
						var delta, m float64
						m = math.Inf(-1)
						for i := 0; i < n; i++ {
							var dot, abs float64
							for d := 0; d < hd; d++ {
								dot += float64(qv[d]) * float64(keys[i*kvDim+kvh+d])
								abs += math.Abs(float64(qv[d]) * float64(keys[i*kvDim+kvh+d]))
							}
							s[i] = dot * scale
							delta = max(delta, 2*float64(hd+2)*ulp*abs*scale)
							m = max(m, s[i])
						}
						var sum float64
						for i := range s {
							s[i] = math.Exp(s[i] - m)
							sum += s[i]
						}
						rel := math.Expm1(4*delta) + 2*float64(n+8)*ulp
						for d := 0; d < hd; d++ {
							var pv float64
							for i := 0; i < n; i++ {
								pv += s[i] / sum * math.Abs(float64(vals[i*kvDim+kvh+d]))
							}
							idx := tt*heads*hd + h*hd + d
							tol := 2*rel*pv + 1e-6
							if dd := math.Abs(float64(got[idx] - want[idx])); !(dd <= tol) {
								t.Fatalf("attention %v T=%d pos=%d layer %d token %d head %d dim %d: gpu %g, cpu %g (|Δ| %g > %g)",
									shape, T, pos, layer, tt, h, d, got[idx], want[idx], dd, tol)
							}
						}
					}
				}
			}
			pos += T
		}
	}
}

// ffnCase is a layer's records in blocks (as bands arrive) and their values.
type ffnCase struct {
	blocks [][]byte
	rows   [][]float32 // per record: gate | up | down values
}

// recordBlocks views the case's blocks as interleaved records, or copies
// them into the split layouts of version 2 or 3 bands.
func (c ffnCase) recordBlocks(dt format.DType, H int, l format.Layout) []format.RecordBlock {
	R, _ := dt.RowBytes(H)
	out := make([]format.RecordBlock, len(c.blocks))
	for i, b := range c.blocks {
		if l == format.Interleaved {
			out[i] = format.InterleavedBlock(b, R)
			continue
		}
		B := len(b) / (3 * R)
		out[i] = format.PutBlock(make([]byte, len(b)), b, B, R, l, format.TileBytes(dt), format.TileGroups{})
	}
	return out
}

func newFFN(rng *rand.Rand, dt format.DType, H, n, maxBlock int) ffnCase {
	var c ffnCase
	for left := n; left > 0; {
		k := min(left, 1+rng.IntN(maxBlock))
		b, vals := randRow(rng, dt, k*3*H)
		c.blocks = append(c.blocks, b)
		for j := 0; j < k; j++ {
			c.rows = append(c.rows, vals[3*j*H:(3*j+3)*H])
		}
		left -= k
	}
	return c
}

// ffnBound is |Δy[t, i]|'s bound for records rows over x (T, H), and the
// activations' bounds dh (T, n): each dot's reordering through SiLU(g)·u
// (as FuzzFFNDecode), then the down sum's own reordering; relGU and relD
// are the gate-up and down GEMMs' operand roundings (tcRel).
func ffnBound(rows [][]float32, x []float32, H int, relGU, relD float64) (by, dh []float64) {
	T, n := len(x)/H, len(rows)
	by, dh = make([]float64, T*H), make([]float64, T*n)
	eps := 2*float64(H+2)*ulp + relGU
	for t := 0; t < T; t++ {
		xt := x[t*H : (t+1)*H]
		hAbs := make([]float64, n)
		for j, r := range rows {
			var g, u, gAbs, uAbs float64
			for i := 0; i < H; i++ {
				g += float64(r[i]) * float64(xt[i])
				u += float64(r[H+i]) * float64(xt[i])
				gAbs += math.Abs(float64(r[i]) * float64(xt[i]))
				uAbs += math.Abs(float64(r[H+i]) * float64(xt[i]))
			}
			silu := g / (1 + math.Exp(-g))
			dh[t*n+j] = 1.1*eps*gAbs*(math.Abs(u)+eps*uAbs) + math.Abs(silu)*eps*uAbs + 1e-6*math.Abs(silu*u)
			hAbs[j] = math.Abs(silu * u)
		}
		for i := 0; i < H; i++ {
			var b, mag float64
			for j, r := range rows {
				d := math.Abs(float64(r[2*H+i]))
				b += dh[t*n+j] * d
				mag += hAbs[j] * d
			}
			by[t*H+i] = 2*b + (2*float64(n+2)*ulp+relD)*mag + 1e-5
		}
	}
	return by, dh
}

// TestFFN: the FFN over a layer's records (blocks of ragged sizes), decode
// (T = 1: warp gate/up, split-K down and reduction) and batches (the tiled
// GEMMs), activations read back, and over gathered decode sets.
func TestFFN(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, dt := range dtypes {
		for _, H := range widths(dt) {
			for _, n := range pick([]int{1, 13, 200}, []int{1, 13, 70}) {
				c := newFFN(rng, dt, H, n, 70)
				// The GPU gets the blocks as a version 1, 2 or 3 pack lays
				// them out (split ones interleaved on upload) by n, the
				// CPU reference as version 1 did.
				gr, err := p.gd.Records(c.recordBlocks(dt, H, format.Layout(n%3)), dt, H)
				if err != nil {
					t.Fatal(err)
				}
				cr, _ := p.cd.Records(c.recordBlocks(dt, H, format.Interleaved), dt, H)
				for _, T := range []int{1, 2, 5, 33} {
					x := randVec(rng, T*H)
					check := func(what string, grec, crec backend.Records, rows [][]float32) {
						gx, cx := p.bufs(t, x)
						gout, cout := p.bufs(t, make([]float32, T*H))
						gact := make([]float32, T*grec.Len())
						cact := make([]float32, T*crec.Len())
						p.ge.FFN(gout, gx, grec, gact)
						p.ce.FFN(cout, cx, crec, cact)
						got, want := p.read(t, gout), cpu.F32(cout)
						by, dh := ffnBound(rows, x, H, tcRel(dt, T > cudaplan.WarpMaxBatch), tcRel(dt, T > 1))
						for i := range want {
							if d := math.Abs(float64(got[i] - want[i])); !(d <= by[i]) {
								t.Fatalf("%v H=%d %s T=%d y[%d]: gpu %g, cpu %g (|Δ| %g > %g)", dt, H, what, T, i, got[i], want[i], d, by[i])
							}
						}
						for i := range cact {
							if d := math.Abs(float64(gact[i] - cact[i])); !(d <= 2*dh[i]+1e-6) {
								t.Fatalf("%v H=%d %s T=%d h[%d]: gpu %g, cpu %g", dt, H, what, T, i, gact[i], cact[i])
							}
						}
					}
					check("all", gr, cr, c.rows)
					// A decode set: a static prefix and scattered ranks.
					static := rng.IntN(n + 1)
					var ranks []int
					var rows [][]float32
					for r := 0; r < n; r++ {
						if r < static || rng.IntN(3) == 0 {
							ranks = append(ranks, r)
							rows = append(rows, c.rows[r])
						}
					}
					gg, err := p.ge.Gather(gr, ranks, static, true)
					if err != nil {
						t.Fatal(err)
					}
					cg, _ := p.ce.Gather(cr, ranks, static, true)
					check("gathered", gg, cg, rows)
				}
				if _, err := p.ge.Gather(gr, []int{n}, 0, false); err == nil {
					t.Fatal("a rank outside the loaded records accepted")
				}
			}
		}
	}
}

// copies, and counted as registered, not resident.
func TestInPlace(t *testing.T) {
	p := newPair(t)
	const rows, cols = 64, 256
	page, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(page)
	rng := rand.New(rand.NewPCG(6, 6))
	data, _ := randRow(rng, format.BF16, rows*cols)
	copy(page[4096:], data)
	// Registration works on discrete GPUs too (reads cross the bus).
	if err := p.gd.register(page); err != nil {
		t.Fatalf("registering host memory read-only (what an integrated GPU does with the pack): %v", err)
	}
	before := p.gd.ResidentBytes()
	gw, err := p.gd.Matrix(page[4096:4096+len(data)], format.BF16, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if p.gd.ResidentBytes() != before || p.gd.RegisteredBytes() != uint64(len(data)) {
		t.Fatalf("in place: resident %d → %d, registered %d", before, p.gd.ResidentBytes(), p.gd.RegisteredBytes())
	}
	cw, _ := p.cd.Matrix(data, format.BF16, rows, cols)
	x := randVec(rng, cols)
	gx, cx := p.bufs(t, x)
	gout, cout := p.bufs(t, make([]float32, rows))
	p.ge.MatMul([]backend.Buf{gout}, []backend.Matrix{gw}, gx)
	p.ce.MatMul([]backend.Buf{cout}, []backend.Matrix{cw}, cx)
	got, want := p.read(t, gout), cpu.F32(cout)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-3*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("in place [%d]: gpu %g, cpu %g", i, got[i], want[i])
		}
	}
}

// voteRef is SelectInfer's vote as the runner counts it on the host: per
// token, the k records of largest |h|, ties to the lower rank.
func voteRef(act []float32, n, k int, counts []int32) {
	for t := 0; t < len(act)/n; t++ {
		row := act[t*n : (t+1)*n]
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		abs := func(i int) float32 { return float32(math.Abs(float64(row[i]))) }
		sort.SliceStable(idx, func(a, b int) bool { return abs(idx[a]) > abs(idx[b]) })
		for _, j := range idx[:k] {
			counts[j]++
		}
	}
}

// TestVote: the device's counts are the host's over the same activations,
// with many exact ties (every record three times, so every |h| three
// times), counts accumulating over calls.
func TestVote(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(7, 7))
	const H = 64
	for _, n := range []int{3, 96, 300, 1500} {
		base := newFFN(rng, format.BF16, H, (n+2)/3, 50)
		var all []byte
		for _, b := range base.blocks {
			all = append(all, b...)
		}
		rec := 3 * 2 * H
		var blk []byte
		for j := 0; j < n; j++ {
			r := all[(j/3)*rec : (j/3+1)*rec]
			blk = append(blk, r...)
		}
		recs, err := p.gd.Records([]format.RecordBlock{format.InterleavedBlock(blk, 2*H)}, format.BF16, H)
		if err != nil {
			t.Fatal(err)
		}
		for _, T := range []int{1, 5, 40} {
			gx, _ := p.bufs(t, randVec(rng, T*H))
			gout := p.ge.Alloc(T * H)
			act := make([]float32, T*n)
			p.ge.FFN(gout, gx, recs, act)
			for _, k := range []int{1, 2, n / 3, n - 1, n} {
				if k < 1 {
					continue
				}
				got, want := make([]int32, n), make([]int32, n)
				for j := range got {
					got[j] = int32(j % 5) // counts accumulate
					want[j] = got[j]
				}
				p.ge.Vote(got, k)
				if err := p.ge.Err(); err != nil {
					t.Fatal(err)
				}
				voteRef(act, n, k, want)
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("n=%d T=%d k=%d: rank %d has %d votes, want %d", n, T, k, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// TestGraphStep: decode steps queued and run as CUDA graphs (captured on
// the first step, replayed after) give bit-identical results to the same
// launches made one by one, the position coming from device memory.
func TestGraphStep(t *testing.T) {
	p := newPair(t)
	rng := rand.New(rand.NewPCG(8, 8))
	const H, vocab, heads, kvHeads, hd, n, ctx = 64, 40, 4, 2, 16, 50, 16
	emb, _ := randRow(rng, format.BF16, vocab*H)
	table, _ := p.gd.Matrix(emb, format.BF16, vocab, H)
	wqb, _ := randRow(rng, format.BF16, heads*hd*H)
	wq, _ := p.gd.Matrix(wqb, format.BF16, heads*hd, H)
	wkb, _ := randRow(rng, format.BF16, kvHeads*hd*H)
	wk, _ := p.gd.Matrix(wkb, format.BF16, kvHeads*hd, H)
	norm, _ := p.gd.Vector(randVec(rng, H))
	c := newFFN(rng, format.BF16, H, n, 20)
	recs, _ := p.gd.Records(c.recordBlocks(format.BF16, H, format.Interleaved), format.BF16, H)
	inv := make([]float64, hd/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(10000, float64(2*i)/hd)
	}
	run := func(graphs bool) ([][]float32, *Exec) {
		p.gd.SetGraphs(graphs)
		ex, _ := p.gd.NewExec(kernels.NewPool(1))
		e := ex.(*Exec)
		t.Cleanup(e.Close)
		cache := &backend.KVCache{Layers: 1, Ctx: ctx, KVDim: kvHeads * hd, Heads: heads, HeadDim: hd,
			Keys: e.Alloc(ctx * kvHeads * hd), Values: e.Alloc(ctx * kvHeads * hd)}
		x, xb, q, k := e.Alloc(H), e.Alloc(H), e.Alloc(heads*hd), e.Alloc(kvHeads*hd)
		att, y := e.Alloc(heads*hd), e.Alloc(H)
		dec, err := e.Gather(recs, []int{0, 1, 2, 7, 30, 49}, 3, true)
		if err != nil {
			t.Fatal(err)
		}
		var outs [][]float32
		for pos := 0; pos < 8; pos++ {
			if err := e.Embed(x, table, []int{(pos * 7) % vocab}); err != nil {
				t.Fatal(err)
			}
			e.RMSNorm(xb, x, norm, 1e-5)
			e.MatMul([]backend.Buf{q, k}, []backend.Matrix{wq, wk}, xb)
			e.RoPE(q, 1, hd, pos, inv)
			e.RoPE(k, 1, hd, pos, inv)
			e.Attention(att, q, k, k, cache, 0, pos, 1)
			e.FFN(y, xb, dec, nil)
			e.Add(y, x)
			o1, o2 := make([]float32, H), make([]float32, heads*hd)
			e.Read(o2, att)
			e.Read(o1, y)
			if err := e.Err(); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, append(o1, o2...))
		}
		return outs, e
	}
	want, _ := run(false)
	got, e := run(true)
	for s := range want {
		for i := range want[s] {
			if got[s][i] != want[s][i] {
				t.Fatalf("step %d [%d]: graph %g, launches %g", s, i, got[s][i], want[s][i])
			}
		}
	}
	// Each step's first Read runs the attention part's queue: steps are cut
	// at the first Read, so each step is one graph, the same every step.
	if r, c := e.GraphStats(); r != 8 || c != 1 {
		t.Errorf("%d steps replayed, %d graphs captured; want 8 and 1", r, c)
	}
}
