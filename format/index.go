package format

import (
	"fmt"
	"math"
	"unicode/utf8"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/sipack/sipack/format/sipfb"
)

// HashSize is the length of every BLAKE3 digest stored in a pack.
const HashSize = 32

// RopeScaling is the rope_scaling block of a Llama-3.x config.
type RopeScaling struct {
	Type                          string
	Factor                        float32
	LowFreqFactor                 float32
	HighFreqFactor                float32
	OriginalMaxPositionEmbeddings uint32
}

// Llama3Factors is, per rotary dimension pair i of a head of headDim, the
// factor Llama 3.1's rope_scaling divides the frequency θ^(-2i/headDim) by:
// 1 for wavelengths below orig/high, Factor above orig/low, and between
// them 1/((1−s)/Factor + s) with s = (orig/wavelength − low)/(high − low).
// It is what llama.cpp's converter stores as rope_freqs.
func (rs *RopeScaling) Llama3Factors(theta float64, headDim int) []float64 {
	orig, lo, hi, factor := float64(rs.OriginalMaxPositionEmbeddings), float64(rs.LowFreqFactor), float64(rs.HighFreqFactor), float64(rs.Factor)
	out := make([]float64, headDim/2)
	for i := range out {
		wave := 2 * math.Pi * math.Pow(theta, float64(2*i)/float64(headDim))
		switch {
		case wave < orig/hi:
			out[i] = 1
		case wave > orig/lo:
			out[i] = factor
		default:
			s := (orig/wave - lo) / (hi - lo)
			out[i] = 1 / ((1-s)/factor + s)
		}
	}
	return out
}

// ModelConfig is the architecture description the runner needs.
type ModelConfig struct {
	Architecture          string
	HiddenSize            int
	IntermediateSize      int // N
	NumLayers             int
	NumHeads              int
	NumKVHeads            int
	HeadDim               int
	VocabSize             int
	MaxPositionEmbeddings int
	RMSNormEps            float32
	RopeTheta             float32
	RopeScaling           *RopeScaling
	TieWordEmbeddings     bool
	AttentionBias         bool
	BOSTokenID            int // -1: none
	EOSTokenIDs           []int
}

// TensorInfo describes one tensor of the dense section.
type TensorInfo struct {
	Name   string
	DType  DType
	Shape  []int
	Offset uint64 // absolute
	Length uint64
	Hash   [HashSize]byte
}

// Elems is the number of elements of the tensor.
func (t *TensorInfo) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// SparseLayer holds the rank order of one sparse FFN layer.
type SparseLayer struct {
	Layer     int
	Perm      []uint32  // Perm[rank] = original neuron index
	TaskScore []float32 // optional, per rank: the task profile's mean |h|
	// Budget, optional (all sparse layers or none), is the layer's share of
	// a pack-wide fraction: Budget[j] is the fraction of this layer's N
	// that a pack-wide fraction of j/BudgetSteps gives it, BudgetSteps+1
	// values, nondecreasing from 0 to 1 (linear in between; LayerCount).
	Budget []float32
}

// Provenance says where a pack's rank order came from.
type Provenance struct {
	Order            string // "original", "profile", "random"
	Task             string
	Prompts          uint64
	Tokens           uint64
	GenTokens        uint32
	ProfileModelHash [HashSize]byte
	SecondaryTasks   []string
	Seed             uint64
}

// Index is the decoded, validated FlatBuffers index of a pack.
type Index struct {
	Config               ModelConfig
	ConfigJSON           []byte
	TokenizerJSON        []byte
	GenerationConfigJSON []byte
	RecordDType          DType
	BandNeurons          int
	RecordBytes          uint64
	DenseTensors         []TensorInfo
	SparseLayers         []SparseLayer
	BandHashes           [][HashSize]byte
	BaseFraction         float32
	Provenance           Provenance
	SourceHash           [HashSize]byte
	Converter            string
	// RanksPresent is the number of ranks stored per sparse layer: N, or
	// fewer in a pack sliced to a γ prefix (sipack slice).
	RanksPresent int
	// ChatTemplates are the model's chat templates (Jinja source), "default"
	// first; none in a pack of a base model or an older pack (v1.3).
	ChatTemplates []ChatTemplate
	// Routers (v1.5, optional) are the per-token group routers of the
	// sparse layers: for each, in sparse-layer order, layers.{l}.router_u
	// [rank, H], router_b [rank] (F32) and router_v [⌈N/RouterGroup⌉,
	// rank], stored in the dense section. RouterGroup is the ranks of one
	// group (0 when there are none).
	Routers     []TensorInfo
	RouterGroup int
	// TileGroup (version 5 packs only, v5.6) is the records of a tile
	// group: a band block's down section tiled a group of records at a
	// time (format.RecordBlock.TileGroup); 0 in every other pack.
	TileGroup int
}

