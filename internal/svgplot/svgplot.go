// Package svgplot draws the few charts ctxstore writes (replay's context and
// cost per call, stats' timelines, activity, tools and compactions) as SVG
// text, with the standard library only: a chart is a handful of lines,
// rectangles and labels, and SVG keeps the text of the labels searchable
// and the output small and exact.
//
// A [Figure] is one SVG document holding [Plot] panels stacked vertically.
// A Plot owns its axes (ranges, ticks, labels) and what is drawn in it:
// [Line] series, [Points] series, horizontal [Bars] and a [Heat] grid.
// Series with a name appear in the panel's legend, in order.
package svgplot

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Figure is an SVG document of Width x Height pixels; its panels share the
// height equally, top to bottom.
type Figure struct {
	Width, Height int
	Panels        []*Plot
}

// Plot is one panel: a title, two linear axes and the marks drawn in them.
type Plot struct {
	Title, XLabel, YLabel string
	// X and Y are the axis ranges; a range whose Min equals its Max is
	// taken from the data.
	X, Y Range
	// XTicks and YTicks are labelled positions; nil gives about five
	// evenly spaced numbers.
	XTicks, YTicks []Tick
	// Grid draws a light line at every tick.
	Grid   bool
	Lines  []Line
	Points []Points
	Bars   *Bars
	Heat   *Heat
}

// Range is an axis range.
type Range struct{ Min, Max float64 }

// Tick is a labelled position on an axis.
type Tick struct {
	Value float64
	Label string
}

// XY is a data point.
type XY struct{ X, Y float64 }

// Line is a polyline series.
type Line struct {
	Name   string
	Color  string // an SVG color, such as "#cc2222"
	Dashed bool
	XYs    []XY
}

// Points is a scatter series.
type Points struct {
	Name   string
	Color  string
	Square bool    // squares instead of circles
	Radius float64 // pixels; 0 means 3
	XYs    []XY
}

// Bars are horizontal bars, one per label, the first at the top; the x
// axis is the value.
type Bars struct {
	Color  string
	Labels []string
	Values []float64
}

// Heat is a grid of cells colored from white (0) to dark blue (Max): cell
// (r, c) spans [c, c+1) on the x axis and [r, r+1) on the y axis, so row 0
// is at the bottom. The plot's ticks label the rows and columns.
type Heat struct {
	Rows [][]float64
	Max  float64
}

const (
	fontSize   = 12
	charWidth  = 6.6 // average width of a character at fontSize, for margins
	titleH     = 26
	legendH    = 18
	bottomH    = 44
	rightW     = 20
	tickLength = 4
)

