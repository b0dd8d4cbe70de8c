package stats_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/stats"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

// t0 is a Monday, 09:00 UTC.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func human(sec int, text string) events.Event {
	return events.Event{Type: events.Prompt, Source: "user", Text: text, Time: at(sec)}
}
func resp(sec int, text string) events.Event {
	return events.Event{Type: events.Response, Source: "assistant", Text: text, Time: at(sec)}
}
func call(sec int, id, name string) events.Event {
	return events.Event{Type: events.ToolCall, Source: "assistant", Time: at(sec), Tool: &events.Tool{ID: id, Name: name}}
}
func result(sec int, id string, failed bool) events.Event {
	return events.Event{Type: events.ToolResult, Time: at(sec), Tool: &events.Tool{ID: id}, Result: &events.Result{Content: "out", IsError: failed}}
}
func untimed(e events.Event) events.Event { e.Time = time.Time{}; return e }

// chains writes three sessions' commit chains (docs/stats.md describes
// the expected figures):
//
//	A (claude-code, timed): 4 deltas and a compaction commit; 2 human
//	  prompts, an injected one, 3 responses, thinking, 4 tool calls (one
//	  failed), a compaction (boundary + summary), an API error, outcome
//	  success; a 10-minute idle gap.
//	B (swe-agent, untimed): a root with a prompt, a response, 2 calls and
//	  outcome submitted; a "branch" view of it and a commit in a format
//	  without a decoder, both children of the root.
//	C (pi, timed): a prompt and a response overlapping A.
func chains(t *testing.T, svc *commits.Service, a, b, c string) {
	t.Helper()
	ctx := context.Background()
	cp := func(r commits.CheckpointRequest) *commits.Commit {
		t.Helper()
		x, err := svc.Checkpoint(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	pa := commits.Provenance{Session: a, Harness: "claude-code 2.0.0", Trigger: commits.ImportTrigger}
	a1 := cp(commits.CheckpointRequest{Provenance: pa, Created: at(60), Events: []events.Event{
		human(0, "fix the bug"),
		{Type: events.Thinking, Source: "assistant", Text: "hmm", Time: at(10)},
		resp(20, "Looking."),
		call(30, "r1", "Read"), result(40, "r1", false),
		call(50, "b1", "Bash"), result(60, "b1", true),
	}})
	a2 := cp(commits.CheckpointRequest{Parent: a1.ID, Provenance: pa, Created: at(100), Events: []events.Event{
		{Type: events.Prompt, Subtype: "task_notification", Source: "system", Meta: true, Text: "bg done", Time: at(70)},
		resp(80, "Fixed it."),
		call(90, "e1", "Edit"), result(100, "e1", false),
	}})
	a3 := cp(commits.CheckpointRequest{Parent: a2.ID, Provenance: pa, Created: at(705), Events: []events.Event{
		{Type: events.System, Subtype: events.SubtypeCompactBoundary, Time: at(700)},
		{Type: events.System, Subtype: events.SubtypeCompactionSummary, Meta: true, Text: "summary", Time: at(705)},
	}})
	a4 := cp(commits.CheckpointRequest{Parent: a3.ID, Type: commits.Compaction, Provenance: pa, Created: at(706), Events: []events.Event{
		{Type: events.System, Subtype: events.SubtypeCompactionSummary, Meta: true, Text: "summary", Time: at(705)},
	}})
	cp(commits.CheckpointRequest{Parent: a4.ID, Provenance: pa, Created: at(1050), Events: []events.Event{
		human(1000, "and the tests"),
		resp(1010, "Done."),
		call(1020, "b2", "Bash"), result(1030, "b2", false),
		{Type: events.Error, Subtype: "api_error", Text: "overloaded", Time: at(1040)},
		{Type: events.Metric, Subtype: "result", Time: at(1050), Metric: &events.MetricData{Status: "success"}},
	}})

	pb := commits.Provenance{Session: b, Harness: "swe-agent", Template: "solver", Trigger: commits.ImportTrigger}
	bEvents := []events.Event{
		untimed(human(0, "task")), untimed(resp(0, "ok")),
		untimed(call(0, "c1", "bash")), untimed(result(0, "c1", false)),
		untimed(call(0, "c2", "submit")), untimed(result(0, "c2", false)),
		{Type: events.Metric, Metric: &events.MetricData{Status: "submitted"}},
	}
	b1 := cp(commits.CheckpointRequest{Provenance: pb, Created: at(3000), Events: bEvents})
	cp(commits.CheckpointRequest{Parent: b1.ID, Provenance: pb, Created: at(3001), Events: bEvents, Tags: []string{stats.BranchTag}})
	cp(commits.CheckpointRequest{Parent: b1.ID, Provenance: pb, Created: at(3002), Format: "opaque-v1", Content: []byte("x")})

	pc := commits.Provenance{Session: c, Harness: "pi"}
	cp(commits.CheckpointRequest{Provenance: pc, Created: at(2000), Events: []events.Event{human(500, "hi"), resp(2000, "hello")}})
}

func registry(t *testing.T) *commits.Registry {
	reg := commits.NewRegistry()
	if err := reg.Register(&commits.Format{Name: "opaque-v1", Concat: func(p [][]byte) ([]byte, error) { return bytes.Join(p, nil), nil }}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func near(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }

func TestComputeExact(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		svc := commits.New(e.Store, commits.Options{Registry: registry(t)})
		a, b, c := e.ID("sess-a"), e.ID("sess-b"), e.ID("sess-c")
		chains(t, svc, a, b, c)
		scope := []string{a, b, c}
		r, err := stats.Compute(ctx, svc, stats.Options{Sessions: scope, Bins: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Sessions) != 3 {
			t.Fatalf("%d sessions", len(r.Sessions))
		}
		by := map[string]*stats.Session{}
		for _, s := range r.Sessions {
			by[s.ID] = s
		}
		sa, sb, sc := by[a], by[b], by[c]

		// A: every figure, by hand.
		wantA := stats.Counts{Events: 19, Timed: 19, HumanPrompts: 2, InjectedPrompt: 1, Responses: 3, Thinking: 1, ToolCalls: 4,
			ToolResults: 4, ToolErrors: 1, Compactions: 1, Errors: 1, HumanChars: 24, AgentChars: 22}
		if sa.Counts != wantA {
			t.Fatalf("A counts\n got %+v\nwant %+v", sa.Counts, wantA)
		}
		if sa.Commits != 5 || sa.CompactionCommits != 1 || sa.Branches != 1 || sa.Skipped != 0 || sa.Undecoded != 0 || sa.Harness != "claude-code 2.0.0" {
			t.Fatalf("A commits %+v", sa)
		}
		if !near(sa.Amplification.ResponsesPerPrompt, 1.5) || !near(sa.Amplification.ToolCallsPerPrompt, 2) || !near(sa.Amplification.CharRatio, 22.0/24) {
			t.Fatalf("A amplification %v %v %v", *sa.Amplification.ResponsesPerPrompt, *sa.Amplification.ToolCallsPerPrompt, *sa.Amplification.CharRatio)
		}
		if !sa.Start.Equal(t0) || !sa.End.Equal(at(1050)) || sa.Seconds != 1050 || sa.IdleSeconds != 600 || sa.ActiveSeconds != 450 ||
			len(sa.IdleGaps) != 1 || !sa.IdleGaps[0].Start.Equal(at(100)) || !near(sa.CompactionsPerHour, 3600.0/1050) {
			t.Fatalf("A time: %v..%v %v s, idle %v %+v", sa.Start, sa.End, sa.Seconds, sa.IdleSeconds, sa.IdleGaps)
		}
		if got := stats.ProfileString(sa.Profile); got != "T.CH" {
			t.Fatalf("A profile %q, want T.CH", got)
		}
		if sa.Tools["Bash"] != 2 || sa.Tools["Read"] != 1 || sa.Tools["Edit"] != 1 || sa.ToolErrorsBy["Bash"] != 1 || len(sa.ToolErrorsBy) != 1 {
			t.Fatalf("A tools %v errors %v", sa.Tools, sa.ToolErrorsBy)
		}
		if sa.Outcome != "success" || sa.ErrorSubtypes["api_error"] != 1 {
			t.Fatalf("A outcome %q errors %v", sa.Outcome, sa.ErrorSubtypes)
		}

		// B: counted, but untimed; the branch view skipped, the opaque
		// commit undecoded.
		wantB := stats.Counts{Events: 7, HumanPrompts: 1, Responses: 1, ToolCalls: 2, ToolResults: 2, HumanChars: 4, AgentChars: 2}
		if sb.Counts != wantB || sb.Commits != 3 || sb.Skipped != 1 || sb.Undecoded != 1 || sb.Branches != 2 {
			t.Fatalf("B %+v", sb)
		}
		if sb.Start != nil || sb.Seconds != 0 || sb.CompactionsPerHour != nil || sb.Profile != nil || sb.Outcome != "submitted" {
			t.Fatalf("B time %+v", sb)
		}
		if sc.HumanPrompts != 1 || sc.Responses != 1 || sc.Seconds != 1500 || sc.Outcome != "" {
			t.Fatalf("C %+v", sc)
		}

		// Totals.
		tot := r.Total
		if tot.Sessions != 3 || tot.TimedSessions != 2 || tot.Events != 28 || tot.Timed != 21 || tot.HumanPrompts != 4 ||
			tot.Responses != 5 || tot.ToolCalls != 6 || tot.HumanChars != 30 || tot.AgentChars != 29 || tot.Compactions != 1 {
			t.Fatalf("total %+v", tot.Counts)
		}
		if !near(tot.Amplification.ResponsesPerPrompt, 1.25) || !near(tot.Amplification.ToolCallsPerPrompt, 1.5) || !near(tot.Amplification.CharRatio, 29.0/30) {
			t.Fatalf("total amplification %+v", tot.Amplification)
		}
		if tot.Tools["Bash"] != 2 || tot.Tools["bash"] != 1 || tot.Tools["submit"] != 1 || len(tot.Tools) != 5 {
			t.Fatalf("tools %v", tot.Tools)
		}
		// By template (B names one) or harness (A; C calls no tool).
		if g := tot.ToolsByGroup; len(g) != 2 || g["harness:claude-code"]["Bash"] != 2 || g["harness:claude-code"]["Edit"] != 1 ||
			g["template:solver"]["submit"] != 1 || len(g["template:solver"]) != 2 || sb.Template != "solver" {
			t.Fatalf("tools by group %v", g)
		}
		// A's metric event is bookkeeping, not activity: 18 of A's 19, and C's 2.
		if tot.ByHour[9] != 20 || tot.PromptsByHour[9] != 3 || tot.ByWeekday[time.Monday] != 20 || tot.ByWeekdayHour[time.Monday][9] != 20 {
			t.Fatalf("hours %v weekdays %v", tot.ByHour, tot.ByWeekday)
		}
		if cc := tot.Concurrency; cc.Peak != 2 || !cc.At.Equal(at(500)) || strings.Join(cc.Sessions, ",") != a+","+c || cc.Untimed != 1 {
			t.Fatalf("concurrency %+v", cc)
		}
		if tot.Outcomes["success"] != 1 || tot.Outcomes["submitted"] != 1 || tot.Outcomes["unknown"] != 1 || tot.ErrorSubtypes["api_error"] != 1 {
			t.Fatalf("outcomes %v errors %v", tot.Outcomes, tot.ErrorSubtypes)
		}
		if tot.Seconds != 2550 || !near(tot.CompactionsPerHour, 3600.0/2550) {
			t.Fatalf("compaction rate %v over %v s", tot.CompactionsPerHour, tot.Seconds)
		}
		if len(r.Notes) != 3 { // untimed events, an untimed session, an undecoded commit
			t.Fatalf("notes %q", r.Notes)
		}

		// One session: only its commits are read.
		r1, err := stats.Compute(ctx, svc, stats.Options{Sessions: []string{c}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r1.Sessions) != 1 || r1.Sessions[0].ID != c || r1.Total.Events != 2 || r1.Total.Concurrency.Peak != 1 {
			t.Fatalf("one session: %+v", r1.Total)
		}

		// A time range: events in [600 s, 1500 s); an untimed event is
		// placed at its commit's time (B's, 3000 s: out).
		r2, err := stats.Compute(ctx, svc, stats.Options{Sessions: scope, From: at(600), To: at(1500), Bins: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(r2.Sessions) != 1 || r2.Sessions[0].ID != a {
			t.Fatalf("range: %d sessions", len(r2.Sessions))
		}
		s2 := r2.Sessions[0]
		want2 := stats.Counts{Events: 8, Timed: 8, HumanPrompts: 1, Responses: 1, ToolCalls: 1, ToolResults: 1, Compactions: 1, Errors: 1, HumanChars: 13, AgentChars: 5}
		if s2.Counts != want2 || s2.Seconds != 350 || len(s2.IdleGaps) != 0 || s2.Outcome != "success" {
			t.Fatalf("range: %+v", s2)
		}

		// All sessions: on a fresh database, the three.
		if e.Backend == storetestenv.SQLite {
			all, err := stats.Compute(ctx, svc, stats.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if all.Total.Sessions != 3 || all.Total.Events != 28 {
				t.Fatalf("all sessions: %+v", all.Total)
			}
		}
	})
}

// TestOutputs: the text, the JSON and the charts of a report.
func TestOutputs(t *testing.T) {
	ctx := context.Background()
	// The outputs do not depend on the backend (TestComputeExact runs on
	// both): a SQLite file.
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	{
		svc := commits.New(st, commits.Options{Registry: registry(t)})
		chains(t, svc, "sess-a", "sess-b", "sess-c")
		r, err := stats.Compute(ctx, svc, stats.Options{Bins: 4})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := stats.WriteText(&out, r); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"T.CH", "Bash", "peak concurrent sessions: 2 at 2026-03-02T09:08:20Z", "outcomes: submitted 1, success 1, unknown 1",
			"compactions: 1 in 42m30s of timed sessions (1.4 per hour)", "note: 7 events have no time"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("text lacks %q:\n%s", want, out.String())
			}
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(l); n > stats.TextWidth {
				t.Errorf("a line of %d columns, over %d: %q", n, stats.TextWidth, l)
			}
		}
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(j, &back); err != nil {
			t.Fatal(err)
		}
		if tot := back["total"].(map[string]any); tot["human_prompts"].(float64) != 4 || tot["by_hour"].([]any)[9].(float64) != 20 {
			t.Fatalf("json total %v", tot)
		}
		dir := filepath.Join(t.TempDir(), "charts")
		paths, err := stats.WriteCharts(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 4 {
			t.Fatalf("charts %v", paths)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil || !bytes.HasPrefix(b, []byte("<svg ")) || len(b) < 2000 {
				t.Fatalf("chart %s: %v, %d bytes", p, err, len(b))
			}
			for d := xml.NewDecoder(bytes.NewReader(b)); ; {
				if _, err := d.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("chart %s is not well-formed: %v", p, err)
				}
			}
		}
	}
}

// TestClassify: prompts are a person's only when Source says so.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		e    events.Event
		want stats.Kind
	}{
		{events.Event{Type: events.Prompt, Source: "user"}, stats.KindHuman},
		{events.Event{Type: events.Prompt}, stats.KindHuman},
		{events.Event{Type: events.Prompt, Source: "user", Meta: true}, stats.KindInjected},
		{events.Event{Type: events.Prompt, Source: "system"}, stats.KindInjected},
		{events.Event{Type: events.Prompt, Source: "agent", Subtype: "sidechain"}, stats.KindInjected},
		{events.Event{Type: events.System, Subtype: "init"}, stats.KindOther},
		{events.Event{Type: events.System, Subtype: events.SubtypeCompactionSummary}, stats.KindCompaction},
		{events.Event{Type: events.Metric}, stats.KindOther},
	} {
		if got := stats.Classify(c.e); got != c.want {
			t.Errorf("%+v: %s, want %s", c.e, got, c.want)
		}
	}
}

// TestCompactionCounting: a boundary and its summary are one compaction;
// a summary alone is one; two boundaries are two.
func TestCompactionCounting(t *testing.T) {
	bnd := events.Event{Type: events.System, Subtype: events.SubtypeCompactBoundary}
	sum := events.Event{Type: events.System, Subtype: events.SubtypeCompactionSummary}
	for _, c := range []struct {
		evs  []events.Event
		cc   int
		want int
	}{
		{[]events.Event{bnd, sum}, 0, 1},
		{[]events.Event{sum}, 0, 1},
		{[]events.Event{bnd, bnd}, 0, 2},
		{[]events.Event{bnd, sum, {Type: events.Response}, sum}, 0, 2},
		{[]events.Event{bnd, sum}, 3, 3},
	} {
		r := stats.Analyze([]stats.Input{{ID: "s", Events: c.evs, CompactionCommits: c.cc}}, stats.Options{})
		if got := r.Sessions[0].Compactions; got != c.want {
			t.Errorf("%d events, %d commits: %d compactions, want %d", len(c.evs), c.cc, got, c.want)
		}
	}
}

// TestForks: a session whose chain starts from another session's commit
// (a sub-agent's lane, a fork) says so, and the concurrency peak counts it
// only in PeakWithForks.
func TestForks(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		svc := commits.New(e.Store, commits.Options{})
		p, lane := e.ID("parent"), e.ID("parent")+"/agent-1"
		root, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Provenance: commits.Provenance{Session: p}, Created: at(0),
			Events: []events.Event{human(0, "spawn"), call(10, "t1", "Task")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Parent: root.ID, Provenance: commits.Provenance{Session: p}, Created: at(100),
			Events: []events.Event{result(100, "t1", false)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Parent: root.ID, Provenance: commits.Provenance{Session: lane}, Created: at(50),
			Events: []events.Event{{Type: events.Prompt, Source: "agent", Subtype: "sidechain", Text: "sub task", Time: at(20)}, resp(50, "sub done")}}); err != nil {
			t.Fatal(err)
		}
		r, err := stats.Compute(ctx, svc, stats.Options{Sessions: []string{p, lane}})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]*stats.Session{}
		for _, s := range r.Sessions {
			by[s.ID] = s
		}
		if by[p].ForkOf != "" || by[lane].ForkOf != root.ID || by[lane].ForkOfSession != p || by[p].Branches != 2 {
			t.Fatalf("parent %+v\nlane %+v", by[p], by[lane])
		}
		if c := r.Total.Concurrency; c.Peak != 1 || c.PeakWithForks != 2 || !c.AtWithForks.Equal(at(20)) {
			t.Fatalf("concurrency %+v", c)
		}
		// The lane alone: its fork point is outside the scope.
		r, err = stats.Compute(ctx, svc, stats.Options{Sessions: []string{lane}})
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Sessions[0]; s.ForkOf != root.ID || s.ForkOfSession != "" || s.HumanPrompts != 0 || s.InjectedPrompt != 1 {
			t.Fatalf("lane alone %+v", s)
		}
	})
}

// TestSnapshots: a root snapshot (a conversation imported whole) is read;
// a snapshot with a parent repeats the chain above it and is skipped.
func TestSnapshots(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		svc := commits.New(e.Store, commits.Options{})
		sid := e.ID("snap")
		p := commits.Provenance{Session: sid}
		conv := []events.Event{human(0, "hello"), resp(10, "hi")}
		root, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Type: commits.Snapshot, Provenance: p, Created: at(10), Events: conv})
		if err != nil {
			t.Fatal(err)
		}
		d, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Parent: root.ID, Provenance: p, Created: at(20), Events: []events.Event{human(20, "more")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Parent: d.ID, Type: commits.Snapshot, Provenance: p, Created: at(30),
			Events: append(conv, human(20, "more"))}); err != nil {
			t.Fatal(err)
		}
		r, err := stats.Compute(ctx, svc, stats.Options{Sessions: []string{sid}})
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Sessions[0]; s.Commits != 3 || s.Skipped != 1 || s.HumanPrompts != 2 || s.Responses != 1 {
			t.Fatalf("%+v", s)
		}
	})
}
