package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

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
			FFNRecords(p, y, recordBlocks(dt, H, format.Interleaved, wb), dt, H, x, nil)
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
		// Four rows at a time as the decode adds them (addDowns: the
		// four-row axpy where the table has one, else row by row).
		h := [8]float32{0.1, -0.2, 0.3, 0.05}
		var d [8][]byte
		for j := lo; j+4 <= hi; j += 4 {
			for q := range 4 {
				d[q] = wb[(j+q)*recBytes+2*rowBytes : (j+q+1)*recBytes]
			}
			addDowns(acc, ops, ops.Axpy4, nil, &h, &d, 4)
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

// BenchmarkFFNBandSize: one decode token's FFN of a 1B-shape layer (H
// 2048, N 8192, every record) from memory, its blocks laid out as a
// version 2 pack holds them — band b holds every one of 16 layers' block
// of B records, so a layer's next block lies fifteen blocks further on —
// for band sizes B of 64 to 512, timed in turn (order rotating, each a
// different layer and copy, from memory) and reported as the median of the
// per-turn speed ratios against B = 64, with GB/s of record bytes.
// convert.DefaultBand's choice rests on it.
func BenchmarkFFNBandSize(b *testing.B) {
	const H, N = 2048, 8192
	for _, dt := range []format.DType{format.Q4_0, format.BF16} {
		b.Run(dt.String(), func(b *testing.B) {
			Bs := []int{64, 128, 256, 512}
			var sets [][][]format.RecordBlock
			var x []float32
			for _, B := range Bs {
				var layers [][]format.RecordBlock
				layers, x = bandLayers(dt, H, N, B)
				sets = append(sets, layers)
			}
			R, _ := dt.RowBytes(H)
			y := make([]float32, H)
			p := NewPool(2)
			defer p.Close()
			ratios := make([][]float64, len(Bs))
			ts := make([]time.Duration, len(Bs))
			for i := 0; i < b.N; i++ {
				d := make([]time.Duration, len(Bs))
				for o := range Bs {
					k := (o + i) % len(Bs)
					layers := sets[k]
					blocks := layers[(i*len(Bs)+o)%len(layers)]
					t0 := time.Now()
					FFNRecords(p, y, blocks, dt, H, x, nil)
					d[k] = time.Since(t0)
					ts[k] += d[k]
				}
				for k := range Bs {
					ratios[k] = append(ratios[k], float64(d[0])/float64(d[k]))
				}
			}
			for k, B := range Bs {
				slices.Sort(ratios[k])
				b.ReportMetric(ratios[k][len(ratios[k])/2], fmt.Sprintf("×B%d", B))
				b.ReportMetric(float64(N*3*R)*float64(b.N)/ts[k].Seconds()/1e9, fmt.Sprintf("GB/s-B%d", B))
			}
		})
	}
}

// bandLayers is the FFN section of a 16-layer model with N records of H
// a layer, laid out band-major as a version 2 pack holds it (band b: every
// layer's block of B records, split), in two copies (about 0.9 GiB of
// Q4_0, 3.2 GiB of BF16: every step reads from memory): layer l of copy c
// is layers[16c+l]. One random band's records repeat throughout.
func bandLayers(dt format.DType, H, N, B int) ([][]format.RecordBlock, []float32) {
	const L = 16
	rng := rand.New(rand.NewPCG(1, 1))
	R, _ := dt.RowBytes(H)
	bb := B * 3 * R
	band, _ := randRow(rng, dt, B*3*H)
	split := make([]byte, bb)
	format.PutSplit(split, band, B, R)
	var layers [][]format.RecordBlock
	for c := 0; c < 2; c++ {
		buf := make([]byte, N/B*L*bb)
		for o := 0; o < len(buf); o += bb {
			copy(buf[o:], split)
		}
		for l := 0; l < L; l++ {
			var blocks []format.RecordBlock
			for k := 0; k < N/B; k++ {
				o := (k*L + l) * bb
				blocks = append(blocks, format.SplitBlock(buf[o:o+bb], B, B, R))
			}
			layers = append(layers, blocks)
		}
	}
	return layers, randVec(rng, H)
}

// BenchmarkCompactSplit: the FFN of a decode set's compact copy (the
// dynamic records of a 1B-shape layer at γ0.7 φ0.4, 0.1·N of them, one
// block; backend/cpu Gather), interleaved and split, timed in turn from
// memory (2 threads); reports the median of the per-turn ratios (split ÷
// interleaved speed).
func BenchmarkCompactSplit(b *testing.B) {
	const H, n = 2048, 819
	for _, dt := range []format.DType{format.Q4_0, format.BF16} {
		b.Run(dt.String(), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			R, _ := dt.RowBytes(H)
			recs, _ := randRow(rng, dt, n*3*H)
			copies := (1 << 30) / (n * 3 * R)
			var v1, v2 [][]format.RecordBlock
			for c := 0; c < copies; c++ {
				a := make([]byte, n*3*R)
				copy(a, recs)
				v1 = append(v1, []format.RecordBlock{format.InterleavedBlock(a, R)})
				v2 = append(v2, []format.RecordBlock{format.PutSplit(make([]byte, n*3*R), recs, n, R)})
			}
			x := randVec(rng, H)
			y := make([]float32, H)
			p := NewPool(2)
			defer p.Close()
			var ratios []float64
			for i := 0; i < b.N; i++ {
				var d [2]time.Duration
				for o := range 2 {
					k := (o + i) % 2
					blocks := v1[(2*i+o)%copies]
					if k == 1 {
						blocks = v2[(2*i+o)%copies]
					}
					t0 := time.Now()
					FFNRecords(p, y, blocks, dt, H, x, nil)
					d[k] = time.Since(t0)
				}
				ratios = append(ratios, float64(d[0])/float64(d[1]))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "split×")
		})
	}
}

