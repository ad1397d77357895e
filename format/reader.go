package format

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/sipack/sipack/internal/tmpfile"
)

// Limits a reader applies to config values before it sizes anything by them.
const (
	maxHidden = 1 << 16
	maxVocab  = 1 << 22
	maxHeads  = 1 << 12
	// MaxLayers and MaxNeurons cap a pack's layers and FFN neurons per
	// layer; the profile package holds profiles to the same caps.
	MaxLayers  = 1 << 10
	MaxNeurons = 1 << 20
)

// OpenOptions controls what part of a pack is loaded.
type OpenOptions struct {
	// Gamma is the fraction of each sparse layer's ranks to load, in (0, 1],
	// turned into Count(γ, N) ranks (at least 1). Zero means every rank the
	// file holds: all of them, or the prefix a sliced or cut pack kept. Only
	// the prefix that holds the ranks is mapped.
	Gamma float64
	// HeaderOnly reads and validates the preamble and index and maps
	// nothing (LoadedRanks is 0): for tools that only need the config,
	// the sizes or the tokenizer.
	HeaderOnly bool
	// NoMmap reads the prefix into the process's own memory instead of
	// mapping it (ReadFileAnon; llama.cpp's --no-mmap): the load reads every
	// byte before it returns, and the pages are never evicted and re-read.
	NoMmap bool
	// Mlock locks the loaded prefix in memory (llama.cpp's --mlock). A
	// lock the system refuses (RLIMIT_MEMLOCK, no privilege) is not an
	// error: LockErr says why, and the pack runs unlocked.
	Mlock bool
}

// Pack is an open, structurally validated pack with its loaded prefix mapped.
type Pack struct {
	Path     string
	FileSize int64
	Preamble Preamble
	Index    *Index
	// LoadedBands is the number of bands mapped; LoadedRanks the ranks of
	// each sparse layer in use, floor(γ·N) (the last band may hold more).
	LoadedBands int
	LoadedRanks int
	// LayerRanks is, per sparse layer (Index.SparseLayers' order), the
	// ranks in use: LoadedRanks in every layer, or in a pack with layer
	// budgets each layer's share of γ (LayerCount), within the bands
	// mapped.
	LayerRanks []int
	// Anon says the prefix was read into the process's memory (NoMmap),
	// Locked that it is locked in memory (Mlock); LockErr is why a lock
	// asked for was refused.
	Anon, Locked bool
	LockErr      error

	data    []byte // the mapped prefix [0, FFNOff + LoadedBands*BandBytes)
	tensors map[string]int
	sparse  map[int]int // layer -> position in Index.SparseLayers
	// bands, with layer budgets, is LayerBands of the index: bands[si][b]
	// the first rank of sparse layer si in band b (nil: B of every layer).
	bands [][]int
	file  *os.File
}

// PrefixBytes is the number of bytes a load of the given gamma maps: the
// whole pack up to the end of the band that holds rank RanksFor(γ) − 1.
func (p *Pack) PrefixBytes(gamma float64) uint64 { return p.prefixFor(p.RanksFor(gamma)) }

func (p *Pack) prefixFor(ranks int) uint64 {
	return p.Preamble.FFNOff + uint64(p.bandsFor(ranks))*p.Preamble.BandBytes
}

// RanksFor is the number of ranks a load of gamma computes with:
// Count(γ, N), at least 1. Bands are the I/O granularity: the load maps
// the bands that hold those ranks, and ranks past them in the last band
// are unused.
func (p *Pack) RanksFor(gamma float64) int {
	return max(1, Count(gamma, p.Index.Config.IntermediateSize))
}

// HasBudgets reports whether the pack's sparse layers carry layer budgets.
func (p *Pack) HasBudgets() bool {
	return len(p.Index.SparseLayers) > 0 && p.Index.SparseLayers[0].Budget != nil
}

// LayerCount is the number of neurons a pack-wide fraction f gives the
// si-th sparse layer when nothing caps it: Count(f, N), or with layer
// budgets Count of the layer's budget at f.
func (p *Pack) LayerCount(si int, f float64) int {
	N := p.Index.Config.IntermediateSize
	if !p.HasBudgets() {
		return Count(f, N)
	}
	return Count(BudgetAt(p.Index.SparseLayers[si].Budget, f), N)
}

