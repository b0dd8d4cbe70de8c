package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/stats"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestStatsCommand: "ctxstore stats" on a store holding two sessions'
// commits: the text, --json, --session, --from/--to, --charts, and usage
// errors.
func TestStatsCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := commits.New(st, commits.Options{})
	t0 := time.Date(2026, 3, 7, 22, 0, 0, 0, time.UTC) // a Saturday
	for i, sid := range []string{"alpha", "beta"} {
		base := t0.Add(time.Duration(i) * time.Hour)
		ev := func(sec int, e events.Event) events.Event {
			e.Time = base.Add(time.Duration(sec) * time.Second)
			return e
		}
		if _, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Provenance: commits.Provenance{Session: sid, Harness: "pi"}, Created: base.Add(time.Minute),
			Events: []events.Event{
				ev(0, events.Event{Type: events.Prompt, Source: "user", Text: "go"}),
				ev(10, events.Event{Type: events.ToolCall, Tool: &events.Tool{ID: "c", Name: "bash"}}),
				ev(20, events.Event{Type: events.ToolResult, Tool: &events.Tool{ID: "c"}, Result: &events.Result{Content: "x"}}),
				ev(30, events.Event{Type: events.Response, Text: "done!"}),
			}}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	stat := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(ctx, append([]string{"--store", db}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := stat("stats")
	if code != 0 || !strings.Contains(out, "tool usage (2 calls, 0 failed results)") || !strings.Contains(out, "Sat       8      2") ||
		!strings.Contains(errs, "stats: 2 sessions, 8 events") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = stat("--json", "stats", "--session", "beta", "--tz", "Europe/Paris")
	var r stats.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("exit %d %v: %s", code, err, out)
	}
	// beta runs at 23:00 UTC on Saturday: Sunday 00:00 in Paris.
	if len(r.Sessions) != 1 || r.Sessions[0].ID != "beta" || r.Total.ByWeekday[time.Sunday] != 4 || r.Total.ByHour[0] != 4 {
		t.Fatalf("--session beta --tz Europe/Paris: %+v", r.Total)
	}
	code, out, _ = stat("--json", "stats", "--from", "2026-03-07T22:30:00Z")
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || len(r.Sessions) != 1 || r.Sessions[0].ID != "beta" {
		t.Fatalf("--from: exit %d %v %s", code, err, out)
	}
	charts := filepath.Join(t.TempDir(), "charts")
	if code, _, errs = stat("stats", "--charts", charts); code != 0 || !strings.Contains(errs, "chart written to") {
		t.Fatalf("--charts: exit %d %s", code, errs)
	}
	if b, err := os.ReadFile(filepath.Join(charts, stats.ChartActivity)); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
		t.Fatalf("activity chart: %v", err)
	}
	for _, bad := range [][]string{{"stats", "--tz", "Mars/Olympus"}, {"stats", "--bins", "0"}, {"stats", "--from", "2026-03-08", "--to", "2026-03-07"}} {
		if code, _, _ := stat(bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want a usage error", bad, code)
		}
	}
}
