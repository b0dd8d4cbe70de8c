package inspector_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/harness/importer"
	recordedcalls "github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
)

// A session imported from its transcript (commits only) is listed as
// recorded and its page shows its commits and the calls its harness
// recorded.
func TestRecordedSessionPages(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	res, err := importer.New(se.Store, importer.Options{}).ImportFile(context.Background(), filepath.Join(datasets.Dir(t), inspecttest.Small))
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("import: %v %+v", err, res)
	}
	sid := res.Sessions[0].Session
	h, err := inspector.New(inspector.Options{Store: se.Store, Prefix: "/inspect",
		Authorize: func(*http.Request) (inspector.Grant, error) { return inspector.Grant{All: true}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	s := &site{url: ts.URL}
	code, _, body := get(t, s, "", "/inspect/")
	if code != 200 || strings.Count(body, `class="session-link"`) != 1 || !strings.Contains(body, sid) || !strings.Contains(body, "recorded: ") ||
		!strings.Contains(body, `<td class="num recorded" title="recorded: `) || !strings.Contains(body, ">30</td>") {
		t.Fatalf("sessions: %d\n%s", code, body)
	}
	code, _, body = get(t, s, "", "/inspect/s/"+sid)
	if code != 200 || !strings.Contains(body, `id="recorded"`) || !strings.Contains(body, `id="commit-count"`) ||
		strings.Contains(body, `id="calls"`) || strings.Count(body, `class="commit-row`) != res.Sessions[0].Commits {
		t.Fatalf("recorded session page: %d\n%s", code, body)
	}
	// Its calls: the 30 requests the transcript recorded, with their
	// usage and cost; a call's page shows the request and its usage.
	if !strings.Contains(body, `id="recorded-calls"`) || strings.Count(body, `class="call-link"`) != 30 || !strings.Contains(body, "claude-sonnet-4") ||
		!strings.Contains(body, `id="recorded-timeline"`) || strings.Count(body, `<g class="bar"`) != 30 || strings.Contains(body, `id="chain"`) {
		t.Fatalf("recorded session page lacks its calls:\n%s", body)
	}
	if !strings.Contains(body, `id="would-cost">not computed yet`) {
		t.Fatalf("recorded session page before a replay:\n%s", body)
	}
	// Once `session show --replay` stored what ctxstore would have cost.
	d, err := inspect.New(se.Store, inspect.Options{}).Session(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := recordedcalls.PutReplay(context.Background(), se.Store, sid, recordedcalls.Replay{Commits: d.Commits, Strategy: inspect.WouldCostStrategy,
		RecordedCost: 100, Cost: 60, RecordedContext: 1000, Context: 700}); err != nil {
		t.Fatal(err)
	}
	if _, _, body = get(t, s, "", "/inspect/s/"+sid); !strings.Contains(body, "would have cost 60.0% of what it did with ctxstore managing its context: $") ||
		!strings.Contains(body, "700 tokens sent instead of 1000") {
		t.Fatalf("recorded session page after a replay:\n%s", body)
	}
	code, _, body = get(t, s, "", "/inspect/s/"+sid+"/c/3")
	if code != 200 || !strings.Contains(body, `id="call-usage"`) || !strings.Contains(body, "read from the cache") || !strings.Contains(body, "user message") {
		t.Fatalf("recorded call page: %d\n%s", code, body)
	}
	code, _, body = get(t, s, "", "/inspect/s/"+sid+"/c/3/raw")
	if code != 200 || !strings.HasPrefix(body, `{"messages":[{"role":"user"`) {
		t.Fatalf("recorded call's bytes: %d\n%.300s", code, body)
	}
}
