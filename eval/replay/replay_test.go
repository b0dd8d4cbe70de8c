package replay

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/cachewarm"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// datasets returns the datasets directory (internal/datasets).
func datasets(t testing.TB) string {
	t.Helper()
	return datasetdir.Dir(t)
}

// TestReplayRealSession replays a small real Claude Code session (14
// calls: reads, edits, bash, parallel tool calls) under every strategy,
// ctxstore's on a real SQLite store, and checks the accounting invariants.
func TestReplayRealSession(t *testing.T) {
	path := filepath.Join(datasets(t), "claude-code", "raw", "claude-reliability__coverage-test-fix.jsonl")
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 14 || len(rep.Results) != 7 {
		t.Fatalf("%d calls, %d results", rep.Calls, len(rep.Results))
	}
	cal := rep.Calibration
	if cal.Method != "fit" || cal.Points != 14 || cal.Overhead <= 0 || cal.Scale <= 0 {
		t.Fatalf("calibration %+v", cal)
	}
	if cal.Error.Fitted.Mean > cal.Error.Raw.Mean || cal.Error.Fitted.Mean > 0.1 {
		t.Fatalf("calibration error %+v", cal.Error)
	}
	byName := map[string]*Result{}
	for _, r := range rep.Results {
		byName[r.Strategy] = r
		checkAccounting(t, r, rep.TTLSeconds)
	}
	checkFaults(t, rep, "naive", "clear_tool_uses", "clear_tool_uses_20k")
	naive := byName["naive"]
	if naive.Totals.CostVsNaive != 1 || naive.Totals.Rebases != 0 {
		t.Fatalf("naive totals %+v", naive.Totals)
	}
	for i, c := range naive.Calls {
		if i > 0 && c.Context <= naive.Calls[i-1].Context {
			t.Fatalf("naive call %d: context %d does not grow from %d", c.N, c.Context, naive.Calls[i-1].Context)
		}
	}
	// Far below the 100k trigger, clear_tool_uses is the naive history.
	for _, name := range []string{"clear_tool_uses", "clear_tool_uses_20k"} {
		for i, c := range byName[name].Calls {
			if c.Context != naive.Calls[i].Context || c.Cached != naive.Calls[i].Cached || c.Reason != "" {
				t.Fatalf("%s call %d differs from naive below the trigger: %+v vs %+v", name, c.N, c, naive.Calls[i])
			}
		}
	}
	// Recorded: exactly what the transcript says.
	rec := byName["recorded"]
	var sent int64
	for _, m := range s.Messages {
		if m.Usage != nil {
			sent += m.Usage.Sent()
		}
	}
	if rec.Totals.Context != sent {
		t.Fatalf("recorded context %d, transcript %d", rec.Totals.Context, sent)
	}
	for _, name := range []string{"ctxstore_stream", "ctxstore_literal"} {
		r := byName[name]
		if !hasNote(r, "reachability: 13 of 13 recorded tool calls") {
			t.Fatalf("%s notes %q", name, r.Notes)
		}
	}
	if byName["ctxstore_literal"].Totals.Rebases == 0 {
		t.Fatal("the literal layout never rebased")
	}
}

