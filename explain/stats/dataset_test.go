package stats_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/stats"
	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/sweagent"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// readerChain commits a transcript read by the existing readers as an
// events-v1 chain, one commit per turn (a person's prompt starts one), a
// compaction summary as a system event (docs/stats.md: the chains used
// when `ctxstore import` is not there).
func readerChain(t *testing.T, svc *commits.Service, s *transcript.Session, session string, extra ...events.Event) {
	t.Helper()
	compaction := map[int]bool{}
	for _, i := range s.CompactionAt {
		compaction[i] = true
	}
	parent := ""
	var turn []events.Event
	flush := func() {
		if len(turn) == 0 {
			return
		}
		c, err := svc.Checkpoint(context.Background(), commits.CheckpointRequest{Parent: parent, Events: turn, Created: turn[0].Time,
			Provenance: commits.Provenance{Session: session, Harness: string(s.Format) + " " + s.Version, Trigger: commits.ImportTrigger}})
		if err != nil {
			t.Fatalf("%s: %v", session, err)
		}
		parent, turn = c.ID, nil
	}
	for i, m := range s.Messages {
		if m.Role == conversation.RoleUser && !m.Meta {
			flush()
		}
		if compaction[i] {
			turn = append(turn, events.Event{Type: events.System, Subtype: events.SubtypeCompactionSummary, Time: m.Time, Text: m.Text, Meta: true})
			continue
		}
		turn = append(turn, events.FromMessages([]conversation.Message{m})...)
	}
	turn = append(turn, extra...)
	flush()
}

// TestDatasetChains: every dataset session, read by the transcript readers
// and committed as a chain, gives the stats its messages say: prompts,
// responses, tool calls and results, compactions.
func TestDatasetChains(t *testing.T) {
	ds := datasetdir.Dir(t)
	var files []string
	for _, pat := range []string{"claude-code/*.jsonl", "claude-code/raw/*.jsonl", "pi/*.jsonl", "swe-agent/*.traj"} {
		m, _ := filepath.Glob(filepath.Join(ds, pat))
		files = append(files, m...)
	}
	if len(files) != 26 {
		t.Fatalf("%d dataset files, want 26", len(files))
	}
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := commits.New(st, commits.Options{})
	want := map[string]stats.Counts{}
	for _, p := range files {
		s, err := transcripttest.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		id := filepath.Base(p)
		var extra []events.Event
		if s.Format == transcript.FormatSWEAgent {
			// The trajectory's outcome, as an importer records it.
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			extra = append(extra, metric(sweagent.Read(&harness.Session{}, b)))
		}
		readerChain(t, svc, s, id, extra...)
		var c stats.Counts
		for i, m := range s.Messages {
			switch {
			case m.Role == conversation.RoleUser && containsInt(s.CompactionAt, i):
				c.Compactions++
			case m.Role == conversation.RoleUser && m.Meta:
				c.InjectedPrompt++
			case m.Role == conversation.RoleUser:
				c.HumanPrompts++
			case m.Role == conversation.RoleAssistant:
				if m.Text != "" || len(m.ToolCalls) == 0 {
					c.Responses++
				}
				c.ToolCalls += len(m.ToolCalls)
			case m.Role == conversation.RoleToolResult:
				c.ToolResults++
				if m.IsError {
					c.ToolErrors++
				}
			}
		}
		want[id] = c
	}
	r, err := stats.Compute(ctx, svc, stats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sessions) != len(files) {
		t.Fatalf("%d sessions for %d files", len(r.Sessions), len(files))
	}
	for _, s := range r.Sessions {
		w := want[s.ID]
		got := stats.Counts{HumanPrompts: s.HumanPrompts, InjectedPrompt: s.InjectedPrompt, Responses: s.Responses, ToolCalls: s.ToolCalls,
			ToolResults: s.ToolResults, ToolErrors: s.ToolErrors, Compactions: s.Compactions}
		if got != w {
			t.Errorf("%s:\n got %+v\nwant %+v", s.ID, got, w)
		}
		if filepath.Ext(s.ID) == ".traj" && (s.Timed != 0 || s.Outcome != "submitted") {
			t.Errorf("%s: a trajectory has no times, and its outcome is its exit status: %+v", s.ID, s)
		}
		if filepath.Ext(s.ID) == ".jsonl" && (s.Timed != s.Events || s.Start == nil) {
			t.Errorf("%s: %d of %d events timed", s.ID, s.Timed, s.Events)
		}
	}
	var out bytes.Buffer
	if err := stats.WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	// STATS_REPORT=FILE keeps the report (docs/stats.md shows it).
	if p := os.Getenv("STATS_REPORT"); p != "" {
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if dir := os.Getenv("STATS_CHARTS"); dir != "" {
			if _, err := stats.WriteCharts(dir, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	t.Logf("%d sessions, %d events, %d human prompts", r.Total.Sessions, r.Total.Events, r.Total.HumanPrompts)
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// metric is a SWE-agent run's outcome and totals as a neutral metric event
// (subtype "result"): Status is the exit status ("submitted",
// "exit_cost", ...), with the tokens, cost and API calls of model_stats;
// submission, model and environment in Metadata: what the reader chain
// appends to a trajectory's events so that stats count its outcome.
func metric(i sweagent.Info) events.Event {
	md := map[string]any{}
	if i.Submission != "" {
		md["submission"] = i.Submission
	}
	if i.Model != "" {
		md["model"] = i.Model
	}
	if i.Environment != "" {
		md["environment"] = i.Environment
	}
	if len(md) == 0 {
		md = nil
	}
	return events.Event{Type: events.Metric, Subtype: "result", Model: i.Model, Metadata: md, Metric: &events.MetricData{
		InputTokens: i.TokensSent, OutputTokens: i.TokensReceived, CostUSD: i.Cost, Turns: i.APICalls, Status: i.ExitStatus}}
}
