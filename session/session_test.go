package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

func TestMain(m *testing.M) { storetestenv.Main(m) }

func TestCreateUpdateResume(t *testing.T) {
	storetestenv.RunParallel(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		st := e.Store
		id := e.ID("s1")
		chatID, spID := objects.ChatObjectID(id), objects.SystemPromptObjectID(id)
		s, err := Create(ctx, st, id, CreateOptions{SystemPrompt: "be brief", Harness: "pi"})
		if err != nil {
			t.Fatal(err)
		}
		st0 := s.State()
		for _, id := range []string{chatID, spID} {
			if !st0.IsActive(id) || !st0.InPool(id) || !st0.Indexed(id) {
				t.Fatalf("%s not active from the start: %+v", id, st0)
			}
		}
		if _, err := Create(ctx, st, id, CreateOptions{}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("second Create: %v", err)
		}
		doc, err := st.Entity(ctx, spID, store.Basis{})
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
		if err := cur.Deactivate(chatID); !errors.Is(err, ErrLocked) {
			t.Fatalf("deactivating the chat: %v", err)
		}
		if _, _, err := s.Update(ctx, nil, func(st *State) error { return st.Deactivate(spID) }); !errors.Is(err, ErrLocked) {
			t.Fatalf("deactivating the system prompt: %v", err)
		}
		hist, err := st.History(ctx, objects.SessionObjectID(id), store.HistoryOptions{Order: store.Asc, WithCorrections: true})
		if err != nil || len(hist) != 2 || hist[1].TxID != tx1 {
			t.Fatalf("history: %+v %v", hist, err)
		}

		// Resume in a "new process": a new store handle on the same database.
		st2 := e.Reopen()
		r, err := Open(ctx, st2, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.State(), s.State()) {
			t.Fatalf("resumed state differs:\n%+v\n%+v", r.State(), s.State())
		}
		if r.Info() != s.Info() || r.Tx() != tx1 {
			t.Fatalf("resumed info %+v tx %d", r.Info(), r.Tx())
		}
		if _, err := Open(ctx, st2, e.ID("nope")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("open missing: %v", err)
		}
	})
}

func TestConcurrentWritersConflict(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := e.ID("s")
		a, err := Create(ctx, e.Store, id, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(ctx, e.Reopen(), id)
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
		final, err := Open(ctx, e.Store, id)
		if err != nil {
			t.Fatal(err)
		}
		if s := final.State(); !s.InPool("x") || !s.InPool("y") {
			t.Fatalf("an update was lost: %+v", s.Pool)
		}
	})
}

func TestSessionsIsolatedShareObjects(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		st := e.Store
		f, err := objects.NewFile(objects.FilesystemSource{FilesystemID: "fs", Path: "/" + e.ID("a") + ".txt"}, new("hi"), []byte("hi"))
		if err != nil {
			t.Fatal(err)
		}
		fdoc, _ := f.Doc()
		one, two := e.ID("one"), e.ID("two")
		s1, err := Create(ctx, st, one, CreateOptions{SystemPrompt: "p1"})
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Create(ctx, st, two, CreateOptions{SystemPrompt: "p2"})
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
		r1, _ := Open(ctx, st, one)
		r2, _ := Open(ctx, st, two)
		if !r1.State().IsActive(f.ID()) || r2.State().IsActive(f.ID()) || !r2.State().InPool(f.ID()) {
			t.Fatalf("sets leaked: %+v / %+v", r1.State(), r2.State())
		}
		if r1.State().InPool(objects.ChatObjectID(two)) || r2.State().InPool(objects.ChatObjectID(one)) {
			t.Fatal("chats leaked between sessions")
		}
		ids, err := List(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		// The XTDB database is shared by every test of the process.
		ids = slices.DeleteFunc(ids, func(id string) bool { return id != one && id != two })
		if !reflect.DeepEqual(ids, []string{one, two}) {
			t.Fatalf("List: %v", ids)
		}
	})
}

func TestAppendTurns(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := e.ID("c")
		s, err := Create(ctx, e.Store, id, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		chat, _, err := s.AppendTurns(ctx, objects.Turn{User: "hi", ToolcallIDs: []string{"toolu_1"}})
		if err != nil {
			t.Fatal(err)
		}
		if chat.Chat.TurnCount != 1 || chat.Chat.SessionRef != objects.SessionObjectID(id) {
			t.Fatalf("chat head: %+v", chat.Chat)
		}
		if got, err := s.Chat(ctx); err != nil || !reflect.DeepEqual(got.Chat.ToolcallRefs, []string{"toolu_1"}) || len(got.Chat.Turns) != 1 {
			t.Fatalf("chat after one append: %+v %v", got, err)
		}
		if _, _, err := s.AppendTurns(ctx, objects.Turn{User: "more"}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Chat(ctx)
		if err != nil || got.Chat.TurnCount != 2 || len(got.Chat.Turns) != 2 || got.Chat.Turns[1].User != "more" {
			t.Fatalf("chat after two appends: %+v %v", got, err)
		}
	})
}

