// Package replay replays a transcript (package transcript) call by call
// under several context strategies and reports, per model call and in
// total, what each would send and pay (docs/replay.md).
//
// Every assistant message the model produced is one call, whose context is
// every message before it. For each call and strategy: the context tokens;
// the cached-prefix tokens (the longest byte-identical prefix shared with
// the previous call's rendered context, 0 when the gap since the previous
// call exceeds the cache TTL); the effective cost, 1.25 x uncached + 0.1 x
// cached, in base-input tokens; whether the context rebased (does not
// extend the previous one); and the earlier tool outputs the call needed
// again (re-read, re-run) while the strategy had them collapsed, and of
// those the ones the model could have brought back by activation. All
// strategies are measured by the same code with the same tokenizer and the
// same calibration against the usage the harness recorded.
package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/cachewarm"
	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/context/tokens"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/internal/filelock"
	"github.com/ctxstore/ctxstore/store"
)

// Options configure Run.
type Options struct {
	// Strategies to replay (default DefaultStrategies()). The naive full
	// history is always replayed first, for the calibration and the ratios;
	// it is reported only if listed.
	Strategies []Strategy
	// Tokenizer counts tokens (default tokens.Default(), o200k_base).
	Tokenizer assemble.Tokenizer
	// Counter, when set, is used instead of a new Counter over Tokenizer
	// (share one across sessions to reuse its memo).
	Counter *Counter
	// TTL is the prompt-cache lifetime (default 5 minutes); Window the
	// model's context window in tokens (default 200,000).
	TTL    time.Duration
	Window int
	// HeadTTL is the lifetime ctxstore's strategies ask for on the
	// breakpoint at the end of the head (the harness's system prompt and
	// tools, and ctxstore's) once the session has paused
	// (assemble.Policy.HeadTTL), where they place the breakpoints
	// themselves (ctxstore's Pi extension; Claude Code places its own):
	// zero is DefaultHeadTTL; no longer than TTL, never (the head lives
	// TTL). Every other strategy keeps the harness's breakpoints and their
	// TTL (docs/replay.md).
	HeadTTL time.Duration
	// Calibrate is "fit" (default: Scale and Overhead by least squares),
	// "overhead" (Scale 1, Overhead the median difference) or "none".
	Calibrate string
	// Store, when set, is the store of the ctxstore strategies (each gets
	// its own session); else OpenStore opens one per strategy in a
	// temporary directory (the CLI passes a SQLite opener; replay opens no
	// backend itself). One of them is needed for the ctxstore strategies.
	Store     store.Store
	OpenStore func(ctx context.Context, dir string) (store.Store, error)
	// Dir is where temporary directories go (default os.TempDir()).
	Dir string
	// Progress, when set, is told of each strategy's progress.
	Progress func(strategy string, done, total int)
	// CacheModel is the provider cache model every strategy is priced
	// under: CacheAuto (default: the provider the transcript records,
	// checked against its recorded usage; the ideal prefix cache when the
	// check's error is not small), CacheAnthropic, CacheOpenAI (used
	// whatever the check says) or CachePrefix.
	CacheModel string
	// Warm is the harness's cache warming (WarmOff, the default,
	// WarmRunning or WarmIdle; warm.go): every strategy but the recorded
	// one, the naive baseline included, sends the same warm requests by
	// the same rule.
	Warm string
	// ClaudeCodeProxy, when set, replays the Claude Code sessions as sent
	// through ctxstore's Claude Code proxy (`ctxstore claude-code proxy`,
	// docs/claude-code.md) with this warming (WarmOff, WarmRunning or
	// WarmIdle, in place of Warm for them): every strategy but the
	// recorded one has the head cached for HeadTTL from the first request
	// that found the cache cold after the first (the proxy's rule), and
	// the proxy's warm requests.
	ClaudeCodeProxy string
	// HarnessChecks, when set, holds the checks of every session of a run
	// summed per harness (transcript format): with CacheAuto the decision
	// is taken on the harness's sum rather than on the session alone.
	HarnessChecks map[string]*CacheCheck
	// FaultList is how many of a call's faults Call.FaultStrings lists:
	// 0 is 3, a negative number all of them (the inspector's faults
	// page). Every fault is counted whatever it is.
	FaultList int
}

// DefaultHeadTTL is the head breakpoint's lifetime ctxstore's strategies
// ask for where they place the breakpoints (Options.HeadTTL).
const DefaultHeadTTL = time.Hour

// headTTL returns the head breakpoint's lifetime of a run: o.HeadTTL or
// DefaultHeadTTL, never shorter than the TTL (Anthropic takes a longer
// lifetime only before shorter ones, and the head is first).
func (o Options) headTTL() time.Duration {
	h := o.HeadTTL
	if h == 0 {
		h = DefaultHeadTTL
	}
	return max(h, o.TTL)
}

// DefaultStrategies returns the strategies replayed by default: the naive full
// history, Anthropic's clear_tool_uses (trigger 100k, keep 3; and with
// clear_at_least 20k), what the harness recorded, and ctxstore's stream and
// literal layouts.
func DefaultStrategies() []Strategy {
	return []Strategy{
		&Naive{},
		&NaiveCapped{},
		&ClearToolUses{},
		&ClearToolUses{ClearAtLeast: 20000},
		Recorded{},
		&Ctxstore{Layout: assemble.LayoutStream},
		&Ctxstore{Layout: assemble.LayoutLiteral},
	}
}

// OtherStrategies returns strategies replayed only when asked for: the
// batched reading of clear_tool_uses (what was cleared stays cleared),
// ctxstore's stream layout with a lean head (assemble.LeanHead) and with
// a bare head (assemble.LeanHead.Bare), and Claude Code through ctxstore's
// proxy in managed mode (ClaudeCodeManaged, Claude Code's sessions only).
func OtherStrategies() []Strategy {
	return []Strategy{
		&ClearToolUses{Batched: true},
		&ClearToolUses{ClearAtLeast: 20000, Batched: true},
		&Ctxstore{Layout: assemble.LayoutStream, LeanHead: true, Label: "ctxstore_stream_lean_head"},
		&Ctxstore{Layout: assemble.LayoutStream, BareHead: true, Label: "ctxstore_stream_bare_head"},
		&ClaudeCodeManaged{},
	}
}

