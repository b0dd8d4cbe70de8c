package commits_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func prompt(s string) events.Event { return events.Event{Type: events.Prompt, Source: "user", Text: s} }
func answer(s string) events.Event {
	return events.Event{Type: events.Response, Source: "assistant", Text: s}
}

// counting wraps a store and counts its reads.
type counting struct {
	store.Store
	reads atomic.Int64
}

func (c *counting) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	c.reads.Add(1)
	return c.Store.Entity(ctx, id, b)
}
func (c *counting) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	c.reads.Add(1)
	return c.Store.EntityTx(ctx, id, b)
}
func (c *counting) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	c.reads.Add(1)
	return c.Store.Query(ctx, q)
}
func (c *counting) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	c.reads.Add(1)
	return c.Store.History(ctx, id, o)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func checkpoint(t *testing.T, s *commits.Service, r commits.CheckpointRequest) *commits.Commit {
	t.Helper()
	c, err := s.Checkpoint(context.Background(), r)
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return c
}

func decode(t *testing.T, b []byte) []events.Event {
	t.Helper()
	evs, err := events.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func texts(evs []events.Event) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Text)
	}
	return strings.Join(s, "|")
}

func TestGoldenID(t *testing.T) {
	got := commits.CommitID("", commits.Delta, commits.ContentHash([]byte("[]")), t0, "reviewer")
	// Pinned: changing the derivation changes every id (docs/formats/commits.md).
	const want = "ctx-c60e1a124871b8641b24"
	if got != want {
		t.Fatalf("CommitID = %s, want %s", got, want)
	}
	if !commits.IsCommitID(got) || commits.IsCommitID("ctx-sess-1") {
		t.Fatal("IsCommitID")
	}
}

func TestDeterministicIDsAcrossStores(t *testing.T) {
	for _, backend := range storetestenv.Backends() {
		t.Run(backend, func(t *testing.T) {
			a := storetestenv.New(t, backend)
			b := storetestenv.New(t, storetestenv.SQLite) // a second store, always another database
			tpl := a.ID("tpl")
			var ids [2][]string
			for i, st := range []store.Store{a.Store, b.Store} {
				s := commits.New(st, commits.Options{})
				parent := ""
				for n := range 3 {
					c := checkpoint(t, s, commits.CheckpointRequest{Parent: parent, Events: []events.Event{prompt(fmt.Sprint("p", n))},
						Provenance: commits.Provenance{Template: tpl, Session: a.ID(fmt.Sprint("s", i)), Principal: fmt.Sprint("p", i)}, Created: t0.Add(time.Duration(n) * time.Second)})
					ids[i] = append(ids[i], c.ID)
					parent = c.ID
				}
			}
			if fmt.Sprint(ids[0]) != fmt.Sprint(ids[1]) {
				t.Fatalf("ids differ:\n%v\n%v", ids[0], ids[1])
			}
			// The same request again returns the stored commit.
			s := commits.New(a.Store, commits.Options{})
			again := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("p0")},
				Provenance: commits.Provenance{Template: tpl, Session: a.ID("s0"), Principal: "p0"}, Created: t0})
			if again.ID != ids[0][0] {
				t.Fatalf("repeat gave %s, want %s", again.ID, ids[0][0])
			}
		})
	}
}

