package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/replay"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/context/transcript"
	"github.com/ctxstore/ctxstore/store"
)

type replayCmd struct {
	Sessions   []string      `arg:"" name:"SESSION" type:"existingfile" help:"Transcripts to replay: Claude Code or Pi session JSONL files (the format is detected)."`
	Strategies []string      `name:"strategies" sep:"," placeholder:"NAME,..." help:"Strategies to replay, in order (default: naive, clear_tool_uses, clear_tool_uses_20k, recorded, ctxstore_stream, ctxstore_literal; also clear_tool_uses_batched, clear_tool_uses_20k_batched)."`
	PerCall    bool          `name:"per-call" help:"Also print every call of every strategy (and include the calls in --json)."`
	Chart      string        `name:"chart" placeholder:"FILE.png" help:"Write a PNG chart of context size and cumulative cost per call, one line per strategy; with several sessions, one file per session (FILE-NAME.png)."`
	Tokenizer  string        `name:"tokenizer" default:"o200k_base" enum:"o200k_base,cl100k_base,bytes" help:"Token counter: a BPE encoding, or bytes (one token per 4 bytes)."`
	TTL        time.Duration `name:"ttl" default:"5m" help:"Prompt-cache lifetime: a longer gap between calls makes the cache cold."`
	Window     int           `name:"window" default:"200000" help:"The model's context window, in tokens."`
	Calibrate  string        `name:"calibrate" default:"fit" enum:"fit,overhead,none" help:"How token counts are calibrated against the recorded usage: fit (scale and overhead), overhead (overhead only), none."`
	UseStore   bool          `name:"use-store" help:"Run the ctxstore strategies on the --store store (a session per strategy and run) instead of a temporary SQLite file."`
}

// replayJSON is the --json output.
type replayJSON struct {
	Sessions []*replay.Report `json:"sessions"`
	// Total sums every session, per strategy; ratios are of the sums.
	Total []replay.Result `json:"total"`
}

// Run implements replay.
func (c *replayCmd) Run(a *app) error {
	known := map[string]replay.Strategy{}
	for _, s := range append(replay.DefaultStrategies(), replay.OtherStrategies()...) {
		known[s.Name()] = s
	}
	var strategies []replay.Strategy
	for _, n := range c.Strategies {
		n = strings.TrimSpace(n)
		s, ok := known[n]
		if !ok {
			return usagef("--strategies: unknown strategy %q (known: %s)", n, strings.Join(replay.StrategyNames(), ", "))
		}
		strategies = append(strategies, s)
	}
	var tok assemble.Tokenizer = assemble.BytesTokenizer{}
	if c.Tokenizer != "bytes" {
		t, err := tokens.New(c.Tokenizer)
		if err != nil {
			return err
		}
		tok = t
	}
	o := replay.Options{Strategies: strategies, Counter: replay.NewCounter(tok), TTL: c.TTL, Window: c.Window, Calibrate: c.Calibrate}
	o.OpenStore = func(ctx context.Context, dir string) (store.Store, error) {
		return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
	}
	if c.UseStore {
		st, err := a.open(false)
		if err != nil {
			return err
		}
		defer st.Close()
		o.Store = st
	}
	var reports []*replay.Report
	for i, path := range c.Sessions {
		s, err := transcript.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "replay: %s: %s, %d messages, %d problems\n", path, s.Format, len(s.Messages), len(s.Report.Problems))
		// Every damaged line, with its file and line (issue 20), on stderr:
		// the replay reads past them.
		for k, p := range s.Report.Problems {
			if k == maxListedProblems {
				fmt.Fprintf(a.stderr, "replay: %s: ... and %d more\n", path, len(s.Report.Problems)-k)
				break
			}
			fmt.Fprintf(a.stderr, "replay: %s:%d: %s\n", path, p.Line, terminalSafe(p.Msg))
		}
		start := time.Now()
		last := ""
		o.Progress = func(strategy string, done, total int) {
			if strategy != last || done == total {
				fmt.Fprintf(a.stderr, "replay: %s: %s %d/%d calls (%s)\n", filepath.Base(path), strategy, done, total, time.Since(start).Round(100*time.Millisecond))
				last = strategy
			}
		}
		rep, err := replay.Run(a.ctx, s, o)
		if err != nil {
			return fmt.Errorf("replaying %s: %w", path, err)
		}
		reports = append(reports, rep)
		if c.Chart != "" {
			name := c.Chart
			if len(c.Sessions) > 1 {
				ext := filepath.Ext(name)
				name = fmt.Sprintf("%s-%d-%s%s", strings.TrimSuffix(name, ext), i+1, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), ext)
			}
			if err := writeChart(name, rep); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "replay: chart written to %s\n", name)
		}
	}
	total := replay.Sum(reports)
	if a.cli.JSON {
		if !c.PerCall {
			for _, r := range reports {
				for _, res := range r.Results {
					res.Calls = nil
				}
			}
		}
		return a.printJSON(replayJSON{Sessions: reports, Total: total})
	}
	for _, r := range reports {
		printReplay(a.stdout, r, c.PerCall)
	}
	if len(reports) > 1 {
		fmt.Fprintf(a.stdout, "all %d sessions (sums; ratios of the sums)\n", len(reports))
		printTotals(a.stdout, total)
	}
	return nil
}

