package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/internal/storetestenv"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// chatTurn is turn i of the tests' chats: a user message, assistant blocks
// (text and a tool call), toolcall ids, metadata with numbers, and an extra
// member, so every part of the Turn structure round-trips.
func chatTurn(i int) objects.Turn {
	return objects.Turn{
		User: fmt.Sprintf("question %d %s", i, strings.Repeat("x", 200)),
		Assistant: []map[string]any{
			{"type": "text", "text": fmt.Sprintf("answer %d", i)},
			{"type": "toolCall", "id": fmt.Sprintf("toolu_%d", i), "name": "bash", "arguments": map[string]any{"command": "ls"}},
		},
		ToolcallIDs:   []string{fmt.Sprintf("toolu_%d", i)},
		AssistantMeta: map[string]any{"model": "m", "usage": map[string]any{"input": int64(100 + i)}},
		Extra:         map[string]any{"note": "kept"},
	}
}

// wantChat checks that chat holds exactly turns 0..n-1 of chatTurn.
func wantChat(t *testing.T, what string, chat *objects.Object, sid string, n int) {
	t.Helper()
	var turns []objects.Turn
	for i := 0; i < n; i++ {
		turns = append(turns, chatTurn(i))
	}
	want := objects.ChatFieldsFromTurns(sid, turns)
	gotDoc, err := chat.Doc()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	o := chat.Clone()
	o.Chat = want
	wantDoc, err := o.Doc()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	g, _ := store.Canonical(gotDoc)
	w, _ := store.Canonical(wantDoc)
	if string(g) != string(w) {
		t.Fatalf("%s:\ngot  %.400s\nwant %.400s", what, g, w)
	}
	if chat.Extra[fieldTurnsIn] != nil {
		t.Fatalf("%s: the view carries the head's marker", what)
	}
}

// TestChatTurnDocuments appends turns one and three at a time and checks
// that every append writes the new turns' documents and a head whose size
// does not grow with the chat, that the chat reads back whole from a new
// store handle, and that every past version reads back as of its
// transaction (ReadChat and ExpandChat at past bases).
func TestChatTurnDocuments(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sid := e.ID("chat")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		txs := map[int]int64{0: s.Tx()} // turn count -> tx that wrote it
		var headSizes []int
		n := 0
		for step := 0; step < 10; step++ { // 20 turns: ReadTurns below reads by query and by point reads
			k := 1 + 2*(step%2)
			var turns []objects.Turn
			for i := 0; i < k; i++ {
				turns = append(turns, chatTurn(n+i))
			}
			head, tx, err := s.AppendTurns(ctx, turns...)
			if err != nil {
				t.Fatal(err)
			}
			n += k
			txs[n] = tx
			if head.Chat.TurnCount != int64(n) || len(head.Chat.Turns) != 0 {
				t.Fatalf("head after %d turns: %+v", n, head.Chat)
			}
			doc, err := e.Store.Entity(ctx, objects.ChatObjectID(sid), store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := store.Canonical(doc)
			headSizes = append(headSizes, len(c))
			for i := n - k; i < n; i++ {
				td, err := e.Store.Entity(ctx, turnDocID(sid, i), store.Basis{})
				if err != nil || td["type"] != turnType || td[fieldSessionID] != sid {
					t.Fatalf("turn document %d: %v %v", i, td, err)
				}
			}
		}
		if first, last := headSizes[0], headSizes[len(headSizes)-1]; last > first+4 {
			t.Fatalf("the head grows with the chat: %v bytes", headSizes)
		}
		st := e.Reopen()
		chat, err := ReadChat(ctx, st, sid, store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		wantChat(t, "latest, new handle", chat, sid, n)
		for count, tx := range txs {
			b := store.AtTx(tx, timeZero)
			old, err := ReadChat(ctx, st, sid, b)
			if err != nil {
				t.Fatal(err)
			}
			wantChat(t, fmt.Sprintf("as of tx %d", tx), old, sid, count)
		}
		// A head read at a past basis expands at that basis.
		b := store.AtTx(txs[4], timeZero)
		doc, err := st.Entity(ctx, objects.ChatObjectID(sid), b)
		if err != nil {
			t.Fatal(err)
		}
		head, err := objects.FromDoc(doc)
		if err != nil {
			t.Fatal(err)
		}
		old, err := ExpandChat(ctx, st, head, b)
		if err != nil {
			t.Fatal(err)
		}
		wantChat(t, "ExpandChat at turn 4", old, sid, 4)
		// ReadTurns reads what follows a turn.
		for _, from := range []int{0, 5, n - 1, n, n + 3} {
			got, count, err := ReadTurns(ctx, st, sid, from)
			if err != nil || count != n || len(got) != max(0, n-from) {
				t.Fatalf("ReadTurns from %d: %d turns of %d, %v", from, len(got), count, err)
			}
			for i, turn := range got {
				if turn.UserText() != chatTurn(from+i).UserText() {
					t.Fatalf("ReadTurns from %d: turn %d is %q", from, from+i, turn.UserText())
				}
			}
		}
	})
}

