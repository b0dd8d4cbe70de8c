package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
