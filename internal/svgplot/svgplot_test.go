package svgplot

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// elements parses an SVG document and counts its elements by name; a
// document that is not well-formed XML fails t.
func elements(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			n[se.Name.Local]++
		}
	}
}

func TestFigure(t *testing.T) {
	top := &Plot{Title: `context <per> call & "cost"`, XLabel: "call", YLabel: "tokens", Grid: true,
		Lines: []Line{
			{Name: "naive", Color: "#222222", XYs: []XY{{1, 100}, {2, 250}, {3, 400}}},
			{Name: "ctxstore", Color: "#e69f00", Dashed: true, XYs: []XY{{1, 90}, {2, 120}, {3, 130}}},
		}}
	bottom := &Plot{Title: "points", Points: []Points{{Name: "sessions", Color: "black", XYs: []XY{{0.5, 1}, {2, 3}}}},
		X: Range{0, 3}, Y: Range{0, 4}}
	bars := &Plot{Title: "bars", Bars: &Bars{Color: "green", Labels: []string{"Read", "Bash"}, Values: []float64{30, 12}}}
	heat := &Plot{Title: "heat", Heat: &Heat{Rows: [][]float64{{0, 1, 2}, {3, 4, 5}}, Max: 5},
		YTicks: []Tick{{0.5, "Sun"}, {1.5, "Mon"}}}
	var buf bytes.Buffer
	n, err := Figure{Width: 800, Height: 1200, Panels: []*Plot{top, bottom, bars, heat}}.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v; wrote %d bytes", n, err, buf.Len())
	}
	doc := buf.String()
	got := elements(t, buf.Bytes())
	if got["polyline"] != 2 || got["circle"] != 2 {
		t.Errorf("polylines %d, circles %d; want 2 and 2", got["polyline"], got["circle"])
	}
	// 2 bars, 6 heat cells, the background, 4 frames.
	if got["rect"] != 2+6+1+4 {
		t.Errorf("%d rects, want 13", got["rect"])
	}
	for _, want := range []string{
		"context &lt;per&gt; call &amp; &quot;cost&quot;", // the title, escaped
		">naive</text>", ">ctxstore</text>", ">sessions</text>", // legends
		`stroke-dasharray="6 3"`, ">Read</text>", ">Bash</text>", ">Mon</text>",
		"#08306b", // the fullest heat cell
		`fill="#ffffff"`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

func TestEmptyPlot(t *testing.T) {
	var buf bytes.Buffer
	if _, err := (Figure{Width: 400, Height: 300, Panels: []*Plot{{Title: "nothing"}}}).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	elements(t, buf.Bytes())
	if strings.Contains(buf.String(), "NaN") || strings.Contains(buf.String(), "Inf") {
		t.Fatalf("an empty plot has non-finite coordinates:\n%s", buf.String())
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		r    Range
		want string
	}{
		{Range{0, 1}, "0 0.2 0.4 0.6 0.8 1"},
		{Range{0, 430}, "0 100 200 300 400"},
		{Range{0, 120000}, "0 20k 40k 60k 80k 100k 120k"},
		{Range{0, 2.5e6}, "0 500k 1M 1.5M 2M 2.5M"},
		{Range{-3, 3}, "-3 -2 -1 0 1 2 3"},
	} {
		var got []string
		for _, tk := range niceTicks(c.r) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != c.want {
			t.Errorf("niceTicks(%v) = %s, want %s", c.r, s, c.want)
		}
	}
}

func TestLegendWraps(t *testing.T) {
	p := &Plot{}
	for _, n := range []string{"clear_tool_uses", "clear_tool_uses_20k", "ctxstore_stream", "ctxstore_literal"} {
		p.Lines = append(p.Lines, Line{Name: n, Color: "black", XYs: []XY{{0, 0}, {1, 1}}})
	}
	es := p.layoutLegend(50, 450)
	if len(es) != 4 || es[0].row != 0 || es[len(es)-1].row == 0 {
		t.Fatalf("legend %+v: want 4 entries over more than one row", es)
	}
	for _, e := range es {
		if e.x+26+float64(len(e.name))*charWidth > 450 {
			t.Errorf("entry %s passes the right edge: %+v", e.name, e)
		}
	}
}