func TestChainMaterializeTiersAndCache(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		prov := commits.Provenance{Template: "coder", Session: e.ID("s"), Principal: e.ID("alice"), Trigger: commits.TurnBoundary}
		c1 := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("hello"), answer("hi")}, Provenance: prov, Created: t0})
		c2 := checkpoint(t, s, commits.CheckpointRequest{Parent: c1.ID, Events: []events.Event{prompt("list"),
			{Type: events.ToolCall, Tool: &events.Tool{ID: "t1", Name: "ls", Input: map[string]any{"dir": "."}}},
			{Type: events.ToolResult, Tool: &events.Tool{ID: "t1", Name: "ls"}, Result: &events.Result{Content: "a.go"}},
			answer("one file")}, Provenance: prov, Created: t0.Add(time.Second)})
		c3 := checkpoint(t, s, commits.CheckpointRequest{Parent: c2.ID, Events: []events.Event{prompt("bye")}, Provenance: prov, Created: t0.Add(2 * time.Second)})
		if c1.Depth != 0 || c3.Depth != 2 || c2.MessageCount != 4 || c3.Parent != c2.ID {
			t.Fatalf("depths/counts: %+v %+v %+v", c1, c2, c3)
		}
		m := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: c3.ID}))
		if m.Tier != commits.TierNative || m.Cached || m.Commits != 3 || m.MessageCount != 7 {
			t.Fatalf("materialized: %+v", m)
		}
		if got := texts(decode(t, m.Content)); got != "hello|hi|list|||one file|bye" {
			t.Fatalf("content texts %q", got)
		}
		again := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: c3.ID}))
		if !again.Cached || !bytes.Equal(again.Content, m.Content) || again.Snapshot != m.Snapshot || again.Snapshot == "" {
			t.Fatalf("repeat not from cache: %+v", again)
		}
		snap := must[*commits.Commit](t)(s.Show(ctx, m.Snapshot, store.Basis{}))
		if snap.Type != commits.Snapshot || snap.SnapshotOf != c3.ID || snap.Tier != commits.TierNative {
			t.Fatalf("snapshot commit %+v", snap)
		}
		// Field-level: events-v1 commits as conversation-v1 messages.
		conv := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: c3.ID, Format: commits.FormatConversation}))
		if conv.Tier != commits.TierField || !strings.Contains(string(conv.Content), `"tool_calls":[{"id":"t1","name":"ls","args":{"dir":"."}}]`) {
			t.Fatalf("conversation: %+v %s", conv, conv.Content)
		}
		// Narrative.
		nar := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: c3.ID, Format: commits.FormatNarrative}))
		if nar.Tier != commits.TierNarrative || !strings.Contains(string(nar.Content), "## Tool call ls (t1)") {
			t.Fatalf("narrative: %+v %s", nar, nar.Content)
		}
		// A commit stored in a format this reader does not know: raw.
		reg := commits.NewRegistry()
		must[struct{}](t)(struct{}{}, reg.Register(&commits.Format{Name: "custom-v1", Concat: func(p [][]byte) ([]byte, error) { return bytes.Join(p, nil), nil }}))
		w := commits.New(e.Store, commits.Options{Registry: reg})
		c4 := checkpoint(t, w, commits.CheckpointRequest{Parent: c3.ID, Format: "custom-v1", Content: []byte("opaque\xff"), Provenance: prov, Created: t0.Add(3 * time.Second)})
		raw := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: c4.ID, Format: commits.FormatEvents}))
		if raw.Tier != commits.TierRaw || raw.Format != commits.FormatRaw || !strings.Contains(string(raw.Content), `"base64":"b3BhcXVl/w=="`) {
			t.Fatalf("raw: %+v %s", raw, raw.Content)
		}
		// The writer knows custom-v1 but it has no decoder: narrative, not
		// the raw translation the reader cached (its registry differs).
		wn := must[*commits.Materialized](t)(w.Materialize(ctx, commits.MaterializeRequest{ID: c4.ID, Format: commits.FormatEvents}))
		if wn.Tier != commits.TierNarrative || wn.Cached {
			t.Fatalf("writer's tier %s, cached %v", wn.Tier, wn.Cached)
		}
		// History.
		h := must[[]*commits.Commit](t)(s.History(ctx, c3.ID, 0))
		if len(h) != 3 || h[0].ID != c3.ID || h[2].ID != c1.ID {
			t.Fatalf("history %v", h)
		}
		if h2 := must[[]*commits.Commit](t)(s.History(ctx, c3.ID, 2)); len(h2) != 2 {
			t.Fatalf("history limit: %d", len(h2))
		}
	})
}

