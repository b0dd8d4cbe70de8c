package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/store"
)

// TestRoutesMatchDocument: every route of the server is in
// docs/openapi.yaml and every operation there is a route.
func TestRoutesMatchDocument(t *testing.T) {
	e := newEnv(t, nil)
	var routes []string
	for _, rt := range e.srv.routes() {
		routes = append(routes, rt.method+" "+strings.ReplaceAll(rt.path, "...}", "}"))
	}
	slices.Sort(routes)
	if doc := e.spec.Operations(); !slices.Equal(routes, doc) {
		t.Errorf("routes and the OpenAPI document differ:\nserver:   %q\ndocument: %q", routes, doc)
	}
}

func TestSessionContextAndTools(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Policy = collapse.Config{TurnsBack: 1, PerTurn: 5} })
	notes := e.file("notes.txt", "the answer is 42\n")

	if r := e.open("s1"); r.State != "created" || !strings.HasPrefix(r.SystemPrompt, "You are a test agent.\n\n# Your context (ctxstore)") {
		t.Fatalf("open: %+v", r)
	}
	if r := e.open("s1"); r.State != "open" {
		t.Errorf("second open: %+v", r)
	}

	var lg piLogBuilder
	lg.user("What is in notes.txt?")
	var c1 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c1)
	if c1.Call != 1 || len(c1.Messages) != 1 || c1.Messages[0].Role != "user" || c1.Messages[0].Content[0].Text != "What is in notes.txt?" {
		t.Fatalf("first context: %+v", c1)
	}
	if c1.SystemPrompt == "" || c1.Ingested.Applied != 1 {
		t.Errorf("first context: system %q, ingested %+v", c1.SystemPrompt, c1.Ingested)
	}

	// The model calls read: the harness runs ctxstore's tool.
	lg.call("call_1", "read", map[string]any{"path": "notes.txt"})
	var rd ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{ToolCallID: "call_1", Args: map[string]any{"path": "notes.txt"}}, &rd)
	if !rd.OK || rd.Content == nil || *rd.Content != "the answer is 42\n" || !strings.Contains(rd.Metadata, "path="+notes) {
		t.Fatalf("read: %+v", rd)
	}
	lg.result("call_1", "read", rd.Message, false)
	// bash runs in the harness and is observed.
	lg.call("call_2", "bash", map[string]any{"command": "echo secret-output"})
	out := "secret-output\n"
	var ob ObserveResponse
	e.ok("POST", "/v1/sessions/s1/observe", ObserveRequest{ToolCallID: "call_2", Tool: "bash", Args: map[string]any{"command": "echo secret-output"}, Output: &out}, &ob)
	if !strings.Contains(ob.Metadata, "toolcall") || !strings.Contains(ob.Metadata, "id=call_2") {
		t.Errorf("observe: %+v", ob)
	}
	lg.result("call_2", "bash", out, false)
	var c2 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c2)
	if !strings.HasPrefix(flat(c2.Messages), flat(c1.Messages)) {
		t.Errorf("call 2 does not extend call 1")
	}
	var results, content []string
	for _, m := range c2.Messages {
		for _, b := range m.Content {
			switch {
			case m.Role == "toolResult":
				results = append(results, b.Text)
			case strings.HasPrefix(b.Text, "<<content id="):
				content = append(content, b.Text)
			}
		}
	}
	// The read's result is a one-line reference and the file a content
	// block; the bash call's live output is its tool result (rendering 3).
	if len(results) != 2 {
		t.Errorf("tool results: %q", results)
	} else {
		if r := results[0]; strings.Contains(r, "\n") || strings.Contains(r, "answer is 42") || !strings.Contains(r, "status=ok") || !strings.Contains(r, "tool=read") {
			t.Errorf("the read's result is not a one-line reference: %q", r)
		}
		if results[1] != out {
			t.Errorf("the bash call's result is not its live output: %q", results[1])
		}
	}
	joined := strings.Join(content, "\n")
	if !strings.Contains(joined, "the answer is 42") || strings.Contains(joined, "secret-output") {
		t.Errorf("active content lacks the file, or shows the bash output again: %q", content)
	}
	for _, m := range c2.Messages {
		if m.Role == "toolResult" && (m.IsError == nil || *m.IsError || m.ToolName == "") {
			t.Errorf("tool result %+v", m)
		}
		if m.Role == "assistant" && (m.Provider != "scripted" || m.StopReason != "toolUse") {
			t.Errorf("assistant %+v", m)
		}
	}
	if c2.Ingested.Applied != 4 {
		t.Errorf("ingested %+v, want 4 new messages", c2.Ingested)
	}

	// Next turn: the bash output collapses (TurnsBack 1); activate brings it back.
	lg.say("It says 42.")
	lg.user("Thanks. Now show the bash output again.")
	var c3 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c3)
	var info SessionInfo
	e.ok("GET", "/v1/sessions/s1", nil, &info)
	if slices.Contains(info.Active, "call_2") || !slices.Contains(info.Pool, "call_2") {
		t.Errorf("after a turn the bash output should be pooled, not active: %+v", info)
	}
	lg.call("call_3", "activate", map[string]any{"id": "call_2"})
	var act ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/activate", ToolRequest{ToolCallID: "call_3", Args: map[string]any{"id": "call_2"}}, &act)
	if !act.OK {
		t.Fatalf("activate: %+v", act)
	}
	lg.result("call_3", "activate", act.Message, false)
	var c4 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c4)
	if !c4.Rebased && !strings.HasPrefix(flat(c4.Messages), flat(c3.Messages)) {
		t.Errorf("call 4 neither rebased nor extends call 3")
	}
	if tail := flat(c4.Messages)[len(flat(c3.Messages)):]; !c4.Rebased && !strings.Contains(tail, "secret-output") {
		t.Errorf("after activate the output is not shown again: %q", tail)
	}

	// Failing tools answer ok=false and are recorded as failed.
	var bad ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{ToolCallID: "call_4", Args: map[string]any{"path": "missing.txt"}}, &bad)
	if bad.OK || !strings.Contains(bad.Message, "missing.txt") {
		t.Errorf("read of a missing file: %+v", bad)
	}
	var locked ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/deactivate", ToolRequest{Args: map[string]any{"id": "chat:s1"}}, &locked)
	if locked.OK || !strings.Contains(locked.Message, "always active") {
		t.Errorf("deactivating the chat: %+v", locked)
	}
	var pin, unpin ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/pin", ToolRequest{Args: map[string]any{"id": rd.ID}}, &pin)
	e.ok("POST", "/v1/sessions/s1/tools/unpin", ToolRequest{Args: map[string]any{"id": rd.ID}}, &unpin)
	if !pin.OK || !unpin.OK {
		t.Errorf("pin %+v, unpin %+v", pin, unpin)
	}
	e.check = false // requests outside the document
	e.fails(404, CodeNotFound, "POST", "/v1/sessions/s1/tools/rm", ToolRequest{Args: map[string]any{"id": "x"}})
	e.fails(400, CodeBadRequest, "GET", "/v1/objects/x?tx_id=abc", nil)
	e.check = true
	e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{}})

	// Store reads.
	var obj ObjectResponse
	e.ok("GET", "/v1/objects/"+rd.ID, nil, &obj)
	if obj.Doc["content"] != "the answer is 42\n" || obj.TxID <= 0 {
		t.Errorf("object: %+v", obj)
	}
	e.file("notes.txt", "the answer is 43\n")
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{Args: map[string]any{"path": notes}}, nil)
	var old ObjectResponse
	e.ok("GET", fmt.Sprintf("/v1/objects/%s?tx_id=%d", rd.ID, obj.TxID), nil, &old)
	if old.Doc["content"] != "the answer is 42\n" {
		t.Errorf("object as of tx %d: %v", obj.TxID, old.Doc["content"])
	}
	var h HistoryResponse
	e.ok("GET", "/v1/history/"+rd.ID+"?order=asc&with_docs=true", nil, &h)
	if len(h.Entries) != 2 || h.Entries[1].Doc["content"] != "the answer is 43\n" {
		t.Errorf("history: %+v", h)
	}
	var qr QueryResponse
	e.ok("POST", "/v1/query", map[string]any{"where": []any{map[string]any{"field": "tool", "op": "eq", "value": "bash"}}, "find": []string{"tool", "status"}}, &qr)
	if len(qr.Docs) != 1 || qr.Docs[0][store.IDKey] != "call_2" {
		t.Errorf("query: %+v", qr)
	}
	e.fails(404, CodeNotFound, "GET", "/v1/objects/no-such-object", nil)
	e.fails(400, CodeBadRequest, "POST", "/v1/query", map[string]any{"where": []any{map[string]any{"field": "", "op": "eq", "value": 1}}})
	var stt StatusResponse
	e.ok("GET", "/v1/status", nil, &stt)
	if stt.Store.Backend == "" || !slices.Equal(stt.Sessions, []string{"s1"}) {
		t.Errorf("status: %+v", stt)
	}

	// Close, then the session must be opened again; it resumes.
	var cl CloseResponse
	e.ok("POST", "/v1/sessions/s1/close", nil, &cl)
	if !cl.Closed {
		t.Errorf("close: %+v", cl)
	}
	e.fails(409, CodeNotOpen, "POST", "/v1/sessions/s1/context", lg.body())
	if r := e.open("s1"); r.State != "resumed" || r.Calls != 4 {
		t.Errorf("reopen: %+v", r)
	}
	lg.say("Done.")
	var c5 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c5)
	if c5.Call != 5 || c5.Ingested.Applied != 1 {
		t.Errorf("after resuming: call %d, ingested %+v", c5.Call, c5.Ingested)
	}
}