// TestChatMissingTurnDocument: a turn document the head counts but the
// store lacks (evicted) is an error naming it, never a shorter chat.
func TestChatMissingTurnDocument(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sid := e.ID("gap")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendTurns(ctx, chatTurn(0), chatTurn(1), chatTurn(2)); err != nil {
			t.Fatal(err)
		}
		if _, err := store.SubmitWait(ctx, e.Store, []store.Op{store.Evict(turnDocID(sid, 1))}); err != nil {
			t.Fatal(err)
		}
		_, err = s.Chat(ctx)
		if err == nil || !strings.Contains(err.Error(), turnDocID(sid, 1)) {
			t.Fatalf("chat with an evicted turn: %v", err)
		}
	})
}

// TestChatEarlierForm: a chat written whole in one document, as every
// release before the per-turn chat documents did (the code below is that AppendTurns), reads
// back as it is at every past basis; the first append converts it to turn
// documents (marked converted, which search does not index again) and past
// versions still read back as they were.
func TestChatEarlierForm(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sid := e.ID("old")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		txs := map[int]int64{0: s.Tx()}
		for n := 1; n <= 3; n++ {
			tx, err := oldAppendTurns(ctx, s, chatTurn(n-1))
			if err != nil {
				t.Fatal(err)
			}
			txs[n] = tx
		}
		doc, err := e.Store.Entity(ctx, objects.ChatObjectID(sid), store.Basis{})
		if err != nil || len(doc["turns"].([]any)) != 3 {
			t.Fatalf("the earlier form: %v %v", doc, err)
		}
		chat, err := s.Chat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantChat(t, "earlier form", chat, sid, 3)
		if got, count, err := ReadTurns(ctx, e.Store, sid, 1); err != nil || count != 3 || len(got) != 2 || got[0].UserText() != chatTurn(1).UserText() {
			t.Fatalf("ReadTurns on the earlier form: %d turns of %d, %v", len(got), count, err)
		}
		_, tx, err := s.AppendTurns(ctx, chatTurn(3))
		if err != nil {
			t.Fatal(err)
		}
		txs[4] = tx
		for i := 0; i < 4; i++ {
			td, err := e.Store.Entity(ctx, turnDocID(sid, i), store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			if conv := td["converted"] == true; conv != (i < 3) {
				t.Fatalf("turn %d converted = %v", i, td["converted"])
			}
		}
		st := e.Reopen()
		for count, tx := range txs {
			old, err := ReadChat(ctx, st, sid, store.AtTx(tx, timeZero))
			if err != nil {
				t.Fatal(err)
			}
			wantChat(t, fmt.Sprintf("as of tx %d", tx), old, sid, count)
		}
	})
}

// oldAppendTurns is AppendTurns as it was before per-turn documents: the whole chat
// rewritten, under a match on the version read.
func oldAppendTurns(ctx context.Context, s *Session, turns ...objects.Turn) (int64, error) {
	id := s.Info().ChatID
	prev, err := s.st.Entity(ctx, id, store.Basis{})
	if err != nil {
		return 0, err
	}
	cur, err := objects.FromDoc(prev)
	if err != nil {
		return 0, err
	}
	next := cur.Clone()
	next.Chat = objects.ChatFieldsFromTurns(s.id, append(append([]objects.Turn(nil), cur.Chat.Turns...), turns...))
	if err := next.Seal(); err != nil {
		return 0, err
	}
	doc, err := next.Doc()
	if err != nil {
		return 0, err
	}
	tx, err := store.SubmitWait(ctx, s.st, []store.Op{store.Match(id, prev), store.Put(doc)})
	if err != nil {
		return 0, err
	}
	return tx.ID, nil
}

// TestAppendTurnsConflict: two handles appending to one chat: the second
// append, on a head it did not read, fails with ErrConflict and writes
// nothing.
func TestAppendTurnsConflict(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sid := e.ID("race")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendTurns(ctx, chatTurn(0)); err != nil {
			t.Fatal(err)
		}
		head, err := e.Store.Entity(ctx, objects.ChatObjectID(sid), store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendTurns(ctx, chatTurn(1)); err != nil {
			t.Fatal(err)
		}
		// A write matching the stale head, as a second handle would make.
		td, err := turnDoc(sid, 1, chatTurn(9))
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.SubmitWait(ctx, e.Store, []store.Op{store.Match(objects.ChatObjectID(sid), head), store.Put(td)})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale append: %v", err)
		}
		chat, err := s.Chat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantChat(t, "after the refused append", chat, sid, 2)
	})
}

// timeZero is the zero valid time: store.AtTx reads at the tx's own time.
var timeZero time.Time

