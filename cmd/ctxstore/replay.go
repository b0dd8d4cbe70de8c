package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/store"
)

type replayCmd struct {
	Sessions      []string      `arg:"" name:"SESSION" type:"existingfile" help:"Transcripts to replay: Claude Code or Pi session JSONL files (the format is detected)."`
	Strategies    []string      `name:"strategies" sep:"," placeholder:"NAME,..." help:"Strategies to replay, in order (default: ${replay_defaults}; also ${replay_others})."`
	PerCall       bool          `name:"per-call" help:"Also print every call of every strategy (and include the calls in --json)."`
	Chart         string        `name:"chart" placeholder:"FILE.svg" help:"Write an SVG chart of context size and cumulative cost per call, one line per strategy; with several sessions, one file per session (FILE-N-NAME.svg)."`
	Tokenizer     string        `name:"tokenizer" default:"o200k_base" enum:"o200k_base,cl100k_base,bytes" help:"Token counter: a BPE encoding, or bytes (one token per 4 bytes)."`
	TTL           time.Duration `name:"ttl" default:"5m" help:"Prompt-cache lifetime: a longer gap between calls makes the cache cold."`
	HeadTTL       time.Duration `name:"head-ttl" default:"1h" env:"CTXSTORE_REPLAY_HEAD_TTL" help:"Where ctxstore places the breakpoints (its Pi extension), the lifetime it asks for on the head's once a session has paused past --ttl (as serve --head-ttl; no longer than --ttl: never)."`
	Window        int           `name:"window" default:"200000" help:"The model's context window, in tokens."`
	Calibrate     string        `name:"calibrate" default:"fit" enum:"fit,overhead,none" help:"How token counts are calibrated against the recorded usage: fit (scale and overhead), overhead (overhead only), none."`
	UseStore      bool          `name:"use-store" help:"Run the ctxstore strategies on the --store store (a session per strategy and run) instead of a temporary SQLite file."`
	Markdown      bool          `name:"markdown" help:"Print the results as Markdown tables (the cache model check, per session cost/naive, cache share and history/naive of every strategy, the sums) for docs/benchmarks.md."`
	CheckAlso     []string      `name:"check-also" sep:"," type:"existingfile" placeholder:"FILE,..." help:"More transcripts for the cache model's check only (not replayed): with --cache-model auto, each harness is judged on these and the sessions replayed together."`
	Conversations string        `name:"conversations" default:"all" enum:"all,last" help:"Which conversations of a file to replay: all (a Claude Code file can hold several: a /clear or another session appended) or last (the one the file ends with; the others are named as skipped)."`
	Warm          string        `name:"warm" default:"off" enum:"off,running,idle" help:"Cache warming every strategy but recorded gets: off, running (the harness re-sends a call's request before its cache entry expires while the agent runs, as Pi 0.87 does by default) or idle (also while it waits for the user); each pause warms while its warms cost no more than the rewrite they save (ski rental), at most an hour running, 30 minutes idle."`
	Proxy         string        `name:"claude-code-proxy" placeholder:"WARM" enum:",off,running,idle" default:"" help:"Replay the Claude Code sessions as sent through ctxstore's Claude Code proxy (ctxstore claude-code proxy) warming as WARM (off, running, idle; in place of --warm for them): every strategy but recorded has the head cached for --head-ttl from the first request that found the cache cold after the first."`
	CacheModel    string        `name:"cache-model" default:"auto" enum:"auto,anthropic,openai,prefix" help:"Provider cache model the calls are priced under: auto (the provider recorded, checked against the recorded usage per harness; the ideal prefix cache where its error is not small), anthropic, openai, or prefix (the ideal prefix cache)."`
}