func TestCompactionStops(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		prov := commits.Provenance{Session: e.ID("s")}
		at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Minute) }
		d1 := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("m1")}, Provenance: prov, Created: at(1)})
		d2 := checkpoint(t, s, commits.CheckpointRequest{Parent: d1.ID, Events: []events.Event{prompt("m2")}, Provenance: prov, Created: at(2)})
		cp := checkpoint(t, s, commits.CheckpointRequest{Parent: d2.ID, Type: commits.Compaction, Events: []events.Event{
			{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: "S(m1,m2)"}}, Provenance: prov, Created: at(3)})
		d3 := checkpoint(t, s, commits.CheckpointRequest{Parent: cp.ID, Events: []events.Event{prompt("m3")}, Provenance: prov, Created: at(4)})
		for _, tc := range []struct{ stop, want string }{
			{"", "S(m1,m2)|m3"}, {commits.StopRoot, "m1|m2|m3"}, {d2.ID, "m2|m3"}, {cp.ID, "S(m1,m2)|m3"}, {d3.ID, "m3"},
		} {
			m := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: d3.ID, Stop: tc.stop}))
			if got := texts(decode(t, m.Content)); got != tc.want {
				t.Errorf("stop %q: %q, want %q", tc.stop, got, tc.want)
			}
		}
		m := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: cp.ID}))
		if got := texts(decode(t, m.Content)); got != "S(m1,m2)" {
			t.Errorf("at the compaction: %q", got)
		}
	})
}

func TestResolve(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		p := e.ID("bob")
		prov := commits.Provenance{Principal: p, Session: e.ID("s")}
		c1 := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("1")}, Provenance: prov, Created: t0})
		c3 := checkpoint(t, s, commits.CheckpointRequest{Parent: c1.ID, Events: []events.Event{prompt("3")}, Provenance: prov, Created: t0.Add(2 * time.Hour)})
		// Written later, created in between (an import): resolve still finds it.
		c2 := checkpoint(t, s, commits.CheckpointRequest{Parent: c1.ID, Events: []events.Event{prompt("2")}, Provenance: prov, Created: t0.Add(time.Hour)})
		if _, err := s.Resolve(ctx, p, t0.Add(-time.Second)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("before: %v", err)
		}
		for _, tc := range []struct {
			at   time.Time
			want string
		}{{t0, c1.ID}, {t0.Add(30 * time.Minute), c1.ID}, {t0.Add(time.Hour), c2.ID}, {t0.Add(90 * time.Minute), c2.ID}, {t0.Add(5 * time.Hour), c3.ID}} {
			got := must[*commits.Commit](t)(s.Resolve(ctx, p, tc.at))
			if got.ID != tc.want {
				t.Errorf("resolve at %s: %s, want %s", tc.at, got.ID, tc.want)
			}
		}
		if _, err := s.Resolve(ctx, e.ID("nobody"), t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown principal: %v", err)
		}
		// Resolve is one read of the timeline plus the commit itself.
		cs := &counting{Store: e.Store}
		must[*commits.Commit](t)(commits.New(cs, commits.Options{}).Resolve(ctx, p, t0.Add(time.Hour)))
		if n := cs.reads.Load(); n > 3 {
			t.Fatalf("resolve read the store %d times", n)
		}
	})
}