// layerRanks is each sparse layer's ranks in use for a load of the
// pack-wide fraction f (ranks of every layer without budgets): its share
// of f, at least 1, within the bands mapped.
func (p *Pack) layerRanks(f float64, ranks int) []int {
	out := make([]int, len(p.Index.SparseLayers))
	for si := range out {
		out[si] = ranks
		if p.bands != nil {
			out[si] = min(p.bands[si][p.bandsFor(ranks)], max(1, p.LayerCount(si, f)))
		}
	}
	return out
}

// LayerShares is, per sparse layer, the neurons a pack-wide fraction f (δ
// or φ) gives it when layer si holds loaded[si] ranks: Count(f, N) capped
// at what it loaded in every layer, or with layer budgets the budgets'
// shares at the least fraction f' ≥ f whose capped shares add up to f's
// total (at most all that is loaded) — a layer that its loaded ranks stop
// hands its excess to the others in the budgets' order (f ≥ γ gives every
// layer all it loaded). The shares nest: a larger f never gives a layer
// fewer.
func (p *Pack) LayerShares(f float64, loaded []int) []int {
	N := p.Index.Config.IntermediateSize
	out := make([]int, len(p.Index.SparseLayers))
	if !p.HasBudgets() {
		for i := range out {
			out[i] = min(loaded[i], Count(f, N))
		}
		return out
	}
	capped := func(g float64) int {
		t := 0
		for si, sl := range p.Index.SparseLayers {
			t += min(loaded[si], Count(BudgetAt(sl.Budget, g), N))
		}
		return t
	}
	all := 0
	for _, n := range loaded {
		all += n
	}
	want := min(all, len(out)*Count(f, N))
	g := f
	if capped(f) < want {
		lo, hi := f, 1.0 // capped(lo) < want ≤ capped(hi)
		for range 40 {
			mid := (lo + hi) / 2
			if capped(mid) < want {
				lo = mid
			} else {
				hi = mid
			}
		}
		g = hi
	}
	for si, sl := range p.Index.SparseLayers {
		out[si] = min(loaded[si], Count(BudgetAt(sl.Budget, g), N))
	}
	return out
}

// AvailableRanks is the number of ranks per sparse layer the file can
// serve: N, or fewer for a pack sliced to a prefix or a file cut short
// after some band.
func (p *Pack) AvailableRanks() int {
	n := p.Index.Config.IntermediateSize
	if p.Preamble.BandCount == 0 {
		return n
	}
	avail := p.Index.RanksPresent
	if p.FileSize < int64(p.Preamble.FileLen) {
		whole := (uint64(p.FileSize) - min(uint64(p.FileSize), p.Preamble.FFNOff)) / p.Preamble.BandBytes
		avail = min(avail, int(whole)*p.Index.BandNeurons)
	}
	return avail
}

// MaxGamma is AvailableRanks as a fraction of N (for display: loads
// compare counts, never fractions).
func (p *Pack) MaxGamma() float64 {
	return float64(p.AvailableRanks()) / float64(p.Index.Config.IntermediateSize)
}

func (p *Pack) bandsFor(ranks int) int {
	if p.Preamble.BandCount == 0 {
		return 0
	}
	B := p.Index.BandNeurons
	return (ranks + B - 1) / B
}

// Open opens and validates a pack and maps the prefix that gamma needs. It
// checks the preamble, the index hash, every offset and shape; it does not
// hash tensors or bands (see Verify).
func Open(path string, opt OpenOptions) (*Pack, error) {
	p, err := open(path, opt)
	if err != nil {
		if fe, ok := err.(*FormatError); ok && fe.File == "" {
			fe.File = path
		}
		return nil, err
	}
	return p, nil
}

