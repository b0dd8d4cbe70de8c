package stats

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// kindColors give each profile kind a stable color.
var kindColors = map[Kind]color.RGBA{
	KindHuman:      {0xcc, 0x22, 0x22, 0xff}, // red
	KindInjected:   {0xe6, 0x9f, 0x00, 0xff}, // orange
	KindResponse:   {0x00, 0x44, 0xaa, 0xff}, // dark blue
	KindThinking:   {0x88, 0x44, 0xaa, 0xff}, // purple
	KindToolCall:   {0x00, 0x9e, 0x73, 0xff}, // green
	KindToolResult: {0x56, 0xb4, 0xe9, 0xff}, // sky blue
	KindCompaction: {0x22, 0x22, 0x22, 0xff}, // black
	KindError:      {0xff, 0x00, 0xff, 0xff}, // magenta
}

// MaxChartSessions bounds the rows of the timeline chart (the longest
// sessions are drawn).
const MaxChartSessions = 40

// Chart file names WriteCharts writes.
const (
	ChartTimeline   = "timeline.png"
	ChartActivity   = "activity.png"
	ChartTools      = "tools.png"
	ChartCompaction = "compaction.png"
)

// WriteCharts draws a report as PNG images in dir (created if needed) and
// returns their paths: the session timelines (one row per timed session,
// each event a mark colored by kind, idle gaps as empty stretches, each row
// spanning its own session), activity by weekday and hour (a heatmap),
// tool usage (the 25 most called tools) and compactions against session
// duration (one point per timed session).
func WriteCharts(dir string, r *Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("stats charts: %w", err)
	}
	var out []string
	for _, c := range []struct {
		name string
		draw func(*Report) (*plot.Plot, vg.Length, vg.Length, error)
	}{
		{ChartTimeline, timelineChart}, {ChartActivity, activityChart}, {ChartTools, toolsChart}, {ChartCompaction, compactionChart},
	} {
		p, w, h, err := c.draw(r)
		if err != nil {
			return out, fmt.Errorf("stats chart %s: %w", c.name, err)
		}
		path := filepath.Join(dir, c.name)
		if err := savePNG(p, w, h, path); err != nil {
			return out, err
		}
		out = append(out, path)
	}
	return out, nil
}

func savePNG(p *plot.Plot, w, h vg.Length, path string) error {
	img := vgimg.New(w, h)
	p.Draw(draw.New(img))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("stats chart: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("stats chart %s: %w", path, err)
	}
	return f.Close()
}