// StrategyNames are the names of DefaultStrategies and OtherStrategies,
// for command lines.
func StrategyNames() []string {
	var out []string
	for _, s := range append(DefaultStrategies(), OtherStrategies()...) {
		out = append(out, s.Name())
	}
	return out
}

// Report is the replay of one session.
type Report struct {
	// Session names the transcript (its path, else its id).
	Session string `json:"session"`
	Format  string `json:"format"`
	// Messages and Calls count the session's messages and model calls.
	Messages int `json:"messages"`
	Calls    int `json:"calls"`
	// Tokenizer names the tokenizer; TTL and Window are the cost model's.
	Tokenizer  string  `json:"tokenizer"`
	TTLSeconds float64 `json:"ttl_seconds"`
	// HeadTTLSeconds is the lifetime of the head breakpoint of the
	// strategies that place their own (Options.HeadTTL).
	HeadTTLSeconds float64 `json:"head_ttl_seconds"`
	// Warm is the cache warming every strategy but the recorded one had
	// (Options.Warm).
	Warm string `json:"warm"`
	// ClaudeCodeProxy tells that the session was replayed as sent through
	// ctxstore's Claude Code proxy (Options.ClaudeCodeProxy; Warm is then
	// the proxy's).
	ClaudeCodeProxy bool        `json:"claude_code_proxy,omitempty"`
	Window          int         `json:"window"`
	Calibration     Calibration `json:"calibration"`
	// CacheCheck is the provider cache model checked against the usage
	// the harness recorded (nil with CachePrefix); CacheModel the model
	// the strategies were priced under, and CacheNote why.
	CacheCheck *CacheCheck `json:"cache_check,omitempty"`
	CacheModel string      `json:"cache_model"`
	CacheNote  string      `json:"cache_note,omitempty"`
	// Read says what reading the transcript set aside and found damaged.
	Read ReadSummary `json:"read"`
	// Naive is the naive full history's totals, which the ratios divide by.
	Naive Totals `json:"naive"`
	// Results holds one result per strategy, in the order asked, but for
	// the strategies Declined says have nothing to report on this session
	// (recorded, on a transcript without usage).
	Results  []*Result  `json:"results"`
	Declined []Declined `json:"declined,omitempty"`
}

// Declined is a strategy left out of a session's results, and why.
type Declined struct {
	Strategy string `json:"strategy"`
	Reason   string `json:"reason"`
}

// ReadSummary counts what the transcript reader set aside (docs/replay.md,
// "What comes out"), and the assistant messages that are not calls.
type ReadSummary struct {
	Problems   int `json:"problems"`
	Sidechain  int `json:"sidechain"`
	OffBranch  int `json:"off_branch"`
	Orphans    int `json:"orphans"`
	Duplicates int `json:"duplicates"`
	Unanswered int `json:"unanswered"`
	Aborted    int `json:"aborted"`
	Unknown    int `json:"unknown"`
	NotCalls   int `json:"not_calls"`
	// Conversation and Conversations say which conversation of the file
	// this is (1-based) and how many the file holds (docs/replay.md).
	Conversation  int `json:"conversation,omitempty"`
	Conversations int `json:"conversations,omitempty"`
}

func readSummary(s *transcript.Session, calls int) ReadSummary {
	r := s.Report
	sum := ReadSummary{Problems: len(r.Problems), Sidechain: r.Sidechain, OffBranch: r.OffBranch, Orphans: r.Orphans,
		Duplicates: r.Duplicates, Unanswered: r.Unanswered, Aborted: r.Aborted}
	for _, n := range r.Unknown {
		sum.Unknown += n
	}
	for _, m := range s.Messages {
		if m.Role == conversation.RoleAssistant {
			sum.NotCalls++
		}
	}
	sum.NotCalls -= calls
	return sum
}

// Result is one strategy's replay of a session.
type Result struct {
	Strategy string `json:"strategy"`
	// Sessions is, in a sum (Sum), how many sessions the strategy was
	// replayed on; its ratios are against naive on those sessions only.
	Sessions int      `json:"sessions,omitempty"`
	Totals   Totals   `json:"totals"`
	Calls    []Call   `json:"calls"`
	Notes    []string `json:"notes,omitempty"`
}