func writeChart(name string, rep *replay.Report) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := replay.WriteChart(f, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func printReplay(w io.Writer, r *replay.Report, perCall bool) {
	cal := r.Calibration
	fmt.Fprintf(w, "%s (%s): %d messages, %d calls; tokenizer %s; cache TTL %s; window %d\n",
		r.Session, r.Format, r.Messages, r.Calls, r.Tokenizer, time.Duration(r.TTLSeconds*float64(time.Second)), r.Window)
	if cal.Points > 0 {
		fmt.Fprintf(w, "calibration (%s on %d calls before any compaction, %d outliers left out of the fit): provider tokens = %d + %.3f x counted; naive vs recorded sent, mean relative error: raw %.1f%%, overhead only %.1f%%, calibrated %.1f%% (median %.1f%%, p90 %.1f%%, max %.1f%%)\n",
			cal.Method, cal.Points, cal.Excluded, cal.Overhead, cal.Scale, 100*cal.Error.Raw.Mean, 100*cal.Error.Overhead.Mean,
			100*cal.Error.Fitted.Mean, 100*cal.Error.Fitted.Median, 100*cal.Error.Fitted.P90, 100*cal.Error.Fitted.Max)
	} else {
		fmt.Fprintln(w, "calibration: none (no recorded usage)")
	}
	var rs []replay.Result
	for _, res := range r.Results {
		rs = append(rs, *res)
	}
	printTotals(w, rs)
	for _, res := range r.Results {
		for _, n := range res.Notes {
			fmt.Fprintf(w, "  %s: %s\n", res.Strategy, n)
		}
	}
	if perCall {
		for _, res := range r.Results {
			fmt.Fprintf(w, "\n%s, per call\n", res.Strategy)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "call\tmsg\ttime\tgap s\tcontext\thistory\tcached\tcost\tcum cost\trecorded\tflags\t")
			for _, c := range res.Calls {
				var flags []string
				if c.Rebased {
					flags = append(flags, "rebase")
				}
				if c.Cold {
					flags = append(flags, "cold")
				}
				if c.OverWindow {
					flags = append(flags, "over-window")
				}
				if c.Reneeded > 0 {
					flags = append(flags, fmt.Sprintf("reneeded=%d/served=%d", c.Reneeded, c.Served))
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%s\t%s\n", c.N, c.Message, c.Time.Format("15:04:05"), c.Gap,
					c.Context, c.History, c.Cached, c.Cost, c.CumCost, c.Recorded, strings.Join(flags, ","), c.Reason)
			}
			tw.Flush()
		}
	}
	fmt.Fprintln(w)
}

func printTotals(w io.Writer, rs []replay.Result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcalls\tcontext\thistory\tcached\tcost\tcost/naive\thistory/naive\trebases\tcold\tmax context\tover window\treneeded\tserved\t")
	for _, r := range rs {
		t := r.Totals
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t%.0f\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Strategy, t.Calls, t.Context, t.History,
			100*t.CacheShare, t.Cost, t.CostVsNaive, t.HistoryVsNaive, t.Rebases, t.Cold, t.MaxContext, t.OverWindow, t.Reneeded, t.Served)
	}
	tw.Flush()
}

// maxListedProblems bounds the damaged lines replay prints.
const maxListedProblems = 50

// terminalSafe replaces control characters (terminal escapes a damaged
// line may carry) with their Go escapes.
func terminalSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
