// Package kernels holds the numeric operations of the forward pass. Each has
// a pure-Go reference whose doc comment states the math; fast paths (later,
// per architecture) must agree with these references within a stated
// tolerance. Weights are little-endian bytes in their stored dtype; all
// arithmetic and accumulation is float32.
package kernels

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/sipack/sipack/format"
)

// Weight is a row-major [Rows, Cols] matrix in its stored dtype.
type Weight struct {
	Data       []byte
	DType      format.DType
	Rows, Cols int
}

// Row returns the bytes of row r.
func (w *Weight) Row(r int) []byte {
	n, _ := w.DType.RowBytes(w.Cols)
	return w.Data[r*n : (r+1)*n]
}

// dotBF16Ref is the reference: Σ_i bf16(w[i])·x[i], accumulated in order in float32.
func dotBF16Ref(w []byte, x []float32) float32 {
	var s float32
	for i := range x {
		s += BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
	}
	return s
}

// dotF16Ref is the reference: Σ_i f16(w[i])·x[i].
func dotF16Ref(w []byte, x []float32) float32 {
	var s float32
	for i := range x {
		s += F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * x[i]
	}
	return s
}

// dotF32Ref is the reference: Σ_i w[i]·x[i].
func dotF32Ref(w []byte, x []float32) float32 {
	var s float32
	ws := F32s(w)[:len(x)]
	for i, v := range ws {
		s += v * x[i]
	}
	return s
}

// dotBF16BRef is the reference of the rounded-activation BF16 dot:
// Σ_i bf16(w[i])·bf16(x[i]), the activations already rounded to BF16.
func dotBF16BRef(w []byte, xb []uint16) float32 {
	var s float32
	for i, v := range xb {
		s += BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * BF16ToF32(v)
	}
	return s
}

// dotBF16ActRef is dotBF16BRef over converted activations.
func dotBF16ActRef(w []byte, a *Q8Act) float32 { return dotBF16BRef(w, a.B) }

// axpyBF16Ref is the reference: y[i] += a·bf16(w[i]).
func axpyBF16Ref(y []float32, a float32, w []byte) {
	for i := range y {
		y[i] += a * BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	}
}

// axpyF16Ref is the reference: y[i] += a·f16(w[i]).
func axpyF16Ref(y []float32, a float32, w []byte) {
	for i := range y {
		y[i] += a * F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	}
}

// axpyF32Ref is the reference: y[i] += a·w[i].
func axpyF32Ref(y []float32, a float32, w []byte) {
	ws := F32s(w)[:len(y)]
	for i, v := range ws {
		y[i] += a * v
	}
}

// dot4BF16Ref is four reference dot products sharing the row w.
func dot4BF16Ref(w []byte, x0, x1, x2, x3 []float32, out *[4]float32) {
	*out = [4]float32{dotBF16Ref(w, x0), dotBF16Ref(w, x1), dotBF16Ref(w, x2), dotBF16Ref(w, x3)}
}

// dot4F16Ref is four reference dot products sharing the F16 row w.
func dot4F16Ref(w []byte, x0, x1, x2, x3 []float32, out *[4]float32) {
	*out = [4]float32{dotF16Ref(w, x0), dotF16Ref(w, x1), dotF16Ref(w, x2), dotF16Ref(w, x3)}
}

// fmaPeakRef runs iters × 10 multiply-adds in registers (one lane).
func fmaPeakRef(iters int) float32 {
	var a [10]float32
	for i := 0; i < iters; i++ {
		for j := range a {
			a[j] = a[j]*0.999 + 0.001
		}
	}
	return a[0]
}

// sumBytesRef reads all of b: the wrapping sum of its little-endian 64-bit
// words, plus the trailing bytes.
func sumBytesRef(b []byte) uint64 {
	var s uint64
	n := len(b) &^ 7
	for i := 0; i < n; i += 8 {
		s += binary.LittleEndian.Uint64(b[i:])
	}
	for _, v := range b[n:] {
		s += uint64(v)
	}
	return s
}