// TestChatTurnsSearchable: each turn document is its turn's search unit,
// under the chat's id, visible from the append that wrote it on; the turns
// of a chat converted from the earlier form are found once each.
func TestChatTurnsSearchable(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sr, ok := e.Store.(store.Searcher)
		if !ok {
			t.Fatalf("%s does not search", e.Backend)
		}
		sid := e.ID("find")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		word := func(i int) string { return fmt.Sprintf("zebra%dquartz", i) }
		turn := func(i int) objects.Turn {
			return objects.Turn{User: "look for " + word(i), Assistant: []map[string]any{{"type": "text", "text": "found " + word(i)}}}
		}
		if _, err := oldAppendTurns(ctx, s, turn(0)); err != nil { // the earlier form
			t.Fatal(err)
		}
		_, tx1, err := s.AppendTurns(ctx, turn(1))
		if err != nil {
			t.Fatal(err)
		}
		_, tx2, err := s.AppendTurns(ctx, turn(2))
		if err != nil {
			t.Fatal(err)
		}
		hits := func(i int, b store.Basis) []store.SearchHit {
			t.Helper()
			got, err := sr.Search(ctx, store.SearchQuery{Text: word(i), Sessions: []string{sid}, Basis: b})
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		for i := 0; i < 3; i++ {
			got := hits(i, store.Basis{})
			if len(got) != 1 || got[0].ID != objects.ChatObjectID(sid) || got[0].Turn != i || got[0].Kind != "chat" || got[0].Session != sid {
				t.Fatalf("turn %d: hits %+v", i, got)
			}
		}
		if got := hits(2, store.AtTx(tx1, timeZero)); len(got) != 0 {
			t.Fatalf("turn 2 found as of tx %d, before it was appended: %+v", tx1, got)
		}
		if got := hits(1, store.AtTx(tx2, timeZero)); len(got) != 1 {
			t.Fatalf("turn 1 as of tx %d: %+v", tx2, got)
		}
	})
}

// TestEachTurn: EachTurn gives every turn of the chat in order, a page of
// turn documents at a time (across page boundaries), as ReadChat has them,
// as of a basis too; an evicted turn is an error naming it.
func TestEachTurn(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		sid := e.ID("each")
		s, err := Create(ctx, e.Store, sid, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var turns []objects.Turn
		for i := range 2*TurnPage + 3 {
			turns = append(turns, chatTurn(i))
		}
		_, tx1, err := s.AppendTurns(ctx, turns[:TurnPage+1]...)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.AppendTurns(ctx, turns[TurnPage+1:]...); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			b    store.Basis
			n    int
		}{{"latest", store.Basis{}, len(turns)}, {"as of the first append", store.AtTx(tx1, time.Time{}), TurnPage + 1}} {
			chat, err := ReadChat(ctx, e.Store, sid, c.b)
			if err != nil {
				t.Fatal(err)
			}
			var got []objects.Turn
			err = EachTurn(ctx, e.Store, sid, c.b, func(n int, tu objects.Turn) error {
				if n != len(got) {
					t.Fatalf("%s: turn %d given as %d", c.name, len(got), n)
				}
				got = append(got, tu)
				return nil
			})
			if err != nil || len(got) != c.n || !reflect.DeepEqual(got, chat.Chat.Turns) {
				t.Errorf("%s: %d turns (%v), want the %d ReadChat reads", c.name, len(got), err, c.n)
			}
		}
		if _, err := store.SubmitWait(ctx, e.Store, []store.Op{store.Evict(turnDocID(sid, TurnPage+5))}); err != nil {
			t.Fatal(err)
		}
		err = EachTurn(ctx, e.Store, sid, store.Basis{}, func(int, objects.Turn) error { return nil })
		if err == nil || !strings.Contains(err.Error(), turnDocID(sid, TurnPage+5)) {
			t.Errorf("an evicted turn: %v", err)
		}
	})
}

// TestEachTurnFrom: EachTurnFrom gives the turns from `from` on, numbered as
// in the chat, and the chat's turn count, in both forms of the chat; from
// at or past the end gives none (past it: the count tells the reader the
// chat is not the one it read).
func TestEachTurnFrom(t *testing.T) {
	storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
		ctx := context.Background()
		for _, form := range []string{"turn documents", "earlier form"} {
			sid := e.ID("from-" + strings.ReplaceAll(form, " ", "-"))
			s, err := Create(ctx, e.Store, sid, CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if form == "earlier form" {
					_, err = oldAppendTurns(ctx, s, chatTurn(i))
				} else {
					_, _, err = s.AppendTurns(ctx, chatTurn(i))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			chat, err := ReadChat(ctx, e.Store, sid, store.Basis{})
			if err != nil {
				t.Fatal(err)
			}
			for _, from := range []int{0, 1, 4, 5, 7} {
				var got []objects.Turn
				n, err := EachTurnFrom(ctx, e.Store, sid, store.Basis{}, from, func(i int, tu objects.Turn) error {
					if i != from+len(got) {
						t.Fatalf("%s, from %d: turn %d given as %d", form, from, from+len(got), i)
					}
					got = append(got, tu)
					return nil
				})
				want := chat.Chat.Turns[min(from, 5):]
				if err != nil || n != 5 || len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
					t.Errorf("%s, from %d: %d turns of %d (%v), want %d of 5", form, from, len(got), n, err, len(want))
				}
			}
		}
	})
}
