package kernels

import "github.com/sipack/sipack/format"

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
	g := active.Gemm
	group := heads / kvHeads
	if T == 1 && active.AttnValues != nil && (active.AttnScores != nil || g != nil) && hd%64 == 0 && pos+1 >= attnDecodeMin {
		attentionDecode(p, out, q, keys, values, heads, kvHeads, hd, headStride, rowStride, pos, scale)
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
	per := attnBlockScratch(group, hd, npMax)
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
			for i := 0; i < n; i++ {
				v := values[kv*headStride+i*rowStride : kv*headStride+i*rowStride+hd]
				for d, x := range v {
					vt[d*np+i] = x
				}
			}
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
func attentionDecode(p *Pool, out, q, keys, values []float32, heads, kvHeads, hd, headStride, rowStride, pos int, scale float32) {
	group := heads / kvHeads
	n := pos + 1
	m := (group + 3) &^ 3 // query heads in fours
	scores := active.AttnScores
	per := m*n + n + 4*hd + 4*64
	if scores == nil {
		per += gemmBlock(group, 0)
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
					active.AttnValues(o4, &rows, values[kv*headStride+d0:], rowStride, n)
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
func attnScoresGEMM(sc []float32, ld int, qs, keys []float32, rowStride, hd, n, m int, block []float32, scale float32) {
	key := func(r int) []byte { return f32Bytes(keys[r*rowStride : r*rowStride+hd]) }
	quads := n / gemmRows
	gemmRowsOf(active.Gemm, active.Ops(format.F32), format.F32, key, 0, quads, hd, qs, nil, m, block, func(r0, i0 int, o *[24]float32) {
		for i := 0; i < min(gemmToks, m-i0); i++ {
			for r := 0; r < gemmRows; r++ {
				sc[(i0+i)*ld+r0+r] = o[i*gemmRows+r] * scale
			}
		}
	})
	for r := quads * gemmRows; r < n; r++ {
		k := keys[r*rowStride : r*rowStride+hd]
		for i := 0; i < m; i++ {
			sc[i*ld+r] = DotF32(k, qs[i*hd:(i+1)*hd]) * scale
		}
	}
}

// attnBlock is the tokens one work unit of Attention takes: with
// four query heads a key/value head, 128 queries against the keys.
const attnBlock = 32

// attentionLoop is Attention without the GEMM: per (token, head),
// a dot per key, softmax, an axpy per value.
func attentionLoop(p *Pool, out, q, keys, values []float32, heads, kvHeads, hd, headStride, rowStride, pos, T int, scale float32) {
	qDim, group := heads*hd, heads/kvHeads
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
				att[i] = DotF32(qv, keys[kvh+i*rowStride:kvh+i*rowStride+hd]) * scale
			}
			Softmax(att)
			ov := out[t*qDim+h*hd : t*qDim+(h+1)*hd]
			clear(ov)
			for i, a := range att {
				AxpyF32(ov, a, values[kvh+i*rowStride:kvh+i*rowStride+hd])
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
// transposed, and the GEMM's own block.
func attnBlockScratch(group, hd, np int) int {
	M := attnBlock * group
	return M*hd + M*np + hd*np + gemmBlock(M, 0)
}
