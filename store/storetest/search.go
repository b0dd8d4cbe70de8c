package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// RunSearch checks a backend's store.Searcher (docs/recall.md): words and
// prefixes and phrases found in content, titles and chat turns; results
// metadata only, with a marked snippet; filters by kind, session and time;
// a past basis; replaced, deleted and evicted versions. Words are unique to
// the run, so a shared server is fine.
func RunSearch(t *testing.T, h Harness) {
	st := h.New(t)
	s, ok := st.(store.Searcher)
	if !ok {
		t.Fatalf("%s: the store does not implement store.Searcher", h.Name)
	}
	ctx := context.Background()
	var b [5]byte
	_, _ = rand.Read(b[:])
	tag := "zq" + hex.EncodeToString(b[:]) // a word no other run uses
	id := func(s string) string { return tag + "-" + s }
	put := func(docs ...store.Doc) store.Tx {
		t.Helper()
		var ops []store.Op
		for _, d := range docs {
			ops = append(ops, store.Put(d))
		}
		tx, err := store.SubmitWait(ctx, st, ops)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	search := func(q store.SearchQuery) []store.SearchHit {
		t.Helper()
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("search %q: %v", q.Text, err)
		}
		return hits
	}
	ids := func(hits []store.SearchHit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, strings.TrimPrefix(h.ID, tag+"-"))
		}
		return out
	}
	text := func(words string) store.SearchQuery { return store.SearchQuery{Text: tag + " " + words} }

	tx1 := put(
		store.Doc{store.IDKey: id("n1"), "type": "note", "title": "Deploy checklist",
			"content": tag + " Remember the database migration before the rollout of the billing service."},
		store.Doc{store.IDKey: id("f1"), "type": "file", "source": map[string]any{"type": "filesystem", "filesystemId": "fs", "path": "/src/" + tag + "/billing.go"},
			"content": tag + " package billing\nfunc Charge() {}"},
		store.Doc{store.IDKey: id("t1"), "type": "toolcall", "tool": "bash", "args": map[string]any{"command": "grep -r invoice ."},
			"chat_ref": "chat:" + tag + "-s1", "content": tag + " invoice.go:12: total := sum(lines)"},
		store.Doc{store.IDKey: id("x1"), "type": "session", "content": tag + " billing not indexed: bookkeeping"},
		store.Doc{store.IDKey: "chat:" + tag + "-s2", "type": "chat", "turn_count": 1, "turns": []any{
			map[string]any{"user": tag + " please rename the flaky widget",
				"assistant": []any{map[string]any{"type": "thinking", "thinking": "secretthought " + tag}, map[string]any{"type": "text", "text": "Renamed the widget."}}},
		}},
	)

	t.Run("words", func(t *testing.T) {
		hits := search(text("billing"))
		if got := ids(hits); len(got) != 2 || !contains(got, "n1") || !contains(got, "f1") {
			t.Fatalf("billing: got %v, want n1 and f1 (the session object is not indexed)", got)
		}
		for _, h := range hits {
			if !strings.Contains(h.Snippet, store.SnippetOpen) || !strings.Contains(h.Snippet, store.SnippetClose) {
				t.Errorf("%s: snippet %q marks no match", h.ID, h.Snippet)
			}
			if h.TxID != tx1.ID || h.Turn != -1 {
				t.Errorf("%s: tx %d turn %d, want %d and -1", h.ID, h.TxID, h.Turn, tx1.ID)
			}
		}
		if got := ids(search(text("deploy checklist"))); len(got) != 1 || got[0] != "n1" {
			t.Errorf("title words: got %v, want [n1]", got)
		}
		if got := ids(search(text("bill*"))); len(got) != 2 {
			t.Errorf("prefix bill*: got %v, want 2 hits", got)
		}
		if got := ids(search(text(`"billing service"`))); len(got) != 1 || got[0] != "n1" {
			t.Errorf("phrase: got %v, want [n1]", got)
		}
		if got := ids(search(text(`"service billing"`))); len(got) != 0 {
			t.Errorf("reversed phrase: got %v, want none", got)
		}
		if got := ids(search(text("invoice"))); len(got) != 1 || got[0] != "t1" {
			t.Errorf("toolcall: got %v, want [t1]", got)
		}
		if got := ids(search(text("nosuchword"))); len(got) != 0 {
			t.Errorf("absent word: got %v", got)
		}
	})

	t.Run("chat turns", func(t *testing.T) {
		hits := search(text("widget"))
		if len(hits) != 1 || hits[0].Kind != "chat" || hits[0].Turn != 0 || hits[0].Session != tag+"-s2" {
			t.Fatalf("chat: got %+v, want one hit on turn 0 of session %s-s2", hits, tag)
		}
		if got := search(text("secretthought")); len(got) != 0 {
			t.Errorf("thinking blocks must not be indexed, got %+v", got)
		}
		// A second version appends a turn: the first turn is still found
		// (once), the new one too.
		put(store.Doc{store.IDKey: "chat:" + tag + "-s2", "type": "chat", "turn_count": 2, "turns": []any{
			map[string]any{"user": tag + " please rename the flaky widget",
				"assistant": []any{map[string]any{"type": "text", "text": "Renamed the widget."}}},
			map[string]any{"user": tag + " now fix the gadget"},
		}})
		if hits := search(text("widget")); len(hits) != 1 || hits[0].Turn != 0 {
			t.Errorf("after append, widget: %+v, want turn 0 once", hits)
		}
		if hits := search(text("gadget")); len(hits) != 1 || hits[0].Turn != 1 {
			t.Errorf("after append, gadget: %+v, want turn 1", hits)
		}
	})

	t.Run("filters", func(t *testing.T) {
		q := text("billing")
		q.Kinds = []string{"file"}
		if got := ids(search(q)); len(got) != 1 || got[0] != "f1" {
			t.Errorf("kind file: got %v", got)
		}
		q = text("invoice")
		q.Sessions = []string{tag + "-s1"}
		if got := ids(search(q)); len(got) != 1 {
			t.Errorf("session s1: got %v, want t1", got)
		}
		q.Sessions = []string{tag + "-other"}
		if got := ids(search(q)); len(got) != 0 {
			t.Errorf("session other: got %v, want none", got)
		}
		q = text("billing")
		q.Since = tx1.Time.Add(time.Millisecond)
		if got := ids(search(q)); len(got) != 0 {
			t.Errorf("since after the write: got %v, want none", got)
		}
		q.Since, q.Until = tx1.Time, tx1.Time.Add(time.Millisecond)
		if got := ids(search(q)); len(got) != 2 {
			t.Errorf("within the write's millisecond: got %v, want 2", got)
		}
		q.Limit = 1
		if got := ids(search(q)); len(got) != 1 {
			t.Errorf("limit 1: got %v", got)
		}
	})

	t.Run("ranking", func(t *testing.T) {
		put(
			store.Doc{store.IDKey: id("r1"), "type": "note", "content": tag + " kumquat one mention among other words here today"},
			store.Doc{store.IDKey: id("r2"), "type": "note", "content": tag + " kumquat kumquat kumquat kumquat words here today"},
		)
		if got := ids(search(text("kumquat"))); len(got) != 2 || got[0] != "r2" {
			t.Errorf("ranking: got %v, want r2 (four mentions) first", got)
		}
	})

	t.Run("versions and basis", func(t *testing.T) {
		tx := put(store.Doc{store.IDKey: id("n1"), "type": "note", "title": "Deploy checklist",
			"content": tag + " The rollout now waits for the quarterly audit."})
		if got := ids(search(text("migration"))); len(got) != 0 {
			t.Errorf("replaced text still found at the latest basis: %v", got)
		}
		if got := ids(search(text("audit"))); len(got) != 1 {
			t.Errorf("new text: got %v", got)
		}
		q := text("migration")
		q.Basis = store.AtTx(tx1.ID, time.Time{})
		if got := ids(search(q)); len(got) != 1 || got[0] != "n1" {
			t.Errorf("as of tx %d: got %v, want [n1]", tx1.ID, got)
		}
		q = text("audit")
		q.Basis = store.AtTx(tx1.ID, time.Time{})
		if got := ids(search(q)); len(got) != 0 {
			t.Errorf("later text as of an earlier tx: %v", got)
		}
		_ = tx
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Delete(id("f1"))}); err != nil {
			t.Fatal(err)
		}
		if got := ids(search(text("charge"))); len(got) != 0 {
			t.Errorf("deleted file still found: %v", got)
		}
		q = text("charge")
		q.Basis = store.AtTx(tx1.ID, time.Time{})
		if got := ids(search(q)); len(got) != 1 {
			t.Errorf("deleted file as of before the delete: %v", got)
		}
	})

	t.Run("evict", func(t *testing.T) {
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Evict(id("t1"))}); err != nil {
			t.Fatal(err)
		}
		if got := ids(search(text("invoice"))); len(got) != 0 {
			t.Errorf("evicted toolcall found: %v", got)
		}
		q := text("invoice")
		q.Basis = store.AtTx(tx1.ID, time.Time{})
		if got := ids(search(q)); len(got) != 0 {
			t.Errorf("evicted toolcall found as of a past basis: %v", got)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		for _, q := range []string{"", "   ", "*** ..."} {
			if _, err := s.Search(ctx, store.SearchQuery{Text: q}); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("text %q: err %v, want ErrInvalid", q, err)
			}
		}
		// FTS syntax is taken literally.
		if _, err := s.Search(ctx, store.SearchQuery{Text: tag + ` AND OR NOT ( ) : ^ -x "unclosed`}); err != nil {
			t.Errorf("query syntax characters: %v", err)
		}
	})
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
