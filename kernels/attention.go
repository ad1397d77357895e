package kernels

import (
	"unsafe"

	"github.com/sipack/sipack/format"
)

// Attention is causal attention for T new tokens at positions
// pos..pos+T−1 over a cache that already holds their keys and values:
// out[t, h·hd : (h+1)·hd] = Σ_{i ≤ pos+t} softmax_i(scale · q_{t,h}·k_i) v_i,
// query head h reading key/value head h / (heads/kvHeads). q and out are
// (T, heads·hd); key/value head g's row at position i starts at
// g·headStride + i·rowStride of keys and of values (positions-major: hd and
// kvHeads·hd; head-major, each head's rows together: ctx·hd and hd).
//
// On a table with a GEMM it takes the micro-kernel twice per key/value
// head, over that head's group of query heads: the scores of every
// (token, head) against every key (the keys as rows, the queries as
// tokens; scores past a token's position are computed and dropped), then
// the output as the rows of Vᵀ against the softmax weights (zero-padded
// to 32 positions). Elsewhere, and when the shapes do not fit, it is the
// plain loop: a dot per key, softmax, an axpy per value.
func Attention(p *Pool, out, q, keys, values []float32, heads, kvHeads, hd, headStride, rowStride, pos, T int, scale float32) {
	attention(p, out, q, keys, values, heads, kvHeads, hd, headStride, rowStride, pos, T, scale)
}

// AttentionF16 is Attention over a cache of IEEE halves (as F32ToF16s
// rounds them; the strides count halves): the same paths, each key and
// value widened exactly to float32 as it is read.
func AttentionF16(p *Pool, out, q []float32, keys, values []uint16, heads, kvHeads, hd, headStride, rowStride, pos, T int, scale float32) {
	attention(p, out, q, keys, values, heads, kvHeads, hd, headStride, rowStride, pos, T, scale)
}

// kvElem is a cache element: float32, or uint16 holding an IEEE half.
type kvElem interface{ float32 | uint16 }

// kvDType is the dtype of a cache of E: its rows go through that dtype's
// Ops and GEMM path.
func kvDType[E kvElem]() format.DType {
	var e E
	if unsafe.Sizeof(e) == 2 {
		return format.F16
	}
	return format.F32
}

// kvBytes is a cache row as bytes.
func kvBytes[E kvElem](r []E) []byte {
	var e E
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(r))), len(r)*int(unsafe.Sizeof(e)))
}

// kvCols is gemmBlock's cols for key rows of hd elements of E: 0 for
// float32 rows, which need no widening room.
func kvCols[E kvElem](hd int) int {
	if kvDType[E]() == format.F32 {
		return 0
	}
	return hd
}

// attnKernels is a table's decode attention kernels over a cache of E
// (Table.AttnScores and AttnValues; attnF16Of for halves), nil where it
// has none.
type attnKernels[E kvElem] struct {
	scores func(sc *[4][]float32, q []float32, k []E, kstride, hd, n int, scale float32)
	values func(out []float32, p *[4][]float32, v []E, vstride, n int)
}

func attnKernelsOf[E kvElem](t *Table) (ak attnKernels[E]) {
	switch k := any(&ak).(type) {
	case *attnKernels[float32]:
		k.scores, k.values = t.AttnScores, t.AttnValues
	case *attnKernels[uint16]:
		f := attnF16Of(t)
		k.scores, k.values = f.scores, f.values
	}
	return ak
}

