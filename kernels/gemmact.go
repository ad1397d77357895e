package kernels

import (
	"encoding/binary"
	"math"

	"github.com/sipack/sipack/format"
)

// The prefill's integer GEMM for the block types (Ops.PanelAct): a panel of
// panelRows weight rows is repacked once so that every four-byte group of
// a block holds one row's four values (the rows side by side, as llama.cpp
// interleaves Q4_0 rows for its GEMM), and the tokens' Q8 activations are
// laid out in tiles of panelToks. One VPDPBUSD then takes four values of
// all sixteen rows against four values of one token broadcast to every
// lane, and a block's sixteen integer sums meet their scales in one
// multiply-add — against the Dot4Act tile, which unpacks each row for four
// tokens and spends a permute, a conversion and a multiply-add on every
// row, token and four blocks. The repacking is paid once per panel and
// read from cache by every token. arm64's SDOT multiplies signed bytes by
// signed bytes, so its table packs the values signed (Ops.PanelSigned) and
// takes four values of four rows per SDOT by element. The K-quants' panels
// add per-row sub-block scales and mins to the same layout (gemmactk.go).

const (
	panelRows = 16 // rows of a packed panel (one 512-bit register of int32 lanes)
	panelToks = 8  // tokens of an activation tile (one accumulator register each)
	// panelBlockBytes is one block of a packed panel: eight groups of 64
	// bytes (values 4k..4k+3 of each of the 16 rows), then the 16 rows'
	// scales as float32.
	panelBlockBytes = 8*64 + 4*panelRows
	// panelMinTokens is the fewest tokens for which the panel GEMM is taken:
	// below it repacking costs about what it saves (Q4_0 1B prefill on the
	// Zen 5, `sirun bench --prefill N`: 16 tokens 37 tok/s either way, 32
	// tokens 71 against 61-64, 64 tokens 94 against 54-82).
	panelMinTokens = 24
)

// ActTiles is the Q8 activations of T tokens laid out for PanelAct: per tile
// of panelToks tokens and per block b, the tile's 32-value blocks side by
// side (Q), their scales (D) and their offset corrections (C: −o·Σq, o the
// weights' unsigned offset: 8 for Q4_0's nibbles, 128 for Q8_0's values
// with the sign bit flipped; 0 for a signed panel). Tokens past T in the
// last tile are zero. The K-quants' tiles differ in C and M (gemmactk.go).
type ActTiles struct {
	T, NB int
	Q     []int8
	D     []float32
	C     []int32
	// M is Q4_K's D·Σq per block and token, the factor of the panel's
	// per-row min terms (empty for the other dtypes).
	M []float32
	// Signed says the panels these tiles meet hold signed values
	// (Ops.PanelSigned), so C is zero.
	Signed bool
	// DT is the dtype of the weights the tiles meet.
	DT format.DType
}

// Tiles returns the number of token tiles.
func (a *ActTiles) Tiles() int { return (a.T + panelToks - 1) / panelToks }

// panelOffset is the unsigned offset of dt's packed values.
func panelOffset(dt format.DType) int32 {
	if dt == format.Q4_0 {
		return 8
	}
	return 128
}

// panelFits reports whether T tokens of width cols take ops' integer GEMM
// tile for weights of dt (a K-quant's panel blocks are its super-blocks'
// sub-blocks, so its rows are whole super-blocks).
func panelFits(ops *Ops, dt format.DType, cols, T int) bool {
	whole := format.QK
	if dt.KQuant() {
		whole = format.QKK
	}
	return ops.PanelAct != nil && T >= panelMinTokens && cols%whole == 0
}

// panelBytes is the size of one packed panel block of dt.
func panelBytes(dt format.DType) int {
	if dt.KQuant() {
		return panelKBlockBytes
	}
	return panelBlockBytes
}

// buildActTiles lays acts out as tiles for weights of dtype dt, packed
// signed or unsigned (Ops.PanelSigned), reusing a's storage.
func buildActTiles(a *ActTiles, acts []Q8Act, dt format.DType, signed bool) {
	if dt.KQuant() {
		buildActTilesK(a, acts, dt, signed)
		return
	}
	T, nb := len(acts), len(acts[0].D)
	tiles := (T + panelToks - 1) / panelToks
	nq, nd := tiles*nb*panelToks*format.QK, tiles*nb*panelToks
	if cap(a.Q) < nq {
		a.Q = make([]int8, nq)
	}
	if cap(a.D) < nd {
		a.D, a.C = make([]float32, nd), make([]int32, nd)
	}
	a.T, a.NB, a.Q, a.D, a.C, a.M, a.Signed, a.DT = T, nb, a.Q[:nq], a.D[:nd], a.C[:nd], a.M[:0], signed, dt
	clear(a.Q[(T/panelToks)*nb*panelToks*format.QK:]) // the last tile's missing tokens
	clear(a.D[(T/panelToks)*nb*panelToks:])
	clear(a.C[(T/panelToks)*nb*panelToks:])
	o := panelOffset(dt)
	if signed {
		o = 0
	}
	for t := range acts {
		tile, lane := t/panelToks, t%panelToks
		for b := 0; b < nb; b++ {
			i := (tile*nb+b)*panelToks + lane
			copy(a.Q[i*format.QK:(i+1)*format.QK], acts[t].Q[b*format.QK:(b+1)*format.QK])
			a.D[i], a.C[i] = acts[t].D[b], -o*acts[t].S[b]
		}
	}
}