// TestToolDefinitions: the service serves ctxstore's tools as context/tools
// defines them, and runs exactly those.
func TestToolDefinitions(t *testing.T) {
	e := newEnv(t, nil)
	var got ToolsResponse
	e.ok("GET", "/v1/tools", nil, &got)
	var names, roles []string
	for _, d := range got.Tools {
		names, roles = append(names, d.Name), append(roles, d.Role)
		if d.Description == "" || d.Parameters["type"] != "object" {
			t.Errorf("tool %s: description %q parameters %v", d.Name, d.Description, d.Parameters)
		}
	}
	if !slices.Equal(names, []string{"read", "activate", "deactivate", "pin", "unpin", "search", "query_session"}) {
		t.Errorf("tools %v", names)
	}
	// The integrations choose by role what to register (OpenClaw keeps its own read) and what a
	// bare head leaves out.
	if !slices.Equal(roles, []string{"read", "manage", "manage", "manage", "manage", "recall", "recall"}) {
		t.Errorf("roles %v", roles)
	}
	e.open("s1")
	e.check = false // a tool outside the document's enum
	e.fails(404, CodeNotFound, "POST", "/v1/sessions/s1/tools/bash", ToolRequest{Args: map[string]any{"id": "x"}})
}

func TestErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.fails(409, CodeNotOpen, "POST", "/v1/sessions/nope/context", map[string]any{"messages": []any{}})
	e.fails(404, CodeNotFound, "GET", "/v1/sessions/nope", nil)
	e.check = false // malformed requests are outside the document by nature
	e.fails(400, CodeBadRequest, "PUT", "/v1/sessions/s1", "{not json")
	e.fails(400, CodeBadRequest, "PUT", "/v1/sessions/s1", map[string]any{"cwd": "relative/dir"})
	e.fails(400, CodeBadRequest, "PUT", "/v1/sessions/bad%20id", map[string]any{"cwd": e.dir})
	e.fails(404, CodeNotFound, "GET", "/v2/nothing", nil)
	eb := e.fails(405, CodeNotAllowed, "DELETE", "/v1/sessions/s1", nil)
	if !strings.Contains(eb.Message, "PUT") {
		t.Errorf("405 message %q does not list the allowed methods", eb.Message)
	}
	e.open("s1")
	e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/context", map[string]any{})
	// An unknown role is skipped and counted, never refused.
	var robot ContextResponse
	e.ok("POST", "/v1/sessions/s1/context", map[string]any{"messages": []any{map[string]any{"role": "robot"}}}, &robot)
	if robot.Converted == nil || robot.Converted.Unknown["message/robot"] != 1 {
		t.Errorf("an unknown role: converted %+v", robot.Converted)
	}
	e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/observe", map[string]any{"tool": "bash"})

	small := newEnv(t, func(o *Options) { o.MaxBody = 100 })
	small.check = false
	small.fails(413, CodeTooLarge, "PUT", "/v1/sessions/s1", map[string]any{"cwd": small.dir, "system_prompt": strings.Repeat("x", 200)})
}

