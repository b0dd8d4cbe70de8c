package inspector_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/explain/inspect/inspecttest"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/server/inspector"
	"github.com/ctxstore/ctxstore/store"
)

// counting is a store that counts the reads made through it and the
// documents they return.
type counting struct {
	store.Store
	reads, docs atomic.Int64
}

func (c *counting) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	docs, err := c.Store.Query(ctx, q)
	c.reads.Add(1)
	c.docs.Add(int64(len(docs)))
	return docs, err
}

func (c *counting) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	c.reads.Add(1)
	c.docs.Add(1)
	return c.Store.Entity(ctx, id, b)
}

func (c *counting) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	h, err := c.Store.History(ctx, id, o)
	c.reads.Add(1)
	c.docs.Add(int64(len(h)))
	return h, err
}

func (c *counting) Values(ctx context.Context, q store.Query, field, after string, limit int) ([]string, error) {
	vs, err := store.Values(ctx, c.Store, q, field, after, limit)
	c.reads.Add(1)
	c.docs.Add(int64(len(vs)))
	return vs, err
}

// pageWork renders pages over a fresh SQLite store that fill wrote, and
// returns the store reads and documents they took and their bodies.
func pageWork(t *testing.T, pages []string, fill func(store.Store)) (reads, docs int64, bodies []string) {
	t.Helper()
	se := storetestenv.New(t, storetestenv.SQLite)
	fill(se.Store)
	c := &counting{Store: se.Store}
	h, err := inspector.New(inspector.Options{Store: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != 200 {
			t.Fatalf("%s: %d\n%s", p, w.Code, w.Body)
		}
		bodies = append(bodies, w.Body.String())
	}
	return c.reads.Load(), c.docs.Load(), bodies
}

// The sessions page and a recorded session's pages read what they show,
// not the session: rendering them over a session of 4,200 commits (and
// calls) reads as many documents as over one of 2,100, give or take the
// probes that find the chain's deepest commit (a few more per doubling);
// the old pages read every commit. ?page= pages the commit graph.
func TestPageWorkDoesNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sessions of 2,100 and 4,200 recorded commits (about 15 s)")
	}
	pages := []string{"/inspect/", "/inspect/s/big", "/inspect/s/big?page=5"}
	measure := func(n int) (reads, docs int64, bodies []string) {
		return pageWork(t, pages, func(st store.Store) {
			inspecttest.Recorded(t, st, "big", n, 1, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
			inspecttest.Recorded(t, st, "small", 3, 1, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
		})
	}
	r1, d1, b1 := measure(2100)
	r2, d2, b2 := measure(4200)
	t.Logf("2,100 commits: %d reads, %d documents; 4,200: %d reads, %d documents", r1, d1, r2, d2)
	if d2 > d1+40 || r2 > r1+40 || d1 > 1500 {
		t.Errorf("page work grows with the session: 2,100 commits %d reads, %d documents; 4,200: %d reads, %d documents", r1, d1, r2, d2)
	}
	for _, b := range [][]string{b1, b2} {
		if !strings.Contains(b[0], `href="/inspect/s/big"`) || !strings.Contains(b[0], `href="/inspect/s/small"`) {
			t.Errorf("sessions page lacks a session:\n%s", b[0])
		}
		if n := strings.Count(b[1], `class="commit-row`); n != inspect.CommitsPerPage {
			t.Errorf("first page: %d commit rows, want %d", n, inspect.CommitsPerPage)
		}
		if !strings.Contains(b[2], fmt.Sprintf("commits at depths %d to %d", 4*inspect.CommitsPerPage, 5*inspect.CommitsPerPage-1)) ||
			strings.Count(b[2], `class="commit-row`) != inspect.CommitsPerPage+1 { // and the parent on the page before
			t.Errorf("page 5 is not the fifth page of commits:\n%s", b[2])
		}
	}
	if !strings.Contains(b2[1], `id="commit-count">4200 `) || !strings.Contains(b2[1], "Page 1 of 21") {
		i := strings.Index(b2[1], `id="session-facts"`)
		t.Errorf("the session page of 4,200 commits:\n%s", b2[1][i:i+1500])
	}
}

// ?page= pages the sessions page: three sessions two a page, newest
// first, with links between the pages; a page past the last lists none,
// and a page that is not a positive whole number answers 400.
func TestSessionsPages(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	for i, sid := range []string{"s-old", "s-mid", "s-new"} {
		inspecttest.Recorded(t, se.Store, sid, 2, 1, time.Date(2030, 1, 1+i, 0, 0, 0, 0, time.UTC))
	}
	h, err := inspector.New(inspector.Options{Store: se.Store, SessionsPerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	get := func(p string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		return w.Code, w.Body.String()
	}
	for p, want := range map[string][]string{
		"/inspect/":        {"s-new", "s-mid", "Page 1 of 2 (3 sessions)", `href="?page=2"`},
		"/inspect/?page=2": {"s-old", "Page 2 of 2", `href="?page=1"`},
		"/inspect/?page=3": {"Page 3 of 2"},
	} {
		code, body := get(p)
		if code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q in\n%s", p, w, body)
			}
		}
		if n, all := strings.Count(body, `class="session-link"`), map[string]int{"/inspect/": 2, "/inspect/?page=2": 1, "/inspect/?page=3": 0}[p]; n != all {
			t.Errorf("%s: %d sessions listed, want %d", p, n, all)
		}
	}
	if code, _ := get("/inspect/?page=0"); code != 400 {
		t.Errorf("page 0: %d, want 400", code)
	}
	if code, _ := get("/inspect/s/s-new?page=x"); code != 400 {
		t.Errorf("session page x: %d, want 400", code)
	}
}

// A recorded call's page reads the call, not the session: call 10 of a
// session of 21,000 commits (a call every 5) costs the reads of call 10
// of one of 2,100, its request (the messages up to it) rebuilt from the
// commits before it; so do its diff with call 9 and its raw bytes. The
// old page derived every call of the session.
func TestCallPageWorkDoesNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sessions of 2,100 and 21,000 recorded commits (about 40 s)")
	}
	pages := []string{"/inspect/s/big/c/10", "/inspect/s/big/c/10/diff/9", "/inspect/s/big/c/10/raw"}
	measure := func(n int) (reads, docs int64, bodies []string) {
		return pageWork(t, pages, func(st store.Store) {
			inspecttest.Recorded(t, st, "big", n, 5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		})
	}
	r1, d1, b1 := measure(2100)
	r2, d2, b2 := measure(21000)
	t.Logf("2,100 commits: %d reads, %d documents; 21,000: %d reads, %d documents", r1, d1, r2, d2)
	if d2 > d1+40 || r2 > r1+40 || d1 > 600 {
		t.Errorf("call page work grows with the session: 2,100 commits %d reads, %d documents; 21,000: %d reads, %d documents", r1, d1, r2, d2)
	}
	for i := range pages {
		if b1[i] != b2[i] {
			t.Errorf("%s differs between the sessions of 2,100 and 21,000 commits", pages[i])
		}
	}
	// Call 10 is the 10th reply (commits 45 to 49), after the prompt of
	// commit 0: its request holds the prompt and the 45 records of the 9
	// replies before it, as one assistant message.
	if !strings.Contains(b1[0], `id="call-title">Call 10<`) || strings.Count(b1[0], `class="block kind-assistant`) != 1 ||
		strings.Count(b1[0], `class="block kind-user`) != 1 || !strings.Contains(b1[0], "step 0") ||
		strings.Count(b1[0], `&#34;done&#34;`) != 45 {
		i := strings.Index(b1[0], `id="blocks"`)
		t.Errorf("call 10's page:\n%s", b1[0][max(i, 0):])
	}
	if !strings.Contains(b1[2], `"step 0"`) {
		t.Errorf("call 10's bytes: %s", b1[2])
	}
}

