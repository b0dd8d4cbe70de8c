package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/session"
)

// Without serve --root the server's roots are the directory it was
// started in, never a client's cwd: a session opened with cwd "/" (by any
// token) is refused, so nothing outside the roots can be read; and
// re-opening an open session never widens its roots.
func TestRootsAreTheServers(t *testing.T) {
	outside := outsideDir(t)
	secret := filepath.Join(outside, "shadow")
	writeTestFile(t, secret, "root:secret-hash\n")

	// No roots given: the process's working directory (where serve was
	// started), here a directory of the test's.
	loadSpec(t) // read before the working directory changes
	wd := t.TempDir()
	t.Chdir(wd)
	e := newEnv(t, func(o *Options) {
		o.Roots = nil
		o.Tokens = []Token{{Secret: tokAll}, {Secret: tokA, Sessions: []string{"sa"}}}
	})
	for _, tok := range []string{tokAll, tokA} {
		e.token = tok
		for _, req := range []OpenRequest{
			{Cwd: "/"},
			{Cwd: outside},
			{Cwd: wd, Roots: []string{"/"}},
			{Cwd: wd, Roots: []string{outside}},
			{Cwd: outside, Roots: []string{wd}},
		} {
			req.SystemPrompt = "x"
			eb := e.fails(403, CodeForbidden, "PUT", "/v1/sessions/sa", req)
			if !strings.Contains(eb.Message, "server's roots") {
				t.Errorf("open %+v: %s", req, eb.Message)
			}
		}
	}
	e.token = tokA
	e.ok("PUT", "/v1/sessions/sa", OpenRequest{Cwd: wd, SystemPrompt: "x"}, nil)
	var r ToolResponse
	e.ok("POST", "/v1/sessions/sa/tools/read", ToolRequest{Args: map[string]any{"path": secret}}, &r)
	if r.OK || r.Content != nil {
		t.Fatalf("read outside the server's roots: %+v", r)
	}
	// Re-opening the open session with cwd "/" is refused too.
	e.fails(403, CodeForbidden, "PUT", "/v1/sessions/sa", OpenRequest{Cwd: "/", SystemPrompt: "x"})
	e.ok("POST", "/v1/sessions/sa/tools/read", ToolRequest{Args: map[string]any{"path": "/etc/hostname"}}, &r)
	if r.OK {
		t.Fatalf("read /etc/hostname after a refused re-open: %+v", r)
	}

	// Re-opening narrows, never widens.
	w := newEnv(t, nil) // roots: the test's temporary directory
	sub := filepath.Join(w.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	w.file("top.txt", "top\n")
	w.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, SystemPrompt: "x"}, nil)
	eb := w.fails(403, CodeForbidden, "PUT", "/v1/sessions/s1", OpenRequest{Cwd: w.dir, SystemPrompt: "x"})
	if !strings.Contains(eb.Message, "never widens") {
		t.Errorf("widening re-open: %s", eb.Message)
	}
	w.fails(403, CodeForbidden, "PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, Roots: []string{w.dir}, SystemPrompt: "x"})
	w.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": filepath.Join(w.dir, "top.txt")}}, &r)
	if r.OK {
		t.Fatalf("read above the session's roots after a refused re-open: %+v", r)
	}
	w.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, Roots: []string{sub}, SystemPrompt: "x"}, nil)
}

// envOnFile starts a server over the SQLite store at db with the given
// server roots, as `serve` does after a restart: a new store handle and a
// new server, nothing kept from an earlier one. stop shuts both down.
func envOnFile(t *testing.T, db, dir string, roots []string) (e *env, stop func()) {
	t.Helper()
	st, err := bitemporal.Open(context.Background(), db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Store: st, Resolver: newResolver(t), Roots: roots})
	if err != nil {
		t.Fatal(err)
	}
	e = &env{tb: t, db: db, st: st, srv: srv, ts: httptest.NewServer(srv.Handler()), dir: dir, spec: loadSpec(t), check: true}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			e.ts.Close()
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return e, stop
}