func attention[E kvElem](p *Pool, out, q []float32, keys, values []E, heads, kvHeads, hd, headStride, rowStride, pos, T int, scale float32) {
	g := active.Gemm
	group := heads / kvHeads
	ak := attnKernelsOf[E](active)
	if T == 1 && ak.values != nil && (ak.scores != nil || g != nil) && hd%64 == 0 && pos+1 >= attnDecodeMin {
		attentionDecode(p, out, q, keys, values, heads, kvHeads, hd, headStride, rowStride, pos, scale, ak)
		return
	}
	if g == nil || hd%32 != 0 || hd < gemmRows || T*group < gemmMinT || pos+T < gemmRows {
		attentionLoop(p, out, q, keys, values, heads, kvHeads, hd, headStride, rowStride, pos, T, scale)
		return
	}
	qDim := heads * hd
	// Work units: a key/value head × a block of attnBlock tokens, whose
	// queries see the keys up to the block's last position.
	blocks := (T + attnBlock - 1) / attnBlock
	npMax := (pos + T + 31) &^ 31
	M := attnBlock * group
	per := attnBlockScratch(group, hd, npMax, kvCols[E](hd))
	scratch := p.gemmScratch(p.Workers() * per)
	ops := active.Ops(format.F32)
	p.Run(kvHeads*blocks, func(lo, hi, worker int) {
		s := scratch[worker*per : (worker+1)*per]
		for u := lo; u < hi; u++ {
			kv, t0 := u/blocks, (u%blocks)*attnBlock
			tn := min(attnBlock, T-t0)
			n := pos + t0 + tn   // keys the block's queries see, at most
			np := (n + 31) &^ 31 // padded for Vᵀ · P
			m := tn * group      // queries: (token, head in group)
			qs, sc := s[:m*hd], s[M*hd:M*hd+m*np]
			vt, block := s[M*hd+M*npMax:M*hd+M*npMax+hd*np], s[M*hd+M*npMax+hd*npMax:]
			// The group's queries, contiguous: row t·group + j is head kv·group + j of token t0 + t.
			for t := 0; t < tn; t++ {
				src := (t0+t)*qDim + kv*group*hd
				copy(qs[t*group*hd:(t+1)*group*hd], q[src:src+group*hd])
			}
			attnScoresGEMM(sc, np, qs, keys[kv*headStride:], rowStride, hd, n, m, block, scale)
			for i := 0; i < m; i++ {
				row := sc[i*np : (i+1)*np]
				seen := pos + t0 + i/group + 1
				Softmax(row[:seen])
				clear(row[seen:])
			}
			// Vᵀ, zero-padded to np positions.
			clear(vt[:hd*np])
			kvTranspose(vt, np, values[kv*headStride:], rowStride, hd, n, block)
			vrow := func(d int) []byte { return f32Bytes(vt[d*np : (d+1)*np]) }
			gemmRowsOf(g, ops, format.F32, vrow, 0, hd/gemmRows, np, sc, nil, m, block, func(d0, i0 int, o *[24]float32) {
				for i := 0; i < min(gemmToks, m-i0); i++ {
					t, j := t0+(i0+i)/group, (i0+i)%group
					copy(out[t*qDim+(kv*group+j)*hd+d0:t*qDim+(kv*group+j)*hd+d0+gemmRows], o[i*gemmRows:(i+1)*gemmRows])
				}
			})
		}
	})
}

// attnDecodeMin is the fewest keys a decode token's attention takes the
// grouped path for (attentionDecode); below it the plain loop.
const attnDecodeMin = 16

// attentionDecode is Attention for one token (T = 1) where the table has
// AttnValues and AttnScores (else the scores through the GEMM
// micro-kernel): per key/value head, its group's query heads
// four at a time (a last group of fewer padded with zero queries and
// weights) against every key, softmax per head, then the values weighted
// for the four, so each key and value row is read once per four heads and
// each kernel call covers every position. The plain loop, a dot and an
// axpy per key and head, takes 3.2× the time at 2048 cached positions of a
// 1B-shape layer (BenchmarkAttentionDecode).
func attentionDecode[E kvElem](p *Pool, out, q []float32, keys, values []E, heads, kvHeads, hd, headStride, rowStride, pos int, scale float32, ak attnKernels[E]) {
	group := heads / kvHeads
	n := pos + 1
	m := (group + 3) &^ 3 // query heads in fours
	scores := ak.scores
	per := m*n + n + 4*hd + 4*64
	if scores == nil {
		per += gemmBlock(group, kvCols[E](hd))
	}
	scratch := p.gemmScratch(p.Workers() * per)
	p.Run(kvHeads, func(lo, hi, worker int) {
		s := scratch[worker*per : (worker+1)*per]
		sc, spare, q4, o4 := s[:m*n], s[m*n:m*n+n], s[m*n+n:m*n+n+4*hd], s[m*n+n+4*hd:m*n+n+4*hd+4*64]
		block := s[m*n+n+4*hd+4*64:]
		for kv := lo; kv < hi; kv++ {
			if scores == nil {
				// No scores kernel: the group's queries against the keys
				// through the GEMM micro-kernel (the keys as rows).
				attnScoresGEMM(sc, n, q[kv*group*hd:(kv+1)*group*hd], keys[kv*headStride:], rowStride, hd, n, group, block, scale)
			}
			for h0 := 0; h0 < group; h0 += 4 {
				var rows [4][]float32
				for j := range rows {
					rows[j] = spare // padding: scores to a spare row, zero weights below
					if h0+j < group {
						rows[j] = sc[(h0+j)*n : (h0+j+1)*n]
					}
				}
				if scores != nil {
					qs := q[(kv*group+h0)*hd:]
					if h0+4 > group { // pad with zero queries
						clear(q4)
						copy(q4, q[(kv*group+h0)*hd:(kv+1)*group*hd])
						qs = q4
					}
					scores(&rows, qs, keys[kv*headStride:], rowStride, hd, n, scale)
				}
				for j := 0; j < min(4, group-h0); j++ {
					Softmax(rows[j])
				}
				if h0+4 > group {
					clear(spare) // zero weights for the padding
				}
				for d0 := 0; d0 < hd; d0 += 64 {
					ak.values(o4, &rows, values[kv*headStride+d0:], rowStride, n)
					for j := 0; j < min(4, group-h0); j++ {
						h := kv*group + h0 + j
						copy(out[h*hd+d0:h*hd+d0+64], o4[j*64:(j+1)*64])
					}
				}
			}
		}
	})
}