// ?page= pages a call's blocks, the newest first: with 2 a page, call 21
// of a recorded session (three prompts and two replies: 5 blocks) shows
// blocks 3 and 4, then 1 and 2, then 0, each page saying what it leaves
// out and linking to the others; a page past the last shows none, and a
// page that is not a positive whole number answers 400.
func TestCallBlocksPages(t *testing.T) {
	se := storetestenv.New(t, storetestenv.SQLite)
	inspecttest.Recorded(t, se.Store, "s", 150, 5, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h, err := inspector.New(inspector.Options{Store: se.Store, BlocksPerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	get := func(p string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		return w.Code, w.Body.String()
	}
	for _, c := range []struct {
		page           string
		blocks         []string
		note           string
		earlier, later bool
	}{
		{"", []string{`id="b3"`, `id="b4"`}, "Page 1 of 3: 2 of the 5 blocks, the newest first; 3 earlier and 0 later blocks are left out.", true, false},
		{"?page=2", []string{`id="b1"`, `id="b2"`}, "Page 2 of 3: 2 of the 5 blocks, the newest first; 1 earlier and 2 later blocks are left out.", true, true},
		{"?page=3", []string{`id="b0"`}, "Page 3 of 3: 1 of the 5 blocks, the newest first; 0 earlier and 4 later blocks are left out.", false, true},
		{"?page=4", nil, "Page 4 of 3: 0 of the 5 blocks, the newest first; 5 earlier and 0 later blocks are left out.", false, true},
	} {
		code, body := get("/inspect/s/s/c/21" + c.page)
		if code != 200 {
			t.Fatalf("%s: %d\n%s", c.page, code, body)
		}
		if n := strings.Count(body, `<li class="block `); n != len(c.blocks) || !strings.Contains(body, c.note) ||
			strings.Contains(body, `id="earlier-blocks"`) != c.earlier || strings.Contains(body, `id="later-blocks"`) != c.later {
			i := strings.Index(body, `<h2>Context</h2>`)
			t.Errorf("page %q: %d blocks, want %v:\n%s", c.page, n, c.blocks, body[max(i, 0):])
			continue
		}
		for _, b := range c.blocks {
			if !strings.Contains(body, b) {
				t.Errorf("page %q lacks block %s", c.page, b)
			}
		}
	}
	if code, body := get("/inspect/s/s/c/10"); code != 200 || strings.Contains(body, `id="blocks-page"`) || strings.Count(body, `<li class="block `) != 2 {
		t.Errorf("a call of one page: %d, paged %v", code, strings.Contains(body, `id="blocks-page"`))
	}
	if code, _ := get("/inspect/s/s/c/21?page=0"); code != 400 {
		t.Errorf("?page=0: %d, want 400", code)
	}
}