func TestSummaryVersions(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		c := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("x")}, Summary: "v0", Provenance: commits.Provenance{Session: e.ID("s")}, Created: t0})
		txs := []int64{c.TxID}
		for i := 1; i <= 3; i++ {
			sum := fmt.Sprint("v", i)
			tags := []string{fmt.Sprint("t", i)}
			u := must[*commits.Commit](t)(s.UpdateMetadata(ctx, c.ID, commits.Update{Summary: &sum, Tags: &tags}))
			if u.Content != c.Content || u.Parent != c.Parent || u.Created != c.Created {
				t.Fatalf("update changed the commit: %+v", u)
			}
			txs = append(txs, u.TxID)
		}
		for i, tx := range txs {
			got := must[*commits.Commit](t)(s.Show(ctx, c.ID, store.AtTx(tx, time.Time{})))
			if got.Summary != fmt.Sprint("v", i) {
				t.Errorf("as of tx %d: summary %q, want v%d", tx, got.Summary, i)
			}
		}
		h := must[[]store.HistoryEntry](t)(e.Store.History(ctx, c.ID, store.HistoryOptions{WithCorrections: true}))
		if len(h) != 4 {
			t.Fatalf("%d versions of the metadata, want 4", len(h))
		}
		if _, err := s.UpdateMetadata(ctx, c.ID, commits.Update{}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("empty update: %v", err)
		}
	})
}

func latestTx(t *testing.T, st store.Store) int64 {
	t.Helper()
	status := must[store.Status](t)(st.Status(context.Background()))
	if status.LatestSubmitted == nil {
		return -1
	}
	return status.LatestSubmitted.ID
}

func TestBadInputWritesNothing(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		prov := commits.Provenance{Session: e.ID("s")}
		c1 := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("a")}, Provenance: prov, Created: t0})
		other := checkpoint(t, s, commits.CheckpointRequest{Events: []events.Event{prompt("b")}, Provenance: commits.Provenance{Session: e.ID("o")}, Created: t0})
		// A hand-written loop: x names y as parent and y names x.
		x, y := commits.CommitID("", commits.Delta, "x", t0, e.ID("loop")), commits.CommitID("", commits.Delta, "y", t0, e.ID("loop"))
		h := c1.Content
		loop := func(id, parent string) store.Doc {
			return store.Doc{store.IDKey: id, "type": commits.DocCommit, "commit_type": "delta", "format": commits.FormatEvents,
				"content": h, "created": store.FormatTime(t0), "depth": int64(1), "parent": parent}
		}
		must[store.Tx](t)(store.SubmitWait(ctx, e.Store, []store.Op{store.Put(loop(x, y)), store.Put(loop(y, x))}))
		before := latestTx(t, e.Store)
		cases := []struct {
			name string
			err  error
			do   func() error
		}{
			{"unknown parent", store.ErrInvalid, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Parent: commits.CommitID("", commits.Delta, "none", t0, ""), Events: []events.Event{}})
				return err
			}},
			{"parent not an id", store.ErrInvalid, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Parent: "tkt-1", Events: []events.Event{}})
				return err
			}},
			{"unknown format", commits.ErrUnknownFormat, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Format: "bogus-v9", Content: []byte("x")})
				return err
			}},
			{"output format", store.ErrInvalid, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Format: commits.FormatNarrative, Content: []byte("x")})
				return err
			}},
			{"bad content", store.ErrInvalid, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Format: commits.FormatEvents, Content: []byte(`[{"type":"nope"}]`)})
				return err
			}},
			{"bad trigger", store.ErrInvalid, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Events: []events.Event{}, Provenance: commits.Provenance{Trigger: "whenever"}})
				return err
			}},
			{"materialize unknown format", commits.ErrUnknownFormat, func() error {
				_, err := s.Materialize(ctx, commits.MaterializeRequest{ID: c1.ID, Format: "bogus-v1"})
				return err
			}},
			{"stop not an ancestor", commits.ErrNotAncestor, func() error {
				_, err := s.Materialize(ctx, commits.MaterializeRequest{ID: c1.ID, Stop: other.ID})
				return err
			}},
			{"materialize a cycle", commits.ErrCycle, func() error {
				_, err := s.Materialize(ctx, commits.MaterializeRequest{ID: x, Stop: commits.StopRoot})
				return err
			}},
			{"history of a cycle", commits.ErrCycle, func() error { _, err := s.History(ctx, x, 0); return err }},
			{"checkpoint on a cycle", commits.ErrCycle, func() error {
				_, err := s.Checkpoint(ctx, commits.CheckpointRequest{Parent: x, Events: []events.Event{}})
				return err
			}},
			{"unknown commit", store.ErrNotFound, func() error {
				_, err := s.Materialize(ctx, commits.MaterializeRequest{ID: commits.CommitID("", commits.Delta, "z", t0, "")})
				return err
			}},
		}
		for _, tc := range cases {
			err := tc.do()
			if err == nil || !errors.Is(err, tc.err) {
				t.Errorf("%s: got %v, want %v", tc.name, err, tc.err)
			} else {
				t.Logf("%s: %v", tc.name, err)
			}
		}
		if after := latestTx(t, e.Store); after != before {
			t.Fatalf("bad input wrote: tx %d -> %d", before, after)
		}
	})
}