// ChatTemplate is one named chat template, as tokenizer_config.json's
// chat_template gives it (a single template is named "default").
type ChatTemplate struct {
	Name     string
	Template string
}

// CheckChatTemplates applies the rules of SPEC.md §3 to chat templates:
// at most 64, names of 1-256 bytes and unique, templates of 1 B-1 MiB, all
// valid UTF-8.
func CheckChatTemplates(ts []ChatTemplate) error {
	if len(ts) > MaxChatTemplates {
		return fmt.Errorf("%d chat templates, at most %d", len(ts), MaxChatTemplates)
	}
	for i, t := range ts {
		switch {
		case len(t.Name) == 0 || len(t.Name) > MaxChatTemplateName || !utf8.ValidString(t.Name):
			return fmt.Errorf("chat template %d: name must be 1-%d bytes of UTF-8", i, MaxChatTemplateName)
		case len(t.Template) == 0 || len(t.Template) > MaxChatTemplateBytes || !utf8.ValidString(t.Template):
			return fmt.Errorf("chat template %q: must be 1-%d bytes of UTF-8, got %d bytes", t.Name, MaxChatTemplateBytes, len(t.Template))
		}
		for _, prev := range ts[:i] {
			if prev.Name == t.Name {
				return fmt.Errorf("duplicate chat template name %q", t.Name)
			}
		}
	}
	return nil
}

// Limits on chat templates, which are untrusted text from the file.
const (
	MaxChatTemplates     = 64
	MaxChatTemplateBytes = 1 << 20 // real templates are a few KiB
	MaxChatTemplateName  = 256
)