func hasNote(r *Result, s string) bool {
	for _, n := range r.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// checkAccounting checks what holds for every strategy's calls: the cost
// formula, cached <= the previous call's context, no cache when cold,
// cumulative cost, totals.
func checkAccounting(t *testing.T, r *Result, ttl float64) {
	t.Helper()
	var cum, cost float64
	var ctx, cached, long int64
	warms := 0
	maxPrev := 0
	for i, c := range r.Calls {
		if c.Cached < 0 || c.Cached > c.Context || c.History > c.Context {
			t.Fatalf("%s call %d: cached %d history %d context %d", r.Strategy, c.N, c.Cached, c.History, c.Context)
		}
		// What the harness recorded is what it is: its first call may read
		// a cache an earlier session wrote.
		rendered := r.Strategy != "recorded"
		if i == 0 && (!c.Cold || c.LongHead || (rendered && c.Cached != 0 && !c.WarmHead)) {
			t.Fatalf("%s: first call cold %v cached %d", r.Strategy, c.Cold, c.Cached)
		}
		if i > 0 {
			// Cold after a gap past the TTL since the previous call or the
			// last warm request after it.
			prev := r.Calls[i-1]
			idle := c.Gap - float64(prev.Warms)*cachewarm.Delay(time.Duration(ttl*float64(time.Second))).Seconds()
			if c.Cold != (idle > ttl) {
				t.Fatalf("%s call %d: cold %v after %.0f s (%d warms)", r.Strategy, c.N, c.Cold, c.Gap, prev.Warms)
			}
			if rendered && c.Cold && c.Cached != 0 && !c.WarmHead && !c.LongHead {
				t.Fatalf("%s call %d: cold but %d cached", r.Strategy, c.N, c.Cached)
			}
			if rendered && c.Cached > maxPrev {
				t.Fatalf("%s call %d: cached %d > every earlier context (%d)", r.Strategy, c.N, c.Cached, maxPrev)
			}
		}
		maxPrev = max(maxPrev, c.Context)
		if c.Written < 0 || c.Cached+c.Written > c.Context || c.WrittenLong < 0 || c.WrittenLong > c.Written {
			t.Fatalf("%s call %d: cached %d written %d (%d long) context %d", r.Strategy, c.N, c.Cached, c.Written, c.WrittenLong, c.Context)
		}
		if c.LongHead && !c.Cold {
			t.Fatalf("%s call %d: a long-lived head read on a warm call", r.Strategy, c.N)
		}
		if rendered {
			want := LongTTLWritePrice*float64(c.WrittenLong) + WritePrice*float64(c.Written-c.WrittenLong) + ReadPrice*float64(c.Cached) + InputPrice*float64(c.Context-c.Cached-c.Written)
			// Each warm request sends the call's context again (read from
			// the cache, or uncached when too short to cache) and answers
			// one token.
			if c.WarmCost < float64(c.Warms)*(ReadPrice*float64(c.Context)+WarmOutputPrice)-1e-6 || c.WarmCost > float64(c.Warms)*(InputPrice*float64(c.Context)+WarmOutputPrice)+1e-6 {
				t.Fatalf("%s call %d: %d warms cost %f", r.Strategy, c.N, c.Warms, c.WarmCost)
			}
			want += c.WarmCost
			if math.Abs(c.Cost-want) > 1e-6 {
				t.Fatalf("%s call %d: cost %f, want %f", r.Strategy, c.N, c.Cost, want)
			}
		}
		cum += c.Cost
		if math.Abs(c.CumCost-cum) > 1e-6 {
			t.Fatalf("%s call %d: cumulative cost %f, want %f", r.Strategy, c.N, c.CumCost, cum)
		}
		cost += c.Cost
		ctx += int64(c.Context)
		cached += int64(c.Cached)
		long += int64(c.WrittenLong)
		warms += c.Warms
	}
	tt := r.Totals
	if tt.Calls != len(r.Calls) || tt.Context != ctx || tt.Cached != cached || tt.WrittenLong != long || math.Abs(tt.Cost-cost) > 1e-6 || tt.Warms != warms {
		t.Fatalf("%s totals %+v", r.Strategy, tt)
	}
}

// synth builds a synthetic session: n tool uses of a read, each with an
// output of size bytes, one call per minute.
func synth(n, size int) *transcript.Session {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Format: transcript.FormatClaudeCode, ID: "synthetic"}
	at := func(k int) time.Time { return t0.Add(time.Duration(k) * time.Minute) }
	s.Messages = append(s.Messages, conversation.Message{Role: conversation.RoleUser, Text: "go", Time: at(0)})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("t%03d", i)
		s.Messages = append(s.Messages,
			conversation.Message{Role: conversation.RoleAssistant, Text: "reading", Time: at(2*i + 1),
				ToolCalls: []conversation.ToolCall{{ID: id, Name: "Read", Args: map[string]any{"file_path": fmt.Sprintf("/w/f%03d.go", i)}}}},
			conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: "Read", Time: at(2*i + 2),
				Output: strings.Repeat(fmt.Sprintf("line of file %03d\n", i), size/17)})
	}
	s.Messages = append(s.Messages, conversation.Message{Role: conversation.RoleAssistant, Text: "done", Time: at(2*n + 1)})
	return s
}

