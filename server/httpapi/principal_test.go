package httpapi

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// The principal of what a request writes is its token's name (or the
// server's own without tokens), never one the body names: a conversation
// commit of a session opened claiming "mallory", a checkpoint and an
// import naming her all record the token's name.
func TestPrincipalIsTheTokens(t *testing.T) {
	root := t.TempDir()
	e := newEnv(t, func(o *Options) {
		o.Roots = []string{filepath.Dir(root)}
		o.Tokens = []Token{{Secret: "token-of-alice-0123456", Name: "alice"}, {Secret: "token-without-a-name-01"}}
	})
	e.token = "token-of-alice-0123456"
	var lg piLogBuilder
	lg.user("hello")
	e.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: e.dir, SystemPrompt: "x", Harness: "pi", Provenance: &commits.Provenance{Principal: "mallory", Machine: "m1"}}, nil)
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	var cp commits.Commit
	e.ok("POST", "/v1/commits", map[string]any{"events": []map[string]any{{"type": "prompt", "source": "user", "text": "hello"}}, "session": "s2", "principal": "mallory"}, &cp)
	p := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(p, []byte(importLines), 0o644); err != nil {
		t.Fatal(err)
	}
	var res importer.Result
	e.ok("POST", "/v1/import", ImportBody{Path: p, Principal: "mallory"}, &res)

	e.token = "token-without-a-name-01"
	req, _ := http.NewRequest("POST", e.ts.URL+"/v1/import?name=up.jsonl&as=claude-code", strings.NewReader(strings.ReplaceAll(importLines, "s-http", "s-up")))
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()

	docs, err := e.st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", commits.DocCommit)}})
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string]string{}
	for _, d := range docs {
		principal, _ := d["principal"].(string)
		sid, _ := d["session"].(string)
		if principal == "mallory" {
			t.Errorf("commit %v of session %s records the principal the body named", d[store.IDKey], sid)
		}
		bySession[sid] = principal
	}
	want := map[string]string{"s1": "alice", "s2": "alice", "s-http": "alice", "s-up": Token{Secret: "token-without-a-name-01"}.principal()}
	for sid, p := range want {
		if bySession[sid] != p {
			t.Errorf("session %s: principal %q, want %q (all: %v)", sid, bySession[sid], p, bySession)
		}
	}
	if !strings.HasPrefix(want["s-up"], "token-") {
		t.Errorf("an unnamed token's principal %q", want["s-up"])
	}
}

func TestParseTokensName(t *testing.T) {
	ts, err := ParseTokens(strings.NewReader("secret-number-one-01 s1 name=alice s2\nsecret-number-two-002\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].Name != "alice" || strings.Join(ts[0].Sessions, ",") != "s1,s2" || ts[1].Name != "" || ts[1].Sessions != nil {
		t.Fatalf("%+v", ts)
	}
	for _, bad := range []string{"secret-number-one-01 name=", "secret-number-one-01 name=a name=b"} {
		if _, err := ParseTokens(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Closing a session and opening it again never widens its roots.
func TestReopenAfterCloseNeverWidens(t *testing.T) {
	w := newEnv(t, nil)
	sub := filepath.Join(w.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	top := w.file("top.txt", "top\n")
	w.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, SystemPrompt: "x"}, nil)
	w.ok("POST", "/v1/sessions/s1/close", nil, nil)
	eb := w.fails(403, CodeForbidden, "PUT", "/v1/sessions/s1", OpenRequest{Cwd: w.dir, SystemPrompt: "x"})
	if !strings.Contains(eb.Message, "never widens") {
		t.Errorf("widening re-open after close: %s", eb.Message)
	}
	w.fails(403, CodeForbidden, "PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, Roots: []string{w.dir}, SystemPrompt: "x"})
	w.ok("PUT", "/v1/sessions/s1", OpenRequest{Cwd: sub, SystemPrompt: "x"}, nil)
	var r ToolResponse
	w.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": top}}, &r)
	if r.OK {
		t.Fatalf("read above the session's roots after close and re-open: %+v", r)
	}
}
