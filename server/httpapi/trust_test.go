package httpapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// Tokens of the isolation tests: one for everything, one limited to
// session sa (the attacker's).
const (
	tokAll = "token-for-everything-0123"
	tokA   = "token-for-session-sa-0123"
)

func newTrustEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, func(o *Options) {
		o.Tokens = []Token{{Secret: tokAll}, {Secret: tokA, Sessions: []string{"sa"}}}
	})
	return e
}

// victim opens session sb with the unrestricted token and gives it a
// toolcall (call_sb_1, an observed bash) and a file read (secret.txt).
func (e *env) victim() {
	e.tb.Helper()
	e.token = tokAll
	e.file("secret.txt", "the victim's secret\n")
	e.open("sb")
	out := "victim-output"
	e.ok("POST", "/v1/sessions/sb/observe", ObserveRequest{ToolCallID: "call_sb_1", Tool: "bash", Args: map[string]any{"command": "echo hi"}, Output: &out}, nil)
	e.ok("POST", "/v1/sessions/sb/tools/read", ToolRequest{Args: map[string]any{"path": "secret.txt"}}, nil)
}

func latest(tb testing.TB, st store.Store) int64 {
	tb.Helper()
	s, err := st.Status(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if s.LatestSubmitted == nil {
		return -1
	}
	return s.LatestSubmitted.ID
}

// A token limited to session sa imports a bundle of sa
// that also carries (and evicts) session sb's head: refused with 403,
// nothing written, and sb keeps working.
func TestBundleImportCannotTouchAnotherSession(t *testing.T) {
	ctx := context.Background()
	e := newTrustEnv(t)
	e.victim()

	// The attacker's bundle, built in a scratch store: session sa whose
	// index names session:sb, which it writes and then evicts.
	scratch, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "scratch.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	s, err := session.Create(ctx, scratch, "sa", session.CreateOptions{SystemPrompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Update(ctx, []store.Op{store.Put(store.Doc{"xt/id": "session:sb", "type": "x"})},
		func(st *session.State) error { st.AddToIndex("session:sb"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, scratch, []store.Op{{Kind: store.OpEvict, ID: "session:sb"}}); err != nil {
		t.Fatal(err)
	}
	var bundle bytes.Buffer
	if _, err := sessionbundle.Export(ctx, scratch, "sa", &bundle, sessionbundle.ExportOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bundle.String(), `"session:sb"`) {
		t.Fatal("the hostile bundle does not carry session:sb")
	}

	before := latest(t, e.st)
	e.token = tokA
	st, _, body := e.raw("POST", "/v1/sessions/sa/import", "application/x-ndjson", bundle.Bytes())
	if st != 403 || !strings.Contains(string(body), "session:sb") {
		t.Fatalf("hostile import: %d %s", st, body)
	}
	if latest(t, e.st) != before {
		t.Fatal("the refused import wrote to the store")
	}
	e.token = tokAll
	var info SessionInfo
	e.ok("GET", "/v1/sessions/sb", nil, &info)
	e.ok("POST", "/v1/sessions/sb/close", nil, nil)
	if r := e.open("sb"); r.State != "resumed" {
		t.Fatalf("sb after the hostile import: %+v", r)
	}
}

// With sa's limited token, B's toolcall, chat, system
// prompt and file are unknown ids to every tool, nothing of B appears in
// sa's context, and observing B's tool call id is refused (B's toolcall
// keeps its content and chat_ref).
func TestToolsCannotReachAnotherSession(t *testing.T) {
	e := newTrustEnv(t)
	e.victim()
	var info SessionInfo
	e.ok("GET", "/v1/sessions/sb", nil, &info)
	var fileID string
	for _, id := range info.Index {
		if !strings.HasPrefix(id, "call_") && !strings.Contains(id, ":") {
			fileID = id
		}
	}
	if fileID == "" {
		t.Fatalf("no file in sb's index %v", info.Index)
	}

	e.token = tokA
	e.open("sa")
	for _, tool := range []string{"activate", "pin", "deactivate", "unpin"} {
		for _, id := range []string{"call_sb_1", "chat:sb", "system_prompt:sb", "session:sb", fileID} {
			var r ToolResponse
			e.ok("POST", "/v1/sessions/sa/tools/"+tool, ToolRequest{Args: map[string]any{"id": id}}, &r)
			if r.OK || !strings.Contains(r.Message, "no such object") {
				t.Errorf("%s %s from sa: %+v", tool, id, r)
			}
		}
	}
	var lg piLogBuilder
	lg.user("hello")
	var ans piAnswer
	e.ok("POST", "/v1/sessions/sa/context", lg.body(), &ans)
	if txt := flat(ans.Messages); strings.Contains(txt, "victim") {
		t.Fatalf("B's content in A's context: %s", txt)
	}
	out := "pwned"
	e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/observe", ObserveRequest{ToolCallID: "call_sb_1", Tool: "bash", Args: map[string]any{}, Output: &out})
	e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/tools/activate", ToolRequest{ToolCallID: "call_sb_1", Args: map[string]any{"id": "x"}})
	e.token = tokAll
	var obj ObjectResponse
	e.ok("GET", "/v1/objects/call_sb_1", nil, &obj)
	if obj.Doc["content"] != "victim-output" || obj.Doc["chat_ref"] != "chat:sb" {
		t.Fatalf("B's toolcall after the attack: %v", obj.Doc)
	}
}

// Reads and indexing stay inside the session's roots
// (default its cwd), symlinks resolved: a path climbing out, a symlink to a
// file outside, ~/.bashrc, and ls output naming outside files read and
// index nothing; roots outside what the server allows are refused.
func TestFilesConfinedToRoots(t *testing.T) {
	outside := outsideDir(t)
	secret := filepath.Join(outside, "shadow")
	writeTestFile(t, secret, "root:secret-hash\n")
	writeTestFile(t, filepath.Join(outside, ".bashrc"), "export SECRET=bashrc\n")
	t.Setenv("HOME", outside)
	e := newEnv(t, nil)
	e.file("ok.txt", "inside\n")
	if err := os.Symlink(secret, filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	e.open("s1")
	rel, err := filepath.Rel(e.dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{rel, secret, "link", "dirlink/shadow", "~/.bashrc", "@link"} {
		var r ToolResponse
		e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": p}}, &r)
		if r.OK || r.Content != nil || !strings.Contains(r.Message, "outside the session's roots") {
			t.Errorf("read %s: %+v", p, r)
		}
	}
	var r ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": "ok.txt"}}, &r)
	if !r.OK || r.Content == nil || *r.Content != "inside\n" {
		t.Fatalf("read inside the roots: %+v", r)
	}
	out := "ok.txt\nlink\n" + secret + "\ndirlink/shadow\n"
	for _, tool := range []string{"ls", "find", "bash", "write"} {
		var ob ObserveResponse
		args := map[string]any{"command": "cat link " + secret, "path": secret}
		if tool == "ls" || tool == "find" {
			args = map[string]any{}
		}
		e.ok("POST", "/v1/sessions/s1/observe", ObserveRequest{ToolCallID: "call_" + tool, Tool: tool, Args: args, Output: &out}, &ob)
		for _, f := range ob.Files {
			if f != r.ID {
				t.Errorf("observe %s indexed %s (only ok.txt is inside)", tool, f)
			}
		}
	}
	var info SessionInfo
	e.ok("GET", "/v1/sessions/s1", nil, &info)
	var lg piLogBuilder
	lg.user("hi")
	var ans piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &ans)
	if txt := flat(ans.Messages); strings.Contains(txt, "secret") && strings.Contains(txt, "root:secret-hash") || strings.Contains(txt, "SECRET=bashrc") {
		t.Fatalf("outside content in the context: %s", txt)
	}

	// Roots: a session may narrow but not widen them.
	e.fails(403, CodeForbidden, "PUT", "/v1/sessions/s2", OpenRequest{Cwd: e.dir, Roots: []string{outside}})
	e.fails(400, CodeBadRequest, "PUT", "/v1/sessions/s2", OpenRequest{Cwd: e.dir, Roots: []string{"relative"}})
	wide := newEnv(t, func(o *Options) { o.Roots = []string{filepath.Dir(outside), filepath.Dir(e.dir)} })
	wide.dir = e.dir
	wide.ok("PUT", "/v1/sessions/s3", OpenRequest{Cwd: e.dir, Roots: []string{e.dir, outside}}, nil)
	wide.ok("POST", "/v1/sessions/s3/tools/read", ToolRequest{Args: map[string]any{"path": "link"}}, &r)
	if !r.OK || r.Content == nil || *r.Content != "root:secret-hash\n" {
		t.Fatalf("read inside a root the operator allowed: %+v", r)
	}
	wide.fails(403, CodeForbidden, "PUT", "/v1/sessions/s4", OpenRequest{Cwd: e.dir, Roots: []string{"/"}})
}

// outsideDir returns a new directory outside the test's temporary
// directory (the server's roots in newEnv), removed when the test ends.
func outsideDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "ctxstore-outside-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// On the tokenless loopback default, a browser cannot
// drive the server: a rebound Host, a foreign Origin, a cross-site fetch
// and a text/plain (or untyped) body are refused on every route, before
// anything runs.
func TestBrowserAttacksRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.file("notes.txt", "private\n")
	e.open("s1")
	e.check = false
	send := func(method, path, ct string, body string, hdr map[string]string, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var eb ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb.Code
	}
	read := `{"args":{"path":"notes.txt"}}`
	before := latest(t, e.st)
	for _, c := range []struct {
		name, method, path, ct, body string
		hdr                          map[string]string
		host                         string
		status                       int
	}{
		{"rebound host", "POST", "/v1/sessions/s1/tools/read", "application/json", read, nil, "evil.example:7411", 403},
		{"rebound host, GET", "GET", "/v1/sessions/s1/export", "", "", nil, "attacker.test", 403},
		{"foreign origin", "POST", "/v1/sessions/s1/tools/read", "application/json", read, map[string]string{"Origin": "https://evil.example"}, "", 403},
		{"null origin", "POST", "/v1/sessions/s1/tools/read", "application/json", read, map[string]string{"Origin": "null"}, "", 403},
		{"cross-site fetch", "GET", "/v1/status", "", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 403},
		{"text/plain", "POST", "/v1/sessions/s1/tools/read", "text/plain", read, nil, "", 415},
		{"form", "POST", "/v1/sessions/s1/observe", "application/x-www-form-urlencoded", "a=b", nil, "", 415},
		{"no content type", "PUT", "/v1/sessions/s9", "", `{"cwd":"/"}`, nil, "", 415},
		{"text/plain bundle", "POST", "/v1/sessions/s2/import", "text/plain", "{}", nil, "", 415},
	} {
		if st, code := send(c.method, c.path, c.ct, c.body, c.hdr, c.host); st != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, st, code, c.status)
		}
	}
	if latest(t, e.st) != before {
		t.Fatal("a refused request wrote to the store")
	}
	// What the harness sends still works: its own origin, localhost, JSON
	// with a charset, a close without a body.
	if st, code := send("POST", "/v1/sessions/s1/tools/read", "application/json; charset=utf-8", read, map[string]string{"Origin": e.ts.URL}, ""); st != 200 {
		t.Errorf("same-origin JSON: %d %s", st, code)
	}
	port := e.ts.URL[strings.LastIndex(e.ts.URL, ":"):]
	if st, code := send("GET", "/v1/sessions/s1", "", "", nil, "localhost"+port); st != 200 {
		t.Errorf("Host localhost: %d %s", st, code)
	}
	if st, code := send("POST", "/v1/sessions/s1/close", "", "", nil, ""); st != 200 {
		t.Errorf("close without a body: %d %s", st, code)
	}
	// With tokens the Host may be any name (a LAN or proxied address).
	tok := newTrustEnv(t)
	req, _ := http.NewRequest("GET", tok.ts.URL+"/v1/status", nil)
	req.Host = "ctxstore.internal:7411"
	req.Header.Set("Authorization", "Bearer "+tokAll)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a token with a non-loopback Host: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Bounded work per request: deep JSON is refused (400),
// a context request over the message limits gets 413 before anything is
// ingested, a gzip bundle that expands past the limit gets 413, and slow
// or idle connections are closed.
func TestRequestBounds(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Limits = Limits{MaxMessages: 50, MaxNewMessages: 20, MaxMessageBytes: 1000}
		o.MaxImport = 1 << 20
	})
	e.open("s1")
	deep := `{"args":{"path":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}`
	e.check = false // the OpenAPI checker cannot parse it either
	eb := e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/tools/read", deep)
	e.check = true
	if !strings.Contains(eb.Message, "nested too deeply") {
		t.Errorf("deep body: %s", eb.Message)
	}
	before := latest(t, e.st)
	var lg piLogBuilder
	for i := range 21 {
		lg.user(fmt.Sprintf("m%d", i))
	}
	if eb := e.fails(413, CodeTooLarge, "POST", "/v1/sessions/s1/context", lg.body()); !strings.Contains(eb.Message, "over the limit of 20 per request") {
		t.Errorf("too many new messages: %s", eb.Message)
	}
	var big piLogBuilder
	big.user(strings.Repeat("x", 2000))
	if eb := e.fails(413, CodeTooLarge, "POST", "/v1/sessions/s1/context", big.body()); !strings.Contains(eb.Message, "messages[0]") {
		t.Errorf("a message over the limit: %s", eb.Message)
	}
	if latest(t, e.st) != before {
		t.Fatal("a refused context request wrote")
	}
	// In parts, the same log goes in; past MaxMessages it stops.
	part := piLogBuilder{msgs: lg.msgs[:15]}
	e.ok("POST", "/v1/sessions/s1/context", part.body(), nil)
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	for i := range 40 {
		lg.user(fmt.Sprintf("n%d", i))
		if len(lg.msgs) == 40 {
			e.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
		}
	}
	if eb := e.fails(413, CodeTooLarge, "POST", "/v1/sessions/s1/context", lg.body()); !strings.Contains(eb.Message, "over the limit of 50") {
		t.Errorf("a log over MaxMessages: %s", eb.Message)
	}

	// A gzip bomb: 4 MiB of zeros in a few KB.
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(make([]byte, 4<<20))
	zw.Close()
	if st, _, body := e.raw("POST", "/v1/sessions/s2/import", "application/gzip", z.Bytes()); st != 413 || !strings.Contains(string(body), "decompresses to more than") {
		t.Errorf("gzip bomb: %d %s", st, body)
	}
}