func TestAuth(t *testing.T) {
	const all, only = "token-for-everything-0123", "token-for-session-a-0123"
	e := newEnv(t, func(o *Options) {
		o.Tokens = []Token{{Secret: all}, {Secret: only, Sessions: []string{"a"}}}
	})
	e.ok("GET", "/v1/health", nil, nil)
	e.fails(401, CodeUnauthorized, "GET", "/v1/status", nil)
	e.token = "wrong-token-0123456789"
	e.fails(401, CodeUnauthorized, "PUT", "/v1/sessions/a", OpenRequest{Cwd: e.dir})
	e.token = only
	e.open("a")
	e.fails(403, CodeForbidden, "PUT", "/v1/sessions/b", OpenRequest{Cwd: e.dir})
	e.fails(403, CodeForbidden, "GET", "/v1/status", nil)
	e.fails(403, CodeForbidden, "GET", "/v1/objects/chat:a", nil)
	e.fails(403, CodeForbidden, "POST", "/v1/query", map[string]any{})
	e.token = all
	e.open("b")
	e.ok("GET", "/v1/objects/chat:a", nil, nil)

	ts, err := ParseTokens(strings.NewReader("# comment\n\nabcdefghijklmnop\nqrstuvwxyz012345 s1 s2\n"))
	if err != nil || len(ts) != 2 || ts[0].Sessions != nil || !slices.Equal(ts[1].Sessions, []string{"s1", "s2"}) {
		t.Errorf("ParseTokens: %+v %v", ts, err)
	}
	if _, err := ParseTokens(strings.NewReader("short\n")); err == nil {
		t.Error("ParseTokens accepted a short token")
	}
	for _, c := range []struct {
		addr   string
		tokens bool
		ok     bool
	}{
		{"127.0.0.1:7411", false, true}, {"[::1]:0", false, true}, {"localhost:80", false, true},
		{"0.0.0.0:7411", false, false}, {":7411", false, false}, {"192.168.1.5:7411", false, false},
		{"example.com:7411", false, false}, {"0.0.0.0:7411", true, true},
	} {
		var ts []Token
		if c.tokens {
			ts = []Token{{Secret: all}}
		}
		if err := CheckBind(c.addr, ts); (err == nil) != c.ok {
			t.Errorf("CheckBind(%q, tokens %v) = %v", c.addr, c.tokens, err)
		}
	}
}