// packPanel lays out rows 0..n-1 (n ≤ panelRows; nb blocks of dt, Q4_0 or
// Q8_0) into dst (nb·panelBlockBytes bytes): per block, for k = 0..7, 64
// bytes holding values 4k..4k+3 of rows 0..15 as unsigned bytes (Q4_0: the
// nibble; Q8_0: the value + 128) or, if signed, as signed bytes (the
// nibble − 8; the value), then the rows' scales as float32. Rows past n
// are zero. (Fixed-size array views keep bounds checks out of the loops: a
// 256-token Q4_0 prefill packs 21 thousand panels.)
func packPanel(dst []byte, dt format.DType, row func(r int) []byte, n, nb int, signed bool) {
	if dt.KQuant() {
		packPanelK(dst, dt, row, n, nb, signed)
		return
	}
	fast := active.Ops(dt).PackRow
	for r := 0; r < panelRows; r++ {
		switch {
		case r >= n:
			packRowRef(dst[4*r:], nil, dt, nb, signed)
		case fast != nil:
			fast(dst[4*r:], row(r), nb, signed)
		default:
			packRowRef(dst[4*r:], row(r), dt, nb, signed)
		}
	}
}

// packRowQ4Bias and packRowQ8Flip are what packing takes off each Q4_0
// nibble (signed panels: 8) and flips in each Q8_0 byte (unsigned: the
// sign bit), four bytes at once.
func packRowQ4Bias(signed bool) uint32 {
	if signed {
		return 0x08080808
	}
	return 0
}

func packRowQ8Flip(signed bool) uint32 {
	if signed {
		return 0
	}
	return 0x80808080
}

// packRowRef is Ops.PackRow in Go: one row's nb blocks w of dt (Q4_0 or
// Q8_0; nil: a row past the panel's last, all zero) into dst, the panel
// from the row's offset 4·r on.
func packRowRef(dst []byte, w []byte, dt format.DType, nb int, signed bool) {
	le := binary.LittleEndian
	q4bias, q8flip := packRowQ4Bias(signed), packRowQ8Flip(signed)
	for b := 0; b < nb; b++ {
		p := dst[b*panelBlockBytes:]
		var v [8]uint32
		var d float32
		switch {
		case w == nil:
		case dt == format.Q4_0:
			blk := (*[18]byte)(w[b*18:])
			d = F16ToF32(le.Uint16(blk[0:]))
			for k := 0; k < 4; k++ {
				q := le.Uint32(blk[2+4*k:])
				v[k], v[k+4] = subBytes(q&0x0f0f0f0f, q4bias), subBytes((q>>4)&0x0f0f0f0f, q4bias)
			}
		default:
			blk := (*[34]byte)(w[b*34:])
			d = F16ToF32(le.Uint16(blk[0:]))
			for k := 0; k < 8; k++ {
				v[k] = le.Uint32(blk[2+4*k:]) ^ q8flip
			}
		}
		for k := range v {
			le.PutUint32(p[64*k:], v[k])
		}
		le.PutUint32(p[512:], math.Float32bits(d))
	}
}

// subBytes subtracts b from a byte by byte, each byte wrapping on its own.
func subBytes(a, b uint32) uint32 {
	// Borrow-free: set each byte's top bit before subtracting, then put
	// the true top bit back.
	return ((a | 0x80808080) - (b &^ 0x80808080)) ^ ((a ^ ^b) & 0x80808080)
}

// gemmActRows sets out[t·stride + r] to the dot of row(r) with token t's
// activations for r in [r0, r1): whole panels through ops.PanelAct (the
// tiles built from the same activations for dt), the rows after the last
// whole panel through dotActTokens. panel is scratch of nb·panelBytes(dt).
func gemmActRows(ops *Ops, dt format.DType, tiles *ActTiles, acts []Q8Act, row func(r int) []byte, r0, r1 int, out []float32, stride int, panel []byte) {
	var tile [panelRows * panelToks]float32
	r := r0
	for ; r+panelRows <= r1; r += panelRows {
		base := r
		packPanel(panel, dt, func(i int) []byte { return row(base + i) }, panelRows, tiles.NB, ops.PanelSigned)
		for k := 0; k < tiles.Tiles(); k++ {
			ops.PanelAct(panel, tiles, k, &tile)
			for t := 0; t < min(panelToks, tiles.T-k*panelToks); t++ {
				copy(out[(k*panelToks+t)*stride+base:], tile[t*panelRows:(t+1)*panelRows])
			}
		}
	}
	for ; r < r1; r++ {
		dotActTokens(ops, row(r), acts, out[r:], stride)
	}
}

// panelActRef is the reference of PanelAct: out[t·16 + r] = Σ_b d_r,b ·
// D_t,b · (Σ_i u_r,b,i · q_t,b,i + C_t,b) over the packed panel, its
// values u (unsigned, or signed if the tiles say so) and the tiles'
// corrections C.
func panelActRef(panel []byte, a *ActTiles, tile int, out *[panelRows * panelToks]float32) {
	if a.DT.KQuant() {
		panelActKRef(panel, a, tile, out)
		return
	}
	le := binary.LittleEndian
	for t := 0; t < panelToks; t++ {
		for r := 0; r < panelRows; r++ {
			var s float32
			for b := 0; b < a.NB; b++ {
				p := panel[b*panelBlockBytes:]
				i := (tile*a.NB+b)*panelToks + t
				q := a.Q[i*format.QK : (i+1)*format.QK]
				sum := a.C[i]
				for k := 0; k < format.QK; k++ {
					u := int32(p[64*(k/4)+4*r+k%4])
					if a.Signed {
						u = int32(int8(u))
					}
					sum += u * int32(q[k])
				}
				s += math.Float32frombits(le.Uint32(p[512+4*r:])) * a.D[i] * float32(sum)
			}
			out[t*panelRows+r] = s
		}
	}
}
