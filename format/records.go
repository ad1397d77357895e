package format

import "fmt"

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
	// Tile, in layout Tiled (version 4), is the bytes of a down row's
	// piece of DownTile values (0: down rows whole, DownStride apart).
	// Down then holds the block's down pieces by tile: piece c of the
	// TileCap records, then piece c+1 (the last piece of a row may be
	// shorter); this view's record j is the block's First + j.
	Tile, TileCap, First int
	// TileGroup, where not 0 (version 5), is the ranks of a tile group:
	// a layer's ranks [k·TileGroup, (k+1)·TileGroup). The block's down
	// section is then the parts of the groups it holds one after the
	// other (its first and last part may be short), each part tiled on
	// its own as a block of its records would be — so a group's down rows
	// are one run (a routed group's, where the router's groups are the
	// tile groups: sipack route). TileOrigin is the block's first rank
	// mod TileGroup: its record 0 lies that far into its group.
	TileGroup, TileOrigin int
}

// TileGroups is how a version 5 block's down section is grouped: Size
// ranks a tile group (0: none), the block's first rank Origin ranks into
// its group (GroupsAt).
type TileGroups struct{ Size, Origin int }

// GroupsAt is the tile groups of size g (0: none) of a block whose first
// rank is lo.
func GroupsAt(g, lo int) TileGroups {
	if g <= 0 {
		return TileGroups{}
	}
	return TileGroups{Size: g, Origin: lo % g}
}

// DownTile is the values of a down row a piece of a layout Tiled block
// holds: 64, what four AVX-512, eight AVX2 or sixteen NEON registers keep
// while every record of the block adds its piece (the kernels' tiled down
// projection, kernels/ffn.go).
const DownTile = 64

// TileBytes is the bytes of a DownTile-value piece of dtype dt.
func TileBytes(dt DType) int {
	b, _ := dt.RowBytes(DownTile)
	return b
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
	// Tiled: the gate rows, then the up rows, then the down rows by tile:
	// every record's first DownTile values, then every record's next, ...
	// (version 4; version 5 the same by tile groups: RecordBlock.TileGroup).
	Tiled
)

// Major is the pack version whose band blocks have layout l.
func (l Layout) Major() uint16 { return [...]uint16{1, 2, 3, 4}[l] }

// LayoutOf is the band layout of a pack of version major (Interleaved for
// an unknown one: Preamble refuses those before any block is read).
func LayoutOf(major uint16) Layout {
	switch major {
	case 2:
		return Pairs
	case 3:
		return Runs
	case 4, 5:
		return Tiled
	}
	return Interleaved
}