// encodeIndex serialises idx. Hashes are fixed-size byte vectors, so the
// output length does not change when only hash bytes change: a writer plans
// offsets with zero hashes and encodes again once they are known (it checks
// that the length held).
func encodeIndex(idx *Index) []byte {
	b := flatbuffers.NewBuilder(1 << 16)
	u8 := func(v []byte) flatbuffers.UOffsetT { return b.CreateByteVector(v) }
	strs := func(ss []string) flatbuffers.UOffsetT {
		offs := make([]flatbuffers.UOffsetT, len(ss))
		for i, s := range ss {
			offs[i] = b.CreateString(s)
		}
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		return b.EndVector(len(offs))
	}
	c := &idx.Config

	// Children first: FlatBuffers builds back to front.
	var rope flatbuffers.UOffsetT
	if c.RopeScaling != nil {
		typ := b.CreateString(c.RopeScaling.Type)
		sipfb.RopeScalingStart(b)
		sipfb.RopeScalingAddType(b, typ)
		sipfb.RopeScalingAddFactor(b, c.RopeScaling.Factor)
		sipfb.RopeScalingAddLowFreqFactor(b, c.RopeScaling.LowFreqFactor)
		sipfb.RopeScalingAddHighFreqFactor(b, c.RopeScaling.HighFreqFactor)
		sipfb.RopeScalingAddOriginalMaxPositionEmbeddings(b, c.RopeScaling.OriginalMaxPositionEmbeddings)
		rope = sipfb.RopeScalingEnd(b)
	}
	arch := b.CreateString(c.Architecture)
	sipfb.ModelConfigStartEosTokenIdsVector(b, len(c.EOSTokenIDs))
	for i := len(c.EOSTokenIDs) - 1; i >= 0; i-- {
		b.PrependInt32(int32(c.EOSTokenIDs[i]))
	}
	eos := b.EndVector(len(c.EOSTokenIDs))
	sipfb.ModelConfigStart(b)
	sipfb.ModelConfigAddArchitecture(b, arch)
	sipfb.ModelConfigAddHiddenSize(b, uint32(c.HiddenSize))
	sipfb.ModelConfigAddIntermediateSize(b, uint32(c.IntermediateSize))
	sipfb.ModelConfigAddNumLayers(b, uint32(c.NumLayers))
	sipfb.ModelConfigAddNumHeads(b, uint32(c.NumHeads))
	sipfb.ModelConfigAddNumKvHeads(b, uint32(c.NumKVHeads))
	sipfb.ModelConfigAddHeadDim(b, uint32(c.HeadDim))
	sipfb.ModelConfigAddVocabSize(b, uint32(c.VocabSize))
	sipfb.ModelConfigAddMaxPositionEmbeddings(b, uint32(c.MaxPositionEmbeddings))
	sipfb.ModelConfigAddRmsNormEps(b, c.RMSNormEps)
	sipfb.ModelConfigAddRopeTheta(b, c.RopeTheta)
	if c.RopeScaling != nil {
		sipfb.ModelConfigAddRopeScaling(b, rope)
	}

	sipfb.ModelConfigAddTieWordEmbeddings(b, c.TieWordEmbeddings)
	sipfb.ModelConfigAddAttentionBias(b, c.AttentionBias)
	sipfb.ModelConfigAddBosTokenId(b, int32(c.BOSTokenID))
	sipfb.ModelConfigAddEosTokenIds(b, eos)
	cfg := sipfb.ModelConfigEnd(b)

	tensorVec := func(ts []TensorInfo, start func(*flatbuffers.Builder, int) flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		offs := make([]flatbuffers.UOffsetT, len(ts))
		for i := range ts {
			t := &ts[i]
			name := b.CreateString(t.Name)
			sipfb.TensorStartShapeVector(b, len(t.Shape))
			for j := len(t.Shape) - 1; j >= 0; j-- {
				b.PrependUint64(uint64(t.Shape[j]))
			}
			shape := b.EndVector(len(t.Shape))
			hash := u8(t.Hash[:])
			sipfb.TensorStart(b)
			sipfb.TensorAddName(b, name)
			sipfb.TensorAddDtype(b, sipfb.DType(t.DType))
			sipfb.TensorAddShape(b, shape)
			sipfb.TensorAddOffset(b, t.Offset)
			sipfb.TensorAddLength(b, t.Length)
			sipfb.TensorAddBlake3(b, hash)
			offs[i] = sipfb.TensorEnd(b)
		}
		start(b, len(offs))
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		return b.EndVector(len(offs))
	}
	denseVec := tensorVec(idx.DenseTensors, sipfb.IndexStartDenseTensorsVector)
	var routerVec flatbuffers.UOffsetT
	if len(idx.Routers) > 0 {
		routerVec = tensorVec(idx.Routers, sipfb.IndexStartRoutersVector)
	}

	layers := make([]flatbuffers.UOffsetT, len(idx.SparseLayers))
	for i := range idx.SparseLayers {
		sl := &idx.SparseLayers[i]
		sipfb.SparseLayerStartPermVector(b, len(sl.Perm))
		for j := len(sl.Perm) - 1; j >= 0; j-- {
			b.PrependUint32(sl.Perm[j])
		}
		perm := b.EndVector(len(sl.Perm))
		score, budget := float32Vector(b, sl.TaskScore), float32Vector(b, sl.Budget)
		sipfb.SparseLayerStart(b)
		sipfb.SparseLayerAddLayer(b, uint32(sl.Layer))
		if sl.Budget != nil {
			sipfb.SparseLayerAddBudget(b, budget)
		}
		sipfb.SparseLayerAddPerm(b, perm)
		if sl.TaskScore != nil {
			sipfb.SparseLayerAddTaskScore(b, score)
		}
		layers[i] = sipfb.SparseLayerEnd(b)
	}
	sipfb.IndexStartSparseLayersVector(b, len(layers))
	for i := len(layers) - 1; i >= 0; i-- {
		b.PrependUOffsetT(layers[i])
	}
	sparseVec := b.EndVector(len(layers))

	bandHashes := make([]byte, 0, len(idx.BandHashes)*HashSize)
	for _, h := range idx.BandHashes {
		bandHashes = append(bandHashes, h[:]...)
	}
	bandVec := u8(bandHashes)

	pv := &idx.Provenance
	order, task := b.CreateString(pv.Order), b.CreateString(pv.Task)
	pmh := u8(pv.ProfileModelHash[:])
	sec := strs(pv.SecondaryTasks)
	sipfb.ProvenanceStart(b)
	sipfb.ProvenanceAddOrder(b, order)
	sipfb.ProvenanceAddTask(b, task)
	sipfb.ProvenanceAddPrompts(b, pv.Prompts)
	sipfb.ProvenanceAddTokens(b, pv.Tokens)
	sipfb.ProvenanceAddGenTokens(b, pv.GenTokens)
	sipfb.ProvenanceAddProfileModelHash(b, pmh)
	sipfb.ProvenanceAddSecondaryTasks(b, sec)
	sipfb.ProvenanceAddSeed(b, pv.Seed)
	prov := sipfb.ProvenanceEnd(b)

	var chatVec flatbuffers.UOffsetT
	if len(idx.ChatTemplates) > 0 {
		offs := make([]flatbuffers.UOffsetT, len(idx.ChatTemplates))
		for i, ct := range idx.ChatTemplates {
			name, tmpl := b.CreateString(ct.Name), b.CreateString(ct.Template)
			sipfb.ChatTemplateStart(b)
			sipfb.ChatTemplateAddName(b, name)
			sipfb.ChatTemplateAddTemplate(b, tmpl)
			offs[i] = sipfb.ChatTemplateEnd(b)
		}
		sipfb.IndexStartChatTemplatesVector(b, len(offs))
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		chatVec = b.EndVector(len(offs))
	}

	cj, tj, gj := u8(idx.ConfigJSON), u8(idx.TokenizerJSON), u8(idx.GenerationConfigJSON)
	src := u8(idx.SourceHash[:])
	conv := b.CreateString(idx.Converter)
	sipfb.IndexStart(b)
	sipfb.IndexAddConfig(b, cfg)
	sipfb.IndexAddConfigJson(b, cj)
	sipfb.IndexAddTokenizerJson(b, tj)
	sipfb.IndexAddGenerationConfigJson(b, gj)
	sipfb.IndexAddRecordDtype(b, sipfb.DType(idx.RecordDType))
	sipfb.IndexAddBandNeurons(b, uint32(idx.BandNeurons))
	sipfb.IndexAddRecordBytes(b, idx.RecordBytes)
	sipfb.IndexAddDenseTensors(b, denseVec)
	sipfb.IndexAddSparseLayers(b, sparseVec)
	sipfb.IndexAddBandHashes(b, bandVec)
	sipfb.IndexAddBaseFraction(b, idx.BaseFraction)
	sipfb.IndexAddProvenance(b, prov)
	sipfb.IndexAddSourceHash(b, src)
	sipfb.IndexAddConverter(b, conv)
	if idx.RanksPresent != idx.Config.IntermediateSize {
		sipfb.IndexAddRanksPresent(b, uint32(idx.RanksPresent))
	}
	if chatVec != 0 {
		sipfb.IndexAddChatTemplates(b, chatVec)
	}
	if routerVec != 0 {
		sipfb.IndexAddRouters(b, routerVec)
		sipfb.IndexAddRouterGroup(b, uint32(idx.RouterGroup))
	}
	if idx.TileGroup != 0 {
		sipfb.IndexAddTileGroup(b, uint32(idx.TileGroup))
	}
	root := sipfb.IndexEnd(b)
	b.FinishWithFileIdentifier(root, []byte("SIPX"))
	return b.FinishedBytes()
}