// Call is one model call under one strategy. Token counts are calibrated
// (provider tokens); Cost is in base-input tokens.
type Call struct {
	N int `json:"n"`
	// Message is the index of the call's assistant message.
	Message int       `json:"message"`
	Time    time.Time `json:"time"`
	// Gap is the time since the previous call, in seconds.
	Gap float64 `json:"gap_s"`
	// Context is the tokens sent; History the part after the system prompt
	// and tool definitions; Cached the cached prefix.
	Context int `json:"context"`
	History int `json:"history"`
	Cached  int `json:"cached"`
	// Written is what the call writes to the provider's cache (the rest,
	// Context - Cached - Written, is sent uncached); WrittenLong the part
	// of it written at the head's longer lifetime (Step.HeadTTL; priced at
	// LongTTLWritePrice, the rest of Written at the TTL's price).
	Written     int `json:"written"`
	WrittenLong int `json:"written_long,omitempty"`
	// Cost is this call's effective cost, the warm requests sent after it
	// included; CumCost the running total.
	Cost    float64 `json:"cost"`
	CumCost float64 `json:"cum_cost"`
	// Warms counts the warm requests the harness sent after this call,
	// re-sending its request (Options.Warm), before the next call or,
	// after the last, as long as its rules allowed; WarmCost is their
	// price (cache reads and one output token each, in Cost). The cache
	// share and the token counts are the calls' alone.
	Warms    int     `json:"warms,omitempty"`
	WarmCost float64 `json:"warm_cost,omitempty"`
	// Rebased: the context does not extend the previous call's (for
	// recorded usage: fewer tokens read from the cache than the previous
	// call cached). Cold: no cached prefix could be used (the first call,
	// or a gap past the TTL).
	Rebased bool `json:"rebased,omitempty"`
	Cold    bool `json:"cold,omitempty"`
	// WarmHead: a cold call whose head (the harness's system prompt and
	// tools, the calibrated overhead), up to what the harness recorded
	// reading, the provider served from the cache all the same (another
	// session keeps it warm); provider cache models only.
	WarmHead bool `json:"warm_head,omitempty"`
	// LongHead: a cold call that read its head from the head breakpoint's
	// longer-lived entry (Step.HeadTTL).
	LongHead bool `json:"long_head,omitempty"`
	// OverWindow: the context exceeds the model's window.
	OverWindow bool   `json:"over_window,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Reneeded counts tool calls of this call's response that asked again
	// for an output the strategy had collapsed; Served those of them the
	// model could have activated instead.
	Reneeded int `json:"reneeded,omitempty"`
	Served   int `json:"served,omitempty"`
	// Checked counts the distinctive strings this call's response wrote
	// that an earlier message holds; Faults those whose only earlier
	// sources are outputs the strategy did not show in full, FaultStrings
	// the first of them; PageIns those the context showed only through an
	// output that read a hidden one back, and PageInTokens the tokens of
	// the read-back outputs first used here (docs/replay.md, "Faults").
	Checked      int     `json:"checked,omitempty"`
	Faults       int     `json:"faults,omitempty"`
	FaultStrings []Fault `json:"fault_strings,omitempty"`
	PageIns      int     `json:"page_ins,omitempty"`
	PageInTokens int     `json:"page_in_tokens,omitempty"`
	// Recorded is what the harness recorded sending for this call (0 if
	// nothing).
	Recorded int64 `json:"recorded,omitempty"`
}

// Totals sum a strategy's calls.
type Totals struct {
	Calls   int   `json:"calls"`
	Context int64 `json:"context"`
	History int64 `json:"history"`
	Cached  int64 `json:"cached"`
	Written int64 `json:"written"`
	// WrittenLong is the part of Written at the head's longer lifetime.
	WrittenLong int64   `json:"written_long,omitempty"`
	Cost        float64 `json:"cost"`
	// Warms and WarmCost sum the calls' warm requests (in Cost).
	Warms    int     `json:"warms,omitempty"`
	WarmCost float64 `json:"warm_cost,omitempty"`
	// CacheShare is Cached / Context.
	CacheShare float64 `json:"cache_share"`
	Rebases    int     `json:"rebases"`
	Cold       int     `json:"cold"`
	MaxContext int     `json:"max_context"`
	OverWindow int     `json:"over_window"`
	Reneeded   int     `json:"reneeded"`
	Served     int     `json:"served"`
	// Checked, Faults, PageIns and PageInTokens sum the calls';
	// FaultCalls counts the calls with a fault.
	Checked      int   `json:"checked"`
	Faults       int   `json:"faults"`
	FaultCalls   int   `json:"fault_calls"`
	PageIns      int   `json:"page_ins"`
	PageInTokens int64 `json:"page_in_tokens"`
	// CostVsNaive, ContextVsNaive and HistoryVsNaive are ratios to the
	// naive full history's totals; CostVsCapped is the cost's ratio to the
	// naive history capped at the window (when naive_capped is replayed).
	CostVsNaive    float64 `json:"cost_vs_naive"`
	CostVsCapped   float64 `json:"cost_vs_capped,omitempty"`
	ContextVsNaive float64 `json:"context_vs_naive"`
	HistoryVsNaive float64 `json:"history_vs_naive"`
}

// isCall tells a model call from an assistant message the harness made
// itself (Claude Code's "<synthetic>" errors) or that cost nothing (usage
// recorded as all zero: an aborted request).
func isCall(m conversation.Message) bool {
	if m.Role != conversation.RoleAssistant || m.Model == "<synthetic>" {
		return false
	}
	return m.Usage == nil || m.Usage.Sent() > 0 || m.Usage.Output > 0
}

// calls lists the model calls of a session with their times: the time of
// the last message before each (when the harness sent the request), never
// going back. Messages without a time take the previous one; a session
// without times gets one second per call.
func calls(s *transcript.Session) []*CallInput {
	var out []*CallInput
	var clock time.Time
	timed := false
	for _, m := range s.Messages {
		if !m.Time.IsZero() {
			timed = true
			break
		}
	}
	synthetic := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, m := range s.Messages {
		if isCall(m) {
			t := clock
			if !timed {
				t = synthetic.Add(time.Duration(len(out)) * time.Second)
			}
			out = append(out, &CallInput{N: len(out) + 1, Index: i, Messages: s.Messages[:i:i], Time: t, Usage: m.Usage})
		}
		if m.Time.After(clock) {
			clock = m.Time
		}
	}
	if timed && len(out) > 0 && out[0].Time.IsZero() {
		first := clock
		for _, m := range s.Messages {
			if !m.Time.IsZero() {
				first = m.Time
				break
			}
		}
		for _, c := range out {
			if c.Time.IsZero() {
				c.Time = first
			}
		}
	}
	return out
}

// Run replays one session.
func Run(ctx context.Context, s *transcript.Session, o Options) (*Report, error) {
	if o.TTL <= 0 {
		o.TTL = 5 * time.Minute
	}
	if o.Window <= 0 {
		o.Window = 200000
	}
	if o.Strategies == nil {
		o.Strategies = DefaultStrategies()
	}
	headTTL := o.headTTL()
	warm, err := checkWarm(o.Warm)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	proxy := o.ClaudeCodeProxy != "" && s.Format == transcript.FormatClaudeCode
	if o.ClaudeCodeProxy != "" {
		pw, err := checkWarm(o.ClaudeCodeProxy)
		if err != nil {
			return nil, fmt.Errorf("replay: Claude Code proxy: %w", err)
		}
		if proxy {
			warm = pw
		}
	}
	counter := o.Counter
	if counter == nil {
		tok := o.Tokenizer
		if tok == nil {
			tok = tokens.Default()
		}
		counter = NewCounter(tok)
	}
	name := s.Path
	if name == "" {
		name = s.ID
	}
	rep := &Report{Session: name, Format: string(s.Format), Messages: len(s.Messages),
		Tokenizer: tokenizerName(counter.Tokenizer()), TTLSeconds: o.TTL.Seconds(), HeadTTLSeconds: headTTL.Seconds(), Warm: warm, ClaudeCodeProxy: proxy, Window: o.Window}
	cs := calls(s)
	rep.Calls = len(cs)
	rep.Read = readSummary(s, len(cs))

	root, release, err := replayDir(ctx, o.Dir, name)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer release()

	// The naive history first: the calibration is fitted on it, and every
	// ratio is to it.
	env := &Env{Session: s, Counter: counter, Calibration: identity, TTL: o.TTL, HeadTTL: headTTL, Window: o.Window, Warm: warm, Proxy: proxy}
	naiveRaw, err := measureRaw(ctx, &Naive{}, env, cs, o.Progress)
	if err != nil {
		return nil, err
	}
	// The first compaction after the first call: from there on the harness
	// sent a compacted context (a summary that opens the file is part of
	// the naive history too).
	first := len(s.Messages)
	for _, k := range s.CompactionAt {
		if len(cs) > 0 && k > cs[0].Index {
			first = k
			break
		}
	}
	rep.Calibration = calibrate(cs, naiveRaw, first, o.Calibrate)
	env.Calibration = rep.Calibration
	if err := chooseCache(ctx, rep, env, cs, s, o); err != nil {
		return nil, err
	}

	// The fault rule's index, built once for every strategy.
	idx := make([]int, len(cs))
	for i, c := range cs {
		idx[i] = c.Index
	}
	env.faults = newFaultIndex(s.Messages, idx)
	switch {
	case o.FaultList > 0:
		env.faults.list = o.FaultList
	case o.FaultList < 0:
		env.faults.list = maxNeedsPerCall
	}
	seen := map[string]int{}
	for _, st := range o.Strategies {
		e := *env
		// The strategy's name, not its place in the list, names its
		// directory and session: the mirrored files' paths (and so their
		// ids) and the session id show in the contexts, and a strategy's
		// numbers must not depend on which others run beside it.
		tag := sanitize(st.Name())
		if seen[tag]++; seen[tag] > 1 {
			tag += fmt.Sprintf("-%d", seen[tag])
		}
		e.Dir = filepath.Join(root, tag)
		if err := os.MkdirAll(e.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		e.Store, e.OpenStore = o.Store, o.OpenStore
		// The session id shows in the contexts (file ids, the resolver's
		// default id), so it depends only on the session and the strategy:
		// the same file gives the same numbers on every run. A shared store (Options.Store) holds every run's sessions, so
		// there the id also carries the time.
		e.SessionID = fmt.Sprintf("replay-%s-%s", sanitize(s.ID), tag)
		if o.Store != nil {
			e.SessionID += fmt.Sprintf("-%d", time.Now().UnixNano())
		}
		if h, ok := st.(harnessOnly); ok && h.Harness() != s.Format {
			rep.Declined = append(rep.Declined, Declined{Strategy: st.Name(), Reason: fmt.Sprintf("not applicable: a strategy of %s sessions, this one is %s", h.Harness(), s.Format)})
			continue
		}
		if d, ok := st.(decliner); ok {
			if why := d.Declines(cs); why != "" {
				rep.Declined = append(rep.Declined, Declined{Strategy: st.Name(), Reason: why})
				continue
			}
		}
		res, err := runStrategy(ctx, st, &e, cs, o.Progress)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res)
	}
	naive := totalsOf(naiveRaw, rep.Calibration, counter, writePriceFor(env.TTL))
	if env.cacheModel() != CachePrefix || env.Warm != WarmOff || env.Proxy {
		// The naive totals the ratios divide by, under the same model and
		// with the same warming.
		res, err := runStrategy(ctx, &Naive{}, env, cs, nil)
		if err != nil {
			return nil, err
		}
		naive = res.Totals
	}
	rep.Naive = naive
	capped := 0.0
	for _, r := range rep.Results {
		if r.Strategy == (&NaiveCapped{}).Name() {
			capped = r.Totals.Cost
		}
	}
	for _, r := range rep.Results {
		t := &r.Totals
		t.CostVsCapped = ratio(t.Cost, capped)
		t.CostVsNaive = ratio(t.Cost, naive.Cost)
		t.ContextVsNaive = ratio(float64(t.Context), float64(naive.Context))
		t.HistoryVsNaive = ratio(float64(t.History), float64(naive.History))
	}
	return rep, nil
}

// chooseCache picks the cache model the strategies are priced under and
// checks it against the recorded usage.
func chooseCache(ctx context.Context, rep *Report, env *Env, cs []*CallInput, s *transcript.Session, o Options) error {
	provider, model := sessionProvider(s)
	env.Placement, env.Model = placementOf(string(s.Format)), model
	want := o.CacheModel
	if want == "" {
		want = CacheAuto
	}
	if _, err := newCacheSim(want, "", "", time.Minute); err != nil && want != CacheAuto {
		return fmt.Errorf("replay: %w", err)
	}
	use := want
	if want == CacheAuto {
		use = provider
		if use == "" {
			use = CachePrefix
			rep.CacheNote = "no known provider recorded: ideal prefix cache"
		}
	}
	env.Cache = use
	if use != CachePrefix {
		chk, err := checkCache(ctx, env, cs, provider)
		if err != nil {
			return err
		}
		rep.CacheCheck = chk
		if want == CacheAuto {
			judged, on := chk, "this session"
			if h := o.HarnessChecks[string(s.Format)]; h != nil {
				judged, on = h, "the harness's sessions"
			}
			switch {
			case judged.Calls == 0:
				env.Cache = CachePrefix
				rep.CacheNote = fmt.Sprintf("no recorded usage on %s to check the %s model against: priced with the ideal prefix cache", on, use)
			case !judged.Small():
				env.Cache = CachePrefix
				rep.CacheNote = fmt.Sprintf("the %s model's error on %s is not small (cost %+.1f%%, read share %.1f points): priced with the ideal prefix cache", use, on, 100*judged.CostError, 100*judged.ReadShareError)
			}
		}
	}
	rep.CacheModel = env.cacheModel()
	return nil
}

// Sum adds up the results of several sessions per strategy (in the order
// each first appears: a strategy the first session declined comes after
// the others); ratios are of the sums, each against naive (and
// naive_capped) over the sessions the strategy ran on (Result.Sessions; a
// strategy declines some: recorded without usage); calls are left out.
func Sum(reports []*Report) []Result {
	var out []Result
	index := map[string]int{}
	var naive []Totals // per strategy: naive over the sessions it covers
	var capped []float64
	for _, rep := range reports {
		cp := -1.0
		for _, r := range rep.Results {
			if r.Strategy == (&NaiveCapped{}).Name() {
				cp = r.Totals.Cost
			}
		}
		for _, r := range rep.Results {
			k, ok := index[r.Strategy]
			if !ok {
				k = len(out)
				index[r.Strategy] = k
				out = append(out, Result{Strategy: r.Strategy})
				naive = append(naive, Totals{})
				capped = append(capped, 0)
			}
			out[k].Sessions++
			naive[k].Context += rep.Naive.Context
			naive[k].History += rep.Naive.History
			naive[k].Cost += rep.Naive.Cost
			if cp >= 0 && capped[k] >= 0 {
				capped[k] += cp
			} else {
				capped[k] = -1 // naive_capped did not run on every session this one did
			}
			t, u := &out[k].Totals, r.Totals
			t.Calls += u.Calls
			t.Context += u.Context
			t.History += u.History
			t.Cached += u.Cached
			t.Written += u.Written
			t.WrittenLong += u.WrittenLong
			t.Cost += u.Cost
			t.Warms += u.Warms
			t.WarmCost += u.WarmCost
			t.Rebases += u.Rebases
			t.Cold += u.Cold
			t.MaxContext = max(t.MaxContext, u.MaxContext)
			t.OverWindow += u.OverWindow
			t.Reneeded += u.Reneeded
			t.Served += u.Served
			t.Checked += u.Checked
			t.Faults += u.Faults
			t.FaultCalls += u.FaultCalls
			t.PageIns += u.PageIns
			t.PageInTokens += u.PageInTokens
		}
	}
	for k := range out {
		t, n := &out[k].Totals, naive[k]
		t.CostVsCapped = ratio(t.Cost, max(capped[k], 0))
		t.CacheShare = ratio(float64(t.Cached), float64(t.Context))
		t.CostVsNaive = ratio(t.Cost, n.Cost)
		t.ContextVsNaive = ratio(float64(t.Context), float64(n.Context))
		t.HistoryVsNaive = ratio(float64(t.History), float64(n.History))
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		s = "session"
	}
	return s
}

func tokenizerName(t assemble.Tokenizer) string {
	switch v := t.(type) {
	case assemble.BytesTokenizer:
		return "bytes/4"
	case interface{ Name() string }:
		return v.Name()
	default:
		return fmt.Sprintf("%T", t)
	}
}

// rawCall is one naive call in raw tokens.
type rawCall struct {
	r    raw
	hist int // raw history tokens
}

// measureRaw replays a rendering strategy and returns its raw counts.
func measureRaw(ctx context.Context, st Strategy, env *Env, cs []*CallInput, progress func(string, int, int)) ([]rawCall, error) {
	if err := st.Begin(ctx, env); err != nil {
		return nil, err
	}
	m := newMeter(env.Counter)
	out := make([]rawCall, 0, len(cs))
	for i, c := range cs {
		step, err := st.Step(ctx, c)
		if err != nil {
			return nil, err
		}
		r := m.measure(step.Bytes, step.HeadLen, c.Time, env.TTL)
		out = append(out, rawCall{r: r, hist: r.context - r.head})
		if progress != nil && (i%25 == 0 || i == len(cs)-1) {
			progress("calibration (naive)", i+1, len(cs))
		}
	}
	_, err := st.End(ctx)
	return out, err
}

// totalsOf computes the calibrated totals of raw naive calls.
func totalsOf(rs []rawCall, cal Calibration, c *Counter, wp float64) Totals {
	empty := c.Count([]byte(EmptyHead))
	var t Totals
	for _, r := range rs {
		call := priced(r.r, cal, empty, wp)
		t.Context += int64(call.Context)
		t.History += int64(call.History)
		t.Cost += call.Cost
	}
	return t
}

// priced turns a raw measurement into a calibrated call priced under the
// prefix cache, writes at wp (writePriceFor the TTL).
func priced(r raw, cal Calibration, emptyHead int, wp float64) Call {
	hist := r.context - r.head
	extra := max(r.head-emptyHead, 0)
	c := Call{History: cal.scale(hist)}
	c.Context = cal.Overhead + cal.scale(extra+hist)
	if r.cached > 0 {
		c.Cached = min(cal.Overhead+cal.scale(max(r.cached-emptyHead, 0)), c.Context)
	}
	c.Cost = wp*float64(c.Context-c.Cached) + ReadPrice*float64(c.Cached)
	return c
}

// priceLongHead prices again, under the prefix cache, a call whose head
// breakpoint lives longer than the TTL: when the head is not read as part
// of the shared prefix, it is read all the same if live (an earlier call
// with a long-lived head breakpoint read or wrote this head within that
// lifetime), and else written at LongTTLWritePrice; the rest as priced.
func priceLongHead(c *Call, r raw, cal Calibration, emptyHead int, wp float64, live bool) {
	head := headTokens(r, cal, emptyHead, c.Context)
	if c.Cached < head {
		if live {
			c.Cached = head
		} else {
			c.WrittenLong = head - c.Cached
		}
	}
	c.Written = c.Context - c.Cached
	c.Cost = LongTTLWritePrice*float64(c.WrittenLong) + wp*float64(c.Written-c.WrittenLong) + ReadPrice*float64(c.Cached)
}

// headTokens is a call's head in provider tokens: the calibrated
// overhead (the harness's own prompt and tools) and the rendered head
// beyond the empty one, at most the context.
func headTokens(r raw, cal Calibration, emptyHead, context int) int {
	return min(cal.Overhead+cal.scale(max(r.head-emptyHead, 0)), context)
}

// runStrategy replays one strategy over the calls.
func runStrategy(ctx context.Context, st Strategy, env *Env, cs []*CallInput, progress func(string, int, int)) (*Result, error) {
	res := &Result{Strategy: st.Name(), Calls: make([]Call, 0, len(cs))}
	if err := st.Begin(ctx, env); err != nil {
		return nil, err
	}
	m := newMeter(env.Counter)
	empty := env.Counter.Count([]byte(EmptyHead))
	sim, err := newCacheSim(env.cacheModel(), env.Placement, env.Model, env.TTL)
	if err != nil {
		return nil, err
	}
	need := newNeeds()
	pagedIn := map[int]bool{}         // read-back outputs counted in PageInTokens
	var prevTime, longUntil time.Time // longUntil: when the head cached for long expires (prefix cache)
	var touched time.Time             // the last request of the cache: the previous call or a warm request after it
	paused := false                   // a request found the cache cold after the first (Env.Proxy)
	var prevRec *conversation.Usage
	cum := 0.0
	t := &res.Totals
	next := 0 // next message whose tool calls need indexing
	for i, in := range cs {
		if touched.After(prevTime) {
			// The strategy is told of the warm requests since the previous
			// call (as the Pi extension tells the service).
			w := *in
			w.Renewed = touched
			in = &w
		}
		step, err := st.Step(ctx, in)
		if err != nil {
			_, _ = st.End(ctx)
			return nil, err
		}
		var c Call
		var q *cacheRequest // the call's request, under a provider model
		longHeadTokens := 0 // the head's tokens, when cached for long: a miss reads it
		cold := i == 0 || in.Time.Sub(touched) > env.TTL
		if env.Proxy && step.Recorded == nil && (step.Breakpoints == nil || step.proxied) {
			// ctxstore's Claude Code proxy asks for the head's longer
			// lifetime from the first request that found the cache cold
			// after the first (docs/claude-code.md, "The proxy").
			paused = paused || i > 0 && cold
			if paused && env.HeadTTL > env.TTL {
				step.HeadTTL = env.HeadTTL
			}
		}
		if step.Recorded != nil {
			u := step.Recorded
			c.Context = int(u.Sent())
			c.Cached = int(u.CacheRead)
			c.Written = int(u.CacheWrite)
			c.WrittenLong = int(recordedLong(u))
			c.History = max(c.Context-env.Calibration.Overhead, 0)
			c.Cost = recordedCost(u, WritePrice)
			c.Rebased = i > 0 && !cold && prevRec != nil && u.CacheRead < prevRec.CacheRead+prevRec.CacheWrite
			prevRec = u
		} else {
			r := m.measure(step.Bytes, step.HeadLen, in.Time, env.TTL)
			wp := writePriceFor(env.TTL)
			c = priced(r, env.Calibration, empty, wp)
			c.Written = c.Context - c.Cached
			longHead := step.HeadTTL > env.TTL
			if longHead {
				longHeadTokens = headTokens(r, env.Calibration, empty, c.Context)
			}
			if sim == nil && longHead {
				// The head is read if a call that asked for the long
				// lifetime wrote or read it within that lifetime.
				live := r.sameHead && !longUntil.IsZero() && !in.Time.After(longUntil)
				priceLongHead(&c, r, env.Calibration, empty, wp, live)
				c.LongHead = cold && c.Cached > 0
				longUntil = in.Time.Add(step.HeadTTL)
			}
			if sim != nil {
				q = env.request(r, empty, in.Time, step.Breakpoints, step.HeadTTL, sim)
				q.model = env.Session.Messages[in.Index].Model
				u := sim.call(q)
				c.LongHead = cold && longHead && u.read > 0
				if h := env.Calibration.Overhead; cold && in.Usage != nil && in.Usage.CacheRead > 0 && u.read < min(h, int(in.Usage.CacheRead)) {
					// The record shows part of the harness's head served
					// from the cache at a call the replay starts cold (the
					// first, or after a gap past the TTL): another session
					// of the same account keeps the same system prompt and
					// tools warm. Every strategy gets as much of its head:
					// they share that head. The head is what a long-lived
					// head breakpoint writes, so that write goes first.
					warm := min(h, int(in.Usage.CacheRead))
					shift := min(warm-u.read, u.writeLong+u.write)
					long := min(shift, u.writeLong)
					u.read, u.writeLong, u.write = u.read+shift, u.writeLong-long, u.write-(shift-long)
					c.WarmHead = true
				}
				c.Context, c.Cached, c.Written, c.WrittenLong = q.total(), u.read, u.write+u.writeLong, u.writeLong
				c.Cost = u.cost(sim)
			}
			c.Rebased = i > 0 && !r.extended
		}
		touched = in.Time
		if env.Warm != WarmOff && step.Recorded == nil {
			// The harness keeps this call's cache entry warm until the next
			// call, re-sending its request (warm.go).
			var next time.Time
			if i+1 < len(cs) {
				next = cs[i+1].Time
			}
			wp, rp := writePriceFor(env.TTL), ReadPrice
			if sim != nil {
				wp, rp = sim.writePrice(), sim.readPrice()
			}
			// The agent runs on after a response that asked for tools, but
			// for the last call of the transcript: nothing followed it, so
			// the agent stopped there and the harness waits (idle).
			running := len(env.Session.Messages[in.Index].ToolCalls) > 0 && i+1 < len(cs)
			for _, at := range warmTimes(env.Warm, env.TTL, in.Time, next, running, cachewarm.Budget(c.Context, missTokens(c.Context, env.Calibration.scale(step.Stale), longHeadTokens), longHeadTokens, wp, rp)) {
				if q != nil {
					w := *q
					w.at = at
					c.WarmCost += sim.call(&w).cost(sim)
				} else {
					c.WarmCost += ReadPrice * float64(c.Context)
					if step.HeadTTL > env.TTL {
						longUntil = at.Add(step.HeadTTL)
					}
				}
				c.WarmCost += WarmOutputPrice
				c.Warms++
				touched = at
			}
			c.Cost += c.WarmCost
			m.touch(touched)
		}
		c.N, c.Message, c.Time, c.Reason, c.Cold = in.N, in.Index, in.Time, step.Reason, cold
		if i > 0 {
			c.Gap = in.Time.Sub(prevTime).Seconds()
		}
		if in.Usage != nil {
			c.Recorded = in.Usage.Sent()
		}
		c.OverWindow = c.Context > env.Window
		// What this call's response asks for again.
		for ; next < in.Index; next++ {
			need.note(in.Messages[next])
		}
		if resp := env.Session.Messages[in.Index]; step.Recorded == nil {
			c.Reneeded, c.Served = need.check(resp, step)
			if env.faults != nil {
				fc := env.faults.check(in.Index, step)
				c.Checked, c.Faults, c.FaultStrings, c.PageIns = fc.checked, fc.faults, fc.examples, fc.pageIns
				for _, i := range fc.readBacks {
					if !pagedIn[i] {
						pagedIn[i] = true
						c.PageInTokens += env.Calibration.scale(env.Counter.tok.Count(env.Session.Messages[i].Output))
					}
				}
			}
		}
		cum += c.Cost
		c.CumCost = cum
		res.Calls = append(res.Calls, c)

		t.Calls++
		t.Context += int64(c.Context)
		t.History += int64(c.History)
		t.Cached += int64(c.Cached)
		t.Written += int64(c.Written)
		t.WrittenLong += int64(c.WrittenLong)
		t.Cost += c.Cost
		t.Warms += c.Warms
		t.WarmCost += c.WarmCost
		t.MaxContext = max(t.MaxContext, c.Context)
		if c.Rebased {
			t.Rebases++
		}
		if c.Cold {
			t.Cold++
		}
		if c.OverWindow {
			t.OverWindow++
		}
		t.Reneeded += c.Reneeded
		t.Served += c.Served
		t.Checked += c.Checked
		t.Faults += c.Faults
		t.PageIns += c.PageIns
		t.PageInTokens += int64(c.PageInTokens)
		if c.Faults > 0 {
			t.FaultCalls++
		}
		prevTime = in.Time
		if progress != nil && (i%25 == 0 || i == len(cs)-1) {
			progress(st.Name(), i+1, len(cs))
		}
	}
	t.CacheShare = ratio(float64(t.Cached), float64(t.Context))
	notes, err := st.End(ctx)
	res.Notes = notes
	if err != nil {
		return nil, err
	}
	if _, ok := st.(Recorded); ok {
		res.Notes = append(res.Notes, "history = sent - calibrated overhead; collapsed-output counts do not apply")
	}
	return res, nil
}

// needs tracks which earlier tool call last provided each output, and the
// writes since, to tell when a call asks again for an output it had.
type needs struct {
	seq     int
	last    map[string]needAt // need key -> the latest call providing it
	written map[string]int    // path -> seq of its last write or edit
	anyMod  int               // seq of the last write or edit of any file
}

type needAt struct {
	id   string
	seq  int
	path string
}

func newNeeds() *needs {
	return &needs{last: map[string]needAt{}, written: map[string]int{}, anyMod: -1}
}

// note records the tool calls of an assistant message.
func (n *needs) note(m conversation.Message) {
	if m.Role != conversation.RoleAssistant {
		return
	}
	for _, c := range m.ToolCalls {
		n.seq++
		switch ingest.DefaultTools[strings.ToLower(c.Name)] {
		case ingest.KindWrite, ingest.KindEdit:
			n.written[pathOf(c.Args)] = n.seq
			n.anyMod = n.seq
			continue
		}
		if k := needKey(c); k != "" {
			n.last[k] = needAt{id: c.ID, seq: n.seq, path: pathOf(c.Args)}
		}
	}
}

// check counts the calls of resp that ask for an output an earlier call
// gave, which the step's context had collapsed, when no file changed since
// (a re-read after an edit, or a re-run after any write, is a new need,
// not a lost output); served are those the model could activate.
func (n *needs) check(resp conversation.Message, step *Step) (reneeded, served int) {
	if step.Hidden == nil {
		return 0, 0
	}
	for _, c := range resp.ToolCalls {
		k := needKey(c)
		if k == "" {
			continue
		}
		prev, ok := n.last[k]
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "read:") {
			if n.written[prev.path] > prev.seq {
				continue
			}
		} else if n.anyMod > prev.seq {
			continue
		}
		if step.Hidden(prev.id) {
			reneeded++
			if step.Reachable != nil && step.Reachable(prev.id) {
				served++
			}
		}
	}
	return reneeded, served
}

func pathOf(args map[string]any) string {
	for _, k := range []string{"path", "file_path", "filePath", "notebook_path", "file"} {
		if s, ok := args[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// calibrate fits the calibration on the calls before the first compaction
// that recorded usage: there the harness sent the full history, which is
// what the naive rendering holds.
func calibrate(cs []*CallInput, naive []rawCall, before int, method string) Calibration {
	if method == "none" {
		return identity
	}
	var xs, ys []float64
	for i, c := range cs {
		if c.Index > before || c.Usage == nil || c.Usage.Sent() == 0 {
			continue
		}
		xs = append(xs, float64(naive[i].hist))
		ys = append(ys, float64(c.Usage.Sent()))
	}
	if len(xs) == 0 {
		return identity
	}
	cal := Calibration{Scale: 1, Points: len(xs)}
	diffs := make([]float64, len(xs))
	for i := range xs {
		diffs[i] = ys[i] - xs[i]
	}
	overhead := median(diffs)
	cal.Overhead, cal.Method = int(math.Round(math.Max(overhead, 0))), "overhead"
	if method != "overhead" && len(xs) >= 3 {
		// Least squares, then again without the outliers (calls whose
		// recorded size the naive history cannot explain: a harness that
		// dropped or added something the transcript does not show), when
		// they are few.
		a, b := leastSquares(xs, ys)
		res := make([]float64, len(xs))
		for i := range xs {
			res[i] = math.Abs(b+a*xs[i]-ys[i]) / ys[i]
		}
		cut := math.Max(0.05, 3*median(res))
		var fx, fy []float64
		for i := range xs {
			if res[i] <= cut {
				fx, fy = append(fx, xs[i]), append(fy, ys[i])
			}
		}
		if len(fx) >= 3 && len(fx) < len(xs) && len(fx) >= len(xs)*3/4 {
			a, b = leastSquares(fx, fy)
			cal.Excluded = len(xs) - len(fx)
		} else {
			fx, fy = xs, ys
		}
		method := "fit"
		if b < 0 {
			// A negative intercept (an overhead below zero) is a good fit of
			// a harness whose fixed head is small next to the tokenizer's
			// difference in scale: fit the scale alone, through the origin,
			// rather than giving the fit up.
			a, b, method = originSlope(fx, fy), 0, "fit-origin"
		}
		meanErr := func(sc, oh float64) float64 {
			sum := 0.0
			for i := range xs {
				sum += math.Abs(oh+sc*xs[i]-ys[i]) / ys[i]
			}
			return sum / float64(len(xs))
		}
		if a > 0 && meanErr(a, b) <= meanErr(1, math.Max(overhead, 0)) {
			cal.Scale, cal.Overhead, cal.Method = a, int(math.Round(b)), method
		} else {
			cal.Excluded = 0
		}
	}
	est := func(sc, oh float64) Stats {
		errs := make([]float64, len(xs))
		for i := range xs {
			errs[i] = (oh + sc*xs[i] - ys[i]) / ys[i]
		}
		return stats(errs)
	}
	cal.Error = ErrorStats{
		Raw:      est(1, 0),
		Overhead: est(1, math.Max(overhead, 0)),
		Fitted:   est(cal.Scale, float64(cal.Overhead)),
	}
	return cal
}

// originSlope fits y = a·x.
func originSlope(xs, ys []float64) float64 {
	var sxx, sxy float64
	for i := range xs {
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// leastSquares fits y = a·x + b.
func leastSquares(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, 0
	}
	a = (n*sxy - sx*sy) / d
	b = (sy - a*sx) / n
	return a, b
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// stats summarizes signed relative errors.
func stats(signed []float64) Stats {
	if len(signed) == 0 {
		return Stats{}
	}
	abs := make([]float64, len(signed))
	var sum, bias float64
	for i, e := range signed {
		abs[i] = math.Abs(e)
		sum += abs[i]
		bias += e
	}
	sort.Float64s(abs)
	p90 := abs[min(len(abs)-1, int(math.Ceil(0.9*float64(len(abs))))-1)]
	return Stats{Mean: sum / float64(len(abs)), Median: median(abs), P90: p90, Max: abs[len(abs)-1], Bias: bias / float64(len(abs))}
}

// replayDir makes the directory a replay works in and returns it with the
// function that removes it. Its name depends only on the session, so the
// mirrored files' paths, from which their ids are made (and the contexts
// show the ids), and with them the token counts, are the same from run to
// run. Another replay of the same session, in this
// process or another, holds the directory until it is done: this one waits
// for it (an flock on a file beside it, released if that process dies), so
// that both give the same numbers; before the lock, a concurrent replay
// worked in a random directory and its numbers differed by up to 0.03%. A
// directory a killed replay left is removed first. The lock file stays.
func replayDir(ctx context.Context, dir, session string) (string, func(), error) {
	if dir == "" {
		dir = os.TempDir()
	}
	h := sha256.Sum256([]byte(session))
	p := filepath.Join(dir, "ctxstore-replay-"+hex.EncodeToString(h[:6]))
	unlock, err := filelock.Lock(ctx, p+".lock")
	if err != nil {
		return "", nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if err := os.RemoveAll(p); err != nil {
		unlock()
		return "", nil, err
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		unlock()
		return "", nil, err
	}
	return p, func() {
		_ = os.RemoveAll(p)
		unlock()
	}, nil
}

// recordedLong is the part of a recorded call's cache writes the harness
// recorded as 1-hour writes.
func recordedLong(u *conversation.Usage) int64 { return min(max(u.CacheWrite1h, 0), u.CacheWrite) }

// recordedCost prices a recorded call in base-input tokens: its 1-hour
// writes at the hour's price (LongTTLWritePrice), its other writes at wp.
func recordedCost(u *conversation.Usage, wp float64) float64 {
	long := recordedLong(u)
	return InputPrice*float64(u.Input) + wp*float64(u.CacheWrite-long) + LongTTLWritePrice*float64(long) + ReadPrice*float64(u.CacheRead)
}
