package ingest

import (
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// TestEditResults: edits of results the session recorded rewrite their
// toolcalls (the replacement the only version; no output for an omission)
// and the chain takes the edited log for the one applied: nothing is
// applied twice, no "log replaced" note, and the conversation commits hold
// the edited log. A log that differs elsewhere too is
// a replaced log, as before, and an edit of a call the session never
// recorded writes nothing.
func TestEditResults(t *testing.T) {
	r := newRig(t, Options{Commits: &CommitOptions{}})
	log := []conversation.Message{user("Go."), call("c1", "bash", map[string]any{"command": "env"}), result("c1", "bash", "SECRET=hunter2\n"),
		call("c2", "bash", map[string]any{"command": "noise"}), result("c2", "bash", "NOISE-1\n"), said("Done.")}
	r.context(log)
	edited := []conversation.Message{log[0], log[1], result("c1", "bash", "SECRET=[redacted]\n"), log[3], log[5], user("Again.")}
	red := "SECRET=[redacted]\n"
	edits := []ResultEdit{{ToolCallID: "c1", Replacement: &red}, {ToolCallID: "c2"}, {ToolCallID: "c9", Replacement: &red}}
	done, err := r.in.EditResults(r.ctx, Whole(edited), edits)
	r.must(err)
	if len(done) != 2 || done[0].ID != "c1" || done[1].ID != "c2" || !done[1].Omitted {
		t.Fatalf("edited %+v, want c1 replaced and c2 omitted", done)
	}
	for id, want := range map[string]*string{"c1": &red, "c2": nil} {
		h, err := r.st.History(r.ctx, id, store.HistoryOptions{WithDocs: true, WithCorrections: true})
		r.must(err)
		o, err := objects.FromDoc(h[len(h)-1].Doc)
		r.must(err)
		if len(h) != 1 || !sameOutput(o.Content, want) {
			t.Errorf("%s: %d versions, the last %v", id, len(h), o.Content)
		}
	}
	if _, err := r.st.EntityTx(r.ctx, "c9", store.Basis{}); err == nil {
		t.Errorf("an edit of a call never recorded wrote it")
	}
	c, rep := r.context(edited)
	if rep.Reset || rep.Applied != 1 || strings.Contains(string(c.Bytes), "replaced after message") {
		t.Fatalf("the edited log was ingested as %+v", rep)
	}
	edited = append(edited, said("Again done."))
	if _, rep := r.context(edited); rep.Reset || rep.Applied != 1 {
		t.Fatalf("the next call's log was ingested as %+v", rep)
	}
	// The conversation chain holds the edited log, and no commit the
	// originals.
	m, err := commits.New(r.st, commits.Options{}).Materialize(r.ctx, commits.MaterializeRequest{ID: r.in.ConversationCommit(), Stop: "root"})
	r.must(err)
	if text := string(m.Content); strings.Contains(text, "hunter2") || strings.Contains(text, "NOISE-1") || !strings.Contains(text, "[redacted]") {
		t.Errorf("the conversation commits read back %s", text)
	}
	list, err := commits.New(r.st, commits.Options{}).ListCommits(r.ctx, []string{"s1"})
	r.must(err)
	for _, c := range list {
		b, err := commits.New(r.st, commits.Options{}).Content(r.ctx, c)
		r.must(err)
		if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "NOISE-1") {
			t.Errorf("conversation commit %s holds an original", c.ID)
		}
	}
	// An edit told with a log that changed elsewhere too: a replaced log.
	other := append([]conversation.Message{user("Went.")}, edited[1:]...)
	_, err = r.in.EditResults(r.ctx, Whole(other), edits[:1])
	r.must(err)
	if _, rep := r.context(other); !rep.Reset || rep.ResetAt != 0 {
		t.Fatalf("a log changed beyond its edits was ingested as %+v", rep)
	}
}
