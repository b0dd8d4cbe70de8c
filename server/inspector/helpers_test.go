package inspector_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/server/inspector"
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
