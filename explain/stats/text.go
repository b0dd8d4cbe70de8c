package stats

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// profileLetters draw a profile bin in text: the kind with the most
// events in it ('.' for none).
var profileLetters = map[Kind]byte{
	KindHuman: 'H', KindInjected: 'I', KindResponse: 'R', KindThinking: 'K', KindToolCall: 'T',
	KindToolResult: 't', KindCompaction: 'C', KindError: 'E', KindOther: 'o',
}

// ProfileString draws a session profile as one letter per bin: H human
// prompt, I injected prompt, R response, K thinking, T tool call, t tool
// result, C compaction, E error, o only other events (system, metric,
// output), '.' nothing (idle). A bin shows the conversation kind it holds
// most of; ties go to the kind listed first.
func ProfileString(bins []Bin) string {
	var b strings.Builder
	for _, bin := range bins {
		best, n := Kind(""), 0
		for _, k := range ProfileKinds {
			if bin.Counts[k] > n {
				best, n = k, bin.Counts[k]
			}
		}
		switch {
		case n > 0:
			b.WriteByte(profileLetters[best])
		case bin.Counts[KindOther] > 0:
			b.WriteByte('o')
		default:
			b.WriteByte('.')
		}
	}
	return b.String()
}

func fmtRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *r)
}

func fmtDur(secs float64, timed bool) string {
	if !timed {
		return "-"
	}
	return (time.Duration(secs) * time.Second).Round(time.Second).String()
}

// MaxTextTools bounds the tools the text lists (the JSON has them all).
const MaxTextTools = 25

// WriteText prints a report for people.
func WriteText(w io.Writer, r *Report) error {
	scope := "all sessions"
	if len(r.Scope.Sessions) > 0 {
		scope = "sessions " + strings.Join(r.Scope.Sessions, ", ")
	}
	if !r.Scope.From.IsZero() || !r.Scope.To.IsZero() {
		scope += fmt.Sprintf("; events from %s to %s", fmtTime(r.Scope.From, "the start"), fmtTime(r.Scope.To, "the end"))
	}
	fmt.Fprintf(w, "scope: %s; idle gap %s; hours in %s\n\n", scope, r.Scope.IdleGap, r.Scope.Location)
	t := r.Total
	hw := len("harness")
	for _, s := range r.Sessions {
		hw = max(hw, len(s.Harness))
	}
	all := fmt.Sprintf("all %d sessions", t.Sessions)
	tables := []struct {
		head  []string
		row   func(s *Session) []string
		total []string
	}{
		{[]string{fmt.Sprintf("%-*s", hw, "harness"), "duration", "idle", fmt.Sprintf("%-10s", "outcome")},
			func(s *Session) []string {
				outcome := s.Outcome
				if outcome == "" {
					outcome = "unknown"
				}
				return []string{fmt.Sprintf("%-*s", hw, s.Harness), fmtDur(s.Seconds, s.Start != nil), fmtDur(s.IdleSeconds, s.Start != nil), fmt.Sprintf("%-10s", outcome)}
			},
			[]string{"", fmtDur(t.Seconds, t.TimedSessions > 0), "", ""}},
		{[]string{"commits", "events", "timed", "human", "injected", "responses"},
			func(s *Session) []string {
				return ints(s.Commits, s.Events, s.Timed, s.HumanPrompts, s.InjectedPrompt, s.Responses)
			},
			append([]string{""}, ints(t.Events, t.Timed, t.HumanPrompts, t.InjectedPrompt, t.Responses)...)},
		{[]string{"tool calls", "tool errors", "thinking", "compactions", "errors"},
			func(s *Session) []string { return ints(s.ToolCalls, s.ToolErrors, s.Thinking, s.Compactions, s.Errors) },
			ints(t.ToolCalls, t.ToolErrors, t.Thinking, t.Compactions, t.Errors)},
		{[]string{"resp/prompt", "tools/prompt", "chars out/in"},
			func(s *Session) []string {
				return []string{fmtRatio(s.Amplification.ResponsesPerPrompt), fmtRatio(s.Amplification.ToolCallsPerPrompt), fmtRatio(s.Amplification.CharRatio)}
			},
			[]string{fmtRatio(t.Amplification.ResponsesPerPrompt), fmtRatio(t.Amplification.ToolCallsPerPrompt), fmtRatio(t.Amplification.CharRatio)}},
	}
	// One wide table would not fit 100 columns: four narrow ones, each
	// led by the session id.
	for i, tb := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		// Names padded to the right: left-aligned in a right-aligned table.
		fmt.Fprintf(tw, "%-40s\t%s\t\n", "session", strings.Join(tb.head, "\t"))
		for _, s := range r.Sessions {
			fmt.Fprintf(tw, "%-40s\t%s\t\n", short(s.ID), strings.Join(tb.row(s), "\t"))
		}
		fmt.Fprintf(tw, "%-40s\t%s\t\n", all, strings.Join(tb.total, "\t"))
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "\nsession profiles (%d windows each; H human prompt, I injected, R response, K thinking,\n", len(firstProfile(r)))
	fmt.Fprintf(w, "  T tool call, t tool result, C compaction, E error, o other events only, . nothing):\n")
	for _, s := range r.Sessions {
		if s.Start == nil {
			fmt.Fprintf(w, "  %-40s (no timed events)\n", short(s.ID))
			continue
		}
		fmt.Fprintf(w, "  %-40s %s  %s, %d idle gaps\n", short(s.ID), ProfileString(s.Profile), fmtDur(s.Seconds, true), len(s.IdleGaps))
	}

	fmt.Fprintf(w, "\ntool usage (%d calls, %d failed results):\n", t.ToolCalls, t.ToolErrors)
	errs := map[string]int{}
	for _, s := range r.Sessions {
		for k, v := range s.ToolErrorsBy {
			errs[k] += v
		}
	}
	tools := sortedCounts(t.Tools)
	width := 0
	for i, kv := range tools {
		if i < MaxTextTools {
			width = max(width, len(kv.k))
		}
	}
	for i, kv := range tools {
		if i == MaxTextTools {
			rest := 0
			for _, x := range tools[i:] {
				rest += x.n
			}
			fmt.Fprintf(w, "  ... %d more tools, %d calls (--json lists every tool)\n", len(tools)-i, rest)
			break
		}
		pct := 100 * float64(kv.n) / float64(max(t.ToolCalls, 1))
		e := ""
		if errs[kv.k] > 0 {
			e = fmt.Sprintf(" (%d failed)", errs[kv.k])
		}
		fmt.Fprintf(w, "  %-*s %6d  %5.1f%%%s\n", width, kv.k, kv.n, pct, e)
	}

	if len(t.ToolsByGroup) > 1 {
		fmt.Fprintf(w, "tool usage by template or harness (the 5 most used):\n")
		var groups []string
		for g := range t.ToolsByGroup {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			var parts []string
			total := 0
			for _, kv := range sortedCounts(t.ToolsByGroup[g]) {
				total += kv.n
			}
			for i, kv := range sortedCounts(t.ToolsByGroup[g]) {
				if i == 5 {
					break
				}
				parts = append(parts, fmt.Sprintf("%s %.0f%%", kv.k, 100*float64(kv.n)/float64(total)))
			}
			wrapText(w, fmt.Sprintf("%-24s %6d  %s", g, total, strings.Join(parts, ", ")), "  ", strings.Repeat(" ", 34))
		}
	}

	fmt.Fprintf(w, "\nactivity by hour (%s; timed conversation events / human prompts):\n", r.Scope.Location)
	for h := 0; h < 24; h++ {
		fmt.Fprintf(w, "  %02d  %6d  %5d\n", h, t.ByHour[h], t.PromptsByHour[h])
	}
	fmt.Fprintf(w, "activity by weekday:\n")
	for d := 0; d < 7; d++ {
		fmt.Fprintf(w, "  %s  %6d  %5d\n", time.Weekday(d).String()[:3], t.ByWeekday[d], t.PromptsByWeekday[d])
	}

	c := t.Concurrency
	var peak string
	if c.Peak > 0 {
		peak = fmt.Sprintf("peak concurrent sessions: %d at %s (%s)", c.Peak, c.At.Format(time.RFC3339), strings.Join(shortAll(c.Sessions), ", "))
		if c.PeakWithForks > c.Peak {
			peak += fmt.Sprintf("; %d at %s counting forked sessions (sub-agents, forks)", c.PeakWithForks, c.AtWithForks.Format(time.RFC3339))
		}
	} else {
		peak = "peak concurrent sessions: none timed"
	}
	if c.Untimed > 0 {
		peak += fmt.Sprintf("; %d untimed sessions left out", c.Untimed)
	}
	fmt.Fprintln(w)
	wrapText(w, peak, "", "  ")
	fmt.Fprintf(w, "compactions: %d in %s of timed sessions (%s per hour)\n", t.Compactions, fmtDur(t.Seconds, t.TimedSessions > 0), fmtRatio(t.CompactionsPerHour))
	var outs []string
	for _, kv := range sortedCounts(t.Outcomes) {
		outs = append(outs, fmt.Sprintf("%s %d", kv.k, kv.n))
	}
	wrapText(w, "outcomes: "+strings.Join(outs, ", "), "", "  ")
	if len(t.ErrorSubtypes) > 0 {
		var es []string
		for _, kv := range sortedCounts(t.ErrorSubtypes) {
			es = append(es, fmt.Sprintf("%s %d", kv.k, kv.n))
		}
		wrapText(w, "error events: "+strings.Join(es, ", "), "", "  ")
	}
	for _, n := range r.Notes {
		wrapText(w, "note: "+n, "", "  ")
	}
	return nil
}

