package httpapi

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
	"github.com/ctxstore/ctxstore/xtdb"
)

// The session package's rule knows every namespace the layers above it
// derive ids in: each is derived, and a session's own ones are that
// session's.
func TestDerivedNamespacesKnown(t *testing.T) {
	for _, c := range []struct{ id, owner string }{
		{assemble.CommitID("s-1:x", 7), "s-1:x"},
		{recall.MetaID("s:2"), "s:2"},
		{session.RootsID("s:3"), "s:3"},
		{commits.IDPrefix + "0123456789abcdef0123", ""},
		{commits.ContentPrefix + "ab12", ""},
		{commits.PrincipalPrefix + "p", ""},
		{commits.CachePrefix + "m", ""},
		{importer.CursorPrefix + "abc", ""},
		{store.ReservedPrefix + "cursor:x", ""},
		{xtdb.UnknownIDPrefix + "12", ""},
		{sessionbundle.RecordPrefix + "session:s@x", ""},
	} {
		owner, derived := session.Namespace(c.id)
		if !derived || owner != c.owner {
			t.Errorf("Namespace(%q) = %q, %v; want %q, true", c.id, owner, derived, c.owner)
		}
	}
}

// A token limited to session sa names, as tool call ids, ids ctxstore
// derives for session sb (its next context commit, a chunk, its head) or
// for itself: every one is refused (403) before anything is written, by
// observe, by a tool call and in a context request's log, and sb's next
// calls, close and reopen go on as before.
func TestClientCannotNameDerivedIDs(t *testing.T) {
	e := newTrustEnv(t)
	e.victim()
	var lb piLogBuilder
	lb.user("hello")
	e.ok("POST", "/v1/sessions/sb/context", lb.body(), nil) // ctx-sb-1

	e.token = tokA
	e.open("sa")
	out := "x"
	ids := []string{"ctx-sb-2", "ctx-sb-3", "ctx-sb-40", "session-chunk:sb:turn:1", "session-chunk:sb:index:0",
		"chat:sb", "session:sb", "system_prompt:sb", "session-meta:sb", "ctx-sa-9", "ctx-content:00",
		"ctxstore:sync-cursor:x", "import-cursor:1",
		"session-roots:sb", "session-roots:sa"}
	for _, id := range ids {
		before := latest(t, e.st)
		e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/observe", ObserveRequest{ToolCallID: id, Tool: "bash", Args: map[string]any{"command": "true"}, Output: &out})
		e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/observe", ObserveRequest{ToolCallID: id, Tool: "custom", Args: map[string]any{}, Output: &out})
		e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/tools/read", ToolRequest{ToolCallID: id, Args: map[string]any{"path": "secret.txt"}})
		var lg piLogBuilder
		lg.user("go")
		lg.call("call_ok", "bash", map[string]any{"command": "true"})
		lg.result("call_ok", "bash", "fine", false)
		lg.call(id, "bash", map[string]any{"command": "true"})
		lg.result(id, "bash", "forged", false)
		e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/context", lg.body())
		if latest(t, e.st) != before {
			t.Fatalf("a refused write of %s wrote to the store", id)
		}
	}

	e.token = tokAll
	lb.say("hi")
	lb.user("again")
	for range 3 {
		var ans piAnswer
		e.ok("POST", "/v1/sessions/sb/context", lb.body(), &ans)
		lb.say("ok")
		lb.user("more")
	}
	e.ok("POST", "/v1/sessions/sb/close", nil, nil)
	if r := e.open("sb"); r.State != "resumed" || r.Calls != 4 {
		t.Fatalf("sb after the attack: %+v", r)
	}
}

