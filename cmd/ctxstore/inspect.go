package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// The commands on sessions and contexts (docs/cli.md,
// docs/inspector.md): what the model saw at each call, and why each call
// cost what it did.

// costFlags are the cost model's flags, shared by the inspection commands.
type costFlags struct {
	Price float64       `name:"price" default:"0" placeholder:"USD" help:"Dollars per million base input tokens of a served session's calls (default: the price table's claude-sonnet-4-5, whose cache writes cost 1.25x and reads 0.1x). A recorded session's calls are priced per model from the table."`
	TTL   time.Duration `name:"ttl" default:"5m" help:"Prompt-cache lifetime: a call after a longer gap reads nothing from the cache."`
}

func (f costFlags) inspector(st store.Store) *inspect.Inspector {
	return inspect.New(st, inspect.Options{Prices: inspect.Prices{InputPerMTok: f.Price}, TTL: f.TTL, Formats: formats.Commits()})
}

type sessionsCmd struct {
	Since   string `name:"since" placeholder:"WHEN" help:"Only sessions active since WHEN: a time (RFC 3339), a date (2026-12-01), or a span back from now (90m, 24h, 7d)."`
	Project string `name:"project" placeholder:"TEXT" help:"Only sessions whose working directory contains TEXT."`
	Harness string `name:"harness" placeholder:"NAME" help:"Only sessions of this harness (claude-code, pi, ...)."`
	costFlags
}

// since reads --since: a time, a date, or a span back from now.
func since(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := parseTime(s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if n, err := strconv.Atoi(strings.TrimSuffix(s, "d")); err == nil && n > 0 && strings.HasSuffix(s, "d") {
		return now.AddDate(0, 0, -n), nil
	}
	return time.Time{}, usagef("--since %q: want a time (RFC 3339), a date (2026-12-01) or a span (90m, 24h, 7d)", s)
}

// Run implements sessions.
func (c *sessionsCmd) Run(a *app) error {
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	from, err := since(c.Since, time.Now())
	if err != nil {
		return err
	}
	ss, err := c.inspector(st).SessionsWhere(a.ctx, inspect.Filter{Since: from, Project: c.Project, Harness: c.Harness})
	if err != nil {
		return err
	}
	if a.cli.JSON {
		if ss == nil {
			ss = []inspect.Session{}
		}
		return a.printJSON(ss)
	}
	// Newest first. A recorded session (imported or captured, never
	// served) counts the model calls its harness recorded, priced per
	// model; a model without a price makes its cost "unknown".
	t := newTable(a.stdout, "SESSION", "NAME", "HARNESS", "PROJECT", "STARTED", "LAST CALL", "CALLS", "TOKENS", "CACHED", "COST")
	for _, s := range ss {
		last := "-"
		if s.LastCall != nil {
			last = s.LastCall.Local().Format("2006-01-02 15:04")
		}
		calls, tokens, cached, cost := strconv.Itoa(s.Calls), strconv.Itoa(s.TokensSent), pct(s.CachedShare), usd(s.CostUSD)
		if s.Recorded && s.Calls == 0 {
			calls, tokens, cached, cost = fmt.Sprintf("recorded (%d commits)", s.Commits), "-", "-", "-"
		}
		if s.CostUnknown {
			cost = "unknown"
		}
		t.row(s.ID, orDash(cut(s.Name, 48)), orDash(s.Harness), orDash(project(s.Cwd)), s.Started.Local().Format("2006-01-02 15:04"), last,
			calls, tokens, cached, cost)
	}
	return t.flush()
}

// project names a working directory by its last element.
func project(cwd string) string {
	cwd = strings.TrimRight(cwd, "/")
	if i := strings.LastIndexByte(cwd, '/'); i >= 0 && i < len(cwd)-1 {
		return cwd[i+1:]
	}
	return cwd
}

type sessionShowCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	Replay  bool   `name:"replay" help:"A recorded session: replay it to find what it would have cost with ctxstore managing its context (seconds per hundred calls), and store the answer for later views."`
	costFlags
}

