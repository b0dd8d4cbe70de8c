package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
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
