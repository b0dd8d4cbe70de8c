package session

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

func openDB(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := bitemporal.Open(context.Background(), path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestCreateUpdateResume(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openDB(t, path)
	s, err := Create(ctx, st, "s1", CreateOptions{SystemPrompt: "be brief", Harness: "pi"})
	if err != nil {
		t.Fatal(err)
	}
	st0 := s.State()
	for _, id := range []string{"chat:s1", "system_prompt:s1"} {
		if !st0.IsActive(id) || !st0.InPool(id) || !st0.Indexed(id) {
			t.Fatalf("%s not active from the start: %+v", id, st0)
		}
	}
	if _, err := Create(ctx, st, "s1", CreateOptions{}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second Create: %v", err)
	}
	doc, err := st.Entity(ctx, "system_prompt:s1", store.Basis{})
	if err != nil || doc["content"] != "be brief" {
		t.Fatalf("system prompt: %v %v", doc, err)
	}

	// Every change is a new version; no change writes nothing.
	tx1, written, err := s.Update(ctx, nil, func(st *State) error {
		st.Activate("toolu_1")
		st.AddToPool("file1")
		st.Pin("file1")
		st.AddToIndex("seen-only")
		st.Turn = 2
		st.AddToolcall("toolu_1", false)
		return nil
	})
	if err != nil || !written {
		t.Fatalf("update: %v %v", written, err)
	}
	if _, written, err := s.Update(ctx, nil, func(st *State) error { st.Activate("toolu_1"); return nil }); err != nil || written {
		t.Fatalf("no-op update wrote: %v %v", written, err)
	}
	cur := s.State()
	if err := cur.Deactivate("chat:s1"); !errors.Is(err, ErrLocked) {
		t.Fatalf("deactivating the chat: %v", err)
	}
	if _, _, err := s.Update(ctx, nil, func(st *State) error { return st.Deactivate("system_prompt:s1") }); !errors.Is(err, ErrLocked) {
		t.Fatalf("deactivating the system prompt: %v", err)
	}
	hist, err := st.History(ctx, "session:s1", store.HistoryOptions{Order: store.Asc})
	if err != nil || len(hist) != 2 || hist[1].TxID != tx1 {
		t.Fatalf("history: %+v %v", hist, err)
	}

	// Resume in a "new process": a new store handle on the same file.
	st2 := openDB(t, path)
	r, err := Open(ctx, st2, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.State(), s.State()) {
		t.Fatalf("resumed state differs:\n%+v\n%+v", r.State(), s.State())
	}
	if r.Info() != s.Info() || r.Tx() != tx1 {
		t.Fatalf("resumed info %+v tx %d", r.Info(), r.Tx())
	}
	if _, err := Open(ctx, st2, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("open missing: %v", err)
	}
}

func TestConcurrentWritersConflict(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openDB(t, path)
	a, err := Create(ctx, st, "s", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, openDB(t, path), "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Update(ctx, nil, func(s *State) error { s.AddToPool("x"); return nil }); err != nil {
		t.Fatal(err)
	}
	// b read the version before a's write: its write must not win silently.
	_, _, err = b.Update(ctx, nil, func(s *State) error { s.AddToPool("y"); return nil })
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale writer: %v", err)
	}
	if b.State().InPool("y") {
		t.Fatal("failed update changed the in-memory state")
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Update(ctx, nil, func(s *State) error { s.AddToPool("y"); return nil }); err != nil {
		t.Fatal(err)
	}
	final, err := Open(ctx, st, "s")
	if err != nil {
		t.Fatal(err)
	}
	if s := final.State(); !s.InPool("x") || !s.InPool("y") {
		t.Fatalf("an update was lost: %+v", s.Pool)
	}
}

func TestSessionsIsolatedShareObjects(t *testing.T) {
	ctx := context.Background()
	st := openDB(t, filepath.Join(t.TempDir(), "s.db"))
	f, err := objects.NewFile(objects.FilesystemSource{FilesystemID: "fs", Path: "/a.txt"}, objects.Str("hi"), []byte("hi"))
	if err != nil {
		t.Fatal(err)
	}
	fdoc, _ := f.Doc()
	s1, err := Create(ctx, st, "one", CreateOptions{SystemPrompt: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Create(ctx, st, "two", CreateOptions{SystemPrompt: "p2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s1.Update(ctx, []store.Op{store.Put(fdoc)}, func(s *State) error { s.Activate(f.ID()); return nil }); err != nil {
		t.Fatal(err)
	}
	if s2.State().Indexed(f.ID()) {
		t.Fatal("session two sees session one's pool")
	}
	if _, _, err := s2.Update(ctx, nil, func(s *State) error { s.AddToPool(f.ID()); return nil }); err != nil {
		t.Fatal(err)
	}
	r1, _ := Open(ctx, st, "one")
	r2, _ := Open(ctx, st, "two")
	if !r1.State().IsActive(f.ID()) || r2.State().IsActive(f.ID()) || !r2.State().InPool(f.ID()) {
		t.Fatalf("sets leaked: %+v / %+v", r1.State(), r2.State())
	}
	if r1.State().InPool("chat:two") || r2.State().InPool("chat:one") {
		t.Fatal("chats leaked between sessions")
	}
	ids, err := List(ctx, st)
	if err != nil || !reflect.DeepEqual(ids, []string{"one", "two"}) {
		t.Fatalf("List: %v %v", ids, err)
	}
}

func TestAppendTurns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st := openDB(t, path)
	s, err := Create(ctx, st, "c", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chat, _, err := s.AppendTurns(ctx, objects.Turn{User: "hi", ToolcallIDs: []string{"toolu_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if chat.Chat.TurnCount != 1 || !reflect.DeepEqual(chat.Chat.ToolcallRefs, []string{"toolu_1"}) || chat.Chat.SessionRef != "session:c" {
		t.Fatalf("chat: %+v", chat.Chat)
	}
	if _, _, err := s.AppendTurns(ctx, objects.Turn{User: "more"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Chat(ctx)
	if err != nil || got.Chat.TurnCount != 2 {
		t.Fatalf("chat after two appends: %+v %v", got, err)
	}
}
