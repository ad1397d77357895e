package format

// RecordBlock is a run of N consecutive neuron records of one layer as
// they lie in memory: record j's gate row at Gate[j·GateStride:], its up
// row at UD[j·UDStride:] and its down column right after the up row, each
// RowBytes long. Interleaved records (a dense layer's ffn_records tensor,
// a version 1 pack's bands, a copied decode set) have both strides
// 3·RowBytes; a version 2 pack's band block (§5) holds its gate rows
// together, then the up|down pairs: strides RowBytes and 2·RowBytes.
type RecordBlock struct {
	Gate, UD []byte // Gate is N·GateStride bytes long

	GateStride, UDStride int
	RowBytes, N          int
}

// InterleavedBlock views b, whole records of gate | up | down rows of
// rowBytes each, as a RecordBlock.
func InterleavedBlock(b []byte, rowBytes int) RecordBlock {
	n := len(b) / (3 * rowBytes)
	if n == 0 {
		return RecordBlock{RowBytes: rowBytes, GateStride: 3 * rowBytes, UDStride: 3 * rowBytes}
	}
	return RecordBlock{Gate: b[:n*3*rowBytes], UD: b[rowBytes : n*3*rowBytes], GateStride: 3 * rowBytes, UDStride: 3 * rowBytes, RowBytes: rowBytes, N: n}
}

// SplitBlock views the first n records of a version 2 band block b of B
// records: B gate rows, then B up | down pairs.
func SplitBlock(b []byte, n, B, rowBytes int) RecordBlock {
	return RecordBlock{Gate: b[:n*rowBytes], UD: b[B*rowBytes : B*rowBytes+2*n*rowBytes], GateStride: rowBytes, UDStride: 2 * rowBytes, RowBytes: rowBytes, N: n}
}

// Split reports whether the block's gate rows lie together (strides differ
// from a record's length).
func (b *RecordBlock) Split() bool { return b.GateStride == b.RowBytes }

// GateRow, UpRow and DownRow are record j's rows.
func (b *RecordBlock) GateRow(j int) []byte {
	return b.Gate[j*b.GateStride : j*b.GateStride+b.RowBytes]
}

func (b *RecordBlock) UpRow(j int) []byte { return b.UD[j*b.UDStride : j*b.UDStride+b.RowBytes] }

func (b *RecordBlock) DownRow(j int) []byte {
	return b.UD[j*b.UDStride+b.RowBytes : j*b.UDStride+2*b.RowBytes]
}

// UpDown is record j's up and down rows, adjacent in both layouts.
func (b *RecordBlock) UpDown(j int) []byte {
	return b.UD[j*b.UDStride : j*b.UDStride+2*b.RowBytes]
}

// Downs is the block's memory from record j's down row on: down rows
// UDStride apart (a prefill GEMM's operand).
func (b *RecordBlock) Downs(j int) []byte { return b.UD[j*b.UDStride+b.RowBytes:] }

// Ahead is where a kernel prefetching three rows for record j should
// start: the whole record where records are interleaved, else its up and
// down rows (gate rows together stream on their own).
func (b *RecordBlock) Ahead(j int) []byte {
	if b.Split() {
		return b.UD[j*b.UDStride:]
	}
	return b.Gate[j*b.GateStride:]
}

// Sub is records [lo, hi) of the block.
func (b *RecordBlock) Sub(lo, hi int) RecordBlock {
	s := *b
	s.N = hi - lo
	if s.N == 0 {
		s.Gate, s.UD = nil, nil
		return s
	}
	s.Gate = b.Gate[lo*b.GateStride : hi*b.GateStride]
	s.UD = b.UD[lo*b.UDStride : (hi-1)*b.UDStride+2*b.RowBytes]
	return s
}

// Interleaved returns the block's bytes when its records are whole and
// consecutive (gate | up | down, N of them), else nil.
func (b *RecordBlock) Interleaved() []byte {
	if b.Split() && b.N > 0 {
		return nil
	}
	return b.Gate
}

// CopyRecord writes record j as gate | up | down into dst (3·RowBytes).
func (b *RecordBlock) CopyRecord(dst []byte, j int) {
	R := b.RowBytes
	copy(dst[:R], b.GateRow(j))
	copy(dst[R:3*R], b.UpDown(j))
}

// PutSplit writes recs, whole interleaved records (gate | up | down rows of
// rowBytes), into dst as a version 2 band block of B ≥ n records (§5): the
// n gate rows from the start, the n up | down pairs from B·rowBytes on.
// It returns the block's view.
func PutSplit(dst, recs []byte, B, rowBytes int) RecordBlock {
	R := rowBytes
	n := len(recs) / (3 * R)
	for j := 0; j < n; j++ {
		rec := recs[j*3*R : (j+1)*3*R]
		copy(dst[j*R:(j+1)*R], rec[:R])
		copy(dst[B*R+j*2*R:B*R+(j+1)*2*R], rec[R:])
	}
	return SplitBlock(dst, n, B, R)
}
