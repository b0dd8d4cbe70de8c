package inspector_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

const (
	tokenAll     = "all-sessions-token-0123456789"
	tokenLimited = "limited-token-0123456789abcdef"
)

// site is the real API server with the inspector mounted as `serve` mounts
// it, over a store holding a replayed dataset session in both layouts and
// a live session.
type site struct {
	url  string
	st   store.Store
	sids []string // stream replay, literal replay
	live *inspecttest.Live
}

// newSite starts the server; the limited token grants only sids[0].
func newSite(t *testing.T) *site {
	t.Helper()
	se := storetestenv.New(t, storetestenv.SQLite)
	sids := inspecttest.Replay(t, se.Store, inspecttest.Small, "ctxstore_stream", "ctxstore_literal")
	live := inspecttest.NewLive(t, se.Store, "live-session")
	live.Turn("Fix the failing test in main.go")
	live.Read(live.File("main.go", "package main\n\nfunc main() {}\n"))
	live.Call(0)
	live.Bash("go test ./...", "ok  \texample\t0.01s\n")
	live.Call(20e9)
	live.Read(live.File("main.go", "package main\n\nfunc main() { println(\"fixed\") }\n"))
	live.Call(20e9)
	commitsOf(t, se.Store, sids)
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "fs-inspector-test"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Options{Store: se.Store, Resolver: res,
		Tokens: []httpapi.Token{{Secret: tokenAll}, {Secret: tokenLimited, Sessions: []string{sids[0]}}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := inspector.New(inspector.Options{Store: se.Store, Prefix: "/inspect",
		Authorize: func(r *http.Request) (inspector.Grant, error) {
			g, err := srv.Authorize(r)
			return inspector.Grant{All: g.All, Sessions: g.Sessions}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Mount("/inspect/", h)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return &site{url: ts.URL, st: se.Store, sids: sids, live: live}
}

// countingStore counts the reads of call records that carry their items.
type countingStore struct {
	store.Store
	mu             sync.Mutex
	itemReads      int // call records read with their items by Query (beyond rebased ones)
	itemRows       int // rows returned by queries asking for items
	commitEntities int // call records read whole by Entity
	maxRows        int
}

func (c *countingStore) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	docs, err := c.Store.Query(ctx, q)
	c.mu.Lock()
	defer c.mu.Unlock()
	commits := false
	for _, p := range q.Where {
		if p.Field == "type" && p.Value == assemble.CommitType {
			commits = true
		}
	}
	if commits && len(q.Find) == 0 {
		c.itemReads += len(docs)
	}
	if slices.Contains(q.Find, "items") {
		c.itemRows += len(docs)
	}
	c.maxRows = max(c.maxRows, len(docs))
	return docs, err
}

func (c *countingStore) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if strings.HasPrefix(id, "ctx-") {
		c.mu.Lock()
		c.commitEntities++
		c.mu.Unlock()
	}
	return c.Store.Entity(ctx, id, b)
}

type recorded struct {
	code int
	body string
}

func httptestGet(h http.Handler, path string) recorded {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return recorded{rec.Code, rec.Body.String()}
}

func itoa(n int) string { return strconv.Itoa(n) }

// commitsOf writes context commits: for sids[0] a chain c1 <- c2 <- c3
// with a branch c2 <- c4; for sids[1] a fork of c1 (its parent lies in
// the other session).
func commitsOf(t *testing.T, st store.Store, sids []string) {
	t.Helper()
	s := commits.New(st, commits.Options{})
	t0 := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	mk := func(parent, sid string, k int, summary string) string {
		c, err := s.Checkpoint(context.Background(), commits.CheckpointRequest{Parent: parent, Events: []events.Event{},
			Provenance: commits.Provenance{Session: sid, Trigger: commits.TurnBoundary}, Summary: summary, Created: t0.Add(time.Duration(k) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	c1 := mk("", sids[0], 1, "first turn")
	c2 := mk(c1, sids[0], 2, "second turn")
	mk(c2, sids[0], 3, "third turn")
	mk(c2, sids[0], 4, "another way")
	mk(c1, sids[1], 5, "forked")
}
