package recorded_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/recorded"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestRequestOfHoldsTheRequest: rebuilding a call's request from the
// commits up to it holds, once they are read, memory of the order of the
// request, not of the commits and events read: on a session of short
// answers (a call every 5 commits, a prompt every 50), where each call's
// request holds every message before it, the Go heap held at the end of
// the read (after a collection) stays under a small multiple of the
// request's bytes for an early, a middle and the last call. Reading the
// commits whole (every commit and event kept) holds tens of times more.
func TestRequestOfHoldsTheRequest(t *testing.T) {
	const n = 6000
	se := storetestenv.New(t, storetestenv.SQLite)
	ctx := context.Background()
	svc := commits.New(se.Store, commits.Options{Registry: formats.Commits()})
	b := svc.NewBatch()
	parent := ""
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		var evs []events.Event
		if i%50 == 0 {
			evs = append(evs, events.Event{Type: events.Prompt, Source: "user", Text: fmt.Sprintf("step %d", i/50)})
		}
		evs = append(evs, events.Event{Type: events.Response, Text: "done", Model: "claude-sonnet-4-5", MessageID: fmt.Sprintf("m%d", i/5),
			Usage: &conversation.Usage{Input: 10, CacheRead: 100, CacheWrite: 20}})
		c, err := b.Add(ctx, commits.CheckpointRequest{Parent: parent, Events: evs, Created: start.Add(time.Duration(i) * time.Second),
			Provenance: commits.Provenance{Session: "s", Trigger: commits.ImportTrigger, Harness: "claude-code", Source: "/t/s.jsonl"}})
		if err != nil {
			t.Fatal(err)
		}
		parent = c.ID
	}
	if err := b.Write(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := recorded.Update(ctx, svc, "s"); err != nil {
		t.Fatal(err)
	}
	var held uint64
	*recorded.OnPrefix = func() {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		held = ms.HeapAlloc
	}
	t.Cleanup(func() { *recorded.OnPrefix = nil })
	for _, k := range []int{10, n / 10, n / 5} {
		stored, err := recorded.Page(ctx, se.Store, "s", k, 1)
		if err != nil || len(stored) != 1 {
			t.Fatalf("call %d: %d stored, %v", k, len(stored), err)
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		held = 0
		r, err := recorded.RequestOf(ctx, svc, "s", stored[0])
		if err != nil {
			t.Fatal(err)
		}
		if held == 0 {
			t.Fatalf("call %d: the request was not rebuilt a page of commits at a time", k)
		}
		held -= min(held, ms.HeapAlloc)
		limit := 7*uint64(len(r.Body)) + 256<<10
		t.Logf("call %d (depth %d): request %d bytes, heap held %d bytes", k, stored[0].Depth, len(r.Body), held)
		if held > limit {
			t.Errorf("call %d: %d bytes of heap held for a request of %d bytes (at most %d)", k, held, len(r.Body), limit)
		}
	}
}