func firstProfile(r *Report) []Bin {
	for _, s := range r.Sessions {
		if len(s.Profile) > 0 {
			return s.Profile
		}
	}
	return nil
}

func fmtTime(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.UTC().Format(time.RFC3339)
}

type kv struct {
	k string
	n int
}

// sortedCounts orders counts by count, descending, then name.
func sortedCounts(m map[string]int) []kv {
	out := make([]kv, 0, len(m))
	for k, n := range m {
		out = append(out, kv{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].n != out[j].n {
			return out[i].n > out[j].n
		}
		return out[i].k < out[j].k
	})
	return out
}

// short cuts a long session id for tables, keeping both ends (a
// sub-agent lane's id ends with its agent).
func short(id string) string {
	if len(id) > 40 {
		return id[:22] + "..." + id[len(id)-15:]
	}
	return id
}

func shortAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short(id)
	}
	return out
}

// TextWidth is the column the text report's lines stay within (but for
// a session profile of more windows than fit, or a word longer than it).
const TextWidth = 100

// wrapText writes text word-wrapped to TextWidth columns, the first line
// after first, the others after rest.
func wrapText(w io.Writer, text, first, rest string) {
	line, fresh := first, true
	for _, word := range strings.Fields(text) {
		if !fresh && len([]rune(line))+1+len([]rune(word)) > TextWidth {
			fmt.Fprintln(w, line)
			line, fresh = rest, true
		}
		if !fresh {
			line += " "
		}
		line += word
		fresh = false
	}
	fmt.Fprintln(w, line)
}

func ints(ns ...int) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprint(n)
	}
	return out
}