// TestSessionSerialization: concurrent requests of one session never
// conflict (they are serialized), and sessions run side by side.
func TestSessionSerialization(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 10 {
		e.file(fmt.Sprintf("f%d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	e.open("s1")
	e.open("s2")
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := []string{"s1", "s2"}[i%2]
			var r ToolResponse
			e.ok("POST", "/v1/sessions/"+sid+"/tools/read", ToolRequest{ToolCallID: fmt.Sprintf("c%d", i), Args: map[string]any{"path": fmt.Sprintf("f%d.txt", i)}}, &r)
			if !r.OK {
				t.Errorf("read %d: %+v", i, r)
			}
		}()
	}
	wg.Wait()
	for _, sid := range []string{"s1", "s2"} {
		var info SessionInfo
		e.ok("GET", "/v1/sessions/"+sid, nil, &info)
		if n := len(info.Active); n != 2+5 { // 5 reads: within the policy's 5 file loads per turn
			t.Errorf("%s: %d active objects, want 7 (chat, system prompt, 5 files): %v", sid, n, info.Active)
		}
	}
}

// TestGracefulShutdown: on shutdown the server stops accepting, lets a
// request in flight finish and write its context commit, and closes the
// sessions; the store holds everything.
func TestGracefulShutdown(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "s.db")
	st, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{tb: t, dir: t.TempDir(), spec: loadSpec(t)}
	res := newResolver(t)
	srv, err := New(Options{Store: st, Resolver: res, Roots: []string{e.dir}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln, 10*time.Second) }()
	base := "http://" + ln.Addr().String()
	e.ts = nil
	post := func(path string, body any) (*http.Response, error) {
		return http.Post(base+path, "application/json", strings.NewReader(mustJSON(t, body)))
	}
	resp, err := http.DefaultClient.Do(mustReq(t, "PUT", base+"/v1/sessions/s1", OpenRequest{Cwd: e.dir, SystemPrompt: "p"}))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("open: %v %v", resp, err)
	}
	resp.Body.Close()

	// Hold the session, so the next context request waits in flight.
	srv.mu.Lock()
	l := srv.sessions["s1"]
	srv.mu.Unlock()
	l.mu.Lock()
	var lg piLogBuilder
	lg.user("hello")
	done := make(chan int, 1)
	go func() {
		r, err := post("/v1/sessions/s1/context", lg.body())
		if err != nil {
			t.Errorf("in-flight request: %v", err)
			done <- 0
			return
		}
		r.Body.Close()
		done <- r.StatusCode
	}()
	time.Sleep(200 * time.Millisecond) // the request reaches the lock
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond)
		if err != nil {
			break // no longer accepting
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections after shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	l.mu.Unlock()
	if code := <-done; code != 200 {
		t.Errorf("in-flight request: status %d", code)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := bitemporal.Open(ctx, db, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if n, err := assemble.Calls(ctx, st2, "s1"); err != nil || n != 1 {
		t.Errorf("context commits after shutdown: %d %v, want 1", n, err)
	}
	chat, err := st2.Entity(ctx, "chat:s1", store.Basis{})
	if err != nil || fmt.Sprint(chat["turn_count"]) != "1" {
		t.Errorf("the turn in progress was not written to the chat at shutdown: %v %v", chat["turn_count"], err)
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func mustReq(tb testing.TB, method, url string, body any) *http.Request {
	tb.Helper()
	r, err := http.NewRequest(method, url, strings.NewReader(mustJSON(tb, body)))
	if err != nil {
		tb.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	return r
}

// raw sends a request with a raw body and content type, checks the
// exchange against the document and returns the status, headers and body.
func (e *env) raw(method, path, contentType string, body []byte) (int, http.Header, []byte) {
	e.tb.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, bytes.NewReader(body))
	if err != nil {
		e.tb.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.tb.Fatal(err)
	}
	if err := e.spec.Check(req, body, resp.StatusCode, resp.Header, b); err != nil {
		e.tb.Errorf("OpenAPI: %v", err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestBundles: a session exported from one server's store and imported
// into another's resumes there and continues byte for byte.
func TestBundles(t *testing.T) {
	a := newEnv(t, nil)
	a.file("notes.txt", "portable notes\n")
	a.open("p1")
	var lg piLogBuilder
	lg.user("Read notes.txt.")
	a.ok("POST", "/v1/sessions/p1/context", lg.body(), nil)
	lg.call("c1", "read", map[string]any{"path": "notes.txt"})
	var rd ToolResponse
	a.ok("POST", "/v1/sessions/p1/tools/read", ToolRequest{ToolCallID: "c1", Args: map[string]any{"path": "notes.txt"}}, &rd)
	lg.result("c1", "read", rd.Message, false)
	var last piAnswer
	a.ok("POST", "/v1/sessions/p1/context", lg.body(), &last)
	a.ok("POST", "/v1/sessions/p1/close", nil, nil)

	st, hdr, bundle := a.raw("GET", "/v1/sessions/p1/export", "", nil)
	if st != 200 || !strings.Contains(hdr.Get("Ctxstore-Export"), `"session":"p1"`) || len(bundle) == 0 {
		t.Fatalf("export: %d %q (%d bytes)", st, hdr.Get("Ctxstore-Export"), len(bundle))
	}
	if st, _, _ := a.raw("GET", "/v1/sessions/none/export", "", nil); st != 404 {
		t.Errorf("export of an unknown session: %d", st)
	}

	b := newEnv(t, nil)
	b.dir = a.dir // the same files, as on the same machine
	if st, _, body := b.raw("POST", "/v1/sessions/other/import", "application/x-ndjson", bundle); st != 400 {
		t.Errorf("import under another session id: %d %s", st, body)
	}
	if st, _, body := b.raw("POST", "/v1/sessions/p1/import", "application/x-ndjson", bundle[:len(bundle)/2]); st != 400 {
		t.Errorf("import of a cut bundle: %d %s", st, body)
	}
	st, _, body := b.raw("POST", "/v1/sessions/p1/import", "application/x-ndjson", bundle)
	var sum ImportResponse
	if err := json.Unmarshal(body, &sum); st != 200 || err != nil || !sum.Complete || sum.Commits != 2 {
		t.Fatalf("import: %d %s", st, body)
	}
	if r := b.open("p1"); r.State != "resumed" || r.Calls != 2 {
		t.Fatalf("open after import: %+v", r)
	}
	if st, _, _ := b.raw("POST", "/v1/sessions/p1/import", "application/x-ndjson", bundle); st != 409 {
		t.Errorf("import into an open session: %d", st)
	}
	lg.say("It says: portable notes.")
	var next piAnswer
	b.ok("POST", "/v1/sessions/p1/context", lg.body(), &next)
	if next.Call != 3 || next.Rebased || !strings.HasPrefix(flat(next.Messages), flat(last.Messages)) {
		t.Errorf("the imported session does not continue: call %d, rebased %v", next.Call, next.Rebased)
	}
}

// TestContextDeltas: a client sending the log and getting the answer as
// deltas sees exactly the contexts a client sending everything sees; a
// base the server does not hold is refused, and so is a replaced log's
// shorter base, after which the whole log works.
func TestContextDeltas(t *testing.T) {
	full := newEnv(t, func(o *Options) { o.Policy = collapse.Config{TurnsBack: 1, PerTurn: 5} })
	delta := newEnv(t, func(o *Options) { o.Policy = collapse.Config{TurnsBack: 1, PerTurn: 5} })
	delta.dir = full.dir
	full.file("a.txt", "alpha\n")
	full.open("s")
	delta.open("s")
	dc := newDeltaClient(delta.ts.URL, "s")
	dc.check = func(req *http.Request, reqBody []byte, status int, h http.Header, body []byte) {
		if err := delta.spec.Check(req, reqBody, status, h, body); err != nil {
			t.Errorf("OpenAPI: %v", err)
		}
	}
	var lg piLogBuilder
	step := 0
	compare := func(log []json.RawMessage, base int, sum string) deltaResult {
		t.Helper()
		step++
		body := map[string]any{"messages": log}
		var want piAnswer
		full.ok("POST", "/v1/sessions/s/context", body, &want)
		r := dc.call(log, base, sum)
		if r.status != 200 {
			t.Fatalf("step %d: delta call: %d %s", step, r.status, r.code)
		}
		var got []PiOutMessage
		for _, m := range r.messages {
			var pm PiOutMessage
			if err := json.Unmarshal(m, &pm); err != nil {
				t.Fatal(err)
			}
			got = append(got, pm)
		}
		if flat(got) != flat(want.Messages) {
			t.Errorf("step %d: the delta client's context differs:\n%s\nwant:\n%s", step, flat(got), flat(want.Messages))
		}
		return r
	}
	both := func(method, path string, body any) {
		full.ok(method, path, body, nil)
		delta.ok(method, path, body, nil)
	}
	lg.user("Read a.txt and run the build.")
	compare(lg.raws(), -1, "")
	lg.call("r1", "read", map[string]any{"path": "a.txt"})
	both("POST", "/v1/sessions/s/tools/read", ToolRequest{ToolCallID: "r1", Args: map[string]any{"path": "a.txt"}})
	lg.result("r1", "read", "Read a.txt", false)
	r := compare(lg.raws(), -1, "")
	if r.resp.Keep == 0 || len(r.resp.Messages) >= len(r.messages) {
		t.Errorf("the answer is not a delta: keep %d, %d of %d messages sent", r.resp.Keep, len(r.resp.Messages), len(r.messages))
	}
	for k := range 3 {
		id := fmt.Sprintf("b%d", k)
		lg.call(id, "bash", map[string]any{"command": "make"})
		lg.result(id, "bash", strings.Repeat("output line\n", 50), false)
		compare(lg.raws(), -1, "")
	}
	lg.say("Done.")
	lg.user("Next turn.")
	r = compare(lg.raws(), -1, "")
	if r.reqBytes > 1000 {
		t.Errorf("a delta request of two messages took %d bytes", r.reqBytes)
	}

	// A base the server does not hold, or a wrong digest: log_mismatch.
	lg.say("More.")
	if r := dc.call(lg.raws(), len(lg.raws())-1, strings.Repeat("0", 64)); r.status != 409 || r.code != CodeLogMismatch {
		t.Errorf("wrong digest: %d %s", r.status, r.code)
	}
	if r := dc.call(lg.raws(), len(lg.raws())+5, strings.Repeat("0", 64)); r.status != 409 || r.code != CodeLogMismatch {
		t.Errorf("base beyond the log: %d %s", r.status, r.code)
	}
	compare(lg.raws(), 0, "") // the client starts over with the whole log

	// A replaced log (the last two messages dropped, another one instead):
	// the server keeps a digest per message, not the messages, so the
	// shorter base gets log_mismatch and the client sends the whole log.
	lg.msgs, lg.enc = lg.msgs[:len(lg.msgs)-2], nil
	lg.user("A different question.")
	compare(lg.raws(), -1, "")
	if dc.mismatches != 1 {
		t.Errorf("the replaced log met log_mismatch %d times, want once", dc.mismatches)
	}
	lg.say("Answered.")
	lg.user("And then?")
	if r := compare(lg.raws(), -1, ""); r.resp.Keep == 0 || dc.mismatches != 1 {
		t.Errorf("after the replaced log: keep %d, %d mismatches", r.resp.Keep, dc.mismatches)
	}
}

// TestContextStableAndEvents: the answer says how many leading messages no
// later call changes (those before the first content block), and harness
// events are recorded with the call's context commit.
func TestContextStableAndEvents(t *testing.T) {
	e := newEnv(t, nil)
	e.file("notes.txt", "the answer is 42\n")
	e.open("s1")
	var lg piLogBuilder
	lg.user("What is in notes.txt?")
	var c1 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", lg.body(), &c1)
	if c1.Stable != len(c1.Messages) {
		t.Errorf("call 1: stable %d of %d messages, want all (no content yet)", c1.Stable, len(c1.Messages))
	}
	lg.call("call_1", "read", map[string]any{"path": "notes.txt"})
	var rd ToolResponse
	e.ok("POST", "/v1/sessions/s1/tools/read", ToolRequest{ToolCallID: "call_1", Args: map[string]any{"path": "notes.txt"}}, &rd)
	lg.result("call_1", "read", rd.Message, false)
	body := lg.body()
	body["events"] = []map[string]any{{"type": "tree", "old_leaf_id": "a1", "new_leaf_id": "b2"}}
	var c2 piAnswer
	e.ok("POST", "/v1/sessions/s1/context", body, &c2)
	first := -1
	for i, m := range c2.Messages {
		for _, b := range m.Content {
			if first < 0 && strings.HasPrefix(b.Text, "<<content ") {
				first = i
			}
		}
	}
	if first < 0 || c2.Stable != first {
		t.Errorf("call 2: stable %d, first content block in message %d of %d", c2.Stable, first, len(c2.Messages))
	}
	var obj ObjectResponse
	e.ok("GET", "/v1/objects/ctx-s1-2", nil, &obj)
	h, _ := obj.Doc["harness"].(map[string]any)
	evs, _ := h["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["new_leaf_id"] != "b2" {
		t.Errorf("commit 2 records events %v", h["events"])
	}
	e.ok("GET", "/v1/objects/ctx-s1-1", nil, &obj)
	if h, _ := obj.Doc["harness"].(map[string]any); h["events"] != nil {
		t.Errorf("commit 1 records events %v", h["events"])
	}
}

// TestContextCacheRenewed: a context call's cache_renewed_at (a warm
// request the harness sent since its previous call) makes the pause before
// it count from the renewal: the turn after a pause longer than the cache
// lives starts warm, where the same turn without it starts cold (the
// commit's shape says which). A value that is not an RFC 3339 time is
// refused, naming the field.
func TestContextCacheRenewed(t *testing.T) {
	const ttl = 300 * time.Millisecond
	e := newEnv(t, func(o *Options) { o.Rebase.CacheTTL = ttl })
	shapes := map[string]map[string]any{}
	for _, sid := range []string{"renewed", "cold"} {
		e.open(sid)
		var lg piLogBuilder
		lg.user("first")
		var a piAnswer
		e.ok("POST", "/v1/sessions/"+sid+"/context", lg.body(), &a)
		lg.say("done")
		lg.user("second")
		time.Sleep(3 * ttl)
		body := lg.body()
		if sid == "renewed" {
			body["cache_renewed_at"] = time.Now().Add(-ttl / 10).Format(time.RFC3339Nano)
		}
		e.ok("POST", "/v1/sessions/"+sid+"/context", body, &a)
		// The cold start asks for the head's hour, and says how much of
		// the context the head is (the Pi extension weighs warms by it).
		if long := a.HeadTTLSeconds > 0; long != (sid == "cold") || a.HeadTokens <= 0 || a.HeadTokens >= a.Tokens {
			t.Errorf("%s: head_ttl_seconds %d, head_tokens %d of %d", sid, a.HeadTTLSeconds, a.HeadTokens, a.Tokens)
		}
		var obj ObjectResponse
		e.ok("GET", "/v1/objects/ctx-"+sid+"-2", nil, &obj)
		shapes[sid], _ = obj.Doc["shape"].(map[string]any)
		// The renewal the idle time counted from is recorded with the
		// commit.
		if _, renewed := obj.Doc["cache_renewed"]; renewed != (sid == "renewed") {
			t.Errorf("%s: commit 2 records cache_renewed %v", sid, obj.Doc["cache_renewed"])
		}
	}
	if s := shapes["renewed"]; fmt.Sprint(s["warm_starts"], " ", s["cold_starts"]) != "1 0" {
		t.Errorf("renewed: shape %v, want one warm start", s)
	}
	if s := shapes["cold"]; fmt.Sprint(s["warm_starts"], " ", s["cold_starts"]) != "0 1" {
		t.Errorf("not renewed: shape %v, want one cold start", s)
	}
	e.check = false // outside the document by nature
	eb := e.fails(400, CodeBadRequest, "POST", "/v1/sessions/cold/context", map[string]any{"messages": []any{}, "cache_renewed_at": "yesterday"})
	if !strings.Contains(eb.Message, "cache_renewed_at") {
		t.Errorf("message %q does not name the field", eb.Message)
	}
}