// A session's roots are recorded in the store when it is opened, so a
// server started later on the same SQLite file bounds a re-opened session
// by them, not by its own (wider) roots: re-opening never widens them,
// across restarts and between two servers on one store, and a narrowing
// is kept too. The record is the server's: a bundle export never holds
// it.
func TestRootsKeptAcrossRestart(t *testing.T) {
	top := t.TempDir() // the server's roots
	db := filepath.Join(t.TempDir(), "s.db")
	sub := filepath.Join(top, "sub")
	deeper := filepath.Join(sub, "deeper")
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(top, "top.txt"), "top\n")
	writeTestFile(t, filepath.Join(sub, "sub.txt"), "sub\n")
	writeTestFile(t, filepath.Join(deeper, "deeper.txt"), "deeper\n")
	read := func(e *env, path string) bool {
		t.Helper()
		var r ToolResponse
		e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": path}}, &r)
		return r.OK
	}
	widen := []OpenRequest{
		{Cwd: top, SystemPrompt: "x"},
		{Cwd: sub, Roots: []string{top}, SystemPrompt: "x"},
		{Cwd: sub, Roots: []string{sub, filepath.Join(top, "..")}, SystemPrompt: "x"},
	}
	refused := func(e *env, reqs ...OpenRequest) {
		t.Helper()
		for _, req := range reqs {
			eb := e.fails(403, CodeForbidden, "PUT", "/v1/sessions/s1", req)
			if !strings.Contains(eb.Message, "never widens") && !strings.Contains(eb.Message, "server's roots") {
				t.Errorf("open %+v: %s", req, eb.Message)
			}
		}
	}

	a, stopA := envOnFile(t, db, sub, []string{top})
	a.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, SystemPrompt: "x"}, nil) // roots: sub
	if !read(a, filepath.Join(sub, "sub.txt")) || read(a, filepath.Join(top, "top.txt")) {
		t.Fatal("the first opening's roots are not sub")
	}
	a.ok("POST", "/v1/sessions/s1/close", nil, nil)
	stopA()

	// A restarted server, whose own roots hold top, keeps s1 within sub.
	b, stopB := envOnFile(t, db, sub, []string{top})
	refused(b, widen...)
	b.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, SystemPrompt: "x"}, nil)
	if read(b, filepath.Join(top, "top.txt")) || !read(b, filepath.Join(sub, "sub.txt")) {
		t.Fatal("after a restart, s1 reads outside the roots it was opened with, or not inside them")
	}
	// A second server on the same store, while b holds s1, is bound too.
	c := b.second()
	refused(c, widen...)
	// Narrowing is recorded, and kept across the next restart.
	b.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: deeper, SystemPrompt: "x"}, nil)
	if read(b, filepath.Join(sub, "sub.txt")) || !read(b, filepath.Join(deeper, "deeper.txt")) {
		t.Fatal("a narrowed re-open reads outside its new roots")
	}
	bundle := exportText(t, b, "s1")
	if strings.Contains(bundle, session.RootsID("s1")) {
		t.Errorf("the export carries the session's roots record")
	}
	b.ok("POST", "/v1/sessions/s1/close", nil, nil)
	stopB()

	d, _ := envOnFile(t, db, deeper, []string{top})
	refused(d, append(widen, OpenRequest{Cwd: sub, SystemPrompt: "x"})...)
	d.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: deeper, SystemPrompt: "x"}, nil)
	if read(d, filepath.Join(sub, "sub.txt")) || !read(d, filepath.Join(deeper, "deeper.txt")) {
		t.Fatal("after a second restart, s1 reads outside its narrowed roots")
	}
}

// exportText is GET /v1/sessions/{sid}/export's body.
func exportText(t *testing.T, e *env, sid string) string {
	t.Helper()
	req, err := http.NewRequest("GET", e.ts.URL+"/v1/sessions/"+sid+"/export", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export: %d %v %.200s", resp.StatusCode, err, b)
	}
	return string(b)
}
