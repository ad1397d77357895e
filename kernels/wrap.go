package kernels

import "github.com/sipack/sipack/format"

// Adapters from assembly kernels over whole 32-weight blocks to the slice
// kernels the package dispatches to (rows are whole blocks: the format
// guarantees it).

// blockDot adapts a block-type dot over nb blocks.
func blockDot(k func(w *byte, x *float32, nb int) float32) func([]byte, []float32) float32 {
	return func(w []byte, x []float32) float32 {
		if len(x) < format.QK {
			return 0
		}
		return k(&w[0], &x[0], len(x)/format.QK)
	}
}

// blockAxpy adapts a block-type axpy over nb blocks.
func blockAxpy(k func(y *float32, a float32, w *byte, nb int)) func([]float32, float32, []byte) {
	return func(y []float32, a float32, w []byte) {
		if len(y) >= format.QK {
			k(&y[0], a, &w[0], len(y)/format.QK)
		}
	}
}

// blockAxpy4 adapts a four-row block-type axpy over whole chunks of 16
// blocks; rows of other lengths take ref.
func blockAxpy4(k func(y *float32, a *[4]float32, w0, w1, w2, w3 *byte, nb int), ref func([]float32, *[4]float32, *[4][]byte)) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		nb := len(y) / format.QK
		if nb == 0 || nb%16 != 0 {
			ref(y, a, w)
			return
		}
		k(&y[0], a, &w[0][0], &w[1][0], &w[2][0], &w[3][0], nb)
	}
}

// blockAxpy8Act adapts an int8 down projection kernel over eight rows of
// block type dt (nb blocks, a multiple of chunk: Q4_K's are super-blocks),
// the reference taking other lengths.
func blockAxpy8Act(k func(y *float32, a *[8]float32, w *[8]*byte, nb int), dt format.DType, chunk int) func([]float32, *[8]float32, *[8][]byte) {
	ref := axpy8ActRef(dt)
	bb := dt.BlockBytes()
	return func(y []float32, a *[8]float32, w *[8][]byte) {
		nb := len(y) / dt.BlockElems()
		if nb == 0 || nb%chunk != 0 {
			ref(y, a, w)
			return
		}
		var p [8]*byte
		for r := range p {
			p[r] = &w[r][:nb*bb][0] // every row holds nb blocks
		}
		k(&y[0], a, &p, nb)
	}
}

// q8ActDot adapts an integer dot against Q8 activations (quantised values
// and block scales).
func q8ActDot(k func(w *byte, xq *int8, xd *float32, nb int) float32) func([]byte, *Q8Act) float32 {
	return func(w []byte, a *Q8Act) float32 {
		if len(a.D) == 0 {
			return 0
		}
		return k(&w[0], &a.Q[0], &a.D[0], len(a.D))
	}
}

// attnScoresOf adapts a decode attention scores kernel for four heads
// (kstride in float32s; attnScores4Ref states it).
func attnScoresOf(k func(sc *[4]*float32, q, keys *float32, kstride, hd, n int, scale float32)) func(*[4][]float32, []float32, []float32, int, int, int, float32) {
	return func(sc *[4][]float32, q, keys []float32, kstride, hd, n int, scale float32) {
		if n == 0 {
			return
		}
		_ = q[4*hd-1]
		_ = keys[(n-1)*kstride+hd-1]
		ps := [4]*float32{&sc[0][:n][0], &sc[1][:n][0], &sc[2][:n][0], &sc[3][:n][0]}
		k(&ps, &q[0], &keys[0], kstride, hd, n, scale)
	}
}

// attnValuesOf adapts a decode attention values kernel for four heads that
// covers width of the 64 outputs a head a call (16 or 64; out keeps its
// 64-float head stride, and the adapter steps v and out by width).
func attnValuesOf(k func(out *float32, p *[4]*float32, v *float32, vstride, n int), width int) func([]float32, *[4][]float32, []float32, int, int) {
	return func(out []float32, p *[4][]float32, v []float32, vstride, n int) {
		if n == 0 {
			clear(out[:4*64])
			return
		}
		_ = out[4*64-1]
		_ = v[(n-1)*vstride+63]
		ps := [4]*float32{&p[0][:n][0], &p[1][:n][0], &p[2][:n][0], &p[3][:n][0]}
		for d0 := 0; d0 < 64; d0 += width {
			k(&out[d0], &ps, &v[d0], vstride, n)
		}
	}
}

// tilesAxpy adapts a block type's tiled down projection (Ops.AxpyTiles)
// over len(y)/format.DownTile chunks of len(h) records.
func tilesAxpy(k func(y *float32, h *float32, w *byte, n, chunks, cstride int)) func(y, h []float32, w []byte, cstride int) {
	return func(y, h []float32, w []byte, cstride int) {
		if len(h) == 0 || len(y) < format.DownTile {
			return
		}
		k(&y[0], &h[0], &w[0], len(h), len(y)/format.DownTile, cstride)
	}
}

// fourRows is a four-row axpy made of four of axpy, in row order.
func fourRows(axpy func([]float32, float32, []byte)) func([]float32, *[4]float32, *[4][]byte) {
	return func(y []float32, a *[4]float32, w *[4][]byte) {
		for r := range 4 {
			axpy(y, a[r], w[r])
		}
	}
}