// TestClearToolUses checks the documented semantics on a synthetic
// session: nothing is cleared while the input is at most the trigger;
// past it, every tool result but the 3 most recent is replaced by the
// placeholder; with clear_at_least, nothing is cleared when clearing would
// free less.
func TestClearToolUses(t *testing.T) {
	s := synth(20, 1700) // 20 reads of ~100 lines
	counter := NewCounter(assemble.BytesTokenizer{})
	env := &Env{Session: s, Counter: counter, Calibration: identity, TTL: 5 * time.Minute, Window: 200000}
	ctx := context.Background()
	for _, c := range []struct {
		st      *ClearToolUses
		cleared func(input, uses int) int // results expected cleared
	}{
		{&ClearToolUses{Trigger: 2000}, func(input, uses int) int {
			if input <= 2000 || uses <= 3 {
				return 0
			}
			return uses - 3
		}},
		{&ClearToolUses{Trigger: 2000, Keep: 5}, func(input, uses int) int {
			if input <= 2000 || uses <= 5 {
				return 0
			}
			return uses - 5
		}},
		// Clearing all but 3 frees about (uses-3) x 425 tokens: with
		// clear_at_least 3000, not before 11 tool uses.
		{&ClearToolUses{Trigger: 2000, ClearAtLeast: 3000}, func(input, uses int) int {
			if input <= 2000 || uses <= 3 || (uses-3)*(1700/17*17/4-1) < 3000 {
				return 0
			}
			return uses - 3
		}},
	} {
		t.Run(fmt.Sprintf("keep %d at least %d", c.st.Keep, c.st.ClearAtLeast), func(t *testing.T) {
			naive := &Naive{}
			must(t, naive.Begin(ctx, env))
			must(t, c.st.Begin(ctx, env))
			sawClear, sawFull := false, false
			for _, in := range calls(s) {
				full, err := naive.Step(ctx, in)
				must(t, err)
				got, err := c.st.Step(ctx, in)
				must(t, err)
				input := counter.Count(full.Bytes[len(EmptyHead):])
				uses := 0
				for _, m := range in.Messages {
					uses += len(m.ToolCalls)
				}
				want := c.cleared(input, uses)
				cleared := bytes.Count(got.Bytes, []byte(">>\n"+Placeholder+"\n"))
				if cleared != want {
					t.Fatalf("call %d: input %d, %d uses: %d results cleared, want %d (%s)", in.N, input, uses, cleared, want, got.Reason)
				}
				if want == 0 {
					sawFull = true
					if !bytes.Equal(got.Bytes, full.Bytes) {
						t.Fatalf("call %d: nothing to clear but the bytes differ from the full history", in.N)
					}
					continue
				}
				sawClear = true
				// The kept results are the last ones, in full.
				last := in.Messages[len(in.Messages)-1]
				if !bytes.Contains(got.Bytes, []byte(last.Output)) || got.Hidden(last.ToolCallID) {
					t.Fatalf("call %d: the last tool result is not kept", in.N)
				}
				if !got.Hidden("t000") {
					t.Fatalf("call %d: the first tool use is not reported hidden", in.N)
				}
			}
			if !sawClear || !sawFull {
				t.Fatalf("cleared %v, full %v: the session does not cross the trigger", sawClear, sawFull)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRebaseAccounting: a strategy whose context does not extend the
// previous one is a rebase, and only the shared prefix is cached; a gap past
// the TTL makes the call cold.
func TestRebaseAccounting(t *testing.T) {
	s := synth(12, 1700)
	for i := range s.Messages {
		if i > 10 {
			s.Messages[i].Time = s.Messages[i].Time.Add(time.Hour) // an idle hour after message 10
		}
	}
	rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite,
		Strategies: []Strategy{&Naive{}, &ClearToolUses{Trigger: 2000}}})
	if err != nil {
		t.Fatal(err)
	}
	naive, clear := rep.Results[0], rep.Results[1]
	checkAccounting(t, naive, rep.TTLSeconds)
	checkAccounting(t, clear, rep.TTLSeconds)
	cold := 0
	for i, c := range clear.Calls {
		if c.Cold {
			cold++
		}
		if i == 0 || c.Cold {
			continue
		}
		if c.Rebased != (c.Reason != "" && clear.Calls[i-1].Reason != "") {
			// Once clearing is on, every call clears one more result: the
			// context no longer extends the previous one.
			if c.Rebased && clear.Calls[i-1].Reason == "" {
				continue // the first clearing call
			}
			t.Fatalf("call %d: rebased %v, reason %q, previous %q", c.N, c.Rebased, c.Reason, clear.Calls[i-1].Reason)
		}
		if c.Rebased && c.Cached >= clear.Calls[i-1].Context {
			t.Fatalf("call %d: rebased but the whole previous context is cached", c.N)
		}
	}
	if cold != 2 { // the first call and the one after the idle hour
		t.Fatalf("%d cold calls", cold)
	}
	// Fewer tokens sent; on so small a context, rewriting the tail at
	// every call costs more than it saves, which the cost shows.
	if clear.Totals.HistoryVsNaive >= 1 || clear.Totals.ContextVsNaive >= 1 || clear.Totals.CostVsNaive <= 1 {
		t.Fatalf("totals %+v", clear.Totals)
	}
}

// TestMeter: the incremental counts equal a full recount, and the cached
// prefix counts what is shared.
func TestMeter(t *testing.T) {
	c := NewCounter(assemble.BytesTokenizer{})
	m := newMeter(c)
	r := rand.New(rand.NewSource(7))
	var b []byte
	t0 := time.Unix(0, 0)
	for i := 0; i < 300; i++ {
		switch {
		case len(b) > 0 && r.Intn(5) == 0: // rewrite from a random point
			b = append([]byte(nil), b[:r.Intn(len(b))]...)
		default:
			b = append([]byte(nil), b...)
		}
		for k := r.Intn(4); k >= 0; k-- {
			b = append(b, fmt.Sprintf("<<user>>\n%s\n", strings.Repeat("x", r.Intn(60)))...)
		}
		prev := m.prev
		got := m.measure(b, 0, t0.Add(time.Duration(i)*time.Second), time.Minute)
		if want := c.Count(b); got.context != want {
			t.Fatalf("step %d: context %d, recount %d", i, got.context, want)
		}
		if i == 0 {
			continue
		}
		lcp := commonPrefix(prev, b)
		if got.lcp != lcp || got.extended != (lcp == len(prev)) {
			t.Fatalf("step %d: lcp %d (want %d), extended %v", i, got.lcp, lcp, got.extended)
		}
		// Bytes/4 per segment: the cached count is within one token per
		// segment of the prefix's own count.
		if lo, hi := c.Count(b[:lcp])-1, c.Count(b[:lcp])+1; got.cached < lo || got.cached > hi {
			t.Fatalf("step %d: cached %d, prefix count %d", i, got.cached, c.Count(b[:lcp]))
		}
	}
}

// TestCalibrate: an exact linear relation is found; without usage the
// identity is used; errors are reported per kind.
func TestCalibrate(t *testing.T) {
	var cs []*CallInput
	var naive []rawCall
	for i := 0; i < 20; i++ {
		h := 1000 + 500*i
		cs = append(cs, &CallInput{Index: i, Usage: &conversation.Usage{Input: 3, CacheRead: int64(15000 + 1.2*float64(h) - 3)}})
		naive = append(naive, rawCall{hist: h})
	}
	cal := calibrate(cs, naive, 1<<30, "fit")
	if cal.Method != "fit" || math.Abs(cal.Scale-1.2) > 1e-9 || cal.Overhead != 15000 || cal.Error.Fitted.Max > 1e-9 {
		t.Fatalf("fit %+v", cal)
	}
	if cal.Error.Raw.Mean <= cal.Error.Overhead.Mean || cal.Error.Raw.Bias >= 0 {
		t.Fatalf("errors %+v", cal.Error)
	}
	cal = calibrate(cs, naive, 1<<30, "overhead")
	if cal.Scale != 1 || cal.Method != "overhead" {
		t.Fatalf("overhead %+v", cal)
	}
	// Only calls before the first compaction count.
	if cal := calibrate(cs, naive, 4, "fit"); cal.Points != 5 {
		t.Fatalf("points %d", cal.Points)
	}
	for i := range cs {
		cs[i].Usage = nil
	}
	if cal := calibrate(cs, naive, 1<<30, "fit"); cal.Method != "none" || cal.Scale != 1 || cal.Overhead != 0 {
		t.Fatalf("no usage %+v", cal)
	}
}

// TestCalls: synthetic and zero-usage assistant messages are not calls;
// times never go back; a call's time is the last message's before it.
func TestCalls(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Messages: []conversation.Message{
		{Role: conversation.RoleUser, Text: "a", Time: t0},
		{Role: conversation.RoleAssistant, Text: "b", Time: t0.Add(time.Minute), Usage: &conversation.Usage{Input: 5}},
		{Role: conversation.RoleUser, Text: "c", Time: t0.Add(10 * time.Minute)},
		{Role: conversation.RoleAssistant, Text: "err", Model: "<synthetic>"},
		{Role: conversation.RoleAssistant, Text: "", Usage: &conversation.Usage{}},
		{Role: conversation.RoleUser, Text: "d", Time: t0.Add(5 * time.Minute)}, // out of order
		{Role: conversation.RoleAssistant, Text: "e"},
	}}
	cs := calls(s)
	if len(cs) != 2 || cs[0].Index != 1 || cs[1].Index != 6 {
		t.Fatalf("calls %+v", cs)
	}
	if !cs[0].Time.Equal(t0) || !cs[1].Time.Equal(t0.Add(10*time.Minute)) || len(cs[1].Messages) != 6 {
		t.Fatalf("times %v %v", cs[0].Time, cs[1].Time)
	}
}

// TestNeeds: a re-read of an unchanged file collapsed by the strategy is
// needed again; after an edit of it, it is not.
func TestNeeds(t *testing.T) {
	read := func(id, path string) conversation.Message {
		return conversation.Message{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: id, Name: "Read", Args: map[string]any{"file_path": path}}}}
	}
	n := newNeeds()
	n.note(read("r1", "/a"))
	n.note(read("r2", "/b"))
	n.note(conversation.Message{Role: conversation.RoleAssistant, ToolCalls: []conversation.ToolCall{{ID: "e1", Name: "Edit", Args: map[string]any{"file_path": "/b"}}}})
	hidden := &Step{Hidden: func(string) bool { return true }, Reachable: func(id string) bool { return id == "r1" }}
	if re, sv := n.check(read("r3", "/a"), hidden); re != 1 || sv != 1 {
		t.Fatalf("re-read of /a: %d, %d", re, sv)
	}
	if re, _ := n.check(read("r4", "/b"), hidden); re != 0 {
		t.Fatalf("re-read of the edited /b counted: %d", re)
	}
	if re, _ := n.check(read("r5", "/a"), &Step{Hidden: func(string) bool { return false }}); re != 0 {
		t.Fatal("a shown output counted")
	}
	if re, _ := n.check(read("r6", "/c"), hidden); re != 0 {
		t.Fatal("a first read counted")
	}
}

