package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/recall"
)

// TestRecallThroughTheAPI: a session indexed in the background after five
// user messages and on demand; @@ references in a later session's user
// message put the summary into the context once, before the message, and
// the context stays an extension of the previous call (cache-stable);
// query_session answers from passages without a model.
func TestRecallThroughTheAPI(t *testing.T) {
	e := newEnv(t, nil)
	e.open("old")
	var lg piLogBuilder
	asks := []string{
		"Refactor the confirm button so the modal closes on escape.",
		"Use the keydown listener on the modal root for the confirm button.",
		"Add a regression test for the confirm button modal.",
		"Rename the confirm button component to ConfirmAction.",
		"Update the storybook entry of the confirm button.",
		"Thanks, that is all.",
	}
	for i, a := range asks {
		lg.user(a)
		if i == 2 {
			lg.call("call_old_1", "bash", map[string]any{"command": "npm test"})
			lg.result("call_old_1", "bash", "FAIL modal.spec.ts: escape key listener detached too early", true)
		}
		lg.say("Done.")
		e.ok("POST", "/v1/sessions/old/context", lg.body(), nil)
	}
	// Background indexing after five user messages (in completed turns:
	// the sixth message completes the fifth turn); wait for it.
	e.srv.waitRecall()
	var m MetaResponse
	e.ok("GET", "/v1/sessions/old/meta?history=true", nil, &m)
	if !strings.Contains(m.Name, "confirm") || m.UserMessages != 5 || m.Generator != "offline" || len(m.History) != 1 {
		t.Fatalf("background index: %+v", m)
	}
	var m2 recall.Meta
	e.ok("POST", "/v1/sessions/old/index", nil, &m2)
	if m2.Name != m.Name || m2.TxID <= m.TxID {
		t.Errorf("on-demand index: %+v", m2)
	}
	// The versions a page at a time: the cursor reaches the second.
	var p1, p2 MetaResponse
	e.ok("GET", "/v1/sessions/old/meta?history=true&limit=1", nil, &p1)
	if len(p1.History) != 1 || p1.History[0].TxID != m.TxID || p1.HistoryNext == "" {
		t.Fatalf("first page of the versions: %+v", p1)
	}
	e.ok("GET", "/v1/sessions/old/meta?history=true&limit=1&cursor="+p1.HistoryNext, nil, &p2)
	if len(p2.History) != 1 || p2.History[0].TxID != m2.TxID || p2.HistoryNext != "" {
		t.Fatalf("second page of the versions: %+v", p2)
	}

	e.open("new")
	var nl piLogBuilder
	nl.user("Hello.")
	var c1, c2, c3 piAnswer
	e.ok("POST", "/v1/sessions/new/context", nl.body(), &c1)
	nl.say("Hi.")
	nl.user("Should we use the same approach as @@" + m.Name + " for the dialog?")
	e.ok("POST", "/v1/sessions/new/context", nl.body(), &c2)
	f1, f2 := flat(c1.Messages), flat(c2.Messages)
	if !strings.HasPrefix(f2, f1) {
		t.Errorf("the second context does not extend the first")
	}
	tail := f2[len(f1):]
	note := strings.Index(tail, "is session old")
	msg := strings.Index(tail, "Should we use the same approach")
	if note < 0 || msg < 0 || note > msg || !strings.Contains(tail, "Summary: Asked first: Refactor the confirm button") {
		t.Fatalf("summary not injected before the message:\n%s", tail)
	}
	// Referenced again: not injected twice. An unknown name says so.
	nl.say("Yes.")
	nl.user("Again @@" + m.Name + " and @@no-such-session-here please.")
	e.ok("POST", "/v1/sessions/new/context", nl.body(), &c3)
	f3 := flat(c3.Messages)
	if !strings.HasPrefix(f3, f2) || strings.Count(f3, "is session old") != 1 || !strings.Contains(f3, "@@no-such-session-here: no session") {
		t.Errorf("third context:\n%s", f3[len(f2):])
	}
	// "@@name: question" asks query_session; without a model, passages.
	nl.say("Ok.")
	nl.user("@@" + m.Name + ": why did the escape listener fail")
	var c4 piAnswer
	e.ok("POST", "/v1/sessions/new/context", nl.body(), &c4)
	if f4 := flat(c4.Messages); !strings.Contains(f4[len(f3):], "call_old_1") {
		t.Errorf("query answer lacks the toolcall passage:\n%s", f4[len(f3):])
	}
	// The references are recorded in the chat.
	var chat map[string]any
	e.ok("GET", "/v1/objects/chat:new", nil, &chat)
	if b, _ := jsonText(chat); !strings.Contains(b, `"session_refs"`) || !strings.Contains(b, `"session_id":"old"`) {
		t.Errorf("chat does not record the references: %s", b)
	}

	// The query_session tool.
	var tr ToolResponse
	e.ok("POST", "/v1/sessions/new/tools/query_session", ToolRequest{ToolCallID: "call_q1",
		Args: map[string]any{"session": m.Name, "question": "which storybook entry"}}, &tr)
	if !tr.OK || tr.ID != "old" || !strings.Contains(tr.Message, "storybook") {
		t.Errorf("query_session tool: %+v", tr)
	}
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