// LayoutFor is the layout writers give records of dtype dt: tiled for
// BF16, F16 and Q8_0, pairs for Q4_0 and F32. A down projection a row at a
// time loads and stores y for every row, and the stores hold back the
// loads; tiled, the down rows are added 64 outputs at a time in registers
// from one stream (Ops.AxpyTiles), with the decode's chunks of whole
// blocks: dense decode with one thread runs 1.17× (F16) and 1.03× (BF16)
// as fast as in three runs, 1.145× (Q8_0) as fast as in pairs. Q4_0 keeps
// pairs: with AVX-512 its integer path reads a tiled block's gate and up
// runs a row at a time, slower than it reads gate rows and up | down pairs
// (a dense 1-thread step's FFN 27.1-27.4 against 22.7-23.0 ms). F32 is not
// measured and keeps pairs. The comparisons are in docs/performance.md, "Layouts
// and kernel settings".
func LayoutFor(dt DType) Layout {
	switch dt {
	case BF16, F16, Q8_0:
		return Tiled
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

// TiledBlock views the first n records of a version 4 band block b of B
// records: B gate rows, then B up rows, then the B down rows by pieces of
// tile bytes (TileBytes of the dtype).
// tg is its tile groups (version 5: RecordBlock.TileGroup; none where the
// block lies in one).
func TiledBlock(b []byte, n, B, rowBytes, tile int, tg TileGroups) RecordBlock {
	R := rowBytes
	if tg.Size <= 0 || tg.Origin+B <= tg.Size {
		tg = TileGroups{}
	}
	return RecordBlock{Gate: b[:n*R], Up: b[B*R : B*R+n*R], Down: b[2*B*R : 3*B*R], GateStride: R, UpStride: R, DownStride: R, RowBytes: R, N: n, Tile: tile, TileCap: B, TileGroup: tg.Size, TileOrigin: tg.Origin}
}

// ViewBlock views the first n records of a band block b of B records in
// layout l; tile is the dtype's TileBytes and tg its tile groups, read by
// layout Tiled only.
func ViewBlock(b []byte, n, B, rowBytes int, l Layout, tile int, tg TileGroups) RecordBlock {
	switch l {
	case Pairs:
		return SplitBlock(b, n, B, rowBytes)
	case Runs:
		return RunsBlock(b, n, B, rowBytes)
	case Tiled:
		return TiledBlock(b, n, B, rowBytes, tile, tg)
	}
	return InterleavedBlock(b[:n*3*rowBytes], rowBytes)
}

// Split reports whether the block's gate rows lie together (strides differ
// from a record's length): layouts Pairs and Runs.
func (b *RecordBlock) Split() bool { return b.GateStride == b.RowBytes }

// Runs reports whether the up rows lie together too, and the down rows
// (layouts Runs and Tiled).
func (b *RecordBlock) Runs() bool { return b.UpStride == b.RowBytes }

// Tiled reports whether the down rows lie in pieces (layout Tiled): then
// DownRow, Downs and UpDown's down row do not exist; DownPiece, CopyDown
// and SetDown do.
func (b *RecordBlock) Tiled() bool { return b.Tile > 0 }

// DownPieces is the number of pieces of a down row in layout Tiled.
func (b *RecordBlock) DownPieces() int { return (b.RowBytes + b.Tile - 1) / b.Tile }

// TileGroupOf is the part of a tile group holding the view's record j
// (layout Tiled): its first record, as an index of the whole block (j's
// is First + j), and its records. Without tile groups the block is one.
func (b *RecordBlock) TileGroupOf(j int) (first, n int) {
	g := b.TileGroup
	if g <= 0 {
		return 0, b.TileCap
	}
	first = (b.First+j+b.TileOrigin)/g*g - b.TileOrigin
	end := min(b.TileCap, first+g)
	first = max(0, first)
	return first, end - first
}

// TileDown is the down section of the tile group holding the view's
// record j from that record's first piece on, and the stride between a
// record's pieces (the group's records × Tile): where a tiled kernel
// reads the whole pieces of records j, j+1, ... up to the group's end.
func (b *RecordBlock) TileDown(j int) (down []byte, stride int) {
	first, n := b.TileGroupOf(j)
	return b.Down[first*b.RowBytes+(b.First+j-first)*b.Tile:], n * b.Tile
}

// DownPiece is piece c of record j's down row (layout Tiled): values
// [c·DownTile, min(H, (c+1)·DownTile)).
func (b *RecordBlock) DownPiece(j, c int) []byte {
	return b.TilePieces(j, 1, c)
}

// TilePieces is piece c of records [j, j+n) of a layout Tiled block, which
// must lie in one tile group: n pieces back to back, each len/n bytes.
func (b *RecordBlock) TilePieces(j, n, c int) []byte {
	first, gn := b.TileGroupOf(j)
	return b.groupPieces(first, gn, j, n, c)
}

// groupPieces is TilePieces where j's tile group part (TileGroupOf) is
// known: the row copies below place it once for all their pieces.
func (b *RecordBlock) groupPieces(first, gn, j, n, c int) []byte {
	pl := min(b.Tile, b.RowBytes-c*b.Tile)
	o := first*b.RowBytes + c*gn*b.Tile + (b.First+j-first)*pl
	return b.Down[o : o+n*pl]
}

// CopyDown writes record j's down row, whole, into dst (RowBytes).
func (b *RecordBlock) CopyDown(dst []byte, j int) {
	if !b.Tiled() {
		copy(dst[:b.RowBytes], b.DownRow(j))
		return
	}
	first, gn := b.TileGroupOf(j)
	for c := 0; c < b.DownPieces(); c++ {
		copy(dst[c*b.Tile:], b.groupPieces(first, gn, j, 1, c))
	}
}

// CopyDownFrom writes record j of src's down row as record k's, either
// block tiled or not (piece by piece where both are: their tiles are the
// same, TileBytes of the records' dtype).
func (b *RecordBlock) CopyDownFrom(k int, src *RecordBlock, j int) {
	switch {
	case b.Tiled() && src.Tiled():
		bf, bn := b.TileGroupOf(k)
		sf, sn := src.TileGroupOf(j)
		for c := 0; c < b.DownPieces(); c++ {
			copy(b.groupPieces(bf, bn, k, 1, c), src.groupPieces(sf, sn, j, 1, c))
		}
	case b.Tiled():
		b.SetDown(k, src.DownRow(j))
	default:
		src.CopyDown(b.DownRow(k), j)
	}
}

// SetDown writes row, a whole down row, as record j's.
func (b *RecordBlock) SetDown(j int, row []byte) {
	if !b.Tiled() {
		copy(b.DownRow(j), row)
		return
	}
	first, gn := b.TileGroupOf(j)
	for c := 0; c < b.DownPieces(); c++ {
		copy(b.groupPieces(first, gn, j, 1, c), row[c*b.Tile:])
	}
}

// GateRow, UpRow and DownRow are record j's rows.
func (b *RecordBlock) GateRow(j int) []byte {
	return b.Gate[j*b.GateStride : j*b.GateStride+b.RowBytes]
}

func (b *RecordBlock) UpRow(j int) []byte { return b.Up[j*b.UpStride : j*b.UpStride+b.RowBytes] }

func (b *RecordBlock) DownRow(j int) []byte {
	if b.Tiled() {
		panic("format: DownRow of a layout Tiled block (its down rows lie in pieces: CopyDown, DownPiece)")
	}
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
func (b *RecordBlock) Downs(j int) []byte {
	if b.Tiled() {
		panic("format: Downs of a layout Tiled block")
	}
	return b.Down[j*b.DownStride:]
}

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
	if b.Tiled() {
		s.First = b.First + lo // the pieces stay where the block has them
		return s
	}
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
	b.CopyDown(dst[2*R:3*R], j)
}

// PutSplit writes recs, whole interleaved records (gate | up | down rows of
// rowBytes), into dst as a version 2 band block of B ≥ n records (§5): the
// n gate rows from the start, the n up | down pairs from B·rowBytes on.
// It returns the block's view.
func PutSplit(dst, recs []byte, B, rowBytes int) RecordBlock {
	return PutBlock(dst, recs, B, rowBytes, Pairs, 0, TileGroups{})
}

// PutBlock writes recs, whole interleaved records, into dst as a band
// block of B ≥ n records in layout l (§5; tile: TileBytes of the dtype
// and tg its tile groups, for layout Tiled) and returns its view.
func PutBlock(dst, recs []byte, B, rowBytes int, l Layout, tile int, tg TileGroups) RecordBlock {
	R := rowBytes
	n := len(recs) / (3 * R)
	b := ViewBlock(dst, n, B, R, l, tile, tg)
	for j := 0; j < n; j++ {
		rec := recs[j*3*R : (j+1)*3*R]
		copy(b.GateRow(j), rec[:R])
		copy(b.UpRow(j), rec[R:2*R])
		b.SetDown(j, rec[2*R:])
	}
	return b
}

// ParseLayout is the layout a name (interleaved, pairs, runs, tiled) or
// version (1-4) names.
func ParseLayout(s string) (Layout, error) {
	for l, names := range [][2]string{{"interleaved", "1"}, {"pairs", "2"}, {"runs", "3"}, {"tiled", "4"}} {
		if s == names[0] || s == names[1] {
			return Layout(l), nil
		}
	}
	return 0, fmt.Errorf("unknown band layout %q (interleaved, pairs, runs or tiled)", s)
}