// sessionShowJSON is session show --json: the session, and for a
// recorded one what it would have cost with ctxstore (when computed).
type sessionShowJSON struct {
	*inspect.SessionDetail
	WouldCost *inspect.WouldCost `json:"would_cost,omitempty"`
}

// Run implements session show.
func (c *sessionShowCmd) Run(a *app) error {
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	in := c.inspector(st)
	d, err := in.Session(a.ctx, c.Session)
	if err != nil {
		return err
	}
	if !d.Recorded {
		if d.Paging, err = in.Paging(a.ctx, c.Session); err != nil {
			return err
		}
	}
	var would *inspect.WouldCost
	if d.Recorded {
		if c.Replay {
			r, err := in.Replay(a.ctx, d.ID, "")
			if err != nil {
				return fmt.Errorf("replaying session %s: %w", d.ID, err)
			}
			if err := recorded.PutReplay(a.ctx, st, d.ID, *r); err != nil {
				return err
			}
		}
		if would, err = in.StoredWouldCost(a.ctx, d); err != nil {
			return err
		}
	}
	if a.cli.JSON {
		return a.printJSON(sessionShowJSON{SessionDetail: d, WouldCost: would})
	}
	w := a.textOut()
	fmt.Fprintf(w, "session   %s\n", d.ID)
	fmt.Fprintf(w, "name      %s\n", orDash(d.Name))
	fmt.Fprintf(w, "harness   %s\n", orDash(d.Harness))
	fmt.Fprintf(w, "cwd       %s\n", orDash(d.Cwd))
	fmt.Fprintf(w, "started   %s\n", d.Started.Local().Format(time.RFC3339))
	if d.Recorded {
		if d.LastCall != nil {
			fmt.Fprintf(w, "last      %s\n", d.LastCall.Local().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "recorded  imported or captured, never served\n")
		if d.Calls > 0 {
			cost := usd(d.CostUSD)
			if d.CostUnknown {
				cost = "unknown (no price for " + strings.Join(d.UnpricedModels, ", ") + ")"
			}
			fmt.Fprintf(w, "calls     %d recorded; last context %d tokens; %d tokens sent, %s from the cache\n",
				d.Calls, d.Tokens, d.TokensSent, pct(d.CachedShare))
			fmt.Fprintf(w, "cost      %s\n", cost)
		}
		fmt.Fprintf(w, "model     %s\n", orDash(d.Model))
		fmt.Fprintf(w, "source    %s\n", orDash(d.Source))
		fmt.Fprintf(w, "commits   %d context commits, %d branching\n", d.Commits, d.Branches)
		fmt.Fprintf(w, "ctxstore  %s\n", wouldLine(would))
		return printLost(w, d.Lost)
	}
	if d.LastCall != nil {
		fmt.Fprintf(w, "last call %s\n", d.LastCall.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "state     turn %d; %d objects indexed, %d in the pool, %d active, %d pinned\n", d.Turn, d.Index, d.Pool, d.Active, d.Pinned)
	fmt.Fprintf(w, "calls     %d (%d rebases); last context %d tokens; %d tokens sent, %s from the cache\n",
		d.Calls, d.Rebases, d.Tokens, d.TokensSent, pct(d.CachedShare))
	fmt.Fprintf(w, "cost      %s (%.0f base input tokens)\n", usd(d.CostUSD), d.Cost)
	fmt.Fprintf(w, "commits   %d context commits, %d branching\n", d.Commits, d.Branches)
	fmt.Fprintf(w, "paging    %s\n", pagingLine(d.Paging))
	return printLost(w, d.Lost)
}

// wouldLine says what a recorded session would have cost with ctxstore
// managing its context.
func wouldLine(w *inspect.WouldCost) string {
	if w == nil {
		return "what it would have cost with ctxstore: not computed yet (session show --replay)"
	}
	if w.RecordedCost <= 0 {
		return "what it would have cost with ctxstore: unknown (the transcript records no usage to compare with)"
	}
	stale := ""
	if w.Stale {
		stale = " (computed before the session grew: session show --replay)"
	}
	cost := "its recorded cost is unknown"
	if !w.CostUnknown {
		cost = fmt.Sprintf("%s instead of %s", usd(w.WouldUSD), usd(w.CostUSD))
	}
	return fmt.Sprintf("would have cost %.0f%% of what it did with ctxstore managing its context: %s; %d tokens sent instead of %d, %s from the cache%s",
		100*w.Ratio, cost, w.Context, w.RecordedContext, pct(w.CacheShare), stale)
}

// printLost prints what cache breaks cost a session, by cause.
func printLost(w io.Writer, lost []inspect.CauseTotal) error {
	if len(lost) == 0 {
		return nil
	}
	fmt.Fprintln(w, "cache breaks by cause:")
	t := newTable(w, "  CAUSE", "CALLS", "REWRITTEN TOKENS", "LOST")
	for _, l := range lost {
		t.row("  "+l.Cause, strconv.Itoa(l.Calls), strconv.Itoa(l.RewrittenTokens), usd(l.LostUSD))
	}
	return t.flush()
}

type callsCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	From    int    `name:"from" default:"1" help:"First call to list."`
	Limit   int    `name:"limit" default:"0" help:"List at most this many calls (0: all)."`
	costFlags
}

// Run implements calls.
func (c *callsCmd) Run(a *app) error {
	if c.Limit < 0 {
		return usagef("--limit must not be negative")
	}
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	cs, err := c.inspector(st).Calls(a.ctx, c.Session, inspect.Page{From: c.From, Limit: c.Limit})
	if err != nil {
		return err
	}
	var m *inspector.Managed
	if len(cs) > 0 && cs[0].Recorded {
		if m, err = loadManaged(a, st, c.Session); err != nil {
			return err
		}
	}
	if a.cli.JSON {
		if cs == nil {
			cs = []inspect.Call{}
		}
		if m != nil {
			return a.printJSON(withManaged(cs, m))
		}
		return a.printJSON(cs)
	}
	if len(cs) > 0 && cs[0].Recorded {
		return recordedCalls(a, cs, m)
	}
	t := newTable(a.stdout, "CALL", "TIME", "TOKENS", "CACHED", "COST", "BREAK", "REWRITTEN", "LOST", "REBASE", "COLLAPSED")
	for _, x := range cs {
		rebase := "-"
		if x.Rebased {
			rebase = x.Reason
		}
		t.row(strconv.Itoa(x.N), x.Time.Local().Format("15:04:05"), strconv.Itoa(x.Tokens), pct(x.CachedShare), usd(x.CostUSD),
			x.Break.CauseKey(), strconv.Itoa(x.Break.RewrittenTokens), usd(x.Break.LostUSD), rebase, collapsedText(x.Collapsed, x.StaleTokens))
	}
	return t.flush()
}

// recordedCalls prints a recorded session's calls: per request its lane
// (a sub-agent's), model, the usage the provider reported (uncached
// input, cache read, 5-minute and 1-hour cache writes, output), its cost
// for its model, and why the cache broke.
//
// For a session that went through managed mode (m not nil) each call also
// names the managed call that sent the model its managed form (MANAGED:
// its number in claude-code calls, "-" for a request passed on as Claude
// Code wrote it), what the model got as a share of what Claude Code asked
// to send (SENT) and how many outputs it saw collapsed (COLLAPSED).
func recordedCalls(a *app, cs []inspect.Call, m *inspector.Managed) error {
	head := []any{"CALL", "TIME", "LANE", "MODEL", "INPUT", "CACHE READ", "WRITE 5M", "WRITE 1H", "OUTPUT", "COST", "BREAK", "REWRITTEN", "LOST"}
	if m != nil {
		head = append(head, "MANAGED", "SENT", "COLLAPSED")
	}
	t := newTable(a.stdout, head...)
	for _, x := range cs {
		in, read, w5, w1, out := "-", "-", "-", "-", "-"
		if u := x.Usage; u != nil {
			in, read, w5, w1, out = strconv.FormatInt(u.Input, 10), strconv.FormatInt(u.CacheRead, 10), strconv.FormatInt(u.CacheWrite5m, 10),
				strconv.FormatInt(u.CacheWrite1h, 10), strconv.FormatInt(u.Output, 10)
		}
		cost, lost := usd(x.CostUSD), usd(x.Break.LostUSD)
		if x.CostUnknown {
			cost, lost = "unknown", "-"
		}
		row := []any{strconv.Itoa(x.N), x.Time.Local().Format("15:04:05"), orDash(x.Lane), orDash(x.Model), in, read, w5, w1, out,
			cost, x.Break.Cause, strconv.Itoa(x.Break.RewrittenTokens), lost}
		if m != nil {
			if mc, ok := m.For(x.N); ok {
				row = append(row, strconv.Itoa(mc.Call.N), sentShare(mc.Call), strconv.Itoa(mc.Call.Collapsed))
			} else {
				row = append(row, "-", "-", "-")
			}
		}
		t.row(row...)
	}
	return t.flush()
}

func collapsedText(cs []inspect.Collapsed, stale int) string {
	if len(cs) == 0 {
		if stale > 0 {
			return fmt.Sprintf("(%d stale tokens pending)", stale)
		}
		return "-"
	}
	var ids []string
	for i, c := range cs {
		if i == 3 {
			ids = append(ids, fmt.Sprintf("+%d more", len(cs)-3))
			break
		}
		ids = append(ids, shortID(c.ObjectID))
	}
	return fmt.Sprintf("%d: %s", len(cs), strings.Join(ids, ", "))
}

type callCmd struct {
	Session string `arg:"" placeholder:"SESSION" ref:"session" help:"The session id (or a prefix of it naming one session)."`
	N       int    `arg:"" placeholder:"N" help:"The call number (from 1)."`
	Raw     bool   `name:"raw" help:"Print the exact bytes of the context (the rendering prefix caching is judged on), nothing else; for a Claude Code session run through managed mode, the request the model got."`
	Asked   bool   `name:"asked" help:"With --raw, for a Claude Code session run through managed mode: print the request Claude Code asked to send (as its transcript recorded it) instead of what the model got."`
	Diff    int    `name:"diff" placeholder:"M" help:"Compare with call M: the shared prefix, then the blocks added, removed and kept."`
	Full    bool   `name:"full" help:"Print every block's text in full (default: the first lines of each)."`
	costFlags
}

// Run implements call.
func (c *callCmd) Run(a *app) error {
	if c.Raw && c.Diff != 0 {
		return usagef("--raw and --diff do not go together")
	}
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	if c.Asked && !c.Raw {
		return usagef("--asked goes with --raw")
	}
	in := c.inspector(st)
	if c.Diff != 0 {
		d, err := in.Diff(a.ctx, c.Session, c.Diff, c.N)
		if err != nil {
			return err
		}
		var shared *managedShared
		if m, err := loadManaged(a, st, c.Session); err != nil {
			return err
		} else if m != nil {
			shared = sharedOf(m, c.Diff, c.N)
		}
		if a.cli.JSON {
			if shared != nil {
				return a.printJSON(struct {
					*inspect.Diff
					Managed *managedShared `json:"managed"`
				}{d, shared})
			}
			return a.printJSON(d)
		}
		printDiff(a.textOut(), d, c.Full)
		if shared != nil {
			fmt.Fprintf(a.textOut(), "%s\n", shared)
		}
		return nil
	}
	v, err := in.Call(a.ctx, c.Session, c.N)
	if err != nil {
		return err
	}
	var mc *inspector.ManagedCall
	if v.Call.Recorded {
		m, err := loadManaged(a, st, c.Session)
		if err != nil {
			return err
		}
		if x, ok := m.For(c.N); ok {
			mc = &x
		}
	}
	if c.Raw {
		raw := v.Raw
		if mc != nil && !c.Asked {
			raw = mc.Sent
		}
		if a.cli.JSON {
			r := map[string]any{"call": c.N, "raw": string(raw)}
			if mc != nil {
				r["managed"] = !c.Asked
			}
			return a.printJSON(r)
		}
		_, err := a.stdout.Write(raw)
		return err
	}
	if a.cli.JSON {
		if mc != nil {
			return a.printJSON(struct {
				*inspect.CallView
				Managed *inspector.ManagedCall `json:"managed"`
			}{v, mc})
		}
		return a.printJSON(v)
	}
	w := a.textOut()
	x := v.Call
	if x.Recorded {
		printRecordedCall(w, c.Session, v)
		if mc != nil {
			printManagedCall(w, mc, c.Full)
		}
	} else {
		fmt.Fprintf(w, "call %d of session %s at %s: %d tokens (%d stale), %d bytes, %d blocks\n",
			x.N, c.Session, x.Time.Local().Format(time.RFC3339), x.Tokens, x.StaleTokens, x.Bytes, len(v.Blocks))
		fmt.Fprintf(w, "cache: %d tokens read (%s), %d written; cost %s\n", x.CachedTokens, pct(x.CachedShare), x.WrittenTokens, usd(x.CostUSD))
	}
	fmt.Fprintf(w, "break: %s — %s\n", x.Break.CauseKey(), x.Break.Detail)
	if x.Break.RewrittenTokens > 0 {
		fmt.Fprintf(w, "       %d tokens written again, %s lost\n", x.Break.RewrittenTokens, usd(x.Break.LostUSD))
	}
	fmt.Fprintln(w)
	for _, b := range v.Blocks {
		printBlock(w, " ", b, c.Full)
	}
	return nil
}

// printRecordedCall heads a recorded session's call: the request its
// harness sent (as recorded, or rebuilt from the conversation), the
// usage the provider reported and its cost for the model.
func printRecordedCall(w io.Writer, sid string, v *inspect.CallView) {
	x := v.Call
	how := "rebuilt from the conversation (the transcript does not hold the system prompt and tools)"
	if x.Exact {
		how = "as Claude Code recorded it (api-request)"
	}
	lane := ""
	if x.Lane != "" {
		lane = ", sub-agent " + x.Lane
	}
	fmt.Fprintf(w, "call %d of session %s%s at %s: %s, %d messages, %d bytes; the request %s\n",
		x.N, sid, lane, x.Time.Local().Format(time.RFC3339), orDash(x.Model), x.Items, x.Bytes, how)
	cost := usd(x.CostUSD)
	if x.CostUnknown {
		cost = "unknown"
	}
	if u := x.Usage; u != nil {
		fmt.Fprintf(w, "usage: %d input, %d read from the cache (%s), %d written for 5 minutes, %d for an hour, %d output; cost %s\n",
			u.Input, u.CacheRead, pct(x.CachedShare), u.CacheWrite5m, u.CacheWrite1h, u.Output, cost)
	} else {
		fmt.Fprintf(w, "usage: not recorded; about %d tokens (from the bytes); cost %s\n", x.Tokens, cost)
	}
}

func printBlock(w io.Writer, mark string, b inspect.Block, full bool) {
	cached := ""
	if b.Cached {
		cached = " cached"
	}
	fmt.Fprintf(w, "%s[%d] %s (%d tokens%s)\n", mark, b.Index, b.Label, b.Tokens, cached)
	lines := strings.Split(strings.TrimRight(b.Text, "\n"), "\n")
	if !full && len(lines) > 4 {
		lines = append(lines[:3:3], fmt.Sprintf("… %d more lines", len(lines)-3))
	}
	for _, l := range lines {
		if !full && len(l) > 160 {
			l = l[:157] + "..."
		}
		fmt.Fprintf(w, "%s    %s\n", mark, l)
	}
}

func printDiff(w io.Writer, d *inspect.Diff, full bool) {
	fmt.Fprintln(w, d.String())
	for _, e := range d.Entries {
		mark := map[string]string{"same": " ", "added": "+", "removed": "-"}[e.Op]
		printBlock(w, mark, e.Block, full)
	}
}

type objectCmd struct {
	ID      string `arg:"" placeholder:"ID" ref:"object" help:"The object id (a file's 64-hex id, a tool call id, chat:SESSION, ...; or a prefix of it naming one object)."`
	Session string `name:"session" placeholder:"SESSION" ref:"session" help:"Only look for the calls of this session (default: every session whose index holds the object)."`
	After   string `name:"after" placeholder:"SESSION" help:"Look at the sessions after this one (in id order): the next page, which the output names."`
}

// Run implements object.
func (c *objectCmd) Run(a *app) error {
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	o, err := inspect.New(st, inspect.Options{}).ObjectFrom(a.ctx, c.ID, c.Session, c.After)
	if err != nil {
		return err
	}
	if a.cli.JSON {
		return a.printJSON(o)
	}
	w := a.textOut()
	fmt.Fprintf(w, "object %s", o.ID)
	if o.Kind != "" {
		fmt.Fprintf(w, " (%s", o.Kind)
		if o.Nickname != "" {
			fmt.Fprintf(w, " %s", o.Nickname)
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintf(w, ": %d versions; used by %d sessions\n", len(o.Versions), len(o.Sessions))
	if o.Invalid != "" {
		fmt.Fprintf(w, "not a valid object: %s\n", o.Invalid)
	}
	for _, u := range o.Unreadable {
		fmt.Fprintf(w, "session %s left out, its state is unreadable: %s\n", u.Session, u.Error)
	}
	if o.More != "" {
		// An object's sessions are read a page at a time (inspect.ObjectFrom).
		fmt.Fprintf(w, "sessions looked at up to %s; the sessions after it: ctxstore object %s --after %s\n", o.More, o.ID, o.More)
	}
	t := newTable(w, "TX", "TX TIME", "VALID FROM", "CONTENT", "SHOWN")
	for _, v := range o.Versions {
		h := shortID(v.ContentHash)
		if v.Deleted {
			h = "deleted"
		}
		var shown []string
		for _, s := range v.Shown {
			r := fmt.Sprintf("%s calls %d-%d as %s", s.Session, s.From, s.To, s.As)
			if s.From == s.To {
				r = fmt.Sprintf("%s call %d as %s", s.Session, s.From, s.As)
			}
			shown = append(shown, r)
		}
		t.row(strconv.FormatInt(v.Tx, 10), v.TxTime.Local().Format(time.RFC3339), v.ValidTime.Local().Format(time.RFC3339), orDash(h), orDash(strings.Join(shown, "; ")))
	}
	return t.flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func usd(f float64) string {
	if f != 0 && f < 0.01 {
		return fmt.Sprintf("$%.4f", f)
	}
	return fmt.Sprintf("$%.2f", f)
}

// shortID shortens a 64-hex id for a table.
func shortID(id string) string {
	if len(id) > 16 {
		return id[:12] + "…"
	}
	return id
}

var _ = errors.New

// pagingLine says how a session's demand paging went, in one line.
func pagingLine(p *inspect.Paging) string {
	s := fmt.Sprintf("%d outputs shown as a preview", p.Previews)
	if p.Previews > 0 {
		s += fmt.Sprintf(", %d read back whole (fault rate %s: %d by activate, %d by a spill-file read, %d run again)",
			p.Faulted, pct(p.FaultRate), p.ByActivate, p.BySpillRead, p.ByRerun)
		if p.Partial > 0 {
			s += fmt.Sprintf(", %d spill-file reads of some lines", p.Partial)
		}
	}
	s += fmt.Sprintf("; %d shown collapsed, %d read back", p.Collapsed, p.CollapsedReadBack)
	switch {
	case p.PreviewDoublings == 1:
		s += "; the preview size doubled once (previews read back more often than 5%)"
	case p.PreviewDoublings > 1:
		s += fmt.Sprintf("; the preview size doubled %d times (previews read back more often than 5%%)", p.PreviewDoublings)
	}
	return s
}
