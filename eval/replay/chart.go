package replay

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/ctxstore/ctxstore/internal/svgplot"
)

// palette gives each strategy a distinct, stable color.
var palette = []string{
	"#222222", // black
	"#e69f00", // orange
	"#8844aa", // purple
	"#56b4e9", // sky blue
	"#009e73", // green
	"#cc2222", // red
	"#0044aa", // dark blue
	"#999999", // grey
}

// WriteChart draws a report as an SVG image: context tokens per call (top)
// and cumulative effective cost per call (bottom), one line per strategy
// (every other one dashed, so that lines on top of each other stay
// visible).
func WriteChart(w io.Writer, rep *Report) error {
	top := &svgplot.Plot{
		Title:  fmt.Sprintf("%s: context per call", filepath.Base(rep.Session)),
		XLabel: "call", YLabel: "context tokens", Grid: true,
	}
	bottom := &svgplot.Plot{
		Title:  fmt.Sprintf("cumulative effective cost under the %s cache model (base-input tokens: written x write price + cached x 0.1 + uncached)", rep.CacheModel),
		XLabel: "call", YLabel: "cost", Grid: true,
	}
	for i, r := range rep.Results {
		ctx := svgplot.Line{Name: r.Strategy, Color: palette[i%len(palette)], Dashed: i%2 == 1}
		cost := ctx
		ctx.XYs = make([]svgplot.XY, len(r.Calls))
		cost.XYs = make([]svgplot.XY, len(r.Calls))
		for j, c := range r.Calls {
			ctx.XYs[j] = svgplot.XY{X: float64(c.N), Y: float64(c.Context)}
			cost.XYs[j] = svgplot.XY{X: float64(c.N), Y: c.CumCost}
		}
		top.Lines = append(top.Lines, ctx)
		bottom.Lines = append(bottom.Lines, cost)
	}
	for _, p := range []*svgplot.Plot{top, bottom} {
		p.Y.Min, p.Y.Max = 0, maxY(p.Lines)*1.02
	}
	if _, err := (svgplot.Figure{Width: 1130, Height: 1200, Panels: []*svgplot.Plot{top, bottom}}).WriteTo(w); err != nil {
		return fmt.Errorf("replay chart: %w", err)
	}
	return nil
}

// maxY is the largest y of the lines (0 when there is none).
func maxY(ls []svgplot.Line) float64 {
	m := 0.0
	for _, l := range ls {
		for _, q := range l.XYs {
			m = max(m, q.Y)
		}
	}
	return m
}