// replayJSON is the --json output.
type replayJSON struct {
	Sessions []*replay.Report `json:"sessions"`
	// Total sums every session, per strategy; ratios are of the sums.
	Total []replay.Result `json:"total"`
	// CacheChecks sum the cache model's check per harness (with
	// --cache-model auto): what decided the model each harness is priced
	// under.
	CacheChecks map[string]*replay.CacheCheck `json:"cache_checks,omitempty"`
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
	o := replay.Options{Strategies: strategies, Counter: replay.NewCounter(tok), TTL: c.TTL, HeadTTL: c.HeadTTL, Window: c.Window, Calibrate: c.Calibrate, CacheModel: c.CacheModel, Warm: c.Warm, ClaudeCodeProxy: c.Proxy}
	o.OpenStore = func(ctx context.Context, dir string) (store.Store, error) {
		return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
	}
	if c.UseStore {
		st, err := a.open(true) // the replay writes its sessions there: a new store is created
		if err != nil {
			return err
		}
		defer st.Close()
		o.Store = st
	}
	// Every conversation of every file, read once.
	type item struct {
		path, name  string
		s           *transcript.Session
		conv, convs int
	}
	var items []item
	for _, path := range c.Sessions {
		ss, err := transcript.ReadAllFile(path)
		if err != nil {
			return err
		}
		s := ss[len(ss)-1]
		fmt.Fprintf(a.stderr, "replay: %s: %s, %d messages, %d problems\n", path, s.Format, len(s.Messages), len(s.Report.Problems))
		if len(ss) > 1 {
			fmt.Fprintf(a.stderr, "replay: %s: %d conversations (a /clear or another session in the file); the counts above are the last one's\n", path, len(ss))
		}
		// Every damaged line, with its file and line, on stderr:
		// the replay reads past them.
		for k, p := range s.Report.Problems {
			if k == maxListedProblems {
				fmt.Fprintf(a.stderr, "replay: %s: ... and %d more\n", path, len(s.Report.Problems)-k)
				break
			}
			fmt.Fprintf(a.stderr, "replay: %s:%d: %s\n", path, p.Line, terminalSafe(p.Msg))
		}
		if c.Conversations == "last" && len(ss) > 1 {
			for k, o := range ss[:len(ss)-1] {
				fmt.Fprintf(a.stderr, "replay: %s: skipped conversation %d of %d (%d messages; --conversations all replays it)\n", path, k+1, len(ss), len(o.Messages))
			}
			ss = ss[len(ss)-1:]
		}
		for k, s := range ss {
			name := path
			if len(ss) > 1 {
				name = fmt.Sprintf("%s#%d", path, k+1)
			}
			s.Path = name
			items = append(items, item{path: path, name: name, s: s, conv: k + 1, convs: len(ss)})
		}
	}
	// The cache model is checked per harness over every session of the run
	// before any strategy is priced (docs/replay.md).
	if c.CacheModel == replay.CacheAuto {
		o.HarnessChecks = map[string]*replay.CacheCheck{}
		co := o
		co.Strategies = []replay.Strategy{}
		checked := append([]item(nil), items...)
		for _, path := range c.CheckAlso {
			ss, err := transcript.ReadAllFile(path)
			if err != nil {
				return err
			}
			for k, s := range ss {
				checked = append(checked, item{path: path, name: fmt.Sprintf("%s#%d", path, k+1), s: s})
			}
		}
		for _, it := range checked {
			rep, err := replay.Run(a.ctx, it.s, co)
			if err != nil {
				return fmt.Errorf("checking the cache model on %s: %w", it.name, err)
			}
			if rep.CacheCheck == nil {
				continue
			}
			h := o.HarnessChecks[rep.Format]
			if h == nil {
				h = &replay.CacheCheck{}
				o.HarnessChecks[rep.Format] = h
			}
			h.Add(rep.CacheCheck)
		}
		for f, h := range o.HarnessChecks {
			fmt.Fprintf(a.stderr, "replay: cache model check, %s sessions: %s model, cost error %+.1f%%, read-share error %.1f points over %d calls: %s\n",
				f, h.Model, 100*h.CostError, 100*h.ReadShareError, h.Calls, map[bool]string{true: "small, used", false: "not small, the ideal prefix cache is used instead"}[h.Small()])
		}
	}
	var reports []*replay.Report
	for i, it := range items {
		path := it.path
		start := time.Now()
		last := ""
		o.Progress = func(strategy string, done, total int) {
			if strategy != last || done == total {
				fmt.Fprintf(a.stderr, "replay: %s: %s %d/%d calls (%s)\n", filepath.Base(it.name), strategy, done, total, time.Since(start).Round(100*time.Millisecond))
				last = strategy
			}
		}
		rep, err := replay.Run(a.ctx, it.s, o)
		if err != nil {
			return fmt.Errorf("replaying %s: %w", it.name, err)
		}
		rep.Read.Conversation, rep.Read.Conversations = it.conv, it.convs
		reports = append(reports, rep)
		if c.Chart != "" {
			name := c.Chart
			if len(items) > 1 {
				ext := filepath.Ext(name)
				base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
				if it.name != path {
					base += "-" + strings.TrimPrefix(it.name, path+"#")
				}
				name = fmt.Sprintf("%s-%d-%s%s", strings.TrimSuffix(name, ext), i+1, base, ext)
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
		return a.printJSON(replayJSON{Sessions: reports, Total: total, CacheChecks: o.HarnessChecks})
	}
	if c.Markdown {
		printMarkdown(a.stdout, reports, total, o.HarnessChecks)
		return nil
	}
	for _, r := range reports {
		printReplay(a.stdout, r, c.PerCall)
	}
	if len(reports) > 1 {
		fmt.Fprintf(a.stdout, "all %d sessions (sums; ratios of the sums)\n", len(reports))
		printTotals(a.stdout, total)
		for _, r := range total {
			if r.Sessions < len(reports) {
				fmt.Fprintf(a.stdout, "  %s: replayed on %d of the %d sessions (the others declined it, above); its ratios are against naive on those\n", r.Strategy, r.Sessions, len(reports))
			}
		}
		fmt.Fprintln(a.stdout)
	}
	fmt.Fprint(a.stdout, replayLegend)
	if c.PerCall {
		fmt.Fprint(a.stdout, replayPerCallLegend)
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
	rd := r.Read
	conv := ""
	if rd.Conversations > 1 {
		conv = fmt.Sprintf("conversation %d of %d in the file; ", rd.Conversation, rd.Conversations)
	}
	fmt.Fprintf(w, "transcript: %s%d problems; set aside: %d sidechain records, %d off-branch records, %d orphan and %d duplicate tool results, %d aborted responses, %d records of unknown types; %d unanswered tool calls; %d assistant messages not calls\n",
		conv, rd.Problems, rd.Sidechain, rd.OffBranch, rd.Orphans, rd.Duplicates, rd.Aborted, rd.Unknown, rd.Unanswered, rd.NotCalls)
	if cal.Points > 0 {
		fmt.Fprintf(w, "calibration (%s on %d calls before any compaction, %d outliers left out of the fit): provider tokens = %d + %.3f x counted; naive vs recorded sent, mean relative error: raw %.1f%%, overhead only %.1f%%, calibrated %.1f%% (median %.1f%%, p90 %.1f%%, max %.1f%%)\n",
			cal.Method, cal.Points, cal.Excluded, cal.Overhead, cal.Scale, 100*cal.Error.Raw.Mean, 100*cal.Error.Overhead.Mean,
			100*cal.Error.Fitted.Mean, 100*cal.Error.Fitted.Median, 100*cal.Error.Fitted.P90, 100*cal.Error.Fitted.Max)
	} else {
		fmt.Fprintln(w, "calibration: none (no recorded usage)")
	}
	if ch := r.CacheCheck; ch != nil {
		fmt.Fprintf(w, "cache model check (%s, breakpoints %s; the harness's own requests on %d calls, %d skipped): recorded read %d write %d input %d; predicted read %d write %d input %d; cost error %+.1f%%, read-share error %.1f points, hit agreement %.1f%%\n",
			ch.Model, ch.Placement, ch.Calls, ch.Skipped, ch.RecordedRead, ch.RecordedWrite, ch.RecordedInput, ch.PredictedRead, ch.PredictedWrite, ch.PredictedInput,
			100*ch.CostError, 100*ch.ReadShareError, 100*ch.HitAgreement)
	}
	fmt.Fprintf(w, "priced under: %s", r.CacheModel)
	if r.CacheNote != "" {
		fmt.Fprintf(w, " (%s)", r.CacheNote)
	}
	if r.ClaudeCodeProxy {
		fmt.Fprintf(w, "; through ctxstore's Claude Code proxy, warming %s (every strategy but recorded)", r.Warm)
	} else if r.Warm != "" && r.Warm != replay.WarmOff {
		fmt.Fprintf(w, "; cache warming: %s (every strategy but recorded)", r.Warm)
	}
	fmt.Fprintln(w)
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
	for _, d := range r.Declined {
		fmt.Fprintf(w, "  %s: not replayed: %s\n", d.Strategy, d.Reason)
	}
	if perCall {
		for _, res := range r.Results {
			fmt.Fprintf(w, "\n%s, per call\n", res.Strategy)
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "call\tmsg\ttime\tgap s\tcontext\thistory\tcached\twritten\tcost\tcum cost\trecorded\tflags\t")
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
				if c.Faults > 0 {
					f := fmt.Sprintf("faults=%d", c.Faults)
					for _, x := range c.FaultStrings {
						f += fmt.Sprintf(" %q@%d", x.String, x.Source)
					}
					flags = append(flags, f)
				}
				if c.PageIns > 0 {
					flags = append(flags, fmt.Sprintf("page-ins=%d(%d tokens)", c.PageIns, c.PageInTokens))
				}
				if c.Warms > 0 {
					flags = append(flags, fmt.Sprintf("warms=%d", c.Warms))
				}
				fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%s\t%s\n", c.N, c.Message, c.Time.Format("15:04:05"), c.Gap,
					c.Context, c.History, c.Cached, c.Written, c.Cost, c.CumCost, c.Recorded, strings.Join(flags, ","), c.Reason)
			}
			tw.Flush()
		}
	}
	fmt.Fprintln(w)
}