// A token limited to session sa imports a bundle of sa naming ids sb will
// write later (its commit 7 as an object, a chunk, its 14th commit): the
// store does not hold them yet, and the bundle is refused whole all the
// same, so sb writes them later as its own.
func TestBundleCannotClaimAnotherSessionsFuture(t *testing.T) {
	ctx := context.Background()
	for _, id := range []string{"ctx-sb-7", "ctx-sb-14", "session-chunk:sb:toolcalls:0", "chat:sb", "ctx-content:ff"} {
		t.Run(id, func(t *testing.T) {
			e := newTrustEnv(t)
			bundle := hostileBundle(t, "sa", id)
			before := latest(t, e.st)
			e.token = tokA
			st, _, body := e.raw("POST", "/v1/sessions/sa/import", "application/x-ndjson", bundle)
			if st != 403 || !strings.Contains(string(body), id) {
				t.Fatalf("hostile import: %d %s", st, body)
			}
			if latest(t, e.st) != before {
				t.Fatal("the refused import wrote to the store")
			}
			e.victim()
			var lb piLogBuilder
			for range 15 {
				lb.user("u")
				e.ok("POST", "/v1/sessions/sb/context", lb.body(), nil)
				lb.say("a")
			}
			e.ok("POST", "/v1/sessions/sb/close", nil, nil)
			if r := e.open("sb"); r.State != "resumed" || r.Calls != 15 {
				t.Fatalf("sb after the hostile import: %+v", r)
			}
			for n := 1; n <= 15; n++ {
				if _, err := assemble.Rebuild(ctx, e.st, "sb", n); err != nil {
					t.Fatalf("rebuilding sb's call %d: %v", n, err)
				}
			}
		})
	}
}

// hostileBundle exports, from a scratch store, session sid whose index
// names id, an object it writes.
func hostileBundle(tb testing.TB, sid, id string) []byte {
	tb.Helper()
	ctx := context.Background()
	scratch, err := bitemporal.Open(ctx, filepath.Join(tb.TempDir(), "scratch.db"), bitemporal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer scratch.Close()
	s, err := session.Create(ctx, scratch, sid, session.CreateOptions{SystemPrompt: "x"})
	if err != nil {
		tb.Fatal(err)
	}
	// A well-formed object (bundles' objects are verified on import), so
	// that what refuses it is whose id it is.
	forged := "forged"
	var o *objects.Object
	if owner, ok := strings.CutPrefix(id, "chat:"); ok {
		o, err = objects.NewChat(owner, nil, &forged)
	} else {
		o, err = objects.NewToolcall(id, objects.ToolcallFields{Tool: "bash", Status: objects.StatusOK}, &forged)
	}
	doc := store.Doc{"xt/id": id, "type": "toolcall", "content": forged}
	if err == nil {
		// An id no toolcall may hold (a reserved per-session prefix) stays
		// a malformed document, refused as that.
		if doc, err = o.Doc(); err != nil {
			tb.Fatal(err)
		}
	}
	if _, _, err := s.Update(ctx, []store.Op{store.Put(doc)},
		func(st *session.State) error { st.AddToIndex(id); return nil }); err != nil {
		tb.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := sessionbundle.Export(ctx, scratch, sid, &b, sessionbundle.ExportOptions{TempDir: tb.TempDir()}); err != nil {
		tb.Fatal(err)
	}
	if !strings.Contains(b.String(), `"`+id+`"`) {
		tb.Fatalf("the hostile bundle does not carry %s", id)
	}
	return b.Bytes()
}

// A tool call id written with a lone surrogate escape is refused (400),
// not recorded as U+FFFD: "c\ud800" and "c\udfff" would be one toolcall.
func TestLoneSurrogateCallIDRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.open("s1")
	for _, id := range []string{`c\ud800`, `c\udfff`} {
		e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/observe", `{"tool_call_id":"`+id+`","tool":"bash","args":{},"output":"x"}`)
		e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s1/tools/read", `{"tool_call_id":"`+id+`","args":{"path":"x"}}`)
	}
}

// The id a forked session records its parent's tool call under
// (session.RenamedID) is that session's: another session's token cannot
// take it first, so the fork's context call goes through.
func TestRenamedIDCannotBeTakenFirst(t *testing.T) {
	e := newTrustEnv(t)
	e.token = tokAll
	e.open("parent")
	var lg piLogBuilder
	lg.user("build it")
	lg.call("call_1", "bash", map[string]any{"command": "make"})
	lg.result("call_1", "bash", "parent output\n", false)
	lg.say("built")
	e.ok("POST", "/v1/sessions/parent/context", lg.body(), nil)

	e.token = tokA
	e.open("sa")
	out := "planted"
	e.fails(403, CodeForbidden, "POST", "/v1/sessions/sa/observe", ObserveRequest{ToolCallID: session.RenamedID("sb", "call_1"), Tool: "bash", Args: map[string]any{}, Output: &out})

	e.token = tokAll
	e.open("sb")
	lg.user("and again")
	var ans piAnswer
	e.ok("POST", "/v1/sessions/sb/context", lg.body(), &ans)
	if txt := flat(ans.Messages); !strings.Contains(txt, "parent output") || strings.Contains(txt, "planted") {
		t.Fatalf("the fork's context: %s", txt)
	}
}
