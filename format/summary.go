package format

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Summary writes a human-readable description of the pack: config, dtype,
// section sizes and the bytes a load of each of a few gammas maps.
func (p *Pack) Summary(w io.Writer) {
	idx, pre := p.Index, &p.Preamble
	c := &idx.Config
	fmt.Fprintf(w, "pack            %s\n", p.Path)
	fmt.Fprintf(w, "format          v%d.%d, converter %q\n", pre.Major, pre.Minor, idx.Converter)
	fmt.Fprintf(w, "architecture    %s\n", c.Architecture)
	fmt.Fprintf(w, "config          hidden %d, ffn %d, layers %d, heads %d/%d (head_dim %d), vocab %d, context %d\n",
		c.HiddenSize, c.IntermediateSize, c.NumLayers, c.NumHeads, c.NumKVHeads, c.HeadDim, c.VocabSize, c.MaxPositionEmbeddings)
	rope := fmt.Sprintf("theta %g", c.RopeTheta)
	if rs := c.RopeScaling; rs != nil {
		rope += fmt.Sprintf(", %s scaling (factor %g, low %g, high %g, original %d)", rs.Type, rs.Factor, rs.LowFreqFactor, rs.HighFreqFactor, rs.OriginalMaxPositionEmbeddings)
	}
	fmt.Fprintf(w, "rope            %s\n", rope)
	fmt.Fprintf(w, "norm eps        %g; tied embeddings %v; qkv bias %v\n", c.RMSNormEps, c.TieWordEmbeddings, c.AttentionBias)
	fmt.Fprintf(w, "tokens          bos %d, eos %v; tokenizer.json %d bytes\n", c.BOSTokenID, c.EOSTokenIDs, len(idx.TokenizerJSON))
	chatT := "none"
	if len(idx.ChatTemplates) > 0 {
		var names []string
		for _, t := range idx.ChatTemplates {
			names = append(names, fmt.Sprintf("%s (%d bytes)", t.Name, len(t.Template)))
		}
		chatT = strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "chat templates  %s\n", chatT)
	fmt.Fprintf(w, "record dtype    %s (%d bytes per neuron record)\n", idx.RecordDType, idx.RecordBytes)
	if n := p.DTypeName(); n != idx.RecordDType.String() {
		fmt.Fprintf(w, "converted as    %s\n", n)
	}
	var sparse, dense []string
	for _, sl := range idx.SparseLayers {
		sparse = append(sparse, fmt.Sprint(sl.Layer))
	}
	for l := 0; l < c.NumLayers; l++ {
		if _, ok := p.sparse[l]; !ok {
			dense = append(dense, fmt.Sprint(l))
		}
	}
	fmt.Fprintf(w, "sparse layers   [%s]; dense FFN layers [%s]\n", strings.Join(sparse, " "), strings.Join(dense, " "))
	pv := &idx.Provenance
	fmt.Fprintf(w, "rank order      %s", pv.Order)
	if pv.Task != "" {
		fmt.Fprintf(w, " (task %s, %d prompts, %d tokens, %d generated per prompt, base fraction %.2f)", pv.Task, pv.Prompts, pv.Tokens, pv.GenTokens, idx.BaseFraction)
	}
	fmt.Fprintln(w)
	if len(pv.SecondaryTasks) > 0 {
		fmt.Fprintf(w, "secondary       mean of normalised profiles of %v\n", pv.SecondaryTasks)
	}
	if pv.Order == "random" {
		fmt.Fprintf(w, "random seed     %d\n", pv.Seed)
	}
	if len(idx.SparseLayers) > 0 && idx.SparseLayers[0].TaskScore != nil {
		fracs := []float64{0.1, 0.3, 0.5, 0.7}
		fmt.Fprintf(w, "concentration   share of the task score (Σ|h|; ×‖down‖ for profile-output) held by the top 10/30/50/70 %% of neurons, per layer:\n")
		for _, sl := range idx.SparseLayers {
			s := make([]float64, len(sl.TaskScore))
			for i, v := range sl.TaskScore {
				s[i] = float64(v)
			}
			cc := Concentration(s, fracs)
			fmt.Fprintf(w, "  layer %-3d     %5.1f %%  %5.1f %%  %5.1f %%  %5.1f %%\n", sl.Layer, 100*cc[0], 100*cc[1], 100*cc[2], 100*cc[3])
		}
	}
	if p.HasBudgets() {
		fracs := []float64{0.3, 0.5, 0.7, 0.9}
		fmt.Fprintf(w, "layer budgets   neurons per sparse layer at a pack-wide γ, δ or φ of 0.3/0.5/0.7/0.9 (by the profile's sensitivity):\n")
		for si, sl := range idx.SparseLayers {
			fmt.Fprintf(w, "  layer %-3d    ", sl.Layer)
			for _, f := range fracs {
				fmt.Fprintf(w, " %6d", p.LayerCount(si, f))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "source hash     %x\n", idx.SourceHash)
	fmt.Fprintf(w, "index           %d bytes at %d\n", pre.IndexLen, pre.IndexOff)
	fmt.Fprintf(w, "dense section   %s at %d (%d tensors)\n", human(pre.DenseLen), pre.DenseOff, len(idx.DenseTensors))
	fmt.Fprintf(w, "FFN section     %s at %d: %d bands of %d neurons, %s each", human(pre.FFNLen), pre.FFNOff, pre.BandCount, pre.BandNeurons, human(pre.BandBytes))
	if idx.TileGroup > 0 {
		fmt.Fprintf(w, ", down rows tiled by groups of %d", idx.TileGroup)
	}
	fmt.Fprintln(w)
	if len(idx.Routers) > 0 {
		var n uint64
		for _, t := range idx.Routers {
			n += t.Length
		}
		fmt.Fprintf(w, "routers         rank %d over groups of %d ranks, %v, %s in all (sirun runs them by default)\n", idx.Routers[0].Shape[0], idx.RouterGroup, idx.Routers[0].DType, human(n))
	}
	fmt.Fprintf(w, "file            %s\n", human(pre.FileLen))
	if idx.RanksPresent < c.IntermediateSize && len(idx.SparseLayers) > 0 {
		fmt.Fprintf(w, "sliced          holds %d of %d ranks per sparse layer: loads γ ≤ %.3f\n", idx.RanksPresent, c.IntermediateSize, p.MaxGamma())
	}
	if p.FileSize < int64(pre.FileLen) {
		fmt.Fprintf(w, "cut short       the file is %d of %d bytes: whole bands for %d of %d ranks, loads γ ≤ %.3f only\n", p.FileSize, pre.FileLen, p.AvailableRanks(), c.IntermediateSize, p.MaxGamma())
	}
	fmt.Fprintf(w, "load bytes      ")
	for i, g := range []float64{0.25, 0.5, 0.7, 1.0} {
		if p.RanksFor(g) > p.AvailableRanks() {
			break
		}
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "γ=%.2f: %s", g, human(p.PrefixBytes(g)))
	}
	fmt.Fprintln(w)
}

// HumanBytes formats n in B or KiB…EiB with two decimals, as the commands
// print sizes.
func HumanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Concentration returns, for each fraction f, the share of the total of
// scores held by the top ⌊f·len⌋ entries.
func Concentration(scores []float64, fracs []float64) []float64 {
	s := append([]float64(nil), scores...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	var total float64
	for _, v := range s {
		total += v
	}
	out := make([]float64, len(fracs))
	for i, f := range fracs {
		k := int(f * float64(len(s)))
		var acc float64
		for _, v := range s[:k] {
			acc += v
		}
		if total > 0 {
			out[i] = acc / total
		}
	}
	return out
}