func TestConcurrentCheckpointsBranch(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		root := checkpoint(t, commits.New(e.Store, commits.Options{}), commits.CheckpointRequest{Events: []events.Event{prompt("root")},
			Provenance: commits.Provenance{Session: e.ID("s"), Principal: e.ID("p")}, Created: t0})
		// Two handles on the database, as two processes open it.
		handles := []store.Store{e.Reopen(), e.Reopen()}
		const each = 10
		var wg sync.WaitGroup
		ids := make([][]string, 2)
		errs := make(chan error, 2*each)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := commits.New(handles[w], commits.Options{})
				for i := range each {
					c, err := s.Checkpoint(ctx, commits.CheckpointRequest{Parent: root.ID, Events: []events.Event{prompt(fmt.Sprintf("w%d-%d", w, i))},
						Provenance: commits.Provenance{Session: e.ID(fmt.Sprint("s", w)), Principal: e.ID("p")}})
					if err != nil {
						errs <- err
						return
					}
					ids[w] = append(ids[w], c.ID)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		s := commits.New(e.Store, commits.Options{})
		for w := range 2 {
			for _, id := range ids[w] {
				h := must[[]*commits.Commit](t)(s.History(ctx, id, 0))
				if len(h) != 2 || h[1].ID != root.ID {
					t.Fatalf("%s: history %v", id, h)
				}
			}
		}
		docs := must[[]store.Doc](t)(e.Store.Query(ctx, store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit), store.Where("parent", root.ID)}}))
		if len(docs) != 2*each {
			t.Fatalf("%d children of the root, want %d", len(docs), 2*each)
		}
	})
}

func TestLongChainReads(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		prov := commits.Provenance{Session: e.ID("long")}
		parent := ""
		var want []string
		for i := range n {
			txt := fmt.Sprint("m", i)
			c := checkpoint(t, s, commits.CheckpointRequest{Parent: parent, Events: []events.Event{prompt(txt)}, Provenance: prov, Created: t0.Add(time.Duration(i) * time.Millisecond)})
			parent = c.ID
			want = append(want, txt)
		}
		cs := &counting{Store: e.Store}
		r := commits.New(cs, commits.Options{})
		m := must[*commits.Materialized](t)(r.Materialize(ctx, commits.MaterializeRequest{ID: parent}))
		cold := cs.reads.Load()
		if got := texts(decode(t, m.Content)); got != strings.Join(want, "|") {
			t.Fatalf("materialized %d commits wrong", n)
		}
		if cold > int64(n) {
			t.Fatalf("cold materialization of %d commits read the store %d times", n, cold)
		}
		cs.reads.Store(0)
		again := must[*commits.Materialized](t)(r.Materialize(ctx, commits.MaterializeRequest{ID: parent}))
		if !again.Cached || cs.reads.Load() > 3 {
			t.Fatalf("from the snapshot: cached %v, %d reads", again.Cached, cs.reads.Load())
		}
		t.Logf("%s: %d commits, cold %d reads, cached %d", e.Backend, n, cold, cs.reads.Load())
	})
}

