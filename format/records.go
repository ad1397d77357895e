package format

// RecordBlock is a run of N consecutive neuron records of one layer as
// they lie in memory: record j's gate row at Gate[j·GateStride:], its up
// row at Up[j·UpStride:] and its down column at Down[j·DownStride:], each
// RowBytes long. Interleaved records (a dense layer's ffn_records tensor,
// a version 1 pack's bands) have all three strides 3·RowBytes; a version 2
// pack's band block (§5) holds its gate rows together, then the up|down
// pairs (strides RowBytes, 2·RowBytes, 2·RowBytes); a version 3 block its
// gate rows, then its up rows, then its down rows (every stride RowBytes).
type RecordBlock struct {
	Gate, Up, Down []byte // Gate is N·GateStride bytes long

	GateStride, UpStride, DownStride int
	RowBytes, N                      int
}

// Layout is how a band block lays out its records (§5).
type Layout uint8

const (
	// Interleaved: whole records, gate | up | down (version 1).
	Interleaved Layout = iota
	// Pairs: the gate rows, then the up | down pairs (version 2).
	Pairs
	// Runs: the gate rows, then the up rows, then the down rows (version 3).
	Runs
)

// Major is the pack version whose band blocks have layout l.
func (l Layout) Major() uint16 { return [...]uint16{1, 2, 3}[l] }

// LayoutOf is the band layout of a pack of version major (Interleaved for
// an unknown one: Preamble refuses those before any block is read).
func LayoutOf(major uint16) Layout {
	switch major {
	case 2:
		return Pairs
	case 3:
		return Runs
	}
	return Interleaved
}

// LayoutFor is the layout writers give records of dtype dt: three runs for
// the 16-bit types, pairs for the others. Whole decode steps of the 1B
// shape, the two layouts in the same rounds, both packs' page cache
// dropped and read again first (docs/bench.md): BF16 dense 1.06-1.08× in
// three runs, γ0.7 φ0.4 0.99-1.02× (fourteenth session); F16 dense 1.22×
// (2 threads) and 1.25× (1), γ0.7 φ0.4 1.08× and 1.09× (fifteenth
// session: the fourteenth's 0.97-1.02× had the packs' page cache in
// different states). The block types' down projection pass is
// compute-bound alone: Q4_0 dense 0.85×, Q8_0 0.98× in three runs. F32 is
// not measured and keeps pairs.
func LayoutFor(dt DType) Layout {
	if dt == BF16 || dt == F16 {
		return Runs
	}
	return Pairs
}

// InterleavedBlock views b, whole records of gate | up | down rows of
// rowBytes each, as a RecordBlock.
func InterleavedBlock(b []byte, rowBytes int) RecordBlock {
	n := len(b) / (3 * rowBytes)
	R := rowBytes
	if n == 0 {
		return RecordBlock{RowBytes: R, GateStride: 3 * R, UpStride: 3 * R, DownStride: 3 * R}
	}
	b = b[:n*3*R]
	return RecordBlock{Gate: b, Up: b[R:], Down: b[2*R:], GateStride: 3 * R, UpStride: 3 * R, DownStride: 3 * R, RowBytes: R, N: n}
}

// SplitBlock views the first n records of a version 2 band block b of B
// records: B gate rows, then B up | down pairs.
func SplitBlock(b []byte, n, B, rowBytes int) RecordBlock {
	R := rowBytes
	ud := b[B*R : B*R+2*n*R]
	return RecordBlock{Gate: b[:n*R], Up: ud, Down: ud[min(R, len(ud)):], GateStride: R, UpStride: 2 * R, DownStride: 2 * R, RowBytes: R, N: n}
}

// RunsBlock views the first n records of a version 3 band block b of B
// records: B gate rows, then B up rows, then B down rows.
func RunsBlock(b []byte, n, B, rowBytes int) RecordBlock {
	R := rowBytes
	return RecordBlock{Gate: b[:n*R], Up: b[B*R : B*R+n*R], Down: b[2*B*R : 2*B*R+n*R], GateStride: R, UpStride: R, DownStride: R, RowBytes: R, N: n}
}

