package httpapi

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/sessionbundle"
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

// Issue 20, item 1: a token limited to session sa imports a bundle of sa
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

// Issue 20, item 2: with sa's limited token, B's toolcall, chat, system
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