func open(path string, opt OpenOptions) (*Pack, error) {
	if opt.Gamma != 0 && !(opt.Gamma > 0 && opt.Gamma <= 1) {
		return nil, fmt.Errorf("sip: gamma must be in (0, 1], got %v", opt.Gamma)
	}
	// Checked before opening: opening a named pipe blocks until a writer comes.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		return nil, notPackDir(path)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("sip: %s is %s, not a regular file", path, tmpfile.Kind(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("sip: %s is %s, not a regular file", path, tmpfile.Kind(st.Mode()))
	}
	var head [PreambleSize]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if n < len(Magic) || string(head[:len(Magic)]) != Magic {
		return nil, notPackFile(path, head[:n], st.Size())
	}
	// A file cut short after the prefix a γ load needs can still serve that
	// load: the bytes past the prefix are never read. parsePreamble checks
	// against the declared length; the real size is checked below.
	declared := st.Size()
	if n == PreambleSize {
		if fl := binary.LittleEndian.Uint64(head[112:]); fl > uint64(st.Size()) && fl <= 1<<50 {
			declared = int64(fl)
		}
	}
	pre, err := parsePreamble(head[:n], declared)
	if err != nil {
		return nil, err
	}
	if st.Size() < int64(pre.FFNOff) {
		return nil, formatErr(ErrTruncated, sectionAt(pre, uint64(st.Size())), st.Size(), "truncated: file ends before the FFN section", pre.FileLen)
	}
	indexBytes := make([]byte, pre.IndexLen)
	if _, err := f.ReadAt(indexBytes, int64(pre.IndexOff)); err != nil {
		return nil, formatErr(ErrTruncated, "index", int64(pre.IndexOff), "cannot read index", err.Error())
	}
	if h := blake3.Sum256(indexBytes); h != pre.IndexHash {
		return nil, formatErr(ErrChecksum, "index", int64(pre.IndexOff), "index BLAKE3 mismatch", nil)
	}
	idx, err := decodeIndex(indexBytes)
	if err != nil {
		return nil, err
	}
	p := &Pack{Path: path, FileSize: st.Size(), Preamble: *pre, Index: idx, file: f}
	if err := p.validate(); err != nil {
		return nil, err
	}
	if opt.HeaderOnly {
		ok = true
		return p, nil
	}
	// The default is every rank the pack declares (all, or the prefix a
	// slice kept); a file cut short of that is refused unless γ asks only
	// for the bands it still holds.
	ranks, avail := p.Index.RanksPresent, p.AvailableRanks()
	if p.Preamble.BandCount == 0 || ranks == 0 {
		ranks = p.Index.Config.IntermediateSize
	}
	if opt.Gamma != 0 {
		ranks = p.RanksFor(opt.Gamma)
	}
	if ranks > avail {
		n := p.Index.Config.IntermediateSize
		asked := fmt.Sprintf("γ = %v", opt.Gamma)
		if opt.Gamma == 0 {
			asked = "the default load (every rank the pack declares)"
		}
		if st.Size() < int64(pre.FileLen) {
			return nil, formatErr(ErrTruncated, "ffn", st.Size(), fmt.Sprintf("truncated: the file holds whole bands for %d of %d ranks (γ ≤ %.3f) only, %s needs %d ranks, %d bytes", avail, n, p.MaxGamma(), asked, ranks, p.prefixFor(ranks)), st.Size())
		}
		return nil, fmt.Errorf("sip: %s: pack was sliced to %d of %d ranks (γ ≤ %.3f), cannot load γ = %v (%d ranks)", path, avail, n, p.MaxGamma(), opt.Gamma, ranks)
	}
	p.LoadedBands = p.bandsFor(ranks)
	p.LoadedRanks = ranks
	frac := opt.Gamma
	if frac == 0 {
		frac = float64(ranks) / float64(p.Index.Config.IntermediateSize)
	}
	p.LayerRanks = p.layerRanks(frac, ranks)
	if opt.NoMmap {
		p.data, err = ReadFileAnon(f, int64(p.prefixFor(ranks)))
		p.Anon = err == nil
	} else {
		p.data, err = MapFilePopulated(f, int64(p.prefixFor(ranks)))
	}
	if err != nil {
		return nil, err
	}
	if opt.Mlock {
		p.LockErr = Lock(p.data)
		p.Locked = p.LockErr == nil
	}
	ok = true
	return p, nil
}

