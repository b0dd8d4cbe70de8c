package ingest

import (
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

func convTexts(t *testing.T, r *rig, id, stop string) string {
	t.Helper()
	m, err := commits.New(r.st, commits.Options{}).Materialize(r.ctx, commits.MaterializeRequest{ID: id, Stop: stop})
	r.must(err)
	evs, err := events.Decode(m.Content)
	r.must(err)
	var s []string
	for _, e := range evs {
		s = append(s, e.Text)
	}
	return strings.Join(s, "|")
}

// TestLiveConversationCommits: a session writes a conversation commit per
// context call, each call record names it, a resumed process continues the
// chain, a replaced log branches, and a compaction checkpoints then
// summarizes.
func TestLiveConversationCommits(t *testing.T) {
	r := newRig(t, Options{Commits: &CommitOptions{Provenance: commits.Provenance{Principal: "alice", Harness: "test 1"}}})
	log := []conversation.Message{user("hi")}
	r.context(log)
	c1 := r.in.ConversationCommit()
	log = append(log, said("hello"), user("next"))
	a2, _ := r.context(log)
	c2 := r.in.ConversationCommit()
	svc := commits.New(r.st, commits.Options{})
	got, err := svc.Show(r.ctx, c2, store.Basis{})
	r.must(err)
	if got.Parent != c1 || got.Session != "s1" || got.Principal != "alice" || got.Trigger != commits.TurnBoundary || got.MessageCount != 2 {
		t.Fatalf("commit 2: %+v", got)
	}
	// The call record names the commit it rendered, findable by a query.
	docs, err := r.st.Query(r.ctx, store.Query{Where: []store.Pred{store.Where("conversation_commit", c2)}})
	r.must(err)
	if len(docs) != 1 || docs[0][store.IDKey] != a2.CommitID {
		t.Fatalf("calls of %s: %v", c2, docs)
	}
	// A call with nothing new writes no commit.
	r.context(log)
	if r.in.ConversationCommit() != c2 {
		t.Fatal("a call without new messages committed")
	}
	// A new process continues the chain.
	r.open()
	log = append(log, call("t1", "bash", map[string]any{"command": "ls"}), result("t1", "bash", "a.go"))
	r.context(log)
	c3 := r.in.ConversationCommit()
	got, err = svc.Show(r.ctx, c3, store.Basis{})
	r.must(err)
	if got.Parent != c2 || got.Trigger != commits.ToolCall {
		t.Fatalf("after resume: %+v", got)
	}
	if s := convTexts(t, r, c3, ""); s != "hi|hello|next||" {
		t.Fatalf("materialized %q", s)
	}
	// The harness replaces its log after message 1: a branch from c1.
	log2 := []conversation.Message{user("hi"), said("different"), user("x")}
	r.context(log2)
	c4 := r.in.ConversationCommit()
	got, err = svc.Show(r.ctx, c4, store.Basis{})
	r.must(err)
	if got.Parent != c1 {
		t.Fatalf("branch parent %s, want %s", got.Parent, c1)
	}
	// Compaction: the pending messages first, then the summary.
	log2 = append(log2, said("y"))
	cp, err := r.in.Compact(r.ctx, log2, "SUMMARY")
	r.must(err)
	pre, err := svc.Show(r.ctx, cp.Parent, store.Basis{})
	r.must(err)
	if pre.Parent != c4 || pre.Trigger != commits.CompactionTrigger {
		t.Fatalf("pre-compaction delta %+v", pre)
	}
	// The harness's compacted log follows the compaction.
	r.context([]conversation.Message{user("compacted"), user("after")})
	c5 := r.in.ConversationCommit()
	if s := convTexts(t, r, c5, ""); s != "SUMMARY|compacted|after" {
		t.Fatalf("after compaction: %q", s)
	}
	if s := convTexts(t, r, c5, commits.StopRoot); s != "hi|different|x|y|compacted|after" {
		t.Fatalf("root: %q", s)
	}
	// Both branches share c1.
	for _, tip := range []string{c3, c5} {
		h, err := svc.History(r.ctx, tip, 0)
		r.must(err)
		if h[len(h)-1].ID != c1 {
			t.Fatalf("history of %s does not reach %s", tip, c1)
		}
	}
}

// TestCommitEveryTurn: with Every turn, tool results do not checkpoint.
func TestCommitEveryTurn(t *testing.T) {
	r := newRig(t, Options{Commits: &CommitOptions{Every: EveryTurn}})
	log := []conversation.Message{user("hi"), call("t1", "bash", map[string]any{"command": "ls"}), result("t1", "bash", "a")}
	r.context(log[:1])
	c1 := r.in.ConversationCommit()
	r.context(log)
	if r.in.ConversationCommit() != c1 {
		t.Fatal("a tool result checkpointed")
	}
	log = append(log, said("done"), user("more"))
	r.context(log)
	c2 := r.in.ConversationCommit()
	if c2 == c1 || convTexts(t, r, c2, "") != "hi|||done|more" {
		t.Fatalf("turn commit %s: %q", c2, convTexts(t, r, c2, ""))
	}
	// The session ends after a tool result: Flush commits it.
	log = append(log, call("t2", "bash", map[string]any{"command": "pwd"}), result("t2", "bash", "/"))
	r.context(log)
	if r.in.ConversationCommit() != c2 {
		t.Fatal("a tool result checkpointed")
	}
	r.must(r.in.Flush(r.ctx))
	c3 := r.in.ConversationCommit()
	got, err := commits.New(r.st, commits.Options{}).Show(r.ctx, c3, store.Basis{})
	r.must(err)
	if c3 == c2 || got.Parent != c2 || got.Trigger != commits.SessionEnd || got.MessageCount != 2 {
		t.Fatalf("session end commit %+v", got)
	}
}