// ToF32 widens n elements of dtype dt into dst.
func ToF32(dst []float32, w []byte, dt format.DType) {
	switch dt {
	case format.Q8_0, format.Q4_0, format.Q4_K, format.Q6_K:
		DequantizeRow(dst, w, dt)
	case format.F32:
		copy(dst, F32s(w))
	case format.BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	case format.F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
		}
	}
}

// F32s views little-endian float32 bytes as []float32 without copying. The
// pack format aligns every tensor to 64 bytes, and every supported target is
// little-endian.
func F32s(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// MatMul computes out[t, r] = Σ_c W[r, c] · x[t, c] for T = len(x)/W.Cols
// tokens (T = 1 is a matrix-vector product), splitting rows over the pool.
// For prefill the work is tiled: blocks of 64 rows × 32 tokens, so the
// weight block and the token tile stay in cache while every pair is
// computed, and BF16 rows are widened once per four tokens.
func MatMul(p *Pool, out []float32, w *Weight, x []float32) {
	T := len(x) / w.Cols
	if gemmFits(active, w.DType, w.Rows, w.Cols, T) && (!active.ops[w.DType].ActDot || active.prefillTakesBF16(w.DType)) {
		xb, xr := prefillBF16(p, w.DType, x)
		if xb != nil {
			x = xr
		}
		matMulGEMM(p, active.Gemm, out, w, x, xb, T)
		return
	}
	if active.ops[w.DType].ActDot {
		matMulInteger(p, [][]float32{out}, []*Weight{w}, x)
		return
	}
	runRows(p, T, len(w.Data), w.Rows, func(lo, hi, _ int) {
		const rowBlock, tokTile = 64, 32
		for r0 := lo; r0 < hi; r0 += rowBlock {
			r1 := min(r0+rowBlock, hi)
			for t0 := 0; t0 < T; t0 += tokTile {
				matTile(out, w, x, r0, r1, t0, min(t0+tokTile, T))
			}
		}
	})
}

// MatMulShared is MatMul for several weights that read the same input x
// (the attention's q, k and v projections): out[i] = ws[i] · x. On the
// integer path x is quantised once and one pass of the pool covers the
// rows of all the weights; otherwise it is one MatMul per weight.
func MatMulShared(p *Pool, outs [][]float32, ws []*Weight, x []float32) {
	dt, cols := ws[0].DType, ws[0].Cols
	same := true
	for _, w := range ws {
		same = same && w.DType == dt && w.Cols == cols
	}
	g, T := active.Gemm, len(x)/cols
	if same && active.prefillTakesBF16(dt) {
		// x rounded to BF16 once for all the weights the GEMM takes.
		fits := true
		for _, w := range ws {
			fits = fits && gemmFits(active, dt, w.Rows, cols, T)
		}
		if fits {
			xb, xr := prefillBF16(p, dt, x)
			for i, w := range ws {
				matMulGEMM(p, g, outs[i], w, xr, xb, T)
			}
			return
		}
	}
	if !same || !active.ops[dt].ActDot || (active.prefillTakesBF16(dt) && gemmFits(active, dt, ws[0].Rows, cols, T)) {
		for i, w := range ws {
			MatMul(p, outs[i], w, x)
		}
		return
	}
	matMulInteger(p, outs, ws, x)
}

// matMulInteger is the integer path of MatMul over weights of one block
// type and width: each token's activations are quantised once, and one pass
// of the pool takes an integer dot for every row of every weight.
func matMulInteger(p *Pool, outs [][]float32, ws []*Weight, x []float32) {
	dt, cols := ws[0].DType, ws[0].Cols
	T := len(x) / cols
	ops := active.Ops(dt)
	acts := quantizeTokens(p, ops, x, cols, T)
	rb, _ := dt.RowBytes(cols) // every weight's rows
	starts := make([]int, len(ws)+1)
	if panelFits(ops, dt, cols, T) {
		// Panels of 16 rows through the integer GEMM tile; the pool
		// splits whole panels.
		tiles, panels := p.actTiles(acts, dt), p.panelScratch(dt, cols/format.QK)
		for i, w := range ws {
			starts[i+1] = starts[i] + (w.Rows+panelRows-1)/panelRows
		}
		p.Run(starts[len(ws)], func(lo, hi, worker int) {
			for i, w := range ws {
				p0, p1 := max(lo, starts[i])-starts[i], min(hi, starts[i+1])-starts[i]
				if p0 < p1 {
					gemmActRows(ops, dt, tiles, acts, func(r int) []byte { return w.Data[r*rb : (r+1)*rb] },
						p0*panelRows, min(p1*panelRows, w.Rows), outs[i], w.Rows, panels[worker])
				}
			}
		})
		return
	}
	for i, w := range ws {
		starts[i+1] = starts[i] + w.Rows
	}
	// One token, Q4_0: rows two at a time through the FFN's pair dot (the
	// activations loaded once for both), prefetching into L2 three rows
	// from eight ahead: against the row dots on a 151 MB Q4_0 matrix,
	// median speed ratios 8 ahead 1.03-1.07 (2 threads) and 1.03 (1), 16
	// ahead 1.03-1.06, 4 ahead 0.97-1.00; without a prefetch 0.4. Whole
	// q4_0 steps with the row dots instead (same rounds): 1.02-1.04× with
	// 2 threads, 0.94-0.98× with 1 (one core is compute-bound, and the
	// pairs share the activations' loads), so Q4_0 keeps the pairs on one
	// worker only. Q8_0 takes a row at a time (one ascending stream a
	// worker that the row kernel's prefetch and the hardware's follow): a
	// 1 GiB matrix from memory, 2 threads, 54.5 / 52.9 GB/s against 39.5 /
	// 38.9 in pairs; whole q8_0 steps 1.09× dense, 1.16× at γ0.7 φ0.4 (2
	// threads), 1.12× and 1.21× (1 thread).
	bytes := 0
	for _, w := range ws {
		bytes += len(w.Data)
	}
	pairs := T == 1 && ops.Dot2Act != nil && dt != format.Q8_0 && p.Workers() == 1
	runRows(p, T, bytes, starts[len(ws)], func(lo, hi, _ int) {
		var o [2]float32
		for i, w := range ws {
			// This weight's rows within [lo, hi).
			r0, r1 := max(lo, starts[i])-starts[i], min(hi, starts[i+1])-starts[i]
			r := r0
			if pairs {
				for ; r+2 <= r1; r += 2 {
					var next []byte
					if r+matPairAhead < r1 {
						next = w.Data[(r+matPairAhead)*rb : (r+matPairAhead+1)*rb]
					}
					ops.Dot2Act(w.Data[r*rb:(r+1)*rb], w.Data[(r+1)*rb:(r+2)*rb], &acts[0], &o, next)
					outs[i][r], outs[i][r+1] = o[0], o[1]
				}
			}
			for ; r < r1; r++ {
				dotActTokens(ops, w.Data[r*rb:(r+1)*rb], acts, outs[i][r:], w.Rows)
			}
		}
	})
}

// runRows runs a matvec's n rows (T tokens over weights of the given
// bytes) on the pool, or on the calling goroutine alone where one token
// meets at most matInline bytes: there the pool's hand-off costs more than
// the second worker saves (a decode step's router, sirun --select router:
// q8_0 U and V of 64×2048 and 64×64, cache-hot, 7.6 µs a token's pair
// through the pool against 4.2 on one worker; the tiny model's 32×256 and
// 96×32, 5.4 µs against 1.9, BenchmarkSmallMatMul). Each row is one
// worker's whichever way, so the values are the same.
func runRows(p *Pool, T, bytes, n int, fn func(lo, hi, worker int)) {
	if T == 1 && bytes <= matInline {
		fn(0, n, 0)
		return
	}
	p.Run(n, fn)
}

// matInline is the most bytes of weights a one-token matvec reads on the
// calling goroutine alone (runRows).
const matInline = 32 << 10

// matPairAhead is how many rows ahead the one-token integer matvec's pair
// dots prefetch.
const matPairAhead = 8

// quantizeTokens quantises each of T rows of x to Q8 activations for
// weights taking ops' integer path, in storage the pool keeps for the next call (a
// decode step quantises about fifty vectors; allocating them each time
// showed in the profile).
func quantizeTokens(p *Pool, ops *Ops, x []float32, cols, T int) []Q8Act {
	var acts []Q8Act
	if p == nil {
		acts = make([]Q8Act, T)
	} else {
		if len(p.acts) < T {
			p.acts = append(p.acts, make([]Q8Act, T-len(p.acts))...)
		}
		acts = p.acts[:T]
	}
	for t := range acts {
		convertAct(&acts[t], x[t*cols:(t+1)*cols], ops)
	}
	return acts
}

// matTile computes rows [r0, r1) × tokens [t0, t1) of MatMul.
func matTile(out []float32, w *Weight, x []float32, r0, r1, t0, t1 int) {
	C, R := w.Cols, w.Rows
	var o [4]float32
	ops := active.Ops(w.DType)
	dot4 := ops.Dot4
	if ops.DotRows != nil && t1 == t0+1 {
		// One token: the rows back to back through one call.
		rb, _ := w.DType.RowBytes(C)
		ops.DotRows(out[t0*R+r0:t0*R+r1], w.Data[r0*rb:r1*rb], x[t0*C:(t0+1)*C])
		return
	}
	for r := r0; r < r1; r++ {
		row := w.Row(r)
		t := t0
		if dot4 != nil {
			for ; t+4 <= t1; t += 4 {
				dot4(row, x[t*C:(t+1)*C], x[(t+1)*C:(t+2)*C], x[(t+2)*C:(t+3)*C], x[(t+3)*C:(t+4)*C], &o)
				out[t*R+r], out[(t+1)*R+r], out[(t+2)*R+r], out[(t+3)*R+r] = o[0], o[1], o[2], o[3]
			}
		}
		for ; t < t1; t++ {
			out[t*R+r] = ops.Dot(row, x[t*C:(t+1)*C])
		}
	}
}

// FMAPeak runs a register-only multiply-add loop (FMAPeakFlops(iters)
// FLOPs) and returns a value to keep it alive; the benchmark times it to
// measure the peak FLOP/s of one thread.
func FMAPeak(iters int) float32 { return active.FMAPeak(iters) }

// FMAPeakFlops is the number of floating-point operations FMAPeak(iters) does.
func FMAPeakFlops(iters int) float64 {
	return float64(iters) * 10 * float64(active.FMALanes) * 2
}

// SumBytes reads every byte of b (the bandwidth probe); see sumBytesRef for the value.
func SumBytes(b []byte) uint64 { return active.SumBytes(b) }

// RMSNorm computes out = x / sqrt(mean(x²) + eps) ⊙ weight.
func RMSNorm(out, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	for i, v := range x {
		out[i] = v * scale * weight[i]
	}
}

// SiLU is x·σ(x) = x / (1 + e^-x), with e^-x from expf: within 3 ulp of
// the exact value (tested against float64). A decode step takes one per FFN
// neuron, 131 072 for the 1B shape: through math.Exp they were 7 % of a
// Q4_0 decode step.
func SiLU(x float32) float32 { return x / (1 + expf(-x)) }

// siluMulRef sets h[i] = SiLU(gu[2i])·gu[2i+1].
func siluMulRef(h, gu []float32) {
	for i := range h {
		h[i] = SiLU(gu[2*i]) * gu[2*i+1]
	}
}

// expf is e^x in float32: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in two
// so that n·ln2 is exact), e^r by its Taylor series to r⁷ (truncation error
// below 1e-8 relative; measured within 1.7 ulp of the exact value), times
// 2^n built in the exponent bits. Results below the normal range are 0
// (SiLU adds them to 1), above it +Inf.
func expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375 // 8 significant bits: n·ln2hi is exact
		ln2lo = -2.12194440e-4
	)
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654: // e^x below the smallest normal float32
		return 0
	case x != x:
		return x
	}
	t := x * log2e
	n := float32(int32(t + float32(math.Copysign(0.5, float64(t)))))
	r := x - n*ln2hi - n*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	// 2^n for n in [-126, 127], in two factors so that n = 128 (x near
	// the top of the range, rounded up) does not overflow the exponent.
	h := int32(n) / 2
	return p * math.Float32frombits(uint32(h+127)<<23) * math.Float32frombits(uint32(int32(n)-h+127)<<23)
}

