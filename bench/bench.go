package bench

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/sipack/sipack/backend"
	"github.com/sipack/sipack/backend/cpu"
	"github.com/sipack/sipack/format"
	"github.com/sipack/sipack/kernels"
	"github.com/sipack/sipack/runner"
)

// Options controls Run.
type Options struct {
	Threads int // worker threads, ≥ 1
	Tokens  int // decode tokens timed per figure (the figure is 1 / the median step), ≥ 1
	Rounds  int // every decode figure is measured this many times, interleaved, ≥ 1
	Prefill int // prompt tokens of the prefill figure, ≥ 1
	// Depth is the prompt every decode figure is timed after (its tokens
	// vote, and the decode attends to them): 0 means 16 tokens; more
	// measures decode deep in a context, as llama-bench -d does.
	Depth int
	Quick bool // dense and γ 0.7 × φ 0.4 only
	// Select is the selecting figures' methods (none: MethodAuto). With
	// more than one, every sparse point is measured once per method in
	// each round, and each figure is also given against the first
	// method's of the same round (VsFirstSelect).
	Select []runner.Method
	// Load is how each pack is loaded: "mmap" (the default) and/or
	// "no-mmap" (read into the process's memory, sirun --no-mmap). With
	// both, every pack is measured both ways in the same rounds, as two
	// reports.
	Load   []string
	KVType backend.KVType // the KV cache's element type
	Log    io.Writer      // progress lines; nil: none
	// Device runs Ops (nil: the CPU). A GPU's kernels are timed by its
	// events (backend.KernelTimer).
	Device backend.Device
}

// decodeDepth is the prompt length the decode figures follow.
func (opt Options) decodeDepth() int {
	if opt.Depth > 0 {
		return opt.Depth
	}
	return 16
}

// ProbeBytes is the bandwidth probe's buffer: far larger than any L3 this
// has run on (32 MiB per CCD on the AMD EPYCs, 105 MiB on the Xeon), small
// enough to add little to the peak RSS the report gives (it is included).
const ProbeBytes = 256 << 20

