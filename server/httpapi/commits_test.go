package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/session/commits"
)

// TestCommitRoutes drives every context-commit route, each exchange checked
// against docs/openapi.yaml.
func TestCommitRoutes(t *testing.T) {
	// The commits are recorded as by the server's principal (no tokens),
	// which the bodies' "alice" matches.
	e := newEnv(t, func(o *Options) { o.Principal = "alice" })
	var c1, c2, cp commits.Commit
	e.ok("POST", "/v1/commits", map[string]any{"events": []map[string]any{{"type": "prompt", "source": "user", "text": "hello"}},
		"session": "s1", "principal": "alice", "trigger": "turn_boundary", "created": "2026-01-01T00:00:00Z"}, &c1)
	e.ok("POST", "/v1/commits", map[string]any{"parent": c1.ID, "content": `[{"type":"response","text":"hi"}]`,
		"session": "s1", "principal": "alice", "created": "2026-01-02T00:00:00Z"}, &c2)
	e.ok("POST", "/v1/commits", map[string]any{"parent": c2.ID, "type": "compaction", "events": []map[string]any{{"type": "system", "subtype": "compaction_summary", "text": "greeted"}},
		"session": "s1", "principal": "alice", "trigger": "compaction", "created": "2026-01-03T00:00:00Z"}, &cp)
	if c2.Parent != c1.ID || c2.Depth != 1 || cp.Type != commits.Compaction {
		t.Fatalf("commits %+v %+v", c2, cp)
	}
	var show commits.Commit
	e.ok("GET", "/v1/commits/"+c2.ID, nil, &show)
	if show.ID != c2.ID || show.Session != "s1" {
		t.Fatalf("show %+v", show)
	}
	var h CommitHistoryResponse
	e.ok("GET", "/v1/commits/"+cp.ID+"/history?depth=2", nil, &h)
	if len(h.Commits) != 2 || h.Commits[1].ID != c2.ID {
		t.Fatalf("history %+v", h)
	}
	var m, root MaterializeResponse
	e.ok("POST", "/v1/commits/"+cp.ID+"/materialize", MaterializeBody{}, &m)
	if m.Content == nil || !strings.Contains(*m.Content, "greeted") || strings.Contains(*m.Content, "hello") {
		t.Fatalf("materialize %+v", m)
	}
	e.ok("POST", "/v1/commits/"+cp.ID+"/materialize", MaterializeBody{Stop: "root", Format: "narrative-v1"}, &root)
	if root.Tier != "narrative" || !strings.Contains(*root.Content, "hello") || strings.Contains(*root.Content, "greeted") {
		t.Fatalf("root narrative %+v %s", root, *root.Content)
	}
	e.ok("POST", "/v1/commits/"+cp.ID+"/materialize", MaterializeBody{Stop: "root", Format: "narrative-v1"}, &root)
	if !root.Cached {
		t.Fatal("repeat not cached")
	}
	// A harness name stands for its format, as on the CLI.
	var alias MaterializeResponse
	e.ok("POST", "/v1/commits/"+cp.ID+"/materialize", MaterializeBody{Stop: "root", Format: "narrative"}, &alias)
	if alias.Format != "narrative-v1" || *alias.Content != *root.Content {
		t.Fatalf("format alias narrative: %+v", alias)
	}
	// A format a harness codec adds (opencode keeps rows, not lines) is
	// named by its harness too.
	var oc MaterializeResponse
	e.ok("POST", "/v1/commits/"+cp.ID+"/materialize", MaterializeBody{Stop: "root", Format: "opencode"}, &oc)
	if oc.Format != "opencode-v1" {
		t.Fatalf("format alias opencode: %+v", oc)
	}
	var up commits.Commit
	e.ok("POST", "/v1/commits/"+c1.ID+"/metadata", map[string]any{"summary": "a greeting", "tags": []string{"x"}}, &up)
	var old commits.Commit
	e.ok("GET", "/v1/commits/"+c1.ID+"?tx_id="+strconv.FormatInt(up.TxID-1, 10), nil, &old)
	if up.Summary != "a greeting" || old.Summary != "" {
		t.Fatalf("summary now %q, before %q", up.Summary, old.Summary)
	}
	var f ForkResponse
	e.ok("POST", "/v1/commits/"+c2.ID+"/fork", ForkBody{Session: "s2"}, &f)
	if f.Session != "s2" || f.Commit.Parent != c2.ID || !strings.Contains(*f.Materialized.Content, "hi") {
		t.Fatalf("fork %+v", f)
	}
	var r commits.Commit
	e.ok("GET", "/v1/principals/alice/commit?at=2026-01-02T12:00:00Z", nil, &r)
	if r.ID != c2.ID {
		t.Fatalf("resolve %s, want %s", r.ID, c2.ID)
	}
	// Bad input.
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"POST", "/v1/commits", map[string]any{"parent": "ctx-00000000000000000000", "content": "[]"}, http.StatusBadRequest, "unknown parent"},
		{"POST", "/v1/commits", map[string]any{"format": "nope-v1", "content": "x"}, http.StatusBadRequest, "unknown format"},
		{"POST", "/v1/commits", map[string]any{"content": "[]", "events": []any{}}, http.StatusBadRequest, "exactly one"},
		{"POST", "/v1/commits/" + c2.ID + "/materialize", MaterializeBody{Stop: cp.ID}, http.StatusBadRequest, "not an ancestor"},
		{"GET", "/v1/commits/ctx-00000000000000000000", nil, http.StatusNotFound, "no such commit"},
		{"GET", "/v1/principals/bob/commit", nil, http.StatusNotFound, "no commit by bob"},
	} {
		status, body := e.do(tc.method, tc.path, tc.body, nil)
		if status != tc.status || !strings.Contains(body.Message, tc.want) {
			t.Errorf("%s %s: %d %+v, want %d %q", tc.method, tc.path, status, body, tc.status, tc.want)
		}
	}
}