// withChunkSize runs the rest of the test with a small chunk size for new
// sessions, so that a few entries fill chunks.
func withChunkSize(t *testing.T, n int) {
	old := chunkSize
	chunkSize = n
	t.Cleanup(func() { chunkSize = old })
}

// TestChunks drives a session through appends that fill chunks, removals
// that shrink lists, in-place changes of old entries and pins, and checks
// after every change that a new store handle reads back the same state,
// that every change is a version of the session object, that past states
// are readable as of their transaction, and what each change writes.
func TestChunks(t *testing.T) {
	withChunkSize(t, 4)
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		cs := &countingStore{Store: e.Store}
		id := e.ID("chunky")
		s, err := Create(ctx, cs, id, CreateOptions{SystemPrompt: "p"})
		if err != nil {
			t.Fatal(err)
		}
		other := e.Reopen()
		type past struct {
			tx    int64
			state State
		}
		var versions []past
		step := func(name string, wantPuts int, fn func(*State) error) {
			t.Helper()
			before := cs.puts
			tx, written, err := s.Update(ctx, nil, fn)
			if err != nil || !written {
				t.Fatalf("%s: %v %v", name, written, err)
			}
			if got := cs.puts - before; wantPuts >= 0 && got != int64(wantPuts) {
				t.Errorf("%s: %d documents put, want %d", name, got, wantPuts)
			}
			r, err := Open(ctx, other, id)
			if err != nil {
				t.Fatalf("%s: open: %v", name, err)
			}
			if !reflect.DeepEqual(r.State(), s.State()) || r.Tx() != tx {
				t.Fatalf("%s: reopened state differs:\n%+v\n%+v", name, r.State(), s.State())
			}
			versions = append(versions, past{tx, s.State()})
		}
		// 2 entries (chat, system prompt) + 2 = a full chunk of 4 in
		// index, pool and active: the head and three chunks.
		step("fill first chunks", 4, func(s *State) error {
			s.Activate("a")
			s.Activate("b")
			return nil
		})
		// Appends within the tails write the head alone.
		step("append in tail", 1, func(s *State) error { s.AddToPool("c"); return nil })
		step("append in tail again", 1, func(s *State) error { s.AddToIndex("seen"); return nil })
		for i := 0; i < 9; i++ {
			step(fmt.Sprintf("toolcall %d", i), -1, func(s *State) error {
				id := fmt.Sprintf("toolu_%d", i)
				s.AddToolcall(id, i%3 == 0)
				s.Activate(id)
				return nil
			})
		}
		// Touching the first toolcall rewrites its chunk and the head only.
		step("touch old toolcall", 2, func(s *State) error {
			s.Turn++
			if !s.TouchToolcall("toolu_0") {
				return errors.New("toolu_0 not recorded")
			}
			return nil
		})
		// Removing an early active entry shifts every active chunk; the
		// chunk that no longer exists is deleted.
		step("deactivate early", -1, func(s *State) error { return s.Deactivate("a") })
		step("deactivate many", -1, func(s *State) error {
			for _, id := range []string{"b", "toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"} {
				if err := s.Deactivate(id); err != nil {
					return err
				}
			}
			return nil
		})
		step("pin", -1, func(s *State) error {
			for _, id := range []string{"c", "a", "b", "toolu_7"} {
				s.Pin(id)
			}
			return nil
		})
		step("unpin", -1, func(s *State) error { s.Unpin("a"); return nil })
		// An update that changes nothing writes nothing.
		if _, written, err := s.Update(ctx, nil, func(s *State) error { s.Pin("c"); return nil }); err != nil || written {
			t.Fatalf("no-op update: %v %v", written, err)
		}

		// With corrections: two updates in the same millisecond share a
		// valid time, and the later one is a correction of the earlier.
		hist, err := e.Store.History(ctx, objects.SessionObjectID(id), store.HistoryOptions{Order: store.Asc, WithCorrections: true})
		if err != nil || len(hist) != len(versions)+1 {
			t.Fatalf("history has %d versions, want %d: %v", len(hist), len(versions)+1, err)
		}
		for i, v := range versions {
			_, got, err := ReadState(ctx, other, id, store.AtTx(v.tx, time.Time{}))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, v.state) {
				t.Fatalf("version %d as of tx %d:\n%+v\nwant\n%+v", i, v.tx, got, v.state)
			}
		}
		if st := s.State(); len(st.Toolcalls) != 9 || len(st.Index) != 15 || len(st.Active) < 4 {
			t.Fatalf("final state: %+v", st)
		}
	})
}