// ViewBlock views the first n records of a band block b of B records in
// layout l.
func ViewBlock(b []byte, n, B, rowBytes int, l Layout) RecordBlock {
	switch l {
	case Pairs:
		return SplitBlock(b, n, B, rowBytes)
	case Runs:
		return RunsBlock(b, n, B, rowBytes)
	}
	return InterleavedBlock(b[:n*3*rowBytes], rowBytes)
}

// Split reports whether the block's gate rows lie together (strides differ
// from a record's length): layouts Pairs and Runs.
func (b *RecordBlock) Split() bool { return b.GateStride == b.RowBytes }

// Runs reports whether the up rows lie together too, and the down rows
// (layout Runs).
func (b *RecordBlock) Runs() bool { return b.UpStride == b.RowBytes }

// GateRow, UpRow and DownRow are record j's rows.
func (b *RecordBlock) GateRow(j int) []byte {
	return b.Gate[j*b.GateStride : j*b.GateStride+b.RowBytes]
}

func (b *RecordBlock) UpRow(j int) []byte { return b.Up[j*b.UpStride : j*b.UpStride+b.RowBytes] }

func (b *RecordBlock) DownRow(j int) []byte {
	return b.Down[j*b.DownStride : j*b.DownStride+b.RowBytes]
}

// UpDown is record j's up row and, where it follows (Interleaved, Pairs),
// its down row: what to prefetch of the record once its gate is known.
// In layout Runs the down row lies apart (DownRow).
func (b *RecordBlock) UpDown(j int) []byte {
	if b.Runs() {
		return b.UpRow(j)
	}
	return b.Up[j*b.UpStride : j*b.UpStride+2*b.RowBytes]
}

// Downs is the block's memory from record j's down row on: down rows
// DownStride apart (a prefill GEMM's operand).
func (b *RecordBlock) Downs(j int) []byte { return b.Down[j*b.DownStride:] }

// Ahead is where a kernel prefetching three rows for record j should
// start: the whole record where records are interleaved, else its up row
// (gate rows together stream on their own).
func (b *RecordBlock) Ahead(j int) []byte {
	if b.Split() {
		return b.Up[j*b.UpStride:]
	}
	return b.Gate[j*b.GateStride:]
}

// Sub is records [lo, hi) of the block.
func (b *RecordBlock) Sub(lo, hi int) RecordBlock {
	s := *b
	s.N = hi - lo
	if s.N == 0 {
		s.Gate, s.Up, s.Down = nil, nil, nil
		return s
	}
	R := b.RowBytes
	s.Gate = b.Gate[lo*b.GateStride : hi*b.GateStride]
	if !b.Split() {
		s.Up, s.Down = s.Gate[R:], s.Gate[2*R:]
		return s
	}
	upEnd := R
	if !b.Runs() {
		upEnd = 2 * R // the last up | down pair whole (UpDown)
	}
	s.Up = b.Up[lo*b.UpStride : (hi-1)*b.UpStride+upEnd]
	s.Down = b.Down[lo*b.DownStride : (hi-1)*b.DownStride+R]
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
	copy(dst[R:2*R], b.UpRow(j))
	copy(dst[2*R:3*R], b.DownRow(j))
}

// PutSplit writes recs, whole interleaved records (gate | up | down rows of
// rowBytes), into dst as a version 2 band block of B ≥ n records (§5): the
// n gate rows from the start, the n up | down pairs from B·rowBytes on.
// It returns the block's view.
func PutSplit(dst, recs []byte, B, rowBytes int) RecordBlock {
	return PutBlock(dst, recs, B, rowBytes, Pairs)
}

// PutBlock writes recs, whole interleaved records, into dst as a band
// block of B ≥ n records in layout l (§5) and returns its view.
func PutBlock(dst, recs []byte, B, rowBytes int, l Layout) RecordBlock {
	R := rowBytes
	n := len(recs) / (3 * R)
	b := ViewBlock(dst, n, B, R, l)
	for j := 0; j < n; j++ {
		rec := recs[j*3*R : (j+1)*3*R]
		copy(b.GateRow(j), rec[:R])
		copy(b.UpRow(j), rec[R:2*R])
		copy(b.DownRow(j), rec[2*R:])
	}
	return b
}