// attnScoresGEMM sets sc[i·ld + r] = scale·q_i·k_r for the m queries of qs
// (rows of hd) and n keys (rows rowStride apart from keys[0]) through the
// table's GEMM micro-kernel, the keys as rows; the keys past the last
// whole four by the row dot. A prompt's attention and a decode token's
// without a scores kernel both take it.
func attnScoresGEMM[E kvElem](sc []float32, ld int, qs []float32, keys []E, rowStride, hd, n, m int, block []float32, scale float32) {
	dt := kvDType[E]()
	ops := active.Ops(dt)
	key := func(r int) []byte { return kvBytes(keys[r*rowStride : r*rowStride+hd]) }
	quads := n / gemmRows
	gemmRowsOf(active.Gemm, ops, dt, key, 0, quads, hd, qs, nil, m, block, func(r0, i0 int, o *[24]float32) {
		for i := 0; i < min(gemmToks, m-i0); i++ {
			for r := 0; r < gemmRows; r++ {
				sc[(i0+i)*ld+r0+r] = o[i*gemmRows+r] * scale
			}
		}
	})
	for r := quads * gemmRows; r < n; r++ {
		k := key(r)
		for i := 0; i < m; i++ {
			sc[i*ld+r] = ops.Dot(k, qs[i*hd:(i+1)*hd]) * scale
		}
	}
}

// kvTranspose sets vt[d·np + i] to value d of row i for the n rows of hd
// values rowStride apart from v[0]; halves are widened a row at a time
// into wide (at least hd floats).
func kvTranspose[E kvElem](vt []float32, np int, v []E, rowStride, hd, n int, wide []float32) {
	switch v := any(v).(type) {
	case []float32:
		for i := 0; i < n; i++ {
			for d, x := range v[i*rowStride : i*rowStride+hd] {
				vt[d*np+i] = x
			}
		}
	case []uint16:
		ops, w := active.Ops(format.F16), wide[:hd]
		for i := 0; i < n; i++ {
			widen(ops, w, kvBytes(v[i*rowStride:i*rowStride+hd]))
			for d, x := range w {
				vt[d*np+i] = x
			}
		}
	}
}

// attnBlock is the tokens one work unit of Attention takes: with
// four query heads a key/value head, 128 queries against the keys.
const attnBlock = 32

// attentionLoop is Attention without the GEMM: per (token, head),
// a dot per key, softmax, an axpy per value.
func attentionLoop[E kvElem](p *Pool, out, q []float32, keys, values []E, heads, kvHeads, hd, headStride, rowStride, pos, T int, scale float32) {
	qDim, group := heads*hd, heads/kvHeads
	ops := active.Ops(kvDType[E]())
	n := pos + T
	if w := p.Workers() * n; len(p.att) < w {
		p.att = make([]float32, 2*w) // decode grows n by one a step: no allocation each
	}
	p.Run(T*heads, func(lo, hi, worker int) {
		scores := p.att[worker*n : (worker+1)*n]
		for th := lo; th < hi; th++ {
			t, h := th/heads, th%heads
			seen := pos + t + 1
			qv := q[t*qDim+h*hd : t*qDim+(h+1)*hd]
			kvh := (h / group) * headStride
			att := scores[:seen]
			for i := range att {
				att[i] = ops.Dot(kvBytes(keys[kvh+i*rowStride:kvh+i*rowStride+hd]), qv) * scale
			}
			Softmax(att)
			ov := out[t*qDim+h*hd : t*qDim+(h+1)*hd]
			clear(ov)
			for i, a := range att {
				ops.Axpy(ov, a, kvBytes(values[kvh+i*rowStride:kvh+i*rowStride+hd]))
			}
		}
	})
}

// attnValues4Ref is Table.AttnValues' reference: out[h·64 + d] =
// Σ_{i<n} p[h][i]·v[i·vstride + d] for h < 4, d < 64.
func attnValues4Ref(out []float32, p *[4][]float32, v []float32, vstride, n int) {
	clear(out[:4*64])
	for i := 0; i < n; i++ {
		row := v[i*vstride : i*vstride+64]
		for h := 0; h < 4; h++ {
			o := out[h*64 : (h+1)*64]
			for d, x := range row {
				o[d] += p[h][i] * x
			}
		}
	}
}

// attnScores4Ref is Table.AttnScores' reference: sc[h][i] =
// scale·Σ_{d<hd} q[h·hd + d]·k[i·kstride + d] for h < 4, i < n.
func attnScores4Ref(sc *[4][]float32, q, k []float32, kstride, hd, n int, scale float32) {
	for i := 0; i < n; i++ {
		row := k[i*kstride : i*kstride+hd]
		for h := 0; h < 4; h++ {
			var s float32
			for d, x := range row {
				s += q[h*hd+d] * x
			}
			sc[h][i] = s * scale
		}
	}
}

// attnBlockScratch is one worker's scratch (floats) for the GEMM attention
// of a block of attnBlock tokens whose group query heads see up to np
// (a multiple of 32) keys: the block's queries, their scores, the values
// transposed, and the GEMM's own block (cols: kvCols, room to widen key
// rows of halves).
func attnBlockScratch(group, hd, np, cols int) int {
	M := attnBlock * group
	return M*hd + M*np + hd*np + gemmBlock(M, cols)
}
