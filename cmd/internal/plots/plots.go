// Package plots draws the PNG figures of the command-line tools with gonum/plot.
package plots

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/sipack/sipack/profile"
)

var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
}

// cumulative returns the cumulative share of activation mass against rank fraction.
func cumulative(scores []float64) plotter.XYs {
	s := append([]float64(nil), scores...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	var total float64
	for _, v := range s {
		total += v
	}
	step := max(1, len(s)/200)
	pts := plotter.XYs{{X: 0, Y: 0}}
	var acc float64
	for i, v := range s {
		acc += v
		if (i+1)%step == 0 || i == len(s)-1 {
			pts = append(pts, plotter.XY{X: float64(i+1) / float64(len(s)), Y: acc / total})
		}
	}
	return pts
}

// ProfileConcentration draws, per layer, cumulative |activation| mass against
// rank fraction, one line per profile, in a grid of panels; writes a PNG.
func ProfileConcentration(path string, profiles []*profile.Profile, names []string) error {
	L := profiles[0].Layers
	cols := min(L, 4)
	rows := (L + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
		for c := range plots[r] {
			p := plot.New()
			l := r*cols + c
			if l >= L {
				plots[r][c] = p
				p.HideAxes()
				continue
			}
			p.Title.Text = fmt.Sprintf("layer %d", l)
			p.X.Label.Text = "rank fraction"
			p.Y.Label.Text = "share of Σ|h|"
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
			p.Add(plotter.NewGrid())
			for i, prof := range profiles {
				line, err := plotter.NewLine(cumulative(prof.Scores()[l]))
				if err != nil {
					return err
				}
				line.Color = palette[i%len(palette)]
				line.Width = vg.Points(1.5)
				p.Add(line)
				if l == 0 {
					p.Legend.Add(names[i], line)
				}
			}
			diag, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
			diag.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			diag.Color = color.Gray{150}
			p.Add(diag)
			p.Legend.Top, p.Legend.Left = false, false
			plots[r][c] = p
		}
	}
	img := vgimg.New(vg.Length(cols)*3*vg.Inch, vg.Length(rows)*2.6*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for c := range plots[r] {
			plots[r][c].Draw(canvases[r][c])
		}
	}
	return savePNG(path, img)
}
