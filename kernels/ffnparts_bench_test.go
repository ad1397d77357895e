package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/sipack/sipack/format"
)

// The decode FFN over more records than any cache holds (a 1B model's
// sixteen layers at φ = 1), split into its parts: the whole kernel, the
// gate/up dots alone, the down axpys alone, and a plain read of the same
// bytes. Each reports GB/s of record bytes (the parts count the bytes they
// touch), so where the FFN falls short of the stream shows.
func benchFFNParts(b *testing.B, dt format.DType, threads int) { benchFFNPartsN(b, dt, threads, 0) }

// benchFFNPartsN is benchFFNParts over records records (0: 0.5-1 GiB).
func benchFFNPartsN(b *testing.B, dt format.DType, threads, records int) {
	const H = 2048
	rowBytes, _ := dt.RowBytes(H)
	recBytes := 3 * rowBytes
	if records == 0 {
		records = (512 << 20) / recBytes
		if dt == format.BF16 || dt == format.F16 {
			records = (1 << 30) / recBytes
		}
	}
	rng := rand.New(rand.NewPCG(4, 4))
	// One random row repeated: random generation of 0.5-1 GiB is slow and
	// the values do not change the timing.
	row, _ := randRow(rng, dt, 3*H)
	wb := make([]byte, records*recBytes)
	for r := 0; r < records; r++ {
		copy(wb[r*recBytes:], row)
	}
	x := randVec(rng, H)
	y := make([]float32, H)
	p := NewPool(threads)
	defer p.Close()
	ops := active.Ops(dt)
	run := func(name string, bytesPer int, f func(lo, hi int, acc []float32)) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(records * bytesPer))
			partial := make([]float32, threads*H)
			for i := 0; i < b.N; i++ {
				p.Run(records, func(lo, hi, w int) { f(lo, hi, partial[w*H:(w+1)*H]) })
			}
		})
	}
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(records * recBytes))
		for i := 0; i < b.N; i++ {
			FFNRecords(p, y, recordBlocks(dt, H, false, wb), dt, H, x, nil)
		}
	})
	var acts []Q8Act
	if ops.ActDot {
		acts = quantizeTokens(nil, ops, x, H, 1)
	}
	// ahead is the record the fused dots prefetch, as ffnDecode picks it.
	ahead := func(j, hi int) []byte {
		if j+prefetchAhead < hi {
			return wb[(j+prefetchAhead)*recBytes:]
		}
		return nil
	}
	run("gateup", 2*rowBytes, func(lo, hi int, acc []float32) {
		var out [2]float32
		var s float32
		for j := lo; j < hi; j++ {
			rec, next := wb[j*recBytes:], ahead(j, hi)
			switch {
			case acts != nil && ops.Dot2Act != nil:
				ops.Dot2Act(rec[:rowBytes], rec[rowBytes:2*rowBytes], &acts[0], &out, next)
			case ops.Dot2 != nil:
				ops.Dot2(rec[:rowBytes], rec[rowBytes:2*rowBytes], x, &out, next)
			}
			s += out[0]
		}
		acc[0] += s
	})
	// All three rows as dots (the down row dotted, not added): what the
	// record stream gives a kernel mix without the axpys. With the fused
	// dots' prefetch into L1 (PREFETCHT0) "whole" streamed at 60 % of this
	// on the Zen 5, into L2 (PREFETCHT2) 75-85 % of it for Q4_0 and as fast
	// for BF16.
	run("dot3", recBytes, func(lo, hi int, acc []float32) {
		var out, d [2]float32
		var s float32
		for j := lo; j < hi; j++ {
			rec, next := wb[j*recBytes:], ahead(j, hi)
			down := rec[2*rowBytes : 3*rowBytes]
			switch {
			case acts != nil && ops.Dot2Act != nil:
				ops.Dot2Act(rec[:rowBytes], rec[rowBytes:2*rowBytes], &acts[0], &out, next)
				ops.Dot2Act(down, down, &acts[0], &d, nil)
			case ops.Dot2 != nil:
				ops.Dot2(rec[:rowBytes], rec[rowBytes:2*rowBytes], x, &out, next)
				ops.Dot2(down, down, x, &d, nil)
			}
			s += out[0] + d[0]
		}
		acc[0] += s
	})
	run("down", rowBytes, func(lo, hi int, acc []float32) {
		h := [4]float32{0.1, -0.2, 0.3, 0.05}
		var d [4][]byte
		for j := lo; j+4 <= hi; j += 4 {
			for q := range 4 {
				d[q] = wb[(j+q)*recBytes+2*rowBytes : (j+q+1)*recBytes]
			}
			ops.Axpy4(acc, &h, &d)
		}
	})
	run("read", recBytes, func(lo, hi int, acc []float32) {
		acc[0] += float32(active.SumBytes(wb[lo*recBytes : hi*recBytes]))
	})
}

func BenchmarkFFNPartsQ4_0(b *testing.B)   { benchFFNParts(b, format.Q4_0, 1) }
func BenchmarkFFNPartsQ4_0x2(b *testing.B) { benchFFNParts(b, format.Q4_0, 2) }
func BenchmarkFFNPartsBF16x2(b *testing.B) { benchFFNParts(b, format.BF16, 2) }

// The same from L2: 256 Q4_0 records (864 KiB), what the kernels cost
// once the bytes are there.
func BenchmarkFFNPartsQ4_0Cached(b *testing.B) { benchFFNPartsN(b, format.Q4_0, 1, 256) }