// LogSumExp is log Σ e^x (len(x) ≥ 1), the log-softmax's normaliser, from
// the table's max and exponential sums; x is left as e^(x − max x). Sums of
// 256 in float32 add up in float64: within 2e-6 of the float64 sum over a
// 128K vocabulary (one float32 sum over it is 2e-4 off).
func LogSumExp(x []float32) float64 {
	m := active.Max(x)
	var s float64
	for i := 0; i < len(x); i += 256 {
		s += float64(active.ExpSubSum(x[i:min(i+256, len(x))], m))
	}
	return float64(m) + math.Log(s)
}

// Softmax replaces x with exp(x - max x) / Σ exp(x - max x).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := active.Max(x)
	sum := active.ExpSubSum(x, m)
	active.Scale(x, 1/sum)
}

// maxRef is the largest of x (len(x) ≥ 1).
func maxRef(x []float32) float32 {
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	return m
}

// scaleRef sets x[i] *= s.
func scaleRef(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// expSubSumRef sets x[i] = e^(x[i] − m) and returns Σ x[i].
func expSubSumRef(x []float32, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := expf(v - m)
		x[i] = e
		sum += e
	}
	return sum
}

// RoPE rotates one head vector v (length 2·len(cos)) in the HF "rotate_half"
// convention: the pair (v[i], v[i+d/2]) is rotated by angle θ_i = pos·invFreq[i],
// given as cos[i] = cos θ_i and sin[i] = sin θ_i:
//
//	v[i]     ← v[i]·cos θ_i − v[i+d/2]·sin θ_i
//	v[i+d/2] ← v[i+d/2]·cos θ_i + v[i]·sin θ_i
func RoPE(v, cos, sin []float32) {
	half := len(cos)
	for i := 0; i < half; i++ {
		a, b := v[i], v[i+half]
		v[i] = a*cos[i] - b*sin[i]
		v[i+half] = b*cos[i] + a*sin[i]
	}
}

// f32Bytes views a float32 slice as its little-endian bytes.
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// DotF32 is Σ a[i]·b[i] over float32 vectors (attention scores).
func DotF32(a, b []float32) float32 { return active.ops[format.F32].Dot(f32Bytes(a), b[:len(a)]) }

// AxpyF32 does y[i] += alpha·x[i] over float32 vectors (attention output).
func AxpyF32(y []float32, alpha float32, x []float32) {
	active.ops[format.F32].Axpy(y, alpha, f32Bytes(x[:len(y)]))
}

// dotActTokens sets out[t·stride] to the dot of row w with every token's
// converted activations, four tokens a call where ops has Dot4Act (the
// row unpacked once for the four).
func dotActTokens(ops *Ops, w []byte, acts []Q8Act, out []float32, stride int) {
	t := 0
	if ops.Dot4Act != nil {
		for ; t+4 <= len(acts); t += 4 {
			o := ops.Dot4Act(w, &acts[t], &acts[t+1], &acts[t+2], &acts[t+3])
			for q := range o {
				out[(t+q)*stride] = o[q]
			}
		}
	}
	for ; t < len(acts); t++ {
		out[t*stride] = ops.DotAct(w, &acts[t])
	}
}