// WriteTo writes the figure as an SVG document.
func (f Figure) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	b := bufio.NewWriter(cw)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		f.Width, f.Height, f.Width, f.Height, fontSize)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", f.Width, f.Height)
	if n := len(f.Panels); n > 0 {
		h := float64(f.Height) / float64(n)
		for i, p := range f.Panels {
			p.draw(b, 0, float64(i)*h, float64(f.Width), h)
		}
	}
	b.WriteString("</svg>\n")
	err := b.Flush()
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// draw renders p into the box at (x0, y0) of size w x h.
func (p *Plot) draw(b *bufio.Writer, x0, y0, w, h float64) {
	xr, yr := p.ranges()
	xt, yt := p.XTicks, p.YTicks
	if xt == nil {
		xt = niceTicks(xr)
	}
	if yt == nil {
		yt = niceTicks(yr)
	}
	if p.Bars != nil {
		yt = nil
		for i, l := range p.Bars.Labels {
			yt = append(yt, Tick{Value: float64(len(p.Bars.Labels)-1-i) + 0.5, Label: l})
		}
	}
	labelW := 0
	for _, t := range yt {
		labelW = max(labelW, len([]rune(t.Label)))
	}
	left := x0 + float64(labelW)*charWidth + 2*tickLength + 8
	if p.YLabel != "" {
		left += fontSize + 12
	}
	right, bottom := x0+w-rightW, y0+h-bottomH
	legend := p.layoutLegend(left, right)
	top := y0 + titleH
	if len(legend) > 0 {
		top += float64(legend[len(legend)-1].row+1) * legendH
	}
	if right <= left || bottom <= top {
		return
	}
	sx := func(v float64) float64 { return left + (v-xr.Min)/(xr.Max-xr.Min)*(right-left) }
	sy := func(v float64) float64 { return bottom - (v-yr.Min)/(yr.Max-yr.Min)*(bottom-top) }

	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="%d" font-weight="bold">%s</text>`+"\n",
		x0+w/2, y0+17, fontSize+1, esc(p.Title))
	for _, e := range legend {
		x, y := e.x, y0+titleH+12+float64(e.row)*legendH
		dash := ""
		if e.dashed {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", x, y-4, x+22, y-4, e.color, dash)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+26, y, esc(e.name))
	}

	// Ticks, grid and their labels.
	for _, t := range xt {
		if t.Value < xr.Min || t.Value > xr.Max {
			continue
		}
		x := sx(t.Value)
		if p.Grid {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", x, top, x, bottom)
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", x, bottom, x, bottom+tickLength)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+tickLength+fontSize+1, esc(t.Label))
	}
	for _, t := range yt {
		if t.Value < yr.Min || t.Value > yr.Max {
			continue
		}
		y := sy(t.Value)
		if p.Grid {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y, right, y)
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left-tickLength, y, left, y)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-2*tickLength, y+fontSize/3.0, esc(t.Label))
	}
	if p.XLabel != "" {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, y0+h-6, esc(p.XLabel))
	}
	if p.YLabel != "" {
		cx, cy := x0+fontSize, (top+bottom)/2
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n", cx, cy, cx, cy, esc(p.YLabel))
	}

	// Marks, clipped to the plot area.
	fmt.Fprintf(b, `<svg x="%.1f" y="%.1f" width="%.1f" height="%.1f" viewBox="%.1f %.1f %.1f %.1f" overflow="hidden">`+"\n",
		left, top, right-left, bottom-top, left, top, right-left, bottom-top)
	if hm := p.Heat; hm != nil {
		for r, row := range hm.Rows {
			for c, v := range row {
				x1, x2 := sx(float64(c)), sx(float64(c+1))
				y1, y2 := sy(float64(r)), sy(float64(r+1))
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
					math.Min(x1, x2), math.Min(y1, y2), math.Abs(x2-x1), math.Abs(y2-y1), whiteToBlue(v, hm.Max), num(v))
			}
		}
	}
	if bs := p.Bars; bs != nil {
		n := len(bs.Values)
		for i, v := range bs.Values {
			row := float64(n - 1 - i)
			y1, y2 := sy(row+0.85), sy(row+0.15)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				sx(0), y1, sx(v)-sx(0), y2-y1, bs.Color, esc(bs.Labels[i]+": "+num(v)))
		}
	}
	for _, l := range p.Lines {
		if len(l.XYs) == 0 {
			continue
		}
		var pts strings.Builder
		for i, q := range l.XYs {
			if i > 0 {
				pts.WriteByte(' ')
			}
			fmt.Fprintf(&pts, "%.1f,%.1f", sx(q.X), sy(q.Y))
		}
		dash := ""
		if l.Dashed {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"/>`+"\n", l.Color, dash, pts.String())
	}
	for _, s := range p.Points {
		r := s.Radius
		if r == 0 {
			r = 3
		}
		for _, q := range s.XYs {
			if s.Square {
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", sx(q.X)-r, sy(q.Y)-r, 2*r, 2*r, s.Color)
			} else {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`+"\n", sx(q.X), sy(q.Y), r, s.Color)
			}
		}
	}
	b.WriteString("</svg>\n")
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="black"/>`+"\n", left, top, right-left, bottom-top)
}

type legendEntry struct {
	name, color string
	dashed      bool
	x           float64 // where the entry starts
	row         int     // its row, 0 the first
}

func (p *Plot) legend() []legendEntry {
	var out []legendEntry
	for _, l := range p.Lines {
		if l.Name != "" {
			out = append(out, legendEntry{name: l.Name, color: l.Color, dashed: l.Dashed})
		}
	}
	for _, s := range p.Points {
		if s.Name != "" {
			out = append(out, legendEntry{name: s.Name, color: s.Color})
		}
	}
	return out
}

// layoutLegend places the legend entries in rows from left, a new row
// when an entry would pass right.
func (p *Plot) layoutLegend(left, right float64) []legendEntry {
	es := p.legend()
	x, row := left, 0
	for i := range es {
		w := 26 + float64(len([]rune(es[i].name)))*charWidth + 16
		if x > left && x+w > right {
			x, row = left, row+1
		}
		es[i].x, es[i].row = x, row
		x += w
	}
	return es
}

// ranges returns the axis ranges: the ones set, else the data's (from 0
// for bars and heat maps), widened when empty.
func (p *Plot) ranges() (Range, Range) {
	xr, yr := p.X, p.Y
	if xr.Min == xr.Max || yr.Min == yr.Max {
		dx, dy := Range{math.Inf(1), math.Inf(-1)}, Range{math.Inf(1), math.Inf(-1)}
		add := func(q XY) {
			dx.Min, dx.Max = math.Min(dx.Min, q.X), math.Max(dx.Max, q.X)
			dy.Min, dy.Max = math.Min(dy.Min, q.Y), math.Max(dy.Max, q.Y)
		}
		for _, l := range p.Lines {
			for _, q := range l.XYs {
				add(q)
			}
		}
		for _, s := range p.Points {
			for _, q := range s.XYs {
				add(q)
			}
		}
		if bs := p.Bars; bs != nil {
			add(XY{0, 0})
			for i, v := range bs.Values {
				add(XY{v, float64(i + 1)})
			}
		}
		if hm := p.Heat; hm != nil {
			add(XY{0, 0})
			for r, row := range hm.Rows {
				add(XY{float64(len(row)), float64(r + 1)})
			}
		}
		if xr.Min == xr.Max {
			xr = dx
		}
		if yr.Min == yr.Max {
			yr = dy
		}
	}
	return widen(xr), widen(yr)
}

func widen(r Range) Range {
	switch {
	case math.IsInf(r.Min, 0) || math.IsInf(r.Max, 0):
		return Range{0, 1}
	case r.Min == r.Max:
		return Range{r.Min - 1, r.Max + 1}
	}
	return r
}

// niceTicks returns about five ticks within r, a round step apart (1, 2
// or 5 times a power of ten, the one nearest a fifth of the range).
func niceTicks(r Range) []Tick {
	raw := (r.Max - r.Min) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(mag*m/raw)) < math.Abs(math.Log(step/raw)) {
			step = mag * m
		}
	}
	var out []Tick
	for v := math.Ceil(r.Min/step) * step; v <= r.Max+step*1e-9; v += step {
		v := math.Round(v/step) * step
		out = append(out, Tick{Value: v, Label: num(v)})
	}
	return out
}

// num formats a value for a label: integers as they are, with k or M for
// thousands and millions when exact, other numbers with three
// significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6 && math.Mod(v, 1e5) == 0:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4 && math.Mod(v, 1e3) == 0:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// whiteToBlue is the heat color of v in [0, max]: white to #08306b.
func whiteToBlue(v, max float64) string {
	f := 0.0
	if max > 0 {
		f = math.Min(math.Max(v/max, 0), 1)
	}
	c := func(lo int) int { return int(math.Round(255 - f*float64(255-lo))) }
	return fmt.Sprintf("#%02x%02x%02x", c(0x08), c(0x30), c(0x6b))
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// esc escapes s for SVG text and attribute values.
func esc(s string) string { return escaper.Replace(s) }