func TestForkResume(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		prov := commits.Provenance{Session: e.ID("orig"), Template: "coder"}
		var chain []*commits.Commit
		parent := ""
		for i := range 4 {
			c := checkpoint(t, s, commits.CheckpointRequest{Parent: parent, Events: []events.Event{prompt(fmt.Sprint("o", i))}, Provenance: prov, Created: t0.Add(time.Duration(i) * time.Second)})
			chain = append(chain, c)
			parent = c.ID
		}
		f := must[*commits.Forked](t)(s.Fork(ctx, commits.ForkRequest{From: chain[1].ID, Session: e.ID("fork"), Provenance: commits.Provenance{Template: "coder"}}))
		if got := texts(decode(t, f.Materialized.Content)); got != "o0|o1" {
			t.Fatalf("fork sees %q", got)
		}
		if f.Commit.Parent != chain[1].ID || f.Commit.Session != e.ID("fork") || f.Commit.Trigger != commits.ForkTrigger {
			t.Fatalf("fork commit %+v", f.Commit)
		}
		next := checkpoint(t, s, commits.CheckpointRequest{Parent: f.Commit.ID, Events: []events.Event{prompt("f1")}, Provenance: commits.Provenance{Session: f.Session}})
		m := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: next.ID}))
		if got := texts(decode(t, m.Content)); got != "o0|o1||f1" {
			t.Fatalf("forked branch: %q", got)
		}
		orig := must[*commits.Materialized](t)(s.Materialize(ctx, commits.MaterializeRequest{ID: chain[3].ID}))
		if got := texts(decode(t, orig.Content)); got != "o0|o1|o2|o3" {
			t.Fatalf("original: %q", got)
		}
		tip := must[*commits.Commit](t)(s.SessionTip(ctx, f.Session))
		if tip.ID != next.ID {
			t.Fatalf("fork session tip %s", tip.ID)
		}
		if tip := must[*commits.Commit](t)(s.SessionTip(ctx, e.ID("orig"))); tip.ID != chain[3].ID {
			t.Fatalf("original session tip %s", tip.ID)
		}
		hf := must[[]*commits.Commit](t)(s.History(ctx, next.ID, 0))
		if len(hf) != 4 || hf[2].ID != chain[1].ID {
			t.Fatalf("fork history %v", hf)
		}
		// A fresh start: no parent, nothing materialized.
		fresh := must[*commits.Forked](t)(s.Fork(ctx, commits.ForkRequest{Session: e.ID("fresh")}))
		if fresh.Materialized != nil || fresh.Commit.Parent != "" {
			t.Fatalf("fresh %+v", fresh)
		}
	})
}

func TestContentStoredOnce(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		s := commits.New(e.Store, commits.Options{})
		big := strings.Repeat("shared tool output ", 200) + e.ID("x")
		evs := []events.Event{{Type: events.ToolResult, Tool: &events.Tool{ID: "t"}, Result: &events.Result{Content: big}}}
		a := checkpoint(t, s, commits.CheckpointRequest{Events: evs, Provenance: commits.Provenance{Session: e.ID("a")}, Created: t0})
		b := checkpoint(t, s, commits.CheckpointRequest{Events: evs, Provenance: commits.Provenance{Session: e.ID("b")}, Created: t0.Add(time.Second)})
		if a.ID == b.ID || a.Content != b.Content {
			t.Fatalf("ids %s %s, contents %s %s", a.ID, b.ID, a.Content, b.Content)
		}
		h := must[[]store.HistoryEntry](t)(e.Store.History(ctx, commits.ContentPrefix+a.Content, store.HistoryOptions{WithCorrections: true}))
		if len(h) != 1 {
			t.Fatalf("content written %d times", len(h))
		}
	})
}
