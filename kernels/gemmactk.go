package kernels

import (
	"encoding/binary"
	"math"

	"github.com/sipack/sipack/format"
)

// The integer GEMM tile for the K-quants (Ops.PanelAct of Q4_K and Q6_K).
// A panel block is one 32-value activation block of 16 rows: a Q4_K
// sub-block, or two Q6_K sub-blocks of 16. The values are laid out as in
// the Q4_0 and Q8_0 panels (eight 64-byte groups, values 4k..4k+3 of the
// 16 rows), but the two 64-byte float rows after them depend on the dtype,
// since a K-quant's scale and offset are per row and sub-block:
//
//	Q4_K: d·sc (512) and 8·d·sc − dmin·m (576) of each row: the block's
//	      dot is D·(d·sc)·Σ(q−8)·qx + (8·d·sc − dmin·m)·(D·Σqx), the last
//	      factor the tiles' M (centred on 8, the two terms cancel less than
//	      d·sc·q and dmin·m would);
//	Q6_K: d·sc of the first 16 values (512) and of the last 16 (576): the
//	      block's dot is D·((d·sc₀)·Σ₀(q−32)·qx + (d·sc₁)·Σ₁(q−32)·qx).
//
// Unsigned panels hold q (Q4_K 0..15, Q6_K 0..63), the offset in the
// tiles' corrections (−8·Σqx as for Q4_0; Q6_K −32·Σ₀qx and −32·Σ₁qx, a
// pair per block); signed ones hold q − 8 and q − 32. The sub-block
// scales are thus applied in float32 per block, where the row dots
// (DotAct) multiply integers first: the same value within float32
// rounding.

// panelKBlockBytes is one block of a K-quant panel: the eight groups, then
// two rows of 16 float32.
const panelKBlockBytes = 8*64 + 2*4*panelRows

// buildActTilesK is buildActTiles for K-quant weights: Q and D as for the
// block types; Q4_K: C as for Q4_0 and M = D·Σq per block; Q6_K: C two per
// block and tile lane, −32·Σ of the block's first 16 values for the tile's
// eight tokens then of its last 16 (index ((tile·nb + b)·2 + h)·8 + lane),
// zero if signed.
func buildActTilesK(a *ActTiles, acts []Q8Act, dt format.DType, signed bool) {
	T, nb := len(acts), len(acts[0].D)
	tiles := (T + panelToks - 1) / panelToks
	nq, nd := tiles*nb*panelToks*format.QK, tiles*nb*panelToks
	nc := nd
	if dt == format.Q6_K {
		nc = 2 * nd
	}
	if cap(a.Q) < nq {
		a.Q = make([]int8, nq)
	}
	if cap(a.D) < nd {
		a.D = make([]float32, nd)
	}
	if cap(a.C) < nc {
		a.C = make([]int32, nc)
	}
	a.T, a.NB, a.Q, a.D, a.C, a.Signed, a.DT = T, nb, a.Q[:nq], a.D[:nd], a.C[:nc], signed, dt
	a.M = a.M[:0]
	if dt == format.Q4_K {
		if cap(a.M) < nd {
			a.M = make([]float32, nd)
		}
		a.M = a.M[:nd]
		clear(a.M[(T/panelToks)*nb*panelToks:])
	}
	clear(a.Q[(T/panelToks)*nb*panelToks*format.QK:])
	clear(a.D[(T/panelToks)*nb*panelToks:])
	clear(a.C) // signed panels have none, and past T there are none
	for t := range acts {
		tile, lane := t/panelToks, t%panelToks
		for b := 0; b < nb; b++ {
			i := (tile*nb+b)*panelToks + lane
			q := acts[t].Q[b*format.QK : (b+1)*format.QK]
			copy(a.Q[i*format.QK:(i+1)*format.QK], q)
			a.D[i] = acts[t].D[b]
			switch {
			case dt == format.Q4_K:
				a.M[i] = acts[t].D[b] * float32(acts[t].S[b])
				if !signed {
					a.C[i] = -8 * acts[t].S[b]
				}
			case !signed:
				var lo int32
				for _, v := range q[:16] {
					lo += int32(v)
				}
				c := (tile*nb + b) * 2 * panelToks
				a.C[c+lane], a.C[c+panelToks+lane] = -32*lo, -32*(acts[t].S[b]-lo)
			}
		}
	}
}

// packPanelK is packPanel for K-quant rows (nb 32-value blocks, whole
// super-blocks): the values and the two float rows of each block as the
// layout above states, rows past n zero.
func packPanelK(dst []byte, dt format.DType, row func(r int) []byte, n, nb int, signed bool) {
	if whole := active.Ops(dt).PackPanel; whole != nil && n == panelRows {
		whole(dst, row, nb, signed)
		return
	}
	fast := active.Ops(dt).PackRow
	for r := 0; r < panelRows; r++ {
		switch {
		case r >= n:
			packRowKRef(dst[4*r:], nil, dt, nb, signed)
		case fast != nil:
			fast(dst[4*r:], row(r), nb, signed)
		default:
			packRowKRef(dst[4*r:], row(r), dt, nb, signed)
		}
	}
}

// kRowSpan is the bytes of a block one row's packing reaches from the
// row's offset on (its min or second scale at 576).
const kRowSpan = 576 + 4