// BenchmarkGateRowsDRAM: a 1B layer's gate rows as a version 2 band block
// holds them (256 together a block, blocks a band apart), from memory, 2
// threads, read by single-row dots, by the pair kernel with its
// next-record prefetch and without it, and by the pair kernel over each row
// twice (one stream, twice the arithmetic), in turn; GB/s of gate rows. Why
// the gate pass takes single rows (ffnDecodeSplit). The block types take
// their integer path (quantized activations).
func BenchmarkGateRowsDRAM(b *testing.B) {
	const H, N, B = 2048, 8192, 256
	for _, dt := range []format.DType{format.BF16, format.F16, format.Q8_0, format.Q4_0} {
		b.Run(dt.String(), func(b *testing.B) {
			layers, x := bandLayers(dt, H, N, B)
			R, _ := dt.RowBytes(H)
			ops := active.Ops(dt)
			var acts []Q8Act
			if ops.ActDot {
				acts = quantizeTokens(nil, ops, x, H, 1)
			}
			p := NewPool(2)
			defer p.Close()
			variants := []string{"single", "pair-prefetch", "pair", "pair-same"}
			ts := make([]time.Duration, len(variants))
			for i := 0; i < b.N; i++ {
				for o := range variants {
					k := (o + i) % len(variants)
					blocks := layers[(i*len(variants)+o)%len(layers)]
					t0 := time.Now()
					p.Run(len(blocks), func(lo, hi, _ int) {
						var gu [2]float32
						for bi := lo; bi < hi; bi++ {
							blk := &blocks[bi]
							for q := 0; q < B; q += 2 {
								switch k {
								case 0:
									gu[0], gu[1] = rowDot1(ops, blk.GateRow(q), x, acts), rowDot1(ops, blk.GateRow(q+1), x, acts)
								case 1:
									var next []byte
									if q+prefetchAhead < B {
										next = blk.GateRow(q + prefetchAhead)
									}
									pairDot(ops, blk.GateRow(q), blk.GateRow(q+1), x, acts, next, &gu)
								case 2:
									pairDot(ops, blk.GateRow(q), blk.GateRow(q+1), x, acts, nil, &gu)
								default:
									pairDot(ops, blk.GateRow(q), blk.GateRow(q), x, acts, nil, &gu)
									pairDot(ops, blk.GateRow(q+1), blk.GateRow(q+1), x, acts, nil, &gu)
								}
							}
						}
					})
					ts[k] += time.Since(t0)
				}
			}
			for k, v := range variants {
				b.ReportMetric(float64(N*R)*float64(b.N)/ts[k].Seconds()/1e9, "GB/s-"+v)
			}
		})
	}
}