// validate checks the decoded index against itself, the config and the preamble.
func (p *Pack) validate() error {
	idx, pre := p.Index, &p.Preamble
	c := &idx.Config
	bad := func(class error, msg string, val any) error { return formatErr(class, "index", PreambleSize, msg, val) }
	switch {
	case c.HiddenSize <= 0 || c.HiddenSize > maxHidden:
		return bad(ErrShape, "hidden_size out of range", c.HiddenSize)
	case c.IntermediateSize <= 0 || c.IntermediateSize > MaxNeurons:
		return bad(ErrShape, "intermediate_size out of range", c.IntermediateSize)
	case c.NumLayers <= 0 || c.NumLayers > MaxLayers:
		return bad(ErrShape, "num_layers out of range", c.NumLayers)
	case c.NumHeads <= 0 || c.NumHeads > maxHeads || c.NumKVHeads <= 0 || c.NumHeads%c.NumKVHeads != 0:
		return bad(ErrShape, "num_heads must be a positive multiple of num_kv_heads", [2]int{c.NumHeads, c.NumKVHeads})
	case c.HeadDim <= 0 || c.HeadDim%2 != 0 || c.HeadDim*c.NumHeads > maxHidden*4:
		return bad(ErrShape, "head_dim must be positive and even", c.HeadDim)
	case c.VocabSize <= 0 || c.VocabSize > maxVocab:
		return bad(ErrShape, "vocab_size out of range", c.VocabSize)
	case c.MaxPositionEmbeddings <= 0:
		return bad(ErrShape, "max_position_embeddings must be positive", c.MaxPositionEmbeddings)
	case !(c.RMSNormEps > 0) || !(c.RopeTheta > 0):
		return bad(ErrShape, "rms_norm_eps and rope_theta must be positive", [2]float32{c.RMSNormEps, c.RopeTheta})
	case c.BOSTokenID >= c.VocabSize:
		return bad(ErrShape, "bos_token_id outside the vocabulary", c.BOSTokenID)
	}
	for _, e := range c.EOSTokenIDs {
		if e < 0 || e >= c.VocabSize {
			return bad(ErrShape, "eos_token_id outside the vocabulary", e)
		}
	}
	if rs := c.RopeScaling; rs != nil && rs.Type != "llama3" {
		return bad(ErrShape, "unsupported rope_scaling type", rs.Type)
	}
	if !idx.RecordDType.Valid() {
		return bad(ErrDType, "record dtype", idx.RecordDType)
	}
	if rb, ok := idx.RecordDType.RowBytes(c.HiddenSize); !ok || idx.RecordBytes != uint64(3*rb) {
		return bad(ErrShape, "record bytes do not match 3 rows of hidden_size in the record dtype", idx.RecordBytes)
	}
	if LayoutOf(pre.Major) == Tiled && TileBytes(idx.RecordDType) == 0 {
		return bad(ErrDType, "record dtype without a tiled layout in a tiled pack", idx.RecordDType)
	}

	// Sparse layers: ascending, in range, each perm a permutation of [0, N).
	N := c.IntermediateSize
	p.sparse = make(map[int]int, len(idx.SparseLayers))
	seen := make([]bool, N)
	for i, sl := range idx.SparseLayers {
		if sl.Layer < 0 || sl.Layer >= c.NumLayers || (i > 0 && sl.Layer <= idx.SparseLayers[i-1].Layer) {
			return bad(ErrIndex, "sparse layers must be distinct, ascending and below num_layers", sl.Layer)
		}
		if len(sl.Perm) != N {
			return bad(ErrShape, fmt.Sprintf("layer %d permutation has wrong length", sl.Layer), len(sl.Perm))
		}
		clear(seen)
		for _, v := range sl.Perm {
			if int(v) >= N || seen[v] {
				return bad(ErrIndex, fmt.Sprintf("layer %d permutation is not a permutation of [0, %d)", sl.Layer, N), v)
			}
			seen[v] = true
		}
		p.sparse[sl.Layer] = i
	}
	bands, err := checkBudgets(idx)
	if err != nil {
		return bad(ErrIndex, err.Error(), nil)
	}
	if p.HasBudgets() != (pre.Flags&FlagLayerBands != 0) {
		return bad(ErrIndex, "layer budgets and the preamble's layer-bands flag must come together", pre.Flags)
	}
	p.bands = bands
	nSparse := len(idx.SparseLayers)
	if nSparse > 0 {
		B := idx.BandNeurons
		if B <= 0 || B > N || uint32(B) != pre.BandNeurons {
			return bad(ErrIndex, "band neurons disagree with the preamble or are out of range", B)
		}
		if idx.RanksPresent < 1 || idx.RanksPresent > N {
			return bad(ErrIndex, "ranks present out of range", idx.RanksPresent)
		}
		if want := (idx.RanksPresent + B - 1) / B; int(pre.BandCount) != want {
			return bad(ErrIndex, "band count is not ceil(ranks present / B)", pre.BandCount)
		}
		if want := alignUp(uint64(nSparse*B)*idx.RecordBytes, SectionAlign); pre.BandBytes != want {
			return bad(ErrIndex, "band bytes do not match sparse layers × B × record bytes", pre.BandBytes)
		}
	} else if pre.BandCount != 0 {
		return bad(ErrIndex, "bands present but no sparse layers", pre.BandCount)
	}
	if len(idx.BandHashes) != int(pre.BandCount) {
		return bad(ErrIndex, "band hash count differs from band count", len(idx.BandHashes))
	}

	// Dense tensors: exactly the expected set, shapes and dtypes as the config says,
	// each inside the dense section, aligned, without overlap.
	sparse := make(map[int]bool, nSparse)
	for l := range p.sparse {
		sparse[l] = true
	}
	want := ExpectedTensors(c, sparse)
	p.tensors = make(map[string]int, len(idx.DenseTensors))
	for i, t := range idx.DenseTensors {
		if _, dup := p.tensors[t.Name]; dup {
			return bad(ErrIndex, "duplicate tensor", t.Name)
		}
		p.tensors[t.Name] = i
	}
	if len(idx.DenseTensors) != len(want) {
		var missing []string
		for _, w := range want {
			if _, ok := p.tensors[w.Name]; !ok {
				missing = append(missing, w.Name)
			}
		}
		return bad(ErrShape, fmt.Sprintf("dense section has %d tensors, config needs %d; missing %v", len(idx.DenseTensors), len(want), missing), nil)
	}
	for _, w := range want {
		i, ok := p.tensors[w.Name]
		if !ok {
			return bad(ErrShape, "missing tensor", w.Name)
		}
		t := &idx.DenseTensors[i]
		if !slices.Equal(t.Shape, w.Shape) {
			return bad(ErrShape, fmt.Sprintf("tensor %q: shape %v, want %v", t.Name, t.Shape, w.Shape), nil)
		}
		switch {
		case !t.DType.Valid():
			return bad(ErrDType, fmt.Sprintf("tensor %q", t.Name), t.DType)
		case w.Vector && t.DType != F32:
			return bad(ErrDType, fmt.Sprintf("tensor %q: norms and biases must be f32", t.Name), t.DType)
		case w.Record && t.DType != idx.RecordDType:
			return bad(ErrDType, fmt.Sprintf("tensor %q: dense FFN records must use the record dtype", t.Name), t.DType)
		}
		if err := p.checkPlaced(t); err != nil {
			return err
		}
	}
	if err := p.validateRouters(); err != nil {
		return err
	}
	// Tile groups: version 5 packs only, fewer records than a band's.
	switch tg := idx.TileGroup; {
	case pre.Major == 5 && (tg < 1 || tg >= idx.BandNeurons):
		return bad(ErrIndex, fmt.Sprintf("version 5 pack: tile group out of range [1, %d)", idx.BandNeurons), tg)
	case pre.Major != 5 && tg != 0:
		return bad(ErrIndex, fmt.Sprintf("tile group set in a version %d pack", pre.Major), tg)
	}
	order := idx.tensors()
	sort.Slice(order, func(a, b int) bool { return order[a].Offset < order[b].Offset })
	for i := 1; i < len(order); i++ {
		if order[i-1].Offset+order[i-1].Length > order[i].Offset {
			return formatErr(ErrBounds, "dense", int64(order[i].Offset), fmt.Sprintf("tensors %q and %q overlap", order[i-1].Name, order[i].Name), nil)
		}
	}
	return nil
}