// packRowKRef is Ops.PackRow of a K-quant in Go: one row's nb/8
// super-blocks w (nil: a row past the panel's last, all zero) into dst,
// the panel from the row's offset 4·r on.
func packRowKRef(dst []byte, w []byte, dt format.DType, nb int, signed bool) {
	if w == nil {
		for b := 0; b < nb; b++ {
			p := (*[kRowSpan]byte)(dst[b*panelKBlockBytes:])
			for k := 0; k < 10; k++ {
				binary.LittleEndian.PutUint32(p[64*k:], 0)
			}
		}
		return
	}
	packValuesKRef(dst, w, dt, nb, signed)
	packFloatsK(dst, w, dt, nb)
}

// packValuesKRef writes the eight groups of each of the row's nb blocks.
func packValuesKRef(dst []byte, w []byte, dt format.DType, nb int, signed bool) {
	le := binary.LittleEndian
	for i := 0; i < nb/8; i++ {
		if dt == format.Q4_K {
			// Sub-block j: the low nibbles (j even) or high ones of
			// qs[32·(j/2) : 32·(j/2) + 32].
			blk := (*[q4KBytes]byte)(w[i*q4KBytes:])
			bias := packRowQ4Bias(signed)
			for j := 0; j < 8; j++ {
				p := (*[kRowSpan]byte)(dst[(8*i+j)*panelKBlockBytes:])
				run, shift := (*[32]byte)(blk[16+32*(j/2):]), uint(4*(j%2))
				for k := 0; k < 8; k++ {
					le.PutUint32(p[64*k:], subBytes((le.Uint32(run[4*k:])>>shift)&0x0f0f0f0f, bias))
				}
			}
			continue
		}
		// Q6_K: sub-block j = 4h + k of 32 takes nibble k/2 of
		// ql[64h + 32(k%2) + l] and bits 2k, 2k+1 of qh[32h + l].
		blk := (*[q6KBytes]byte)(w[i*q6KBytes:])
		bias := uint32(0)
		if signed {
			bias = 0x20202020
		}
		for j := 0; j < 8; j++ {
			p := (*[kRowSpan]byte)(dst[(8*i+j)*panelKBlockBytes:])
			h, k := j/4, j%4
			ql, qh := (*[32]byte)(blk[64*h+32*(k%2):]), (*[32]byte)(blk[128+32*h:])
			for g := 0; g < 8; g++ {
				lo := (le.Uint32(ql[4*g:]) >> uint(4*(k/2))) & 0x0f0f0f0f
				hi := (le.Uint32(qh[4*g:]) >> uint(2*k)) & 0x03030303
				le.PutUint32(p[64*g:], subBytes(lo|hi<<4, bias))
			}
		}
	}
}

// packFloatsK writes the two float rows of each of the row's nb blocks.
func packFloatsK(dst []byte, w []byte, dt format.DType, nb int) {
	le := binary.LittleEndian
	put := func(b int, f0, f1 float32) {
		p := (*[kRowSpan]byte)(dst[b*panelKBlockBytes:])
		le.PutUint32(p[512:], math.Float32bits(f0))
		le.PutUint32(p[576:], math.Float32bits(f1))
	}
	for i := 0; i < nb/8; i++ {
		if dt == format.Q4_K {
			blk := (*[q4KBytes]byte)(w[i*q4KBytes:])
			d, dmin := F16ToF32(le.Uint16(blk[0:])), F16ToF32(le.Uint16(blk[2:]))
			for j := 0; j < 8; j++ {
				sc, m := kScaleMin(j, blk[4:16])
				// Each product rounded (no fused multiply-add), as the
				// whole-panel packers compute it.
				ds, dm := d*float32(sc), float32(dmin*float32(m))
				put(8*i+j, ds, 8*ds-dm)
			}
			continue
		}
		blk := (*[q6KBytes]byte)(w[i*q6KBytes:])
		d := F16ToF32(le.Uint16(blk[208:]))
		for j := 0; j < 8; j++ {
			put(8*i+j, d*float32(int8(blk[192+2*j])), d*float32(int8(blk[193+2*j])))
		}
	}
}

// panelActKRef is PanelAct's reference on a K-quant panel: out[t·16 + r] =
// Σ_b of the block's dot as the layout above states, the integer sums
// exact, in float32 in that order.
func panelActKRef(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
	le := binary.LittleEndian
	f := func(p []byte, o int) float32 { return math.Float32frombits(le.Uint32(p[o:])) }
	for t := 0; t < panelToks; t++ {
		for r := 0; r < panelRows; r++ {
			var s float32
			for b := 0; b < a.NB; b++ {
				p := panel[b*panelKBlockBytes:]
				i := (tile*a.NB+b)*panelToks + t
				q := a.Q[i*format.QK : (i+1)*format.QK]
				var sum [2]int32
				for k := 0; k < format.QK; k++ {
					u := int32(p[64*(k/4)+4*r+k%4])
					if a.Signed {
						u = int32(int8(u))
					}
					sum[k/16] += u * int32(q[k])
				}
				if a.DT == format.Q4_K {
					s += f(p, 512+4*r)*a.D[i]*float32(sum[0]+sum[1]+a.C[i]) + f(p, 576+4*r)*a.M[i]
					continue
				}
				c := (tile*a.NB + b) * 2 * panelToks
				sum[0] += a.C[c+t]
				sum[1] += a.C[c+panelToks+t]
				s += a.D[i] * (f(p, 512+4*r)*float32(sum[0]) + f(p, 576+4*r)*float32(sum[1]))
			}
			out[t*panelRows+r] = s
		}
	}
}
