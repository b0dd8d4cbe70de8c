package inspecttest

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// Recorded writes a recorded session sid of n context commits into st, as
// an import would (one linear chain of events-v1 deltas a second apart
// from start, each a record of a model reply with usage, perCall records
// a call as a streamed reply's are, and a prompt every 50), through the
// fastest path the commit service has: batches of 5,000 commits, one
// transaction each. Its calls are then derived and stored, as an
// import does (harness/recorded.Update). It returns the chain's commits' ids, root first.
func Recorded(tb testing.TB, st store.Store, sid string, n, perCall int, start time.Time) []string {
	tb.Helper()
	ctx := context.Background()
	svc := commits.New(st, commits.Options{})
	ids := make([]string, 0, n)
	parent := ""
	b := svc.NewBatch()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		var evs []events.Event
		if i%50 == 0 {
			evs = append(evs, events.Event{Type: events.Prompt, Source: "user", Text: fmt.Sprintf("step %d", i/50)})
		}
		evs = append(evs, events.Event{Type: events.Response, Text: "done", Model: "claude-sonnet-4-5", MessageID: fmt.Sprintf("m%d", i/perCall),
			Usage: &conversation.Usage{Input: 10, CacheRead: 100, CacheWrite: 20}})
		c, err := b.Add(ctx, commits.CheckpointRequest{Parent: parent, Events: evs, Created: at,
			Provenance: commits.Provenance{Session: sid, Trigger: commits.ImportTrigger, Harness: "claude-code", Cwd: "/work/" + sid,
				Model: "claude-sonnet-4-5", Source: "/transcripts/" + sid + ".jsonl"}})
		if err != nil {
			tb.Fatalf("inspecttest: commit %d of %s: %v", i, sid, err)
		}
		ids = append(ids, c.ID)
		parent = c.ID
		if b.Len() == 5000 || i == n-1 {
			if err := b.Write(ctx); err != nil {
				tb.Fatalf("inspecttest: writing %s: %v", sid, err)
			}
		}
	}
	runtime.GC()
	base := heapInUse()
	peak := make(chan uint64)
	done := make(chan struct{})
	go func() { // the most heap in use while the calls are derived
		most := base
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			most = max(most, heapInUse())
			select {
			case <-done:
				peak <- most
				return
			case <-t.C:
			}
		}
	}()
	t0 := time.Now()
	u, err := recorded.Update(ctx, commits.New(st, commits.Options{Registry: formats.Commits()}), sid)
	close(done)
	most := <-peak
	if err != nil {
		tb.Fatalf("inspecttest: deriving %s's calls: %v", sid, err)
	}
	tb.Logf("inspecttest: derived %d calls of %s's %d commits in %v, the heap peaking %.0f MB above the %.0f MB in use before",
		u.Calls, sid, u.Commits, time.Since(t0).Round(time.Millisecond), float64(most-base)/1e6, float64(base)/1e6)
	return ids
}

func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
