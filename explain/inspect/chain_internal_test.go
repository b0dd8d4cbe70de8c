package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// A served session of more calls than are totalled on a page is
// summarized from its first and last call records: the same count, name,
// harness, last call and last context as the full summary, no totals.
func TestLongServedSessionSummary(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	l := inspecttest.NewLive(t, se.Store, "served")
	l.Turn("Fix the failing test in main.go")
	for i := range 5 {
		l.Bash("go test ./...", "ok\n")
		l.Call(time.Duration(i+1) * time.Minute)
	}
	ctx := context.Background()
	in := New(se.Store, Options{})
	full, err := in.summary(ctx, "served")
	if err != nil {
		t.Fatal(err)
	}
	defer func(v int) { maxTotalled = v }(maxTotalled)
	maxTotalled = 3
	short, err := New(se.Store, Options{}).summary(ctx, "served")
	if err != nil {
		t.Fatal(err)
	}
	if full.TotalsOmitted || !short.TotalsOmitted || short.TokensSent != 0 {
		t.Fatalf("totals omitted: full %v, short %v (%d sent)", full.TotalsOmitted, short.TotalsOmitted, short.TokensSent)
	}
	if short.Calls != 5 || short.Calls != full.Calls || short.Name != full.Name || short.Name == "" || short.Harness != full.Harness ||
		short.Tokens != full.Tokens || short.LastCall == nil || !short.LastCall.Equal(*full.LastCall) || short.Cwd != full.Cwd {
		t.Fatalf("short summary %+v\nfull %+v", short, full)
	}
	ss, err := New(se.Store, Options{}).Sessions(ctx)
	if err != nil || len(ss) != 1 || !ss[0].TotalsOmitted {
		t.Fatalf("sessions: %v %+v", err, ss)
	}
}

// queryCount counts a store's queries.
type queryCount struct {
	store.Store
	n int
}

func (q *queryCount) Query(ctx context.Context, qq store.Query) ([]store.Doc, error) {
	q.n++
	return q.Store.Query(ctx, qq)
}

// The deepest commit of a recorded session is read from the tip its calls
// were derived from (two depths checked), not probed depth by depth; a
// commit written since (deeper than the tip) makes it probe, and both
// find the same depth.
func TestMaxDepthFromTip(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	ids := inspecttest.Recorded(t, se.Store, "long", 3000, 5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	c := &queryCount{Store: se.Store}
	d, err := New(c, Options{}).maxDepth(ctx, "long", 0)
	if err != nil || d != 2999 {
		t.Fatalf("max depth %d, %v; want 2999", d, err)
	}
	if c.n > 3 {
		t.Errorf("finding the deepest of 3,000 commits took %d queries, want at most 3 (the tip and two depths)", c.n)
	}
	// A commit past the tip the calls were derived from: probed.
	svc := commits.New(se.Store, commits.Options{})
	if _, err := svc.Checkpoint(ctx, commits.CheckpointRequest{Parent: ids[len(ids)-1], Events: []events.Event{{Type: events.Response, Text: "more"}},
		Created: time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), Provenance: commits.Provenance{Session: "long", Trigger: commits.ImportTrigger}}); err != nil {
		t.Fatal(err)
	}
	c.n = 0
	if d, err := New(c, Options{}).maxDepth(ctx, "long", 0); err != nil || d != 3000 {
		t.Fatalf("max depth after one more commit %d, %v; want 3000", d, err)
	}
	if c.n < 10 {
		t.Errorf("a commit past the derived tip was found in %d queries: not probed", c.n)
	}
}
