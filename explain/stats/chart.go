package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ctxstore/ctxstore/internal/svgplot"
)

// kindColors give each profile kind a stable color.
var kindColors = map[Kind]string{
	KindHuman:      "#cc2222", // red
	KindInjected:   "#e69f00", // orange
	KindResponse:   "#0044aa", // dark blue
	KindThinking:   "#8844aa", // purple
	KindToolCall:   "#009e73", // green
	KindToolResult: "#56b4e9", // sky blue
	KindCompaction: "#222222", // black
	KindError:      "#ff00ff", // magenta
}

// MaxChartSessions bounds the rows of the timeline chart (the longest
// sessions are drawn).
const MaxChartSessions = 40

// Chart file names WriteCharts writes.
const (
	ChartTimeline   = "timeline.svg"
	ChartActivity   = "activity.svg"
	ChartTools      = "tools.svg"
	ChartCompaction = "compaction.svg"
)

// WriteCharts draws a report as SVG images in dir (created if needed) and
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
		draw func(*Report) svgplot.Figure
	}{
		{ChartTimeline, timelineChart}, {ChartActivity, activityChart}, {ChartTools, toolsChart}, {ChartCompaction, compactionChart},
	} {
		path := filepath.Join(dir, c.name)
		if err := writeFigure(path, c.draw(r)); err != nil {
			return out, err
		}
		out = append(out, path)
	}
	return out, nil
}

func writeFigure(path string, f svgplot.Figure) error {
	w, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("stats chart: %w", err)
	}
	if _, err := f.WriteTo(w); err != nil {
		w.Close()
		return fmt.Errorf("stats chart %s: %w", path, err)
	}
	return w.Close()
}

func timelineChart(r *Report) svgplot.Figure {
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
	p := &svgplot.Plot{
		Title:  "session profiles (each row spans its own session; x = share of the session's time)",
		XLabel: "elapsed share of the session",
		X:      svgplot.Range{Min: 0, Max: 1},
		Y:      svgplot.Range{Min: -0.6, Max: float64(max(len(ss), 1)) - 0.4},
	}
	for _, k := range ProfileKinds {
		var pts []svgplot.XY
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
				pts = append(pts, svgplot.XY{X: x, Y: float64(row) + laneOffset(k)})
			}
		}
		if len(pts) > 0 {
			p.Points = append(p.Points, svgplot.Points{Name: string(k), Color: kindColors[k], Square: true, Radius: 2, XYs: pts})
		}
	}
	p.YTicks = []svgplot.Tick{}
	for row, s := range ss {
		p.YTicks = append(p.YTicks, svgplot.Tick{Value: float64(row), Label: fmt.Sprintf("%s (%s)", short(s.ID), fmtDur(s.Seconds, true))})
	}
	if len(ss) == 0 {
		p.Title += " - no timed session"
	}
	return svgplot.Figure{Width: 1360, Height: max(len(ss), 3)*42 + 230, Panels: []*svgplot.Plot{p}}
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

func activityChart(r *Report) svgplot.Figure {
	n := 0
	for _, v := range r.Total.ByHour {
		n += v
	}
	// Sunday on the top row.
	rows := make([][]float64, 7)
	maxN := 0
	for d, hours := range r.Total.ByWeekdayHour {
		row := make([]float64, 24)
		for h, v := range hours {
			row[h] = float64(v)
			maxN = max(maxN, v)
		}
		rows[6-d] = row
	}
	p := &svgplot.Plot{
		Title:  fmt.Sprintf("activity: timed conversation events by weekday and hour (%s); %d events", r.Scope.Location, n),
		XLabel: "hour", YLabel: "weekday",
		X: svgplot.Range{Min: 0, Max: 24}, Y: svgplot.Range{Min: 0, Max: 7},
		Heat: &svgplot.Heat{Rows: rows, Max: float64(max(maxN, 1))},
	}
	for d := 0; d < 7; d++ {
		p.YTicks = append(p.YTicks, svgplot.Tick{Value: float64(6-d) + 0.5, Label: time.Weekday(d).String()[:3]})
	}
	for h := 0; h < 24; h += 2 {
		p.XTicks = append(p.XTicks, svgplot.Tick{Value: float64(h) + 0.5, Label: fmt.Sprintf("%02d", h)})
	}
	return svgplot.Figure{Width: 1130, Height: 450, Panels: []*svgplot.Plot{p}}
}

func toolsChart(r *Report) svgplot.Figure {
	counts := sortedCounts(r.Total.Tools)
	if len(counts) > 25 {
		counts = counts[:25]
	}
	p := &svgplot.Plot{Title: fmt.Sprintf("tool usage: %d calls", r.Total.ToolCalls), XLabel: "calls", Grid: true}
	if len(counts) > 0 {
		bars := &svgplot.Bars{Color: kindColors[KindToolCall]}
		for _, kv := range counts { // most used at the top
			bars.Labels = append(bars.Labels, kv.k)
			bars.Values = append(bars.Values, float64(kv.n))
		}
		p.Bars = bars
	} else {
		p.Title += " - no tool calls"
	}
	return svgplot.Figure{Width: 900, Height: max(len(counts), 3)*21 + 150, Panels: []*svgplot.Plot{p}}
}

func compactionChart(r *Report) svgplot.Figure {
	p := &svgplot.Plot{
		Title:  "compactions against session duration (one point per timed session)",
		XLabel: "session duration (hours)", YLabel: "compactions", Grid: true,
	}
	var pts []svgplot.XY
	for _, s := range r.Sessions {
		if s.Start != nil {
			pts = append(pts, svgplot.XY{X: s.Seconds / 3600, Y: float64(s.Compactions)})
		}
	}
	if len(pts) > 0 {
		p.Points = []svgplot.Points{{Color: kindColors[KindCompaction], Radius: 4, XYs: pts}}
	} else {
		p.Title += " - no timed session"
	}
	// Room around the points at the edges.
	maxX, maxY := 0.0, 0.0
	for _, pt := range pts {
		maxX, maxY = max(maxX, pt.X), max(maxY, pt.Y)
	}
	p.X = svgplot.Range{Min: 0, Max: maxX*1.05 + 0.05}
	p.Y = svgplot.Range{Min: 0, Max: maxY + 1}
	return svgplot.Figure{Width: 760, Height: 530, Panels: []*svgplot.Plot{p}}
}