// TestChart writes a chart and reads it back as SVG: two panels with a
// line per strategy in each, named in the legends.
func TestChart(t *testing.T) {
	rep, err := Run(context.Background(), synth(8, 600), Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite,
		Strategies: []Strategy{&Naive{}, &ClearToolUses{Trigger: 1000}, Recorded{}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteChart(&buf, rep); err != nil {
		t.Fatal(err)
	}
	lines := 0
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 2*len(rep.Results) {
		t.Errorf("%d lines, want %d (two panels, %d strategies)", lines, 2*len(rep.Results), len(rep.Results))
	}
	for _, r := range rep.Results {
		if n := strings.Count(buf.String(), ">"+r.Strategy+"</text>"); n != 2 {
			t.Errorf("strategy %s is named %d times in the legends, want 2", r.Strategy, n)
		}
	}
}

// TestClearToolUsesBatched: in the batched reading, what was cleared stays
// cleared, a clearing happens only when the edited context passes the
// trigger, and between clearings each context extends the previous one.
func TestClearToolUsesBatched(t *testing.T) {
	s := synth(30, 1700)
	counter := NewCounter(assemble.BytesTokenizer{})
	env := &Env{Session: s, Counter: counter, Calibration: identity, TTL: 5 * time.Minute, Window: 200000}
	ctx := context.Background()
	st := &ClearToolUses{Trigger: 3000, Batched: true}
	must(t, st.Begin(ctx, env))
	var prev []byte
	prevCleared, batches := 0, 0
	for _, in := range calls(s) {
		got, err := st.Step(ctx, in)
		must(t, err)
		cleared := bytes.Count(got.Bytes, []byte(">>\n"+Placeholder+"\n"))
		if cleared < prevCleared {
			t.Fatalf("call %d: %d cleared after %d", in.N, cleared, prevCleared)
		}
		if cleared > prevCleared {
			batches++
			if !strings.HasPrefix(got.Reason, "over the trigger") {
				t.Fatalf("call %d: cleared without passing the trigger: %q", in.N, got.Reason)
			}
		} else if prev != nil && !bytes.HasPrefix(got.Bytes, prev) {
			t.Fatalf("call %d: no new clearing but the context does not extend the previous one", in.N)
		}
		if tokens := counter.Count(got.Bytes[len(EmptyHead):]); cleared > prevCleared && tokens > 3000 {
			t.Fatalf("call %d: %d tokens after a clearing", in.N, tokens)
		}
		prev, prevCleared = got.Bytes, cleared
	}
	if batches < 2 {
		t.Fatalf("%d batches", batches)
	}
}

// TestStorePassedIn: the ctxstore strategies run on a store given by the
// caller, each in a session of its own, and leave the sessions there.
func TestStorePassedIn(t *testing.T) {
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := synth(6, 400)
	rep, err := Run(ctx, s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), OpenStore: openSQLite, Store: st,
		Strategies: []Strategy{&Ctxstore{Layout: assemble.LayoutStream}, &Ctxstore{Layout: assemble.LayoutLiteral}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		checkAccounting(t, r, rep.TTLSeconds)
		if !hasNote(r, "reachability: 6 of 6") {
			t.Fatalf("%s notes %q", r.Strategy, r.Notes)
		}
	}
	ids, err := session.List(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 {
		t.Fatalf("sessions in the store: %v", ids)
	}
}

// openSQLite is the store opener the CLI gives replay: a SQLite file in dir.
func openSQLite(ctx context.Context, dir string) (store.Store, error) {
	return bitemporal.Open(ctx, filepath.Join(dir, "store.db"), bitemporal.Options{})
}