// TestLegacyHead opens a session stored in the old single-document form
// and moves it to chunks on its first change.
func TestLegacyHead(t *testing.T) {
	withChunkSize(t, 2)
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := e.ID("old")
		o, err := objects.NewSession(id, map[string]any{
			"session_id": id, "chat_ref": objects.ChatObjectID(id), "system_prompt_ref": objects.SystemPromptObjectID(id),
			"session_index": []any{"x", "y", "z"}, "metadata_pool": []any{"x", "y", "z"}, "active_set": []any{"x", "z"},
			"pinned_set": []any{}, "turn": 3, "seq": 1, "toolcalls": []any{map[string]any{"id": "z", "turn": 3, "seq": 1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := o.Doc()
		if _, err := store.SubmitWait(ctx, e.Store, []store.Op{store.Put(doc)}); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, e.Store, id)
		if err != nil {
			t.Fatal(err)
		}
		want := State{Index: []string{"x", "y", "z"}, Pool: []string{"x", "y", "z"}, Active: []string{"x", "z"},
			Turn: 3, Seq: 1, Toolcalls: []Toolcall{{ID: "z", Turn: 3, Seq: 1}}}
		if !reflect.DeepEqual(s.State(), want) {
			t.Fatalf("old form read as %+v", s.State())
		}
		if _, _, err := s.Update(ctx, nil, func(s *State) error { s.Activate("w"); return nil }); err != nil {
			t.Fatal(err)
		}
		want.Index, want.Pool, want.Active = append(want.Index, "w"), append(want.Pool, "w"), append(want.Active, "w")
		r, err := Open(ctx, e.Reopen(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.State(), want) {
			t.Fatalf("after the first change: %+v", r.State())
		}
		head, err := e.Store.Entity(ctx, objects.SessionObjectID(id), store.Basis{})
		if err != nil || head["metadata_pool"] != nil || head["chunk_size"] == nil {
			t.Fatalf("head after the change is not in the chunked form: %v %v", head, err)
		}
	})
}

// TestChunkMissing: a head naming a chunk the store lacks is an error, not
// a shorter state.
func TestChunkMissing(t *testing.T) {
	withChunkSize(t, 2)
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := e.ID("torn")
		s, err := Create(ctx, e.Store, id, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Update(ctx, nil, func(s *State) error { s.AddToPool("x"); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := store.SubmitWait(ctx, e.Store, []store.Op{store.Evict(chunkID(id, listPool, 0))}); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, e.Store, id); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("open with a chunk evicted: %v", err)
		}
	})
}

// TestFailedUpdateLeavesState: Update hands its function a draft that
// shares the long lists' arrays with the session's state; a
// function that fails, or a write that conflicts, after appending to
// them and changing old toolcalls in place leaves the state as it was,
// and the next update writes what it changed (read back from the store).
func TestFailedUpdateLeavesState(t *testing.T) {
	withChunkSize(t, 4)
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		id := e.ID("draft")
		s, err := Create(ctx, e.Store, id, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Update(ctx, nil, func(st *State) error {
			for i := range 10 {
				st.AddToolcall(fmt.Sprintf("c%d", i), false)
				st.Activate(fmt.Sprintf("c%d", i))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		before := s.State()
		change := func(st *State) {
			st.TouchToolcall("c1")
			st.SetToolcallTokens("c2", 99)
			st.AddToolcall("c10", false)
			st.AddToPool("x")
			_ = st.Deactivate("c3")
		}
		boom := errors.New("boom")
		if _, _, err := s.Update(ctx, nil, func(st *State) error { change(st); return boom }); !errors.Is(err, boom) {
			t.Fatalf("failing function: %v", err)
		}
		if got := s.State(); !reflect.DeepEqual(got, before) {
			t.Fatalf("a failed function changed the state:\n%+v\nwant\n%+v", got, before)
		}
		other, err := Open(ctx, e.Reopen(), id)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := other.Update(ctx, nil, func(st *State) error { st.AddToPool("y"); return nil }); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Update(ctx, nil, func(st *State) error { change(st); return nil }); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale writer: %v", err)
		}
		if got := s.State(); !reflect.DeepEqual(got, before) {
			t.Fatalf("a conflicting write changed the state:\n%+v\nwant\n%+v", got, before)
		}
		if err := s.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Update(ctx, nil, func(st *State) error { change(st); return nil }); err != nil {
			t.Fatal(err)
		}
		want := s.State()
		if want.Toolcalls[1].Seq <= before.Toolcalls[9].Seq || want.Toolcalls[2].Tokens != 99 || want.IsActive("c3") || len(want.Toolcalls) != 11 {
			t.Fatalf("the change is not in the state: %+v", want)
		}
		back, err := Open(ctx, e.Reopen(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.State(); !reflect.DeepEqual(got, want) {
			t.Fatalf("read back:\n%+v\nwant\n%+v", got, want)
		}
	})
}