func printTotals(w io.Writer, rs []replay.Result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tcalls\tcontext\thistory\tcached\twritten\tcost\tcost/naive\tcost/capped\thistory/naive\trebases\tcold\tmax context\tover window\treneeded\tserved\tfaults\tfault calls\tpaged in\twarms\t")
	for _, r := range rs {
		t := r.Totals
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f%%\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Strategy, t.Calls, t.Context, t.History,
			100*t.CacheShare, t.Written, t.Cost, t.CostVsNaive, t.CostVsCapped, t.HistoryVsNaive, t.Rebases, t.Cold, t.MaxContext, t.OverWindow, t.Reneeded, t.Served,
			t.Faults, t.FaultCalls, t.PageIns, t.Warms)
	}
	tw.Flush()
}

// printMarkdown prints the reports as the tables of docs/benchmarks.md.
func printMarkdown(w io.Writer, reports []*replay.Report, total []replay.Result, checks map[string]*replay.CacheCheck) {
	if len(reports) == 0 {
		return
	}
	fmt.Fprintln(w, "#### The cache model against the recorded usage")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| session | harness | model | calls compared / skipped | recorded read / write | predicted read / write | cost error | read-share error | hit agreement | priced under |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range reports {
		ch := r.CacheCheck
		if ch == nil {
			fmt.Fprintf(w, "| %s | %s | none | | | | | | | %s |\n", mdName(r.Session), r.Format, r.CacheModel)
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s (%s) | %d / %d | %s / %s | %s / %s | %+.1f%% | %.1f | %.1f%% | %s |\n", mdName(r.Session), r.Format, ch.Model, ch.Placement,
			ch.Calls, ch.Skipped, thousands(ch.RecordedRead), thousands(ch.RecordedWrite), thousands(ch.PredictedRead), thousands(ch.PredictedWrite),
			100*ch.CostError, 100*ch.ReadShareError, 100*ch.HitAgreement, r.CacheModel)
	}
	var fs []string
	for f := range checks {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	all := &replay.CacheCheck{}
	for _, f := range fs {
		ch := checks[f]
		all.Add(ch)
		fmt.Fprintf(w, "| **all %s** | %s | %s (%s) | %d / %d | %s / %s | %s / %s | %+.1f%% | %.1f | %.1f%% | %s |\n", f, f, ch.Model, ch.Placement,
			ch.Calls, ch.Skipped, thousands(ch.RecordedRead), thousands(ch.RecordedWrite), thousands(ch.PredictedRead), thousands(ch.PredictedWrite),
			100*ch.CostError, 100*ch.ReadShareError, 100*ch.HitAgreement, map[bool]string{true: "small: the model", false: "not small: prefix"}[ch.Small()])
	}
	if len(fs) > 1 {
		fmt.Fprintf(w, "| **all** | | | %d / %d | %s / %s | %s / %s | %+.1f%% | %.1f | %.1f%% | |\n",
			all.Calls, all.Skipped, thousands(all.RecordedRead), thousands(all.RecordedWrite), thousands(all.PredictedRead), thousands(all.PredictedWrite),
			100*all.CostError, 100*all.ReadShareError, 100*all.HitAgreement)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "#### Per session")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each cell: effective cost / naive, cache share (cached / context tokens), history tokens / naive; then faults per 100 calls / share of calls with a fault (docs/replay.md, \"Faults\").")
	fmt.Fprintln(w)
	names := []string{}
	for _, res := range total {
		names = append(names, res.Strategy)
	}
	fmt.Fprintf(w, "| session | calls | calibration: overhead + scale × counted (method); mean error raw / calibrated | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|---|---|%s\n", strings.Repeat("---|", len(names)))
	for _, r := range reports {
		cal := r.Calibration
		cells := []string{}
		for _, name := range names {
			cell := "-" // declined (Report.Declined)
			for _, res := range r.Results {
				if t := res.Totals; res.Strategy == name {
					cell = fmt.Sprintf("%.2f / %.1f%% / %.2f; %s", t.CostVsNaive, 100*t.CacheShare, t.HistoryVsNaive, faultCell(t))
				}
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s | %d | %s + %.2f× (%s); %.0f%% / %.1f%% | %s |\n", mdName(r.Session), r.Calls, thousands(int64(cal.Overhead)), cal.Scale, cal.Method,
			100*cal.Error.Raw.Mean, 100*cal.Error.Fitted.Mean, strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "#### All %d sessions\n", len(reports))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| strategy | calls | context tokens | cached | written | cost (base-input tokens) | cost / naive | cost / naive capped | history / naive | rebases | cold | max context | calls over the window | reneeded / served | faults (calls) / page-ins | warms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range total {
		t := r.Totals
		name := r.Strategy
		if r.Sessions < len(reports) {
			name += fmt.Sprintf(" (%d of %d sessions)", r.Sessions, len(reports))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.1f%% | %s | %s | %.3f | %.3f | %.3f | %d | %d | %s | %d | %d / %d | %d (%d) / %d | %d |\n", name, thousands(int64(t.Calls)), thousands(t.Context),
			100*t.CacheShare, thousands(t.Written), thousands(int64(math.Round(t.Cost))), t.CostVsNaive, t.CostVsCapped, t.HistoryVsNaive, t.Rebases, t.Cold,
			thousands(int64(t.MaxContext)), t.OverWindow, t.Reneeded, t.Served, t.Faults, t.FaultCalls, t.PageIns, t.Warms)
	}
}

// faultCell is a strategy's faults on a session as the markdown's cells
// give them: faults per 100 calls / share of calls with a fault, "-" for
// the recorded strategy (its context is not known, so nothing is checked).
func faultCell(t replay.Totals) string {
	if t.Calls == 0 || t.Checked == 0 && t.Faults == 0 {
		return "faults -"
	}
	return fmt.Sprintf("faults %.1f / %.1f%%", 100*float64(t.Faults)/float64(t.Calls), 100*float64(t.FaultCalls)/float64(t.Calls))
}

// mdName is a session's file name without its directory and extension.
func mdName(path string) string {
	base := filepath.Base(path)
	conv := ""
	if i := strings.LastIndex(base, "#"); i > 0 {
		base, conv = base[:i], base[i:]
	}
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if j := strings.LastIndex(base, "__"); j > 0 && strings.Count(base, "__") == 2 {
		base = base[:j]
	}
	return base + conv
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// replayLegend explains every column of the totals tables.
const replayLegend = `columns (token counts are the provider's, calibrated; cost in base-input tokens; docs/replay.md):
  calls          model calls replayed
  context        tokens sent, summed over the calls (system prompt and tools included)
  history        context without the system prompt and tool definitions
  cached         share of the context read from the provider's cache, under the cache model the session is priced under
  written        tokens written to the cache (the rest of the context not cached is sent uncached), those at the head's
                 hour-long breakpoint (--head-ttl; JSON written_long) included
  cost           effective cost: written x write price (1.25 for the 5-minute TTL, 2 for one hour) + read x 0.1 + uncached x 1
  cost/naive     cost over the naive full history's (both under the same cache model)
  cost/capped    cost over the naive history capped at the window (naive_capped: what a harness could really send)
  history/naive  history tokens over the naive history's
  rebases        calls whose context does not extend the previous call's (recorded: fewer tokens read than the previous call cached)
  cold           calls with no cache to use: the first, and those after a gap longer than the TTL
  max context    the largest context of a call
  over window    calls whose context exceeds the window
  reneeded       tool calls asking again for an output the strategy had collapsed or cleared (same read or command, nothing written since)
  served         of those, the ones the model could have activated instead
  faults         distinctive strings (paths, identifiers, numbers, quoted lines) a response wrote whose only earlier sources
                 are outputs the strategy hid at that call (JSON: fault_strings per call, checked strings)
  fault calls    calls with a fault
  paged in       strings the context showed only through an output that read a hidden one back (re-read, activate, spill
                 file; JSON page_in_tokens: their cost)
  warms          warm requests the harness sent between calls to keep the cache alive (--warm; their price is in cost, their
                 reads are not in cached)
`

// replayPerCallLegend explains the per-call columns.
const replayPerCallLegend = `per-call columns: call number; msg, the index of the call's assistant message; time and gap s, when the call was made and the seconds since the previous; context, history, cached, written and cost as above for the call; cum cost, the running total; recorded, the tokens the harness recorded sending; flags: rebase, cold, over-window, reneeded/served, faults (with up to three strings and the message of their hidden source), page-ins (and the read-back tokens), warms (sent after the call); then the strategy's note on the call
`

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

// replayHelpVars are the strategy lists `replay --help` names, taken from
// the replay itself so that the help lists what a run replays.
func replayHelpVars() kong.Vars {
	return kong.Vars{"replay_defaults": strategyNames(replay.DefaultStrategies()), "replay_others": strategyNames(replay.OtherStrategies())}
}

// strategyNames joins the names of ss for help texts.
func strategyNames(ss []replay.Strategy) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name()
	}
	return strings.Join(names, ", ")
}
