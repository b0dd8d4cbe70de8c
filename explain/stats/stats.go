// Package stats computes session analytics from context commits, never
// from transcripts (docs/stats.md): session
// profiles, amplification, compaction frequency, tool usage, activity by
// hour and weekday, peak concurrent sessions and outcomes. It reads the
// commits of the store (session/commits), decodes each commit's artifact to
// neutral events (objects/events) with the format registry, and never
// re-parses a transcript.
//
// Missing data is never guessed: an event without a time counts in every
// count (prompts, tools, outcome, ...) but not in anything measured in time
// (profile, duration, idle gaps, hour and weekday, concurrency); a session
// without any timed event has no duration and is left out of the
// concurrency sweep and of compaction-per-hour figures, and the report
// says how many events and sessions were untimed. docs/stats.md lists the
// treatment per metric.
package stats

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/events"
)

// Options scope and tune a report.
type Options struct {
	// Sessions limits the report to these sessions (empty: all). A caller
	// limited to some sessions (a token) passes them: no other session's
	// commit is read.
	Sessions []string
	// From and To keep only events in [From, To) (zero: unbounded). An
	// event without a time is placed at its commit's creation time for
	// this filter only.
	From, To time.Time
	// IdleGap is the shortest pause between two timed events of a session
	// that counts as an idle gap (default 5 minutes).
	IdleGap time.Duration
	// Bins is the number of time windows of a session profile (default
	// 24).
	Bins int
	// Location is the time zone of the hour and weekday counts (default
	// UTC).
	Location *time.Location
}