// Slow bodies and idle keep-alive connections are closed by Serve.
func TestConnectionTimeouts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "s.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Options{Store: st, Resolver: newResolver(t), ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()
	closedWithin := func(name string, send string) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		_, err = io.ReadAll(c) // until the server closes
		if err != nil || time.Since(start) > 4*time.Second {
			t.Errorf("%s: the connection stayed open (%v after %s)", name, err, time.Since(start))
		}
	}
	// A body announced but never sent.
	closedWithin("slow body", "POST /v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	// A finished request on a keep-alive connection, then silence.
	closedWithin("idle keep-alive", "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The harness side of the input rules: a Pi tool call whose argument is an
// integer of 2^64 (or an over-precise decimal) does not break the session:
// the argument is kept as its literal string, the context, a reopen and an
// export all work afterwards.
func TestPoisonNumberInToolArguments(t *testing.T) {
	e := newEnv(t, nil)
	e.open("s1")
	var lg piLogBuilder
	lg.user("count")
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	raw := `{"role":"assistant","api":"faux","provider":"scripted","model":"m1","stopReason":"toolUse","timestamp":3,` +
		`"content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"seq","n":18446744073709551616,"f":0.10000000000000001,"ok":3}}]}`
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	lg.msgs = append(lg.msgs, m)
	lg.result("c1", "bash", "1\n2\n", false)
	var ans piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &ans)
	if txt := flat(ans.Messages); !strings.Contains(txt, `"18446744073709551616"`) || !strings.Contains(txt, `"ok":3`) {
		t.Fatalf("the argument in the context: %s", txt)
	}
	var obj ObjectResponse
	e.ok("GET", "/v1/objects/c1", nil, &obj)
	if args, _ := obj.Doc["args"].(map[string]any); args["n"] != "18446744073709551616" || args["f"] != "0.10000000000000001" {
		t.Fatalf("stored args %v", obj.Doc["args"])
	}
	lg.say("done")
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	e.ok("POST", "/v1/sessions/s1/close", nil, nil)
	if r := e.open("s1"); r.State != "resumed" {
		t.Fatalf("reopen: %+v", r)
	}
	e.ok("POST", "/v1/sessions/s1/close", nil, nil)
	if st, _, body := e.raw("GET", "/v1/sessions/s1/export", "", nil); st != 200 {
		t.Fatalf("export: %d %s", st, body)
	}
}

// Two servers on one store and session: each call of
// either goes through (the one whose view is stale reopens the session
// from the store and runs the call again) instead of 409 until reopened.
func TestSecondServerTakesOver(t *testing.T) {
	a := newEnv(t, nil)
	b := a.second()
	a.open("s1")
	var lg piLogBuilder
	lg.user("first")
	a.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	b.open("s1")
	lg.say("one")
	lg.user("second")
	b.ok("POST", "/v1/sessions/s1/context", lg.body(), nil)
	out := "x"
	for i := range 3 {
		lg.say(fmt.Sprintf("reply %d", i))
		lg.user(fmt.Sprintf("more %d", i))
		var ans piAnswer
		e := a
		if i%2 == 1 {
			e = b
		}
		e.ok("POST", "/v1/sessions/s1/context", lg.body(), &ans)
		if ans.Call != 3+i {
			t.Fatalf("call %d: got call %d", i, ans.Call)
		}
		e.ok("POST", "/v1/sessions/s1/observe", ObserveRequest{ToolCallID: fmt.Sprintf("c%d", i), Tool: "bash", Args: map[string]any{}, Output: &out}, nil)
	}
}

// Client errors are 4xx, one table maps them; an
// observed tool call whose id no object may carry is a 400, not a 500.
func TestClientErrorsAreNot500(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("x: %w", objects.ErrInvalid), 400},
		{fmt.Errorf("x: %w", jsonlimit.ErrTooDeep), 400},
		{fmt.Errorf("x: %w", versionlog.ErrCorrupt), 400},
		{fmt.Errorf("x: %w", tools.ErrOutsideRoots), 403},
		{fmt.Errorf("x: %w", sessionbundle.ErrForeign), 403},
		{fmt.Errorf("x: %w", versionlog.ErrNotContinuing), 409},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), 503},
		{errors.New("a bug"), 500},
	} {
		if got := classify(c.err).status; got != c.status {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.status)
		}
	}
	e := newEnv(t, nil)
	e.open("s1")
	// A request body repeating a key is refused, not read as its last value.
	if st, _, body := e.raw("POST", "/v1/sessions/s1/tools/read", "application/json",
		[]byte(`{"tool_call_id":"d1","args":{"path":"a.txt","path":"/etc/passwd"}}`)); st != 400 || !strings.Contains(string(body), "path") {
		t.Errorf("a body with a repeated key: %d %s", st, body)
	}
	out := "x"
	for _, id := range []string{"has space", "a#b", strings.Repeat("x", 600)} {
		if st, eb := e.do("POST", "/v1/sessions/s1/observe", ObserveRequest{ToolCallID: id, Tool: "bash", Args: map[string]any{}, Output: &out}, nil); st != 400 {
			t.Errorf("observe with tool call id %.20q: %d %s", id, st, eb.Message)
		}
	}
}

