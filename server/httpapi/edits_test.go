package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/tools"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestContextEditOfRecordedResult: a harness edits tool results the
// service recorded in an earlier call (Pi's context_edit entries, told as
// context_edit events): a replaced output's original leaves the store (no
// version of the toolcall, no document, no search hit and no spill file
// holds it; the session's export neither) and the replacement is the
// toolcall's only version; an omitted output leaves no content and its
// call is no longer active. An edit naming another session's call changes
// nothing there, and an edit told twice writes nothing the second time.
func TestContextEditOfRecordedResult(t *testing.T) {
	const secret, noise, foreign = "hunter2-a8f3e", "NOISE-77c1", "OTHER-5e21"
	root := filepath.Join(t.TempDir(), "spill")
	e := newEnv(t, func(o *Options) {
		o.Spill = root
		o.Rebase = assemble.Policy{PreviewTokens: 1000}
	})
	for _, sid := range []string{"s", "other"} {
		e.ok("PUT", "/v1/sessions/"+sid, OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi", BareHead: true}, nil)
	}
	var other piLogBuilder
	other.user("Run it.")
	other.call("c_other", "bash", map[string]any{"command": "echo other"})
	other.result("c_other", "bash", foreign+"\n", false)
	e.ok("POST", "/v1/sessions/other/context", other.body(), nil)

	var b strings.Builder
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&b, "build-output-line %d\n", i)
		if i == 700 {
			b.WriteString("SECRET=" + secret + "\n")
		}
	}
	long := b.String()
	redacted := strings.Replace(long, "SECRET="+secret, "SECRET=[redacted]", 1)
	var lg piLogBuilder
	lg.user("Build it.")
	lg.call("c1", "bash", map[string]any{"command": "make"})
	lg.result("c1", "bash", long, false)
	lg.call("c2", "bash", map[string]any{"command": "echo noise"})
	lg.result("c2", "bash", noise+"\n", false)
	lg.say("Built.")
	e.ok("POST", "/v1/sessions/s/context", lg.body(), nil)
	spill := filepath.Join(root, "s", tools.SpillName("c1"))
	if b, err := os.ReadFile(spill); err != nil || !strings.Contains(string(b), secret) {
		t.Fatalf("the previewed output's spill file: %v, want it written whole", err)
	}

	// The harness redacts c1 and omits c2 (its log now carries the
	// replacement, and no result for c2), and names a call of another
	// session.
	lg.msgs[2]["content"] = []any{map[string]any{"type": "text", "text": redacted}}
	lg.msgs = append(lg.msgs[:4], lg.msgs[5:]...)
	lg.user("Again.")
	body := lg.body()
	body["events"] = []any{
		map[string]any{"type": "context_edit", "entry_id": "e1", "tool_call_id": "c1", "replacement": redacted},
		map[string]any{"type": "context_edit", "entry_id": "e2", "tool_call_id": "c2", "replacement": nil},
		map[string]any{"type": "context_edit", "entry_id": "e3", "tool_call_id": "c_other", "replacement": "gone"},
	}
	var c piAnswer
	e.ok("POST", "/v1/sessions/s/context", body, &c)
	// The edited log is the log applied before, edited: nothing is taken
	// for a replaced log (no note, nothing applied twice).
	if c.Ingested.Reset || c.Ingested.Applied != 1 {
		t.Errorf("the edited log was ingested as %+v, want only the new message applied", c.Ingested)
	}
	// The answer holds the replacement, not the original: the call
	// rebased from the edited output.
	if b, err := json.Marshal(c); err != nil || strings.Contains(string(b), noise) || strings.Contains(string(b), secret) {
		t.Errorf("the edit's call answers with an original (%v)", err)
	}
	if !c.Rebased || c.RebaseReason != assemble.ReasonContextEdit {
		t.Errorf("the edit's call: rebased %v, reason %q; want a %q rebase", c.Rebased, c.RebaseReason, assemble.ReasonContextEdit)
	}

	ctx := context.Background()
	versions := func(id string) []store.HistoryEntry {
		t.Helper()
		h, err := e.st.History(ctx, id, store.HistoryOptions{WithDocs: true, WithCorrections: true})
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		return h
	}
	content := func(h store.HistoryEntry) *string {
		t.Helper()
		o, err := objects.FromDoc(h.Doc)
		if err != nil {
			t.Fatalf("%s: %v", h.Doc[store.IDKey], err)
		}
		return o.Content
	}
	if h := versions("c1"); len(h) != 1 || content(h[0]) == nil || *content(h[0]) != redacted {
		t.Errorf("c1 has %d versions, want one holding the replacement", len(h))
	}
	if h := versions("c2"); len(h) != 1 || content(h[0]) != nil {
		t.Errorf("c2 has %d versions, want one without output", len(h))
	}
	if h := versions("c_other"); len(h) != 1 || content(h[0]) == nil || *content(h[0]) != foreign+"\n" {
		t.Errorf("another session's call was changed by this session's edit: %d versions", len(h))
	}
	e.srv.mu.Lock()
	l := e.srv.sessions["s"]
	e.srv.mu.Unlock()
	if l.sess.IsActive("c1") || l.sess.IsActive("c2") {
		t.Errorf("an edited output's call is still active")
	}
	if b, err := os.ReadFile(spill); err != nil || string(b) != redacted {
		t.Errorf("the spill file after the edit: %v, want the replacement", err)
	}
	var found SearchResponse
	for _, s := range []string{secret, noise} {
		e.ok("POST", "/v1/search", SearchRequest{Text: s}, &found)
		if len(found.Hits) > 0 {
			t.Errorf("search finds %q: %+v", s, found.Hits)
		}
	}
	resp, err := http.Get(e.ts.URL + "/v1/sessions/s/export")
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export: %d %v", resp.StatusCode, err)
	}
	for _, s := range []string{secret, noise} {
		if strings.Contains(string(bundle), s) {
			t.Errorf("the session's export holds %q", s)
			for _, l := range strings.Split(string(bundle), "\n") {
				if strings.Contains(l, s) {
					i := strings.Index(l, s)
					t.Logf("%s", l[max(0, i-300):i+50])
				}
			}
		}
	}
	if !strings.Contains(string(bundle), "SECRET=[redacted]") {
		t.Errorf("the session's export lacks the replacement")
	}

	// The conversation commits (their contents are deflated: read them).
	cs := commits.New(e.st, commits.Options{})
	list, err := cs.ListCommits(ctx, []string{"s"})
	if err != nil || len(list) == 0 {
		t.Fatalf("the session's conversation commits: %d, %v", len(list), err)
	}
	for _, c := range list {
		b, err := cs.Content(ctx, c)
		if err != nil {
			t.Fatalf("commit %s: %v", c.ID, err)
		}
		for _, s := range []string{secret, noise} {
			if strings.Contains(string(b), s) {
				t.Errorf("conversation commit %s (%s, depth %d) holds %q", c.ID, c.Trigger, c.Depth, s)
			}
		}
	}

	// The session's chain of conversation commits is whole: the commits
	// that held the originals were evicted and their messages committed
	// again, edited.
	tip, err := cs.SessionTip(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if chain, err := cs.History(ctx, tip.ID, 0); err != nil || len(chain) != len(list) {
		t.Errorf("the session's conversation chain: %d commits of %d, %v", len(chain), len(list), err)
	}

	// Told again (a retry): nothing is written.
	lg.say("Again done.")
	body = lg.body()
	body["events"] = []any{map[string]any{"type": "context_edit", "tool_call_id": "c1", "replacement": redacted}}
	e.ok("POST", "/v1/sessions/s/context", body, nil)
	if h := versions("c1"); len(h) != 1 {
		t.Errorf("an edit told twice wrote %d versions of c1", len(h))
	}

	// The session goes on from its commits, which name the evicted
	// originals up to the edit's call: closed and opened again, and on a
	// new server over the same store, the next call answers whole,
	// without them.
	answers := func(e *env, what string) {
		t.Helper()
		lg.say("Still here.")
		var c piAnswer
		e.ok("POST", "/v1/sessions/s/context", lg.body(), &c)
		b, err := json.Marshal(c)
		if err != nil || len(c.Messages) == 0 {
			t.Fatalf("%s: the call answers %d messages, %v", what, len(c.Messages), err)
		}
		for _, s := range []string{secret, noise} {
			if strings.Contains(string(b), s) {
				t.Errorf("%s: the answer holds %q", what, s)
			}
		}
		if !strings.Contains(string(b), "Still here.") {
			t.Errorf("%s: the answer lacks the log's last message", what)
		}
	}
	e.ok("POST", "/v1/sessions/s/close", nil, nil)
	e.ok("PUT", "/v1/sessions/s", OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi", BareHead: true}, nil)
	answers(e, "reopened")
	f := e.second()
	f.ok("PUT", "/v1/sessions/s", OpenRequest{Cwd: e.dir, SystemPrompt: "You are a test agent.", Harness: "pi", BareHead: true}, nil)
	answers(f, "a new server")

	// A malformed edit is refused whole.
	for _, ev := range []map[string]any{
		{"type": "context_edit", "replacement": "x"},
		{"type": "context_edit", "tool_call_id": "c1"},
		{"type": "context_edit", "tool_call_id": "c1", "replacement": 3},
	} {
		body = lg.body()
		body["events"] = []any{ev}
		e.fails(400, CodeBadRequest, "POST", "/v1/sessions/s/context", body)
	}
}