func (o Options) withDefaults() Options {
	if o.IdleGap <= 0 {
		o.IdleGap = 5 * time.Minute
	}
	if o.Bins <= 0 {
		o.Bins = 24
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	return o
}

// Kind is what an event is to the analytics.
type Kind string

// The kinds of a session profile.
const (
	KindHuman      Kind = "human_prompt"    // a person's prompt
	KindInjected   Kind = "injected_prompt" // content the harness put in as a user message
	KindResponse   Kind = "response"
	KindThinking   Kind = "thinking"
	KindToolCall   Kind = "tool_call"
	KindToolResult Kind = "tool_result"
	KindCompaction Kind = "compaction"
	KindError      Kind = "error"
	KindOther      Kind = "other" // system, metric and output events
)

// ProfileKinds are the kinds a profile bins, in chart order.
var ProfileKinds = []Kind{KindHuman, KindInjected, KindResponse, KindThinking, KindToolCall, KindToolResult, KindCompaction, KindError}

// Classify says what an event is. A prompt is a person's when its Source
// is "user" (or empty) and it is not Meta; every other prompt was injected
// by the harness (continuation summaries, command output, sub-agent
// prompts, demonstrations).
func Classify(e events.Event) Kind {
	switch e.Type {
	case events.Prompt:
		if !e.Meta && (e.Source == "" || e.Source == "user") {
			return KindHuman
		}
		return KindInjected
	case events.Response:
		return KindResponse
	case events.Thinking:
		return KindThinking
	case events.ToolCall:
		return KindToolCall
	case events.ToolResult:
		return KindToolResult
	case events.Error:
		return KindError
	case events.System:
		if e.Subtype == events.SubtypeCompactBoundary || e.Subtype == events.SubtypeCompactionSummary {
			return KindCompaction
		}
	}
	return KindOther
}

// Counts are event counts of a session or of all of them.
type Counts struct {
	Events         int `json:"events"`
	Timed          int `json:"timed_events"`
	HumanPrompts   int `json:"human_prompts"`
	InjectedPrompt int `json:"injected_prompts"`
	Responses      int `json:"responses"`
	Thinking       int `json:"thinking"`
	ToolCalls      int `json:"tool_calls"`
	ToolResults    int `json:"tool_results"`
	ToolErrors     int `json:"tool_errors"`
	Compactions    int `json:"compactions"`
	Errors         int `json:"errors"`
	// HumanChars and AgentChars are the characters (runes) of the
	// person's prompts and of the agent's responses.
	HumanChars int64 `json:"human_chars"`
	AgentChars int64 `json:"agent_chars"`
}

func (c *Counts) add(o Counts) {
	c.Events += o.Events
	c.Timed += o.Timed
	c.HumanPrompts += o.HumanPrompts
	c.InjectedPrompt += o.InjectedPrompt
	c.Responses += o.Responses
	c.Thinking += o.Thinking
	c.ToolCalls += o.ToolCalls
	c.ToolResults += o.ToolResults
	c.ToolErrors += o.ToolErrors
	c.Compactions += o.Compactions
	c.Errors += o.Errors
	c.HumanChars += o.HumanChars
	c.AgentChars += o.AgentChars
}

// Amplification is how much agent work each human direction triggered.
// A ratio is nil when its denominator is 0 (no human prompt, no human
// characters).
type Amplification struct {
	ResponsesPerPrompt *float64 `json:"responses_per_prompt"`
	ToolCallsPerPrompt *float64 `json:"tool_calls_per_prompt"`
	// CharRatio is agent response characters per human prompt character.
	CharRatio *float64 `json:"char_ratio"`
}

func ratio(a, b float64) *float64 {
	if b == 0 {
		return nil
	}
	r := a / b
	return &r
}

func amplify(c Counts) Amplification {
	return Amplification{
		ResponsesPerPrompt: ratio(float64(c.Responses), float64(c.HumanPrompts)),
		ToolCallsPerPrompt: ratio(float64(c.ToolCalls), float64(c.HumanPrompts)),
		CharRatio:          ratio(float64(c.AgentChars), float64(c.HumanChars)),
	}
}

// Gap is an idle gap: no event between Start and Start+Seconds.
type Gap struct {
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
}

// Bin is one time window of a session profile: the events of each kind
// whose time falls in it.
type Bin struct {
	Start  time.Time    `json:"start"`
	Counts map[Kind]int `json:"counts"`
}

// Mark is one timed event of a session's timeline.
type Mark struct {
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
}

// Session is the analytics of one session.
type Session struct {
	ID      string `json:"id"`
	Harness string `json:"harness,omitempty"`
	// Template is the agent template of the session's commits (what kind
	// of agent), when they name one.
	Template string `json:"template,omitempty"`
	// ForkOf is the commit of another session this session's chain
	// starts from (a sub-agent's lane or a fork), ForkOfSession that
	// commit's session when it is in scope; empty for a session of its
	// own.
	ForkOf        string `json:"fork_of,omitempty"`
	ForkOfSession string `json:"fork_of_session,omitempty"`
	// Commits are the commits read; Branches the commits with more than
	// one child plus one (1: a single chain); Undecoded the commits whose
	// format has no event decoder (their events are not counted);
	// Skipped the commits not read as events (materialization snapshots,
	// "branch" views repeating the file chain's lines).
	Commits           int `json:"commits"`
	CompactionCommits int `json:"compaction_commits"`
	Branches          int `json:"branches"`
	Undecoded         int `json:"undecoded_commits,omitempty"`
	Skipped           int `json:"skipped_commits,omitempty"`
	Counts
	Amplification Amplification `json:"amplification"`
	// Start, End and Seconds span the session's timed events (nil and 0
	// when none is timed).
	Start   *time.Time `json:"start,omitempty"`
	End     *time.Time `json:"end,omitempty"`
	Seconds float64    `json:"seconds"`
	// IdleGaps are the pauses of at least Options.IdleGap between
	// consecutive timed events; IdleSeconds their sum; ActiveSeconds the
	// rest of the span.
	IdleGaps      []Gap   `json:"idle_gaps,omitempty"`
	IdleSeconds   float64 `json:"idle_seconds"`
	ActiveSeconds float64 `json:"active_seconds"`
	// CompactionsPerHour is Compactions over the span (nil without a
	// span).
	CompactionsPerHour *float64 `json:"compactions_per_hour"`
	// Profile bins the timed events into Options.Bins windows of the span.
	Profile []Bin `json:"profile,omitempty"`
	// Timeline is every timed event's time and kind, in time order (not
	// in the JSON: the profile summarizes it; charts draw it).
	Timeline []Mark `json:"-"`
	// Tools counts tool calls by tool name; ToolErrorsBy failed results
	// by the name of the call they answer.
	Tools        map[string]int `json:"tools,omitempty"`
	ToolErrorsBy map[string]int `json:"tool_errors_by,omitempty"`
	// ErrorSubtypes counts error events by subtype ("" as "error").
	ErrorSubtypes map[string]int `json:"error_subtypes,omitempty"`
	// Outcome is the status of the session's last metric event that has
	// one ("success", "error_max_turns", "submitted", ...), "" when none.
	Outcome string `json:"outcome"`
}

// Concurrency is the peak of sessions running at once. Sessions forked
// from another session's chain (sub-agents, forks) are not counted in
// Peak, since they run inside or beside their parent; PeakWithForks counts
// them too.
type Concurrency struct {
	Peak     int       `json:"peak"`
	At       time.Time `json:"at,omitzero"`
	Sessions []string  `json:"sessions,omitempty"`
	// PeakWithForks is the peak counting forked sessions as well.
	PeakWithForks int       `json:"peak_with_forks"`
	AtWithForks   time.Time `json:"at_with_forks,omitzero"`
	// Untimed is the number of sessions left out (no timed event).
	Untimed int `json:"untimed_sessions"`
}

// Total is the analytics over every session of a report.
type Total struct {
	Sessions      int `json:"sessions"`
	TimedSessions int `json:"timed_sessions"`
	Counts
	Amplification Amplification  `json:"amplification"`
	Tools         map[string]int `json:"tools,omitempty"`
	// ToolsByGroup counts tool calls per group of sessions: the agent
	// template when the commits name one ("template:reviewer"), else the
	// harness without its version ("harness:claude-code"), so tool
	// patterns can be compared across templates and harnesses.
	ToolsByGroup map[string]map[string]int `json:"tools_by_group,omitempty"`
	// ByHour and ByWeekday count timed conversation events (every kind
	// but other: system, metric and output events are harness
	// bookkeeping, which harnesses write in very different amounts) by the
	// hour (0-23) and the weekday (0 = Sunday) of Options.Location;
	// PromptsByHour and PromptsByWeekday count the person's prompts alone.
	ByHour           [24]int `json:"by_hour"`
	ByWeekday        [7]int  `json:"by_weekday"`
	PromptsByHour    [24]int `json:"prompts_by_hour"`
	PromptsByWeekday [7]int  `json:"prompts_by_weekday"`
	// ByWeekdayHour is the heatmap: timed events by weekday and hour.
	ByWeekdayHour [7][24]int  `json:"by_weekday_hour"`
	Concurrency   Concurrency `json:"concurrency"`
	// Outcomes counts sessions by outcome ("unknown" for none);
	// ErrorSubtypes counts error events over all sessions.
	Outcomes      map[string]int `json:"outcomes"`
	ErrorSubtypes map[string]int `json:"error_subtypes,omitempty"`
	// Seconds sums the timed sessions' spans; CompactionsPerHour is the
	// compactions of timed sessions over that sum.
	Seconds            float64  `json:"seconds"`
	CompactionsPerHour *float64 `json:"compactions_per_hour"`
}

// Report is the analytics of a scope.
type Report struct {
	Scope struct {
		Sessions []string  `json:"sessions,omitempty"`
		From     time.Time `json:"from,omitzero"`
		To       time.Time `json:"to,omitzero"`
		IdleGap  string    `json:"idle_gap"`
		Location string    `json:"location"`
	} `json:"scope"`
	Sessions []*Session `json:"sessions"`
	Total    Total      `json:"total"`
	// Notes say what was missing and how it was treated.
	Notes []string `json:"notes,omitempty"`
}

// Input is one session's events in chain order, as Compute reads them
// from the commits (Analyze takes it directly, for callers that have the
// events already).
type Input struct {
	ID       string
	Harness  string
	Template string
	// Events are the session's events, parents' commits first.
	Events []events.Event
	// ForkOf, ForkOfSession: as in Session.
	ForkOf, ForkOfSession string
	// Commits, CompactionCommits, Branches, Undecoded, Skipped: as in
	// Session.
	Commits, CompactionCommits, Branches, Undecoded, Skipped int
}

func newReport(o Options) *Report {
	r := &Report{Sessions: []*Session{}}
	r.Scope.Sessions = o.Sessions
	r.Scope.From, r.Scope.To = o.From, o.To
	r.Scope.IdleGap = o.IdleGap.String()
	r.Scope.Location = o.Location.String()
	t := &r.Total
	t.Tools, t.Outcomes, t.ErrorSubtypes = map[string]int{}, map[string]int{}, map[string]int{}
	t.ToolsByGroup = map[string]map[string]int{}
	return r
}

// add takes one session's analytics into the report and its totals.
func (r *Report) add(s *Session, o Options) {
	t := &r.Total
	r.Sessions = append(r.Sessions, s)
	t.Sessions++
	t.Counts.add(s.Counts)
	g := Group(s)
	for k, v := range s.Tools {
		t.Tools[k] += v
		if t.ToolsByGroup[g] == nil {
			t.ToolsByGroup[g] = map[string]int{}
		}
		t.ToolsByGroup[g][k] += v
	}
	for k, v := range s.ErrorSubtypes {
		t.ErrorSubtypes[k] += v
	}
	out := s.Outcome
	if out == "" {
		out = "unknown"
	}
	t.Outcomes[out]++
	if s.Start != nil {
		t.TimedSessions++
		t.Seconds += s.Seconds
	}
	for _, m := range s.Timeline {
		if m.Kind == KindOther {
			continue // harness bookkeeping: activity counts the conversation
		}
		lt := m.Time.In(o.Location)
		t.ByHour[lt.Hour()]++
		t.ByWeekday[lt.Weekday()]++
		t.ByWeekdayHour[lt.Weekday()][lt.Hour()]++
		if m.Kind == KindHuman {
			t.PromptsByHour[lt.Hour()]++
			t.PromptsByWeekday[lt.Weekday()]++
		}
	}
}

// finish computes the totals' ratios, the concurrency and the notes.
func (r *Report) finish() {
	t := &r.Total
	t.Amplification = amplify(t.Counts)
	timedCompactions, undecoded := 0, 0
	for _, s := range r.Sessions {
		if s.Start != nil {
			timedCompactions += s.Compactions
		}
		undecoded += s.Undecoded
	}
	if t.Seconds > 0 {
		t.CompactionsPerHour = ratio(float64(timedCompactions), t.Seconds/3600)
	}
	t.Concurrency = concurrency(r.Sessions)
	if n := t.Events - t.Timed; n > 0 {
		r.Notes = append(r.Notes, plural(n, "event has", "events have")+
			" no time: counted in every count, left out of profiles, durations, idle gaps, hours, weekdays and concurrency")
	}
	if n := t.Sessions - t.TimedSessions; n > 0 {
		r.Notes = append(r.Notes, plural(n, "session has", "sessions have")+
			" no timed event: no duration, no compactions per hour, not in the concurrency peak")
	}
	if undecoded > 0 {
		r.Notes = append(r.Notes, plural(undecoded, "commit's format has", "commits' formats have")+
			" no event decoder in the registry: their events are not counted (see undecoded_commits)")
	}
	if t.HumanPrompts == 0 && t.Sessions > 0 {
		r.Notes = append(r.Notes, "no human prompt in scope: the per-prompt ratios are null")
	}
}

// Group names the group of sessions s belongs to for ToolsByGroup:
// "template:" and its template, else "harness:" and its harness's first
// word ("unknown" when neither is recorded).
func Group(s *Session) string {
	if s.Template != "" {
		return "template:" + s.Template
	}
	h, _, _ := strings.Cut(s.Harness, " ")
	if h == "" {
		h = "unknown"
	}
	return "harness:" + h
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

func analyzeSession(x Input, o Options) *Session {
	s := &Session{ID: x.ID, Harness: x.Harness, Template: x.Template, ForkOf: x.ForkOf, ForkOfSession: x.ForkOfSession, Commits: x.Commits, CompactionCommits: x.CompactionCommits,
		Branches: x.Branches, Undecoded: x.Undecoded, Skipped: x.Skipped,
		Tools: map[string]int{}, ToolErrorsBy: map[string]int{}, ErrorSubtypes: map[string]int{}}
	callName := map[string]string{}
	boundaryOpen := false // a compact_boundary whose summary may follow
	eventCompactions := 0
	for _, e := range x.Events {
		k := Classify(e)
		s.Events++
		if !e.Time.IsZero() {
			s.Timed++
			s.Timeline = append(s.Timeline, Mark{Time: e.Time.UTC(), Kind: k})
		}
		switch k {
		case KindHuman:
			s.HumanPrompts++
			s.HumanChars += int64(len([]rune(e.Text)))
		case KindInjected:
			s.InjectedPrompt++
		case KindResponse:
			s.Responses++
			s.AgentChars += int64(len([]rune(e.Text)))
		case KindThinking:
			s.Thinking++
		case KindToolCall:
			s.ToolCalls++
			name := "(unnamed)"
			if e.Tool != nil {
				if e.Tool.Name != "" {
					name = e.Tool.Name
				}
				callName[e.Tool.ID] = name
			}
			s.Tools[name]++
		case KindToolResult:
			s.ToolResults++
			if e.Result != nil && e.Result.IsError {
				s.ToolErrors++
				name := ""
				if e.Tool != nil {
					name = callName[e.Tool.ID]
					if name == "" {
						name = e.Tool.Name
					}
				}
				if name == "" {
					name = "(unknown call)"
				}
				s.ToolErrorsBy[name]++
			}
		case KindCompaction:
			// A harness's compaction is a boundary, a summary, or a
			// boundary followed by its summary: one compaction.
			if e.Subtype == events.SubtypeCompactBoundary || !boundaryOpen {
				eventCompactions++
			}
			boundaryOpen = e.Subtype == events.SubtypeCompactBoundary
			continue
		case KindError:
			s.Errors++
			sub := e.Subtype
			if sub == "" {
				sub = "error"
			}
			s.ErrorSubtypes[sub]++
		}
		if e.Type == events.Metric && e.Metric != nil && e.Metric.Status != "" {
			s.Outcome = e.Metric.Status
		}
		if k == KindResponse || k == KindToolCall || k == KindHuman {
			boundaryOpen = false
		}
	}
	// The compaction commits and the events that mark a compaction
	// describe the same compactions (an import writes both): the larger
	// count, never their sum.
	s.Compactions = max(eventCompactions, x.CompactionCommits)
	s.Amplification = amplify(s.Counts)
	sort.SliceStable(s.Timeline, func(i, j int) bool { return s.Timeline[i].Time.Before(s.Timeline[j].Time) })
	if len(s.Timeline) > 0 {
		start, end := s.Timeline[0].Time, s.Timeline[len(s.Timeline)-1].Time
		s.Start, s.End = &start, &end
		s.Seconds = end.Sub(start).Seconds()
		for i := 1; i < len(s.Timeline); i++ {
			if d := s.Timeline[i].Time.Sub(s.Timeline[i-1].Time); d >= o.IdleGap {
				s.IdleGaps = append(s.IdleGaps, Gap{Start: s.Timeline[i-1].Time, Seconds: d.Seconds()})
				s.IdleSeconds += d.Seconds()
			}
		}
		s.ActiveSeconds = s.Seconds - s.IdleSeconds
		if s.Seconds > 0 {
			s.CompactionsPerHour = ratio(float64(s.Compactions), s.Seconds/3600)
		}
		s.Profile = profile(s.Timeline, start, end, o.Bins)
	}
	return s
}

// profile bins marks into n equal windows of [start, end] (the last
// window includes end).
func profile(marks []Mark, start, end time.Time, n int) []Bin {
	span := end.Sub(start)
	if span <= 0 {
		n = 1
	}
	bins := make([]Bin, n)
	for i := range bins {
		bins[i] = Bin{Start: start.Add(span * time.Duration(i) / time.Duration(n)), Counts: map[Kind]int{}}
	}
	for _, m := range marks {
		i := 0
		if span > 0 {
			i = int(int64(m.Time.Sub(start)) * int64(n) / int64(span))
		}
		if i >= n {
			i = n - 1
		}
		bins[i].Counts[m.Kind]++
	}
	return bins
}

// concurrency sweeps the timed sessions' spans: the most that overlap.
// A session is running from its first to its last timed event, both
// included.
func concurrency(ss []*Session) Concurrency {
	c := Concurrency{}
	var own []*Session
	for _, s := range ss {
		if s.Start == nil {
			c.Untimed++
			continue
		}
		if s.ForkOf == "" {
			own = append(own, s)
		}
	}
	c.Peak, c.At, c.Sessions = sweep(own)
	c.PeakWithForks, c.AtWithForks, _ = sweep(ss)
	return c
}

func sweep(ss []*Session) (peak int, at time.Time, ids []string) {
	type edge struct {
		t     time.Time
		delta int
		id    string
	}
	var edges []edge
	for _, s := range ss {
		if s.Start != nil {
			edges = append(edges, edge{*s.Start, +1, s.ID}, edge{*s.End, -1, s.ID})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].t.Equal(edges[j].t) {
			return edges[i].t.Before(edges[j].t)
		}
		return edges[i].delta > edges[j].delta // starts before ends: touching spans overlap
	})
	running := map[string]bool{}
	for _, e := range edges {
		if e.delta > 0 {
			running[e.id] = true
		} else {
			delete(running, e.id)
		}
		if len(running) > peak {
			peak, at = len(running), e.t
			ids = ids[:0]
			for id := range running {
				ids = append(ids, id)
			}
			sort.Strings(ids)
		}
	}
	return peak, at, ids
}

func itoa(n int) string { return strconv.Itoa(n) }