// checkPlaced checks that a tensor's length is its shape's in its dtype
// and that it lies aligned inside the dense section.
func (p *Pack) checkPlaced(t *TensorInfo) error {
	pre := &p.Preamble
	if n, ok := TensorBytes(t.DType, t.Shape); !ok || t.Length != uint64(n) {
		return formatErr(ErrShape, "index", PreambleSize, fmt.Sprintf("tensor %q: length %d does not match shape %v in %v", t.Name, t.Length, t.Shape, t.DType), nil)
	}
	if t.Offset%TensorAlign != 0 {
		return formatErr(ErrAlign, "dense", int64(t.Offset), fmt.Sprintf("tensor %q not 64-byte aligned", t.Name), nil)
	}
	end, ok := addOK(t.Offset, t.Length)
	if t.Offset < pre.DenseOff || !ok || end > pre.DenseOff+pre.DenseLen {
		return formatErr(ErrBounds, "dense", int64(t.Offset), fmt.Sprintf("tensor %q outside the dense section", t.Name), nil)
	}
	return nil
}

// RouterNames are the names of sparse layer l's router tensors (§4):
// U [rank, H], its bias [rank] and V [⌈N/group⌉, rank].
func RouterNames(l int) (u, b, v string) {
	return fmt.Sprintf("layers.%d.router_u", l), fmt.Sprintf("layers.%d.router_b", l), fmt.Sprintf("layers.%d.router_v", l)
}

