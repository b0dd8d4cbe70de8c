package replay

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// palette gives each strategy a distinct, stable color.
var palette = []color.RGBA{
	{0x22, 0x22, 0x22, 0xff}, // black
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x88, 0x44, 0xaa, 0xff}, // purple
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	{0x00, 0x9e, 0x73, 0xff}, // green
	{0xcc, 0x22, 0x22, 0xff}, // red
	{0x00, 0x44, 0xaa, 0xff}, // dark blue
	{0x99, 0x99, 0x99, 0xff}, // grey
}

// WriteChart draws a report as a PNG: context tokens per call (top) and
// cumulative effective cost per call (bottom), one line per strategy.
func WriteChart(w io.Writer, rep *Report) error {
	top := plot.New()
	top.Title.Text = fmt.Sprintf("%s: context per call", filepath.Base(rep.Session))
	top.X.Label.Text = "call"
	top.Y.Label.Text = "context tokens"
	bottom := plot.New()
	bottom.Title.Text = fmt.Sprintf("cumulative effective cost under the %s cache model (base-input tokens: written x write price + cached x 0.1 + uncached)", rep.CacheModel)
	bottom.X.Label.Text = "call"
	bottom.Y.Label.Text = "cost"
	for _, p := range []*plot.Plot{top, bottom} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = true
	}
	for i, r := range rep.Results {
		ctxPts := make(plotter.XYs, len(r.Calls))
		costPts := make(plotter.XYs, len(r.Calls))
		for j, c := range r.Calls {
			ctxPts[j] = plotter.XY{X: float64(c.N), Y: float64(c.Context)}
			costPts[j] = plotter.XY{X: float64(c.N), Y: c.CumCost}
		}
		col := palette[i%len(palette)]
		for _, pair := range []struct {
			p   *plot.Plot
			pts plotter.XYs
		}{{top, ctxPts}, {bottom, costPts}} {
			l, err := plotter.NewLine(pair.pts)
			if err != nil {
				return fmt.Errorf("replay chart: %w", err)
			}
			l.Color = col
			l.Width = vg.Points(1.2)
			if i%2 == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			pair.p.Add(l)
			pair.p.Legend.Add(r.Strategy, l)
		}
	}
	const width, height = 30 * vg.Centimeter, 32 * vg.Centimeter
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3, PadY: vg.Millimeter * 6}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	png := vgimg.PngCanvas{Canvas: img}
	if _, err := png.WriteTo(w); err != nil {
		return fmt.Errorf("replay chart: %w", err)
	}
	return nil
}
