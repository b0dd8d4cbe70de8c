package inspector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
)

// BenchmarkCallPage150k renders the call page of a call whose context
// holds 150,000 tokens (the goal: within 1 s on this machine) and,
// in the same loop, assemble.Rebuild of the same call alone, the floor the
// page builds on: page_ms, rebuild_ms and x-rebuild (page / rebuild).
// docs/benchmarks.md records the figures.
func BenchmarkCallPage150k(b *testing.B) {
	se := storetestenv.New(b, storetestenv.SQLite)
	inspecttest.Big(b, se.Store, "big", 150000)
	ctx := context.Background()
	n, err := assemble.Calls(ctx, se.Store, "big")
	if err != nil {
		b.Fatal(err)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		b.Fatal(err)
	}
	path := fmt.Sprintf("/inspect/s/big/c/%d", n)
	var page, rebuild time.Duration
	tokens, html := 0, 0
	for b.Loop() {
		t0 := time.Now()
		c, err := assemble.Rebuild(ctx, se.Store, "big", n)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		r := httptestGet(h, path)
		if r.code != 200 {
			b.Fatalf("%d", r.code)
		}
		page += time.Since(t1)
		rebuild += t1.Sub(t0)
		tokens, html = c.Tokens, len(r.body)
	}
	k := float64(b.N)
	b.ReportMetric(float64(page.Milliseconds())/k, "page_ms")
	b.ReportMetric(float64(rebuild.Milliseconds())/k, "rebuild_ms")
	b.ReportMetric(float64(page)/float64(rebuild), "x-rebuild")
	b.ReportMetric(float64(tokens), "tokens")
	b.ReportMetric(float64(html), "html_bytes")
}

// BenchmarkPagingPage renders the paging page of a 2,000-call session,
// which reads every call record's items (one query), beside the session
// page of the same session, which reads none: paging_ms, session_ms and
// x-session (paging / session), measured in the same loop.
// docs/benchmarks.md records the figures.
func BenchmarkPagingPage(b *testing.B) {
	se := storetestenv.New(b, storetestenv.SQLite)
	l := inspecttest.NewLive(b, se.Store, "long")
	for i := range 2000 {
		if i%10 == 0 {
			l.Turn("next step")
		}
		l.Bash("step", "done\n")
		l.Call(5 * time.Second)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store})
	if err != nil {
		b.Fatal(err)
	}
	var paging, session time.Duration
	for b.Loop() {
		t0 := time.Now()
		if r := httptestGet(h, "/inspect/s/long/paging"); r.code != 200 {
			b.Fatalf("paging page: %d", r.code)
		}
		t1 := time.Now()
		if r := httptestGet(h, "/inspect/s/long"); r.code != 200 {
			b.Fatalf("session page: %d", r.code)
		}
		paging += t1.Sub(t0)
		session += time.Since(t1)
	}
	k := float64(b.N)
	b.ReportMetric(float64(paging.Milliseconds())/k, "paging_ms")
	b.ReportMetric(float64(session.Milliseconds())/k, "session_ms")
	b.ReportMetric(float64(paging)/float64(session), "x-session")
}