// Run measures the FMA peak, then every pack: prefill once each, then the
// decode figures of all packs in rounds (see runPacks). It refuses options
// out of range before measuring anything.
func Run(paths []string, opt Options) ([]*Report, error) {
	switch {
	case len(paths) == 0:
		return nil, fmt.Errorf("no packs to measure")
	case opt.Threads < 1:
		return nil, fmt.Errorf("threads must be ≥ 1, got %d", opt.Threads)
	case opt.Rounds < 1 || opt.Tokens < 1:
		return nil, fmt.Errorf("rounds and tokens must be ≥ 1, got %d and %d", opt.Rounds, opt.Tokens)
	case opt.Prefill < 1:
		return nil, fmt.Errorf("prefill tokens must be ≥ 1, got %d", opt.Prefill)
	case opt.Depth < 0:
		return nil, fmt.Errorf("depth must be ≥ 0, got %d", opt.Depth)
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	fmt.Fprintf(opt.Log, "sirun bench: kernels %s, %d threads; measuring the FMA peak\n", kernels.Active().Name, opt.Threads)
	peak := MeasureFMAPeak(opt.Threads)
	pool := kernels.NewPool(opt.Threads)
	defer pool.Close()
	probe := NewBandwidthProbe(ProbeBytes, pool)
	return runPacks(opt, paths, pool, probe, peak)
}

// GridPoint is one decode figure of a pack at γ and φ: medians over rounds.
type GridPoint struct {
	Gamma         float64 `json:"gamma"`
	Phi           float64 `json:"phi"`
	TokS          float64 `json:"tok_s"`
	BytesPerToken uint64  `json:"bytes_per_token"`
	BoundTokS     float64 `json:"bound_tok_s"`
	BoundFraction float64 `json:"bound_fraction"`
	SpeedupDense  float64 `json:"speedup_vs_dense"`
	// SpeedupFirstDense is against the dense decode of the run's first
	// pack (e.g. q4_0 against bf16 with --dtypes bf16,q4_0).
	SpeedupFirstDense float64 `json:"speedup_vs_first_dense"`
	BandwidthGBs      float64 `json:"bandwidth_gbs"` // measured beside this figure
	// Select is the figure's method (empty where every loaded neuron is
	// computed); VsFirstSelect is its tok/s over the first method's at the
	// same γ and φ, the median of the rounds' ratios (only with several
	// methods, and 1 for the first).
	Select        string  `json:"select,omitempty"`
	VsFirstSelect float64 `json:"vs_first_select,omitempty"`
}

// Report is one pack's figures; its JSON is what `sirun bench --json` prints
// (one object per pack, per line).
type Report struct {
	Pack               string  `json:"pack"`
	Load               string  `json:"load"` // mmap or no-mmap
	DType              string  `json:"dtype"`
	Kernels            string  `json:"kernels"`
	KVCache            string  `json:"kv_cache"` // the KV cache's element type: f32 or f16
	Threads            int     `json:"threads"`
	BandwidthGBs       float64 `json:"bandwidth_gbs"` // the highest of this pack's probes
	DenseBandwidthGBs  float64 `json:"dense_bandwidth_gbs"`
	FMAPeakGFlops      float64 `json:"fma_peak_gflops"`
	DenseTokS          float64 `json:"dense_tok_s"`
	DenseBytesPerToken uint64  `json:"dense_bytes_per_token"`
	DenseBoundFraction float64 `json:"dense_bound_fraction"`
	PrefillTokens      int     `json:"prefill_tokens"`
	DecodeDepth        int     `json:"decode_depth"`       // the prompt tokens every decode figure follows
	PrefillTokS        float64 `json:"prefill_tok_s"`      // median of rounds, after an untimed prompt of the same length
	PrefillColdTokS    float64 `json:"prefill_cold_tok_s"` // that untimed prompt: the process's first
	PrefillGFlops      float64 `json:"prefill_gflops"`
	PrefillPeakFrac    float64 `json:"prefill_peak_fraction"`
	TTFTms             float64 `json:"ttft_ms"`
	PeakRSSBytes       uint64  `json:"peak_rss_bytes"`
	// HugePageFraction is the share of the loaded pack (γ = 1) mapped by
	// 2 MiB pages after the prefill (format.HugeMapped); absent where the
	// OS does not say.
	HugePageFraction *float64    `json:"huge_page_fraction,omitempty"`
	Rounds           int         `json:"rounds"`
	FirstPack        string      `json:"first_pack"`
	FirstLoad        string      `json:"first_load"`
	DenseVsFirst     float64     `json:"dense_vs_first_dense"`
	Grid             []GridPoint `json:"grid"`
}

// benchFigure is one decode figure of a pack's grid (the dense one first)
// and what each round measured of it.
type benchFigure struct {
	gamma, phi float64
	sel        *runner.Selection
	method     string       // sel's method ("" without sel)
	firstSel   *benchFigure // the first method's figure at this γ, φ (several methods)
	tokS, bw   []float64    // per round: tok/s, and the bandwidth beside it
	bytes      uint64
}

// packBench is one pack's report in the making.
type packBench struct {
	path    string
	noMmap  bool
	r       *Report
	figures []*benchFigure
}

func openModel(path string, gamma float64, noMmap bool, kv backend.KVType, dev backend.Device) (*format.Pack, *runner.Model, error) {
	p, err := format.Open(path, format.OpenOptions{Gamma: gamma, NoMmap: noMmap})
	if err != nil {
		return nil, nil, err
	}
	if dev == nil {
		dev = cpu.New()
	}
	m, err := runner.Load(p, dev)
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	m.KVType = kv
	return p, m, nil
}

// runPacks measures every pack: prefill once each, then the decode
// figures of all packs in rounds. Each figure's bound is the read bandwidth
// measured right before and right after it (the higher of the two: the
// stricter bound). On a shared VM the bandwidth jumps between regimes (50
// and 90 GB/s were both seen within a minute here), so ratios of two
// figures, within a pack or across packs, are taken within a round, and
// every reported value is the median over rounds.
func runPacks(opt Options, paths []string, pool *kernels.Pool, probe *BandwidthProbe, peak float64) ([]*Report, error) {
	gammas, phis := []float64{0.5, 0.7, 1.0}, []float64{0.2, 0.3, 0.4, 0.6}
	prefill := opt.Prefill
	if opt.Quick {
		gammas, phis = []float64{0.7}, []float64{0.4}
	}
	loads := opt.Load
	if len(loads) == 0 {
		loads = []string{"mmap"}
	}
	var benches []*packBench
	for _, pl := range packLoads(paths, loads) {
		path := pl.path
		pb := &packBench{path: path, noMmap: pl.load == "no-mmap", r: &Report{Pack: path, Load: pl.load, Kernels: kernels.Active().Name, KVCache: opt.KVType.String(), Threads: pool.Workers(), FMAPeakGFlops: peak / 1e9, Rounds: opt.Rounds, DecodeDepth: opt.decodeDepth()}}
		p, m, err := openModel(path, 1, pb.noMmap, opt.KVType, nil)
		if err != nil {
			return nil, err
		}
		if need, ctx := opt.decodeDepth()+opt.Tokens+2, m.Config.MaxPositionEmbeddings; need > ctx {
			p.Close()
			return nil, fmt.Errorf("%s: a %d-token prompt and %d decode tokens need a context of %d, the model has %d", path, opt.decodeDepth(), opt.Tokens, need, ctx)
		}
		pb.r.DType = p.DTypeName()
		base := 0.3
		if b := float64(p.Index.BaseFraction); b > 0 {
			base = b
		}
		// Prefill at γ = 1, as llama-bench times its pp figure: after an
		// untimed prompt of the same length (which also maps every page of
		// the pack and sizes the buffers), the median of rounds prompts. The
		// untimed one is kept as the cold figure, a fresh process's first
		// prompt.
		fmt.Fprintf(opt.Log, "sirun bench: %s: prefill of %d tokens\n", filepath.Base(path), prefill)
		pf, err := Decode(m, pool, nil, prefill, 1, 2)
		var warm []float64
		for i := 0; err == nil && i < opt.Rounds; i++ {
			var w *DecodeResult
			if w, err = Decode(m, pool, nil, prefill, 1, uint64(3+i)); err == nil {
				warm = append(warm, w.PrefillTokS)
			}
		}
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r := pb.r
		tokS := median(warm)
		r.PrefillTokens, r.PrefillTokS, r.TTFTms = prefill, tokS, 1000*float64(prefill)/tokS
		r.PrefillColdTokS = pf.PrefillTokS
		// 2 FLOPs per weight per token for every layer's matrices, and the
		// output matrix once: a prompt's logits are its last token's.
		out := m.OutputParams()
		r.PrefillGFlops = 2 * (m.MatrixParams() - out + out/float64(prefill)) * tokS / 1e9
		r.PrefillPeakFrac = r.PrefillGFlops * 1e9 / peak
		if huge, ok := p.HugeMapped(); ok && len(p.Bytes()) > 0 {
			frac := float64(huge) / float64(len(p.Bytes()))
			r.HugePageFraction = &frac
			if frac < 0.5 && len(p.Bytes()) >= 64<<20 && !pb.noMmap {
				fmt.Fprintf(opt.Log, "sirun bench: %s: only %.0f %% of the mapped pack lies in 2 MiB pages: the page cache holds the file in small folios "+
					"(an older sipack wrote it, or it was copied in small writes), and its decode reads slower than a pack sipack has just written "+
					"(1.6× with one thread, measured here); drop it from the cache (dd if=%s iflag=nocache count=0) and the next load reads it "+
					"back in 2 MiB folios, or run make recache\n", filepath.Base(path), 100*frac, path)
			}
		}
		p.Close()
		pb.figures = []*benchFigure{{gamma: 1, phi: 1}}
		methods := opt.Select
		if len(methods) == 0 {
			methods = []runner.Method{runner.MethodAuto}
		}
		for _, g := range gammas {
			for _, phi := range phis {
				if phi > g+1e-9 || phi < base-1e-6 {
					continue
				}
				if phi >= g-1e-9 { // every loaded neuron: no selection
					pb.figures = append(pb.figures, &benchFigure{gamma: g, phi: phi})
					continue
				}
				var first *benchFigure
				for _, method := range methods {
					f := &benchFigure{gamma: g, phi: phi, sel: (&runner.Selection{Phi: phi, Alpha: 0.2, Base: base, Compact: true, Method: method}).For(m)}
					f.method = f.sel.Method.String() // auto: named by what it runs on this pack
					if n := m.Config.IntermediateSize; f.sel.Validate(n, format.Count(g, n)) != nil {
						continue
					}
					if first == nil {
						first = f
					}
					if len(methods) > 1 {
						f.firstSel = first
					}
					pb.figures = append(pb.figures, f)
				}
			}
		}
		benches = append(benches, pb)
	}
	for round := 0; round < opt.Rounds; round++ {
		for _, pb := range benches {
			if err := pb.measureRound(opt, pool, probe, round); err != nil {
				return nil, err
			}
		}
	}
	var reports []*Report
	for _, pb := range benches {
		pb.finish(benches[0])
		reports = append(reports, pb.r)
	}
	return reports, nil
}

// packLoad is one pack measured one way (Options.Load).
type packLoad struct{ path, load string }

// packLoads is every pack in every load mode, a pack's modes side by side.
func packLoads(paths, loads []string) []packLoad {
	var pl []packLoad
	for _, path := range paths {
		for _, l := range loads {
			pl = append(pl, packLoad{path, l})
		}
	}
	return pl
}

// measureRound measures every decode figure of the pack once.
func (pb *packBench) measureRound(opt Options, pool *kernels.Pool, probe *BandwidthProbe, round int) error {
	var p *format.Pack
	var m *runner.Model
	defer func() {
		if p != nil {
			p.Close()
		}
	}()
	for i, f := range pb.figures {
		if i == 0 || f.gamma != pb.figures[i-1].gamma {
			if p != nil {
				p.Close()
			}
			var err error
			if p, m, err = openModel(pb.path, f.gamma, pb.noMmap, opt.KVType, nil); err != nil {
				return err
			}
		}
		name := "dense decode"
		if i > 0 {
			name = fmt.Sprintf("γ %.1f φ %.1f", f.gamma, f.phi)
		}
		if f.method != "" && len(opt.Select) > 1 {
			name += ", " + f.method
		}
		if len(opt.Load) > 1 {
			name += ", " + pb.r.Load
		}
		fmt.Fprintf(opt.Log, "sirun bench: %s: %s (round %d of %d)\n", filepath.Base(pb.path), name, round+1, opt.Rounds)
		before := probe.Measure(3)
		res, err := Decode(m, pool, f.sel, opt.decodeDepth(), opt.Tokens, uint64(1+round))
		if err != nil {
			return fmt.Errorf("%s: %w", pb.path, err)
		}
		bw := max(before, probe.Measure(3))
		f.tokS, f.bw, f.bytes = append(f.tokS, res.TokS), append(f.bw, bw), res.BytesPerToken
		pb.r.BandwidthGBs = max(pb.r.BandwidthGBs, bw/1e9)
	}
	return nil
}

// finish turns the rounds into the report; ratios to first's dense decode
// (the first pack of the run) are taken within each round.
func (pb *packBench) finish(first *packBench) {
	r, dense := pb.r, pb.figures[0]
	fraction := func(f *benchFigure) float64 {
		var v []float64
		for i := range f.tokS {
			v = append(v, f.tokS[i]*float64(f.bytes)/f.bw[i])
		}
		return median(v)
	}
	ratio := func(f, to *benchFigure) float64 {
		var v []float64
		for i := range f.tokS {
			v = append(v, f.tokS[i]/to.tokS[i])
		}
		return median(v)
	}
	r.DenseTokS, r.DenseBytesPerToken, r.DenseBandwidthGBs = median(dense.tokS), dense.bytes, median(dense.bw)/1e9
	r.DenseBoundFraction = fraction(dense)
	r.FirstPack, r.FirstLoad, r.DenseVsFirst = first.path, first.r.Load, ratio(dense, first.figures[0])
	for _, f := range pb.figures[1:] {
		bw := median(f.bw)
		g := GridPoint{Gamma: f.gamma, Phi: f.phi, TokS: median(f.tokS), BytesPerToken: f.bytes,
			BoundTokS: bw / float64(f.bytes), BoundFraction: fraction(f), SpeedupDense: ratio(f, dense),
			SpeedupFirstDense: ratio(f, first.figures[0]), BandwidthGBs: bw / 1e9, Select: f.method}
		if f.firstSel != nil {
			g.VsFirstSelect = ratio(f, f.firstSel)
		}
		r.Grid = append(r.Grid, g)
	}
	r.PeakRSSBytes = PeakRSS()
}

// median of a non-empty list (the mean of the middle two for an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Markdown writes the report as a table with a header and a prefill line.
func (r *Report) Markdown(w io.Writer) {
	threads := fmt.Sprintf("%d threads", r.Threads)
	if r.Threads == 1 {
		threads = "1 thread"
	}
	load := ""
	if r.Load == "no-mmap" {
		load = ", read into memory (--no-mmap)"
	}
	fmt.Fprintf(w, "\n### %s (%s, kernels %s, %s KV cache, %s%s)\n\n", filepath.Base(r.Pack), r.DType, r.Kernels, r.KVCache, threads, load)
	fmt.Fprintf(w, "decode timed after a %d-token prompt; read bandwidth measured before and after every decode figure, up to %.2f GB/s; medians of %d interleaved rounds; FMA peak %.1f GFLOP/s; peak RSS %s (with the %d MiB probe buffer)%s\n\n", r.DecodeDepth, r.BandwidthGBs, r.Rounds, r.FMAPeakGFlops, humanBytes(r.PeakRSSBytes), ProbeBytes>>20, hugeNote(r))
	// Against the first pack's dense decode too, when this is another pack.
	cross := r.FirstPack != r.Pack || r.FirstLoad != r.Load
	head, rule, denseCross := "", "", ""
	if cross {
		firstName := filepath.Base(r.FirstPack)
		if r.FirstLoad == "no-mmap" {
			firstName += " (--no-mmap)"
		}
		head, rule = fmt.Sprintf(" vs %s dense |", firstName), "---:|"
		denseCross = fmt.Sprintf(" %.2f× |", r.DenseVsFirst)
	}
	// Several methods: each figure's method, and its speed against the
	// first method's at the same γ and φ.
	var firstSel string
	for _, g := range r.Grid {
		if g.VsFirstSelect > 0 && firstSel == "" {
			firstSel = g.Select
		}
	}
	if firstSel != "" {
		head, rule = head+fmt.Sprintf(" vs %s |", firstSel), rule+"---:|"
	}
	fmt.Fprintf(w, "| run | γ | φ | tok/s | MB read / token | bandwidth GB/s | bound tok/s | of bound | vs dense |%s\n|---|---:|---:|---:|---:|---:|---:|---:|---:|%s\n", head, rule)
	if firstSel != "" {
		denseCross += " |"
	}
	fmt.Fprintf(w, "| dense decode | 1.0 | 1.0 | %.2f | %.0f | %.1f | %.2f | %.0f %% | 1.00× |%s\n", r.DenseTokS, float64(r.DenseBytesPerToken)/1e6, r.DenseBandwidthGBs, r.DenseBandwidthGBs*1e9/float64(r.DenseBytesPerToken), 100*r.DenseBoundFraction, denseCross)
	for _, g := range r.Grid {
		c, run := "", "decode"
		if cross {
			c = fmt.Sprintf(" %.2f× |", g.SpeedupFirstDense)
		}
		if firstSel != "" {
			if g.VsFirstSelect > 0 {
				run += ", " + g.Select
				c += fmt.Sprintf(" %.3f× |", g.VsFirstSelect)
			} else {
				c += " |"
			}
		} else if g.Select != "" && g.Select != "paper" {
			run += ", " + g.Select // e.g. what --select auto ran on a routed pack
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.2f | %.0f | %.1f | %.2f | %.0f %% | %.2f× |%s\n", run, g.Gamma, g.Phi, g.TokS, float64(g.BytesPerToken)/1e6, g.BandwidthGBs, g.BoundTokS, 100*g.BoundFraction, g.SpeedupDense, c)
	}
	fmt.Fprintf(w, "\nprefill %d tokens: %.1f tok/s (%.1f GFLOP/s, %.0f %% of FMA peak), time to first token %.0f ms; the process's first prompt (cold) %.1f tok/s\n", r.PrefillTokens, r.PrefillTokS, r.PrefillGFlops, 100*r.PrefillPeakFrac, r.TTFTms, r.PrefillColdTokS)
}

// humanBytes is format.HumanBytes, as the commands print sizes.
func humanBytes(n uint64) string { return format.HumanBytes(n) }

// Ops prints, for every pack, where a decode step's time goes: each
// operation's milliseconds per token and share of the step, dense (γ 1)
// and at γ 0.7 φ 0.4, over opt.Tokens steps after opt.Depth's prompt.
func Ops(paths []string, opt Options, w io.Writer) error {
	if opt.Threads < 1 || opt.Tokens < 1 {
		return fmt.Errorf("threads and tokens must be ≥ 1, got %d and %d", opt.Threads, opt.Tokens)
	}
	if opt.Depth < 0 {
		return fmt.Errorf("depth must be ≥ 0, got %d", opt.Depth)
	}
	pool := kernels.NewPool(opt.Threads)
	defer pool.Close()
	for _, path := range paths {
		for _, f := range []struct{ gamma, phi float64 }{{1, 1}, {0.7, 0.4}} {
			p, m, err := openModel(path, f.gamma, len(opt.Load) > 0 && opt.Load[0] == "no-mmap", opt.KVType, opt.Device)
			if err != nil {
				return err
			}
			var sel *runner.Selection
			if f.phi < f.gamma {
				method := runner.MethodAuto
				if len(opt.Select) > 0 {
					method = opt.Select[0] // --ops: the first method given
				}
				sel = (&runner.Selection{Phi: f.phi, Alpha: 0.2, Base: float64(p.Index.BaseFraction), Compact: true, Method: method}).For(m)
			}
			b, err := DecodeOps(m, pool, sel, opt.decodeDepth(), opt.Tokens)
			p.Close()
			if err != nil {
				return err
			}
			if b.Kernels != nil {
				writeKernels(w, fmt.Sprintf("%s, γ %.1f φ %.1f, %s", filepath.Base(path), f.gamma, f.phi, m.Dev.Name()), opt.decodeDepth(), b)
				continue
			}
			fmt.Fprintf(w, "\n%s, γ %.1f φ %.1f, %d threads, kernels %s, after a %d-token prompt: %.2f ms a step (%.2f tok/s)\n\n| operation | ms/token | share |\n|---|---:|---:|\n",
				filepath.Base(path), f.gamma, f.phi, opt.Threads, kernels.Active().Name, opt.decodeDepth(), ms(b.Step), 1/b.Step.Seconds())
			names := make([]string, 0, len(b.Ops))
			var sum time.Duration
			for op, d := range b.Ops {
				names = append(names, op)
				sum += d
			}
			slices.SortFunc(names, func(a, c string) int { return int(b.Ops[c] - b.Ops[a]) })
			for _, op := range names {
				fmt.Fprintf(w, "| %s | %.3f | %.1f %% |\n", op, ms(b.Ops[op]), 100*b.Ops[op].Seconds()/b.Step.Seconds())
			}
			fmt.Fprintf(w, "| outside the operations | %.3f | %.1f %% |\n", ms(b.Step-sum), 100*(b.Step-sum).Seconds()/b.Step.Seconds())
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeKernels prints a GPU step's kernels: launches, µs and the GB/s of
// the bytes they read (where the kernel counts them), a token each, by
// time; the steps' wall time beside their sum.
func writeKernels(w io.Writer, title string, depth int, b *OpBreakdown) {
	fmt.Fprintf(w, "\n%s, kernels timed one by one by CUDA events, after a %d-token prompt: %.2f ms a step (%.2f tok/s)\n\n| kernel | launches/token | µs/token | GB/s | share |\n|---|---:|---:|---:|---:|\n",
		title, depth, ms(b.Step), 1/b.Step.Seconds())
	names := make([]string, 0, len(b.Kernels))
	var sum time.Duration
	for k, t := range b.Kernels {
		names = append(names, k)
		sum += t.Time
	}
	slices.SortFunc(names, func(a, c string) int { return cmp.Compare(b.Kernels[c].Time, b.Kernels[a].Time) })
	for _, k := range names {
		t := b.Kernels[k]
		gbs := "–"
		if t.Bytes > 0 && t.Time > 0 {
			gbs = fmt.Sprintf("%.1f", float64(t.Bytes)/t.Time.Seconds()/1e9)
		}
		fmt.Fprintf(w, "| %s | %d | %.1f | %s | %.1f %% |\n", k, t.Launches, float64(t.Time.Nanoseconds())/1e3, gbs, 100*t.Time.Seconds()/b.Step.Seconds())
	}
	fmt.Fprintf(w, "| outside the kernels (launching, waits, the host) | | %.1f | | %.1f %% |\n",
		float64((b.Step-sum).Nanoseconds())/1e3, 100*(b.Step-sum).Seconds()/b.Step.Seconds())
}

// hugeNote is the report line's clause on how much of the pack 2 MiB pages
// map, where the OS said.
func hugeNote(r *Report) string {
	if r.HugePageFraction == nil {
		return ""
	}
	return fmt.Sprintf("; %.0f %% of the pack in 2 MiB pages", 100**r.HugePageFraction)
}
