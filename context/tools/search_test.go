package tools

import (
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// TestSearchTool: search finds what another session recorded, pools it so
// activate works, and a scope limited to the session finds only what the
// session may see.
func TestSearchTool(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, se *storetestenv.Env) {
		e := newEnv(t, se, collapse.Config{})
		word := "zebrawood" + strings.ReplaceAll(e.uid("w"), "-", "")
		// Another session runs a command and reads a file.
		s2, err := session.Create(e.ctx, e.st, e.uid("s2"), session.CreateOptions{SystemPrompt: "sys"})
		if err != nil {
			t.Fatal(err)
		}
		t2 := New(s2, e.ix, Options{})
		out := "build failed: " + word + " not found"
		tc := e.uid("tc1")
		if _, err := t2.Record(e.ctx, Call{ID: tc, Tool: "bash", Args: map[string]any{"command": "make"}, Output: &out}); err != nil {
			t.Fatal(err)
		}
		p := e.file("notes.txt", "the "+word+" supplier is in Oslo")
		if _, err := t2.Read(e.ctx, p); err != nil {
			t.Fatal(err)
		}

		r, hits, err := e.tools.Search(e.ctx, store.SearchQuery{Text: word}, recall.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 {
			t.Fatalf("hits %+v, want the toolcall and the file", hits)
		}
		if !strings.Contains(r.Message, "id="+tc) || !strings.Contains(r.Message, "«") {
			t.Errorf("message lacks the toolcall id or a marked snippet:\n%s", r.Message)
		}
		for _, h := range hits {
			if !e.tools.Session().State().InPool(h.ID) {
				t.Errorf("%s not pooled after search", h.ID)
			}
		}
		if _, err := e.tools.Activate(e.ctx, tc); err != nil {
			t.Fatalf("activating a found toolcall: %v", err)
		}

		// A scope limited to s1 sees no object of s2, nor the file s1 has not seen.
		q := store.SearchQuery{Text: word}
		hits, err = recall.Search(e.ctx, e.st, q, recall.SessionScope(e.sid))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.ID == tc {
				t.Errorf("s1's scope found s2's toolcall")
			}
		}
		// s2's own scope sees both.
		hits, err = recall.Search(e.ctx, e.st, q, recall.SessionScope(s2.ID()))
		if err != nil || len(hits) != 2 {
			t.Errorf("s2's scope: %+v %v, want 2 hits", hits, err)
		}
		// Naming another session in the query does not widen a scope.
		q.Sessions = []string{s2.ID()}
		if hits, err := recall.Search(e.ctx, e.st, q, recall.SessionScope(e.sid)); err != nil || len(hits) != 0 {
			t.Errorf("s1's scope asking for s2: %+v %v", hits, err)
		}
	})
}