// validateRouters checks the optional routers (v1.5): none, or for every
// sparse layer in order its U, bias and V, of one rank per layer, in the
// dense section, aligned; overlaps are checked with the dense tensors.
func (p *Pack) validateRouters() error {
	idx := p.Index
	c := &idx.Config
	bad := func(class error, msg string, val any) error { return formatErr(class, "index", PreambleSize, msg, val) }
	if len(idx.Routers) == 0 {
		if idx.RouterGroup != 0 {
			return bad(ErrIndex, "router group set without routers", idx.RouterGroup)
		}
		return nil
	}
	G := idx.RouterGroup
	if G < 1 || G > c.IntermediateSize {
		return bad(ErrIndex, fmt.Sprintf("router group out of range [1, %d]", c.IntermediateSize), G)
	}
	if len(idx.Routers) != 3*len(idx.SparseLayers) {
		return bad(ErrIndex, fmt.Sprintf("%d router tensors for %d sparse layers, want 3 each", len(idx.Routers), len(idx.SparseLayers)), nil)
	}
	groups := (c.IntermediateSize + G - 1) / G
	for si, sl := range idx.SparseLayers {
		u, b, v := &idx.Routers[3*si], &idx.Routers[3*si+1], &idx.Routers[3*si+2]
		nu, nb, nv := RouterNames(sl.Layer)
		if u.Name != nu || b.Name != nb || v.Name != nv {
			return bad(ErrIndex, fmt.Sprintf("router tensors of layer %d named %q, %q, %q, want %q, %q, %q", sl.Layer, u.Name, b.Name, v.Name, nu, nb, nv), nil)
		}
		if len(u.Shape) != 2 || u.Shape[0] < 1 || u.Shape[0] > c.HiddenSize || u.Shape[1] != c.HiddenSize {
			return bad(ErrShape, fmt.Sprintf("tensor %q: shape %v, want [rank ≤ %d, %d]", u.Name, u.Shape, c.HiddenSize, c.HiddenSize), nil)
		}
		r := u.Shape[0]
		if !slices.Equal(b.Shape, []int{r}) || !slices.Equal(v.Shape, []int{groups, r}) {
			return bad(ErrShape, fmt.Sprintf("layer %d router: bias %v and V %v, want [%d] and [%d, %d]", sl.Layer, b.Shape, v.Shape, r, groups, r), nil)
		}
		for _, t := range []*TensorInfo{u, b, v} {
			want := t.DType == F32 || (t != b && (t.DType == BF16 || t.DType == F16 || t.DType == Q8_0))
			if !want {
				return bad(ErrDType, fmt.Sprintf("tensor %q: routers are f32, bf16, f16 or q8_0 (biases f32)", t.Name), t.DType)
			}
			if err := p.checkPlaced(t); err != nil {
				return err
			}
			if _, dup := p.tensors[t.Name]; dup {
				return bad(ErrIndex, "duplicate tensor", t.Name)
			}
			p.tensors[t.Name] = len(p.tensors) // dense tensors first, then routers (Index.tensors)
		}
	}
	return nil
}

