package plots

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BenchPoint is one decode figure.
type BenchPoint struct {
	Gamma, Phi, TokS float64
	Bytes            uint64
}

// Series is one pack's grid; Bound is the measured bandwidth in bytes/s.
type Series struct {
	Name   string
	Bound  float64
	Points []BenchPoint
}

// BenchTokS draws decode tok/s against φ, one line per (pack, γ), with the
// bandwidth bound (bandwidth / bytes per token) dashed.
func BenchTokS(path string, series []Series) error {
	p := plot.New()
	p.Title.Text = "decode tok/s against φ (dashed: bandwidth bound)"
	p.X.Label.Text = "φ (fraction of FFN neurons computed)"
	p.Y.Label.Text = "tokens / s"
	p.Add(plotter.NewGrid())
	i := 0
	for _, s := range series {
		byGamma := map[float64][]BenchPoint{}
		var gammas []float64
		for _, pt := range s.Points {
			if _, ok := byGamma[pt.Gamma]; !ok {
				gammas = append(gammas, pt.Gamma)
			}
			byGamma[pt.Gamma] = append(byGamma[pt.Gamma], pt)
		}
		for _, g := range gammas {
			var xy, bound plotter.XYs
			for _, pt := range byGamma[g] {
				xy = append(xy, plotter.XY{X: pt.Phi, Y: pt.TokS})
				bound = append(bound, plotter.XY{X: pt.Phi, Y: s.Bound / float64(pt.Bytes)})
			}
			col := palette[i%len(palette)]
			i++
			l, sc, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, sc.Color, sc.Shape = col, col, draw.CircleGlyph{}
			b, err := plotter.NewLine(bound)
			if err != nil {
				return err
			}
			b.Color, b.Dashes = col, []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l, sc, b)
			p.Legend.Add(fmt.Sprintf("%s γ=%.1f", s.Name, g), l, sc)
		}
	}
	p.Legend.Top = true
	w, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	return writeTo(path, w)
}
