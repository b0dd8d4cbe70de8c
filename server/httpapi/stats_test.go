package httpapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/stats"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestStatsRoute: GET /v1/stats over the commits of two sessions; a token
// limited to one session sees only it, and is refused the other.
func TestStatsRoute(t *testing.T) {
	const all, onlyA = "stats-token-all-0123", "stats-token-only-a-0123"
	e := newEnv(t, func(o *Options) {
		o.Tokens = []Token{{Secret: all}, {Secret: onlyA, Sessions: []string{"a"}}}
	})
	svc := commits.New(e.st, commits.Options{})
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for i, sid := range []string{"a", "b"} {
		evs := []events.Event{{Type: events.Prompt, Source: "user", Text: "go", Time: t0}}
		for k := 0; k <= i; k++ {
			evs = append(evs, events.Event{Type: events.ToolCall, Time: t0.Add(time.Second), Tool: &events.Tool{ID: "c" + string(rune('0'+k)), Name: "bash"}})
		}
		if _, err := svc.Checkpoint(context.Background(), commits.CheckpointRequest{Provenance: commits.Provenance{Session: sid}, Created: t0, Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	var r stats.Report
	e.token = all
	if code, eb := e.do("GET", "/v1/stats?bins=4&tz=Europe/Paris", nil, &r); code != 200 || len(r.Sessions) != 2 || r.Total.ToolCalls != 3 || r.Total.ByHour[10] != 5 {
		t.Fatalf("all: %d %+v %+v", code, eb, r.Total)
	}
	e.token = onlyA
	if code, eb := e.do("GET", "/v1/stats", nil, &r); code != 200 || len(r.Sessions) != 1 || r.Sessions[0].ID != "a" || r.Total.ToolCalls != 1 {
		t.Fatalf("limited token: %d %+v %+v", code, eb, r.Sessions)
	}
	if code, eb := e.do("GET", "/v1/stats?session=b", nil, nil); code != http.StatusForbidden || eb.Code != CodeForbidden {
		t.Fatalf("another session: %d %+v", code, eb)
	}
	e.token = ""
	if code, _ := e.do("GET", "/v1/stats", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	e.token, e.check = all, false // a request the document refuses too
	if code, _ := e.do("GET", "/v1/stats?from=yesterday", nil, nil); code != http.StatusBadRequest {
		t.Fatalf("bad from: %d", code)
	}
}