// decodeIndex turns FlatBuffers bytes into an Index. The generated accessors
// index the buffer without checks, so every vector length is compared against
// the buffer before a loop uses it, and any remaining out-of-range access
// (a corrupt offset) is recovered and reported as ErrIndex.
func decodeIndex(buf []byte) (idx *Index, err error) {
	const sec = "index"
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, formatErr(ErrIndex, sec, PreambleSize, "corrupt FlatBuffers data", fmt.Sprint(r))
		}
	}()
	if len(buf) < 8 || !flatbuffers.BufferHasIdentifier(buf, "SIPX") {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "missing SIPX file identifier", nil)
	}
	if root := flatbuffers.GetUOffsetT(buf); int(root) > len(buf)-4 {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "root offset out of range", root)
	}
	maxElems := func(n, size int) error {
		if n < 0 || n > len(buf)/size {
			return formatErr(ErrIndex, sec, PreambleSize, "vector length exceeds the index", n)
		}
		return nil
	}
	ix := sipfb.GetRootAsIndex(buf, 0)
	idx = &Index{}
	fc := ix.Config(nil)
	if fc == nil {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "index has no model config", nil)
	}
	c := &idx.Config
	c.Architecture = string(fc.Architecture())
	c.HiddenSize = int(fc.HiddenSize())
	c.IntermediateSize = int(fc.IntermediateSize())
	c.NumLayers = int(fc.NumLayers())
	c.NumHeads = int(fc.NumHeads())
	c.NumKVHeads = int(fc.NumKvHeads())
	c.HeadDim = int(fc.HeadDim())
	c.VocabSize = int(fc.VocabSize())
	c.MaxPositionEmbeddings = int(fc.MaxPositionEmbeddings())
	c.RMSNormEps = fc.RmsNormEps()
	c.RopeTheta = fc.RopeTheta()
	if rs := fc.RopeScaling(nil); rs != nil {
		c.RopeScaling = &RopeScaling{
			Type: string(rs.Type()), Factor: rs.Factor(), LowFreqFactor: rs.LowFreqFactor(),
			HighFreqFactor: rs.HighFreqFactor(), OriginalMaxPositionEmbeddings: rs.OriginalMaxPositionEmbeddings(),
		}
	}
	c.TieWordEmbeddings = fc.TieWordEmbeddings()
	c.AttentionBias = fc.AttentionBias()
	c.BOSTokenID = int(fc.BosTokenId())
	if err := maxElems(fc.EosTokenIdsLength(), 4); err != nil {
		return nil, err
	}
	for i := 0; i < fc.EosTokenIdsLength(); i++ {
		c.EOSTokenIDs = append(c.EOSTokenIDs, int(fc.EosTokenIds(i)))
	}

	idx.ConfigJSON = cloneBytes(ix.ConfigJsonBytes())
	idx.TokenizerJSON = cloneBytes(ix.TokenizerJsonBytes())
	idx.GenerationConfigJSON = cloneBytes(ix.GenerationConfigJsonBytes())
	idx.RecordDType = DType(ix.RecordDtype())
	idx.BandNeurons = int(ix.BandNeurons())
	idx.RecordBytes = ix.RecordBytes()
	idx.BaseFraction = ix.BaseFraction()
	idx.Converter = string(ix.Converter())
	idx.RanksPresent = int(ix.RanksPresent())
	if idx.RanksPresent == 0 {
		idx.RanksPresent = c.IntermediateSize
	}

	readTensors := func(n int, at func(*sipfb.Tensor, int) bool) ([]TensorInfo, error) {
		if err := maxElems(n, 4); err != nil {
			return nil, err
		}
		var ts []TensorInfo
		var ft sipfb.Tensor
		for i := 0; i < n; i++ {
			if !at(&ft, i) {
				return nil, formatErr(ErrIndex, sec, PreambleSize, "unreadable tensor entry", i)
			}
			t := TensorInfo{Name: string(ft.Name()), DType: DType(ft.Dtype()), Offset: ft.Offset(), Length: ft.Length()}
			if err := maxElems(ft.ShapeLength(), 8); err != nil {
				return nil, err
			}
			for j := 0; j < ft.ShapeLength(); j++ {
				d := ft.Shape(j)
				if d > math.MaxInt32 {
					return nil, formatErr(ErrShape, sec, PreambleSize, fmt.Sprintf("tensor %q: dimension too large", t.Name), d)
				}
				t.Shape = append(t.Shape, int(d))
			}
			if len(ft.Blake3Bytes()) != HashSize {
				return nil, formatErr(ErrIndex, sec, PreambleSize, fmt.Sprintf("tensor %q: hash is not 32 bytes", t.Name), len(ft.Blake3Bytes()))
			}
			copy(t.Hash[:], ft.Blake3Bytes())
			ts = append(ts, t)
		}
		return ts, nil
	}
	if idx.DenseTensors, err = readTensors(ix.DenseTensorsLength(), ix.DenseTensors); err != nil {
		return nil, err
	}
	if idx.Routers, err = readTensors(ix.RoutersLength(), ix.Routers); err != nil {
		return nil, err
	}
	idx.RouterGroup = int(ix.RouterGroup())
	idx.TileGroup = int(ix.TileGroup())

	n := ix.SparseLayersLength()
	if err := maxElems(n, 4); err != nil {
		return nil, err
	}
	var fl sipfb.SparseLayer
	for i := 0; i < n; i++ {
		if !ix.SparseLayers(&fl, i) {
			return nil, formatErr(ErrIndex, sec, PreambleSize, "unreadable sparse layer entry", i)
		}
		m := fl.PermLength()
		if err := maxElems(m, 4); err != nil {
			return nil, err
		}
		sl := SparseLayer{Layer: int(fl.Layer()), Perm: make([]uint32, m)}
		for j := range sl.Perm {
			sl.Perm[j] = fl.Perm(j)
		}
		if k := fl.TaskScoreLength(); k > 0 {
			if k != m {
				return nil, formatErr(ErrIndex, sec, PreambleSize, fmt.Sprintf("layer %d: %d task scores for %d ranks", sl.Layer, k, m), nil)
			}
			sl.TaskScore = make([]float32, k)
			for j := range sl.TaskScore {
				sl.TaskScore[j] = fl.TaskScore(j)
			}
		}
		if k := fl.BudgetLength(); k > 0 {
			sl.Budget = make([]float32, k)
			for j := range sl.Budget {
				sl.Budget[j] = fl.Budget(j)
			}
		}
		idx.SparseLayers = append(idx.SparseLayers, sl)
	}

	bh := ix.BandHashesBytes()
	if len(bh)%HashSize != 0 {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "band hash vector is not a multiple of 32 bytes", len(bh))
	}
	for i := 0; i < len(bh); i += HashSize {
		var h [HashSize]byte
		copy(h[:], bh[i:])
		idx.BandHashes = append(idx.BandHashes, h)
	}
	if sh := ix.SourceHashBytes(); len(sh) == HashSize {
		copy(idx.SourceHash[:], sh)
	} else {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "source hash is not 32 bytes", len(sh))
	}

	if p := ix.Provenance(nil); p != nil {
		pv := &idx.Provenance
		pv.Order, pv.Task = string(p.Order()), string(p.Task())
		pv.Prompts, pv.Tokens, pv.GenTokens, pv.Seed = p.Prompts(), p.Tokens(), p.GenTokens(), p.Seed()
		if h := p.ProfileModelHashBytes(); len(h) == HashSize {
			copy(pv.ProfileModelHash[:], h)
		}
		if err := maxElems(p.SecondaryTasksLength(), 4); err != nil {
			return nil, err
		}
		for i := 0; i < p.SecondaryTasksLength(); i++ {
			pv.SecondaryTasks = append(pv.SecondaryTasks, string(p.SecondaryTasks(i)))
		}
	}

	n = ix.ChatTemplatesLength()
	if n > MaxChatTemplates {
		return nil, formatErr(ErrIndex, sec, PreambleSize, "too many chat templates", n)
	}
	var fct sipfb.ChatTemplate
	for i := 0; i < n; i++ {
		if !ix.ChatTemplates(&fct, i) {
			return nil, formatErr(ErrIndex, sec, PreambleSize, "unreadable chat template entry", i)
		}
		idx.ChatTemplates = append(idx.ChatTemplates, ChatTemplate{Name: string(fct.Name()), Template: string(fct.Template())})
	}
	if err := CheckChatTemplates(idx.ChatTemplates); err != nil {
		return nil, formatErr(ErrIndex, sec, PreambleSize, err.Error(), nil)
	}
	return idx, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// float32Vector writes xs as a FlatBuffers vector of float (4-byte
// elements, aligned as a [float] field wants) and returns its offset; 0
// for a nil xs, whose field the caller leaves out.
func float32Vector(b *flatbuffers.Builder, xs []float32) flatbuffers.UOffsetT {
	if xs == nil {
		return 0
	}
	b.StartVector(4, len(xs), 4)
	for j := len(xs) - 1; j >= 0; j-- {
		b.PrependFloat32(xs[j])
	}
	return b.EndVector(len(xs))
}