// A forked log (Pi's /fork, or a commit forked with `ctxstore commit fork`
// and resumed) starts with the parent's messages and so with the tool call
// ids the parent recorded. The forked session records those calls as its
// own (renamed for it), pairs every call with its result in the context it
// renders, leaves the parent's toolcalls as they were, and renders the same
// context again after a resume in another server.
func TestForkedLogWithToolCalls(t *testing.T) {
	e := newEnv(t, nil)
	e.open("parent")
	var lg piLogBuilder
	lg.user("build it")
	lg.call("call_1", "bash", map[string]any{"command": "make"})
	lg.result("call_1", "bash", "parent output\n", false)
	lg.say("built")
	e.ok("POST", "/v1/sessions/parent/context", lg.body(), nil)

	e.open("child")
	lg.user("and again")
	lg.call("call_2", "bash", map[string]any{"command": "make test"})
	lg.result("call_2", "bash", "child output\n", false)
	var ans piAnswer
	e.ok("POST", "/v1/sessions/child/context", lg.body(), &ans)
	pairs := func(ms []PiOutMessage) []string {
		t.Helper()
		calls := map[string]bool{}
		var results []string
		for _, m := range ms {
			for _, b := range m.Content {
				if b.Type == "toolCall" {
					calls[b.ID] = true
				}
			}
			if m.Role == "toolResult" {
				if !calls[m.ToolCallID] {
					t.Fatalf("tool result %q answers no tool call before it: %s", m.ToolCallID, flat(ms))
				}
				results = append(results, m.ToolCallID)
			}
		}
		return results
	}
	results := pairs(ans.Messages)
	if len(results) != 2 || results[0] == "call_1" || !strings.HasPrefix(results[0], "call_1_") || results[1] != "call_2" {
		t.Fatalf("the child's tool results: %v, want call_1 renamed for the child, then call_2", results)
	}
	if txt := flat(ans.Messages); !strings.Contains(txt, "parent output") {
		t.Fatalf("the child's context lost the forked output: %s", txt)
	}

	var obj ObjectResponse
	e.ok("GET", "/v1/objects/call_1", nil, &obj)
	if obj.Doc["chat_ref"] != "chat:parent" {
		t.Fatalf("the parent's toolcall after the fork: %v", obj.Doc)
	}
	e.ok("GET", "/v1/objects/"+results[0], nil, &obj)
	if obj.Doc["chat_ref"] != "chat:child" || obj.Doc["content"] != "parent output\n" {
		t.Fatalf("the child's toolcall: %v", obj.Doc)
	}
	var r ToolResponse
	e.ok("POST", "/v1/sessions/child/tools/activate", ToolRequest{Args: map[string]any{"id": results[0]}}, &r)
	if !r.OK {
		t.Fatalf("activate the child's own call: %+v", r)
	}
	e.ok("POST", "/v1/sessions/parent/tools/activate", ToolRequest{Args: map[string]any{"id": results[0]}}, &r)
	if r.OK {
		t.Fatalf("the parent activated the child's call: %+v", r)
	}

	// Another server over the same store resumes the child: the same log
	// and one more prompt render the calls under the same ids.
	b := e.second()
	b.open("child")
	lg.say("tested")
	lg.user("once more")
	var again piAnswer
	b.ok("POST", "/v1/sessions/child/context", lg.body(), &again)
	if got := pairs(again.Messages); !slices.Equal(got, results) {
		t.Fatalf("after the resume the tool results are %v, want %v", got, results)
	}
}