// Close unmaps the pack.
func (p *Pack) Close() error {
	var err error
	if p.Anon {
		err = FreeAnon(p.data)
	} else {
		err = Unmap(p.data)
	}
	p.data = nil
	if cerr := p.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// Tensor returns the info and mapped bytes of a dense tensor.
func (p *Pack) Tensor(name string) (*TensorInfo, []byte, bool) {
	i, ok := p.tensors[name]
	if !ok {
		return nil, nil, false
	}
	var t *TensorInfo
	if n := len(p.Index.DenseTensors); i < n {
		t = &p.Index.DenseTensors[i]
	} else {
		t = &p.Index.Routers[i-n]
	}
	return t, p.data[t.Offset : t.Offset+t.Length], true
}

// SparseIndex reports whether layer l is sparse and its position among the sparse layers.
func (p *Pack) SparseIndex(l int) (int, bool) {
	i, ok := p.sparse[l]
	return i, ok
}

// DTypeName is the dtype the pack was converted to, as --dtype names it:
// its records' dtype, or q4_k_m for Q4_K records beside Q6_K dense tensors
// (llama.cpp's mix; no other conversion writes both).
func (p *Pack) DTypeName() string {
	if p.Index.RecordDType == Q4_K {
		for _, t := range p.Index.DenseTensors {
			if t.DType == Q6_K {
				return "q4_k_m"
			}
		}
	}
	return p.Index.RecordDType.String()
}

// Split reports whether the pack's band blocks hold their gate rows
// together (versions 2 and 3, §5) rather than whole records (version 1).
func (p *Pack) Split() bool { return p.Layout() != Interleaved }

// Layout is the layout of the pack's band blocks (§5).
func (p *Pack) Layout() Layout { return LayoutOf(p.Preamble.Major) }

// Record returns the neuron record of rank r (< LoadedRanks) of the si-th
// sparse layer as gate row | up row | down column, copied (in a version 2
// pack its rows do not lie together).
func (p *Pack) Record(si, r int) []byte {
	b := p.RecordBlock(si, r, r+1)
	rec := make([]byte, p.Index.RecordBytes)
	b.CopyRecord(rec, 0)
	return rec
}

// RecordBlock returns the records of ranks [lo, hi) of the si-th sparse
// layer, which must lie in one band (hi ≤ LayerRanks[si]).
func (p *Pack) RecordBlock(si, lo, hi int) RecordBlock {
	B, rb := p.Index.BandNeurons, p.Index.RecordBytes
	R := int(rb / 3)
	if p.bands == nil {
		off := p.Preamble.FFNOff + uint64(lo/B)*p.Preamble.BandBytes + uint64(si*B)*rb
		block := p.data[off : off+uint64(B)*rb]
		all := ViewBlock(block, B, B, R, p.Layout(), TileBytes(p.Index.RecordDType), GroupsAt(p.Index.TileGroup, lo/B*B))
		return all.Sub(lo%B, lo%B+hi-lo)
	}
	// The band whose share of this layer holds rank lo, and the layers
	// before this one in it.
	c := p.bands[si]
	b := sort.Search(len(c)-1, func(b int) bool { return c[b+1] > lo })
	off := p.Preamble.FFNOff + uint64(b)*p.Preamble.BandBytes
	for s := 0; s < si; s++ {
		off += uint64(p.bands[s][b+1]-p.bands[s][b]) * rb
	}
	n := c[b+1] - c[b]
	block := p.data[off : off+uint64(n)*rb]
	all := ViewBlock(block, n, n, R, p.Layout(), TileBytes(p.Index.RecordDType), GroupsAt(p.Index.TileGroup, c[b]))
	return all.Sub(lo-c[b], hi-c[b])
}

// mappedRanks is the ranks of the si-th sparse layer the mapped bands hold
// (with layer budgets, whole bands of that layer's share).
func (p *Pack) mappedRanks(si int) int {
	if p.bands == nil {
		return p.LoadedRanks
	}
	return p.bands[si][p.LoadedBands]
}

// LayerBlocks is ranks [0, n) of the si-th sparse layer as one block per
// band (n ≤ LayerRanks[si]).
func (p *Pack) LayerBlocks(si, n int) []RecordBlock {
	var out []RecordBlock
	for b := 0; ; b++ {
		lo, hi := b*p.Index.BandNeurons, (b+1)*p.Index.BandNeurons
		if p.bands != nil {
			if b+1 >= len(p.bands[si]) {
				break
			}
			lo, hi = p.bands[si][b], p.bands[si][b+1]
		}
		if lo >= n {
			break
		}
		if hi = min(n, hi); lo < hi { // a band may hold none of a budgeted layer
			out = append(out, p.RecordBlock(si, lo, hi))
		}
	}
	return out
}

// VerifyReport lists what Verify checked.
type VerifyReport struct {
	Tensors, Bands int
	Bytes          uint64
	Failures       []string
}

// Verify hashes every dense tensor and every loaded band with BLAKE3 and
// compares against the index. It returns a report and, if anything failed,
// an error wrapping ErrChecksum that names the first failure. The pieces
// are hashed on every CPU at once: a 1B pack is gigabytes.
func (p *Pack) Verify() (*VerifyReport, error) {
	type piece struct {
		off, n  uint64
		want    [HashSize]byte
		what    string
		section string
		msg     string
	}
	var pieces []piece
	for _, t := range p.Index.tensors() {
		pieces = append(pieces, piece{t.Offset, t.Length, t.Hash, fmt.Sprintf("tensor %q at offset %d", t.Name, t.Offset), "dense", fmt.Sprintf("tensor %q BLAKE3 mismatch", t.Name)})
	}
	bb := p.Preamble.BandBytes
	for b := 0; b < p.LoadedBands; b++ {
		off := p.Preamble.FFNOff + uint64(b)*bb
		pieces = append(pieces, piece{off, bb, p.Index.BandHashes[b], fmt.Sprintf("band %d at offset %d", b, off), "ffn", fmt.Sprintf("band %d BLAKE3 mismatch", b)})
	}
	bad := make([]bool, len(pieces))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(pieces)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pc := &pieces[i]
				bad[i] = blake3.Sum256(p.data[pc.off:pc.off+pc.n]) != pc.want
			}
		}()
	}
	for i := range pieces {
		next <- i
	}
	close(next)
	wg.Wait()
	r := &VerifyReport{}
	var first error
	for i, pc := range pieces {
		if pc.section == "dense" {
			r.Tensors++
		} else {
			r.Bands++
		}
		r.Bytes += pc.n
		if bad[i] {
			r.Failures = append(r.Failures, pc.what)
			if first == nil {
				first = &FormatError{File: p.Path, Off: int64(pc.off), Section: pc.section, Msg: pc.msg, Err: ErrChecksum}
			}
		}
	}
	return r, first
}

// Bytes returns the mapped prefix; for tools such as inspect and tests.
func (p *Pack) Bytes() []byte { return p.data }

// sectionAt names the section holding byte offset off.
func sectionAt(p *Preamble, off uint64) string {
	switch {
	case off < p.IndexOff+p.IndexLen:
		return "index"
	case off < p.FFNOff:
		return "dense"
	}
	return "ffn"
}