func timelineChart(r *Report) (*plot.Plot, vg.Length, vg.Length, error) {
	var ss []*Session
	for _, s := range r.Sessions {
		if s.Start != nil {
			ss = append(ss, s)
		}
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Seconds > ss[j].Seconds })
	if len(ss) > MaxChartSessions {
		ss = ss[:MaxChartSessions]
	}
	p := plot.New()
	p.Title.Text = "session profiles (each row spans its own session; x = share of the session's time)"
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = "elapsed share of the session"
	p.X.Min, p.X.Max = 0, 1
	p.Legend.Top = true
	var ticks []plot.Tick
	for _, k := range ProfileKinds {
		var pts plotter.XYs
		for row, s := range ss {
			for _, m := range s.Timeline {
				if m.Kind != k {
					continue
				}
				x := 0.0
				if s.Seconds > 0 {
					x = m.Time.Sub(*s.Start).Seconds() / s.Seconds
				}
				// Kinds sit on their own sub-lane of the row.
				pts = append(pts, plotter.XY{X: x, Y: float64(row) + laneOffset(k)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, 0, 0, err
		}
		sc.GlyphStyle.Color = kindColors[k]
		sc.GlyphStyle.Shape = draw.BoxGlyph{}
		sc.GlyphStyle.Radius = vg.Points(1.6)
		p.Add(sc)
		p.Legend.Add(string(k), sc)
	}
	for row, s := range ss {
		ticks = append(ticks, plot.Tick{Value: float64(row), Label: fmt.Sprintf("%s (%s)", short(s.ID), fmtDur(s.Seconds, true))})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(max(len(ss), 1))+0.4
	if len(ss) == 0 {
		p.Title.Text += " - no timed session"
	}
	h := vg.Length(max(len(ss), 3))*vg.Centimeter*1.1 + 6*vg.Centimeter
	return p, 36 * vg.Centimeter, h, nil
}

// laneOffset places a kind within its session's row.
func laneOffset(k Kind) float64 {
	for i, x := range ProfileKinds {
		if x == k {
			return -0.35 + 0.7*float64(i)/float64(len(ProfileKinds)-1)
		}
	}
	return 0
}

// whiteToBlue is a sequential palette: white for none, dark blue for the
// most.
type whiteToBlue int

func (n whiteToBlue) Colors() []color.Color {
	out := make([]color.Color, n)
	for i := range out {
		f := float64(i) / float64(n-1)
		out[i] = color.RGBA{uint8(255 - f*(255-0x08)), uint8(255 - f*(255-0x30)), uint8(255 - f*(255-0x6b)), 0xff}
	}
	return out
}

var _ palette.Palette = whiteToBlue(2)

type weekHourGrid [7][24]int

func (g weekHourGrid) Dims() (c, r int)   { return 24, 7 }
func (g weekHourGrid) Z(c, r int) float64 { return float64(g[r][c]) }
func (g weekHourGrid) X(c int) float64    { return float64(c) }
func (g weekHourGrid) Y(r int) float64    { return float64(r) }

func activityChart(r *Report) (*plot.Plot, vg.Length, vg.Length, error) {
	g := weekHourGrid(r.Total.ByWeekdayHour)
	p := plot.New()
	n := 0
	for _, v := range r.Total.ByHour {
		n += v
	}
	p.Title.Text = fmt.Sprintf("activity: timed conversation events by weekday and hour (%s); %d events", r.Scope.Location, n)
	p.X.Label.Text = "hour"
	p.Y.Label.Text = "weekday"
	maxZ := 0
	for _, row := range g {
		for _, v := range row {
			maxZ = max(maxZ, v)
		}
	}
	hm := plotter.NewHeatMap(g, whiteToBlue(32))
	hm.Min, hm.Max = 0, float64(max(maxZ, 1))
	p.Add(hm)
	var days []plot.Tick
	for d := 0; d < 7; d++ {
		days = append(days, plot.Tick{Value: float64(d), Label: time.Weekday(d).String()[:3]})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(days)
	var hours []plot.Tick
	for h := 0; h < 24; h += 2 {
		hours = append(hours, plot.Tick{Value: float64(h), Label: fmt.Sprintf("%02d", h)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(hours)
	return p, 30 * vg.Centimeter, 12 * vg.Centimeter, nil
}

func toolsChart(r *Report) (*plot.Plot, vg.Length, vg.Length, error) {
	counts := sortedCounts(r.Total.Tools)
	if len(counts) > 25 {
		counts = counts[:25]
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("tool usage: %d calls", r.Total.ToolCalls)
	p.X.Label.Text = "calls"
	// Most used at the top.
	vals := make(plotter.Values, len(counts))
	names := make([]string, len(counts))
	for i, kv := range counts {
		vals[len(counts)-1-i] = float64(kv.n)
		names[len(counts)-1-i] = kv.k
	}
	if len(vals) > 0 {
		bc, err := plotter.NewBarChart(vals, vg.Points(10))
		if err != nil {
			return nil, 0, 0, err
		}
		bc.Horizontal = true
		bc.Color = kindColors[KindToolCall]
		bc.LineStyle.Width = 0
		p.Add(bc)
		p.NominalY(names...)
	} else {
		p.Title.Text += " - no tool calls"
	}
	h := vg.Length(max(len(counts), 3))*vg.Points(16) + 4*vg.Centimeter
	return p, 24 * vg.Centimeter, h, nil
}

func compactionChart(r *Report) (*plot.Plot, vg.Length, vg.Length, error) {
	p := plot.New()
	p.Title.Text = "compactions against session duration (one point per timed session)"
	p.X.Label.Text = "session duration (hours)"
	p.Y.Label.Text = "compactions"
	p.Add(plotter.NewGrid())
	var pts plotter.XYs
	for _, s := range r.Sessions {
		if s.Start != nil {
			pts = append(pts, plotter.XY{X: s.Seconds / 3600, Y: float64(s.Compactions)})
		}
	}
	if len(pts) > 0 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, 0, 0, err
		}
		sc.GlyphStyle.Color = kindColors[KindCompaction]
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3)
		p.Add(sc)
	} else {
		p.Title.Text += " - no timed session"
	}
	// Room around the points at the edges.
	maxX, maxY := 0.0, 0.0
	for _, pt := range pts {
		maxX, maxY = max(maxX, pt.X), max(maxY, pt.Y)
	}
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = maxX*1.05+0.05, maxY+1
	return p, 20 * vg.Centimeter, 14 * vg.Centimeter, nil
}
