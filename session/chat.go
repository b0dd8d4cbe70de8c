package session

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// How a chat is stored (docs/context-manager.md, "The chat: a head
// and one document per turn").
//
// The chat object "chat:{id}" is the chat's head: a chat object
// whose "turns" and "toolcall_refs" are empty, whose "turn_count" is the
// number of turns and whose "turns_in" names the type of the documents
// holding them, "chat_turn". Turn n (from 0) is the document
// "session-chunk:{id}:turn:{n}": "type" "chat_turn", "session_id",
// "chat_ref", "n" and "turn", the turn object exactly as it appears in a
// chat's "turns". A turn document is written once, in the transaction that
// appends it (with the new head, under a match on the head read), and never
// changed, so a turn writes only what is new. The whole chat is a
// view: ReadChat reads the head at a basis and the turn
// documents below its turn_count at the same basis, so every past chat
// version reads back as it was. A chat in the earlier form (every turn in
// the chat object) is read as it is; the first append converts it.

// pointReads is the most turns ReadTurns reads one document at a time.
const pointReads = 16

// turnType is the "type" of a chat's turn documents.
const turnType = "chat_turn"

// fieldTurnsIn marks a chat head whose turns live in turn documents.
const fieldTurnsIn = "turns_in"

// turnDocID returns the id of turn n of a session's chat.
func turnDocID(sessionID string, n int) string { return chunkID(sessionID, "turn", n) }

// Chat returns the latest version of the session's chat, with every turn.
func (s *Session) Chat(ctx context.Context) (*objects.Object, error) {
	return ReadChat(ctx, s.st, s.id, store.Basis{})
}

// ReadChat reads the chat of session sessionID as of basis b, with every
// turn it had then (the view over its head and turn documents). Its hashes
// are the stored head's.
func ReadChat(ctx context.Context, st store.Store, sessionID string, b store.Basis) (*objects.Object, error) {
	doc, err := st.Entity(ctx, objects.ChatObjectID(sessionID), b)
	if err != nil {
		return nil, fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	head, err := objects.FromDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("session %s: decoding chat: %w", sessionID, err)
	}
	return ExpandChat(ctx, st, head, b)
}

// ExpandChat fills in the turns of a chat version read at basis b (as a
// static reference resolves it): a head in the turn-document form gets its
// turns from the documents visible at b; a chat in the earlier form is
// returned as it is.
func ExpandChat(ctx context.Context, st store.Store, head *objects.Object, b store.Basis) (*objects.Object, error) {
	if head.Kind() != objects.KindChat || head.Extra[fieldTurnsIn] != turnType {
		return head, nil
	}
	sid, _, err := chatSession(head)
	if err != nil {
		return nil, err
	}
	turns, err := readTurns(ctx, st, sid, int(head.Chat.TurnCount), b)
	if err != nil {
		return nil, err
	}
	out := head.Clone()
	out.Chat = objects.ChatFieldsFromTurns(sid, turns)
	out.Extra = maps.Clone(head.Extra)
	delete(out.Extra, fieldTurnsIn)
	if len(out.Extra) == 0 {
		out.Extra = nil
	}
	return out, nil
}

// chatSession returns the session id of a chat object and whether it is
// in the turn-document form.
func chatSession(o *objects.Object) (string, bool, error) {
	_, sid, ok := objects.SessionIDOf(o.ID())
	if !ok {
		return "", false, fmt.Errorf("chat %s: not a session's chat id", o.ID())
	}
	return sid, o.Extra[fieldTurnsIn] == turnType, nil
}

// readTurns reads turns [0, n) of a session's chat at basis b, in one query.
func readTurns(ctx context.Context, st store.Store, sessionID string, n int, b store.Basis) ([]objects.Turn, error) {
	return readTurnRange(ctx, st, sessionID, 0, n, b)
}

// readTurnRange reads turns [lo, hi) of a session's chat at basis b, in one
// query.
func readTurnRange(ctx context.Context, st store.Store, sessionID string, lo, hi int, b store.Basis) ([]objects.Turn, error) {
	if hi <= lo {
		return nil, nil
	}
	where := []store.Pred{store.Where("type", turnType), store.Where(fieldSessionID, sessionID),
		{Field: "n", Op: store.Lt, Value: int64(hi)}}
	if lo > 0 {
		where = append(where, store.Pred{Field: "n", Op: store.Gte, Value: int64(lo)})
	}
	docs, err := st.Query(ctx, store.Query{Where: where, Find: []string{"n", "turn"}, Basis: b})
	if err != nil {
		return nil, fmt.Errorf("session %s: reading the chat's turns: %w", sessionID, err)
	}
	turns := make([]objects.Turn, hi-lo)
	seen := make([]bool, hi-lo)
	for _, d := range docs {
		f, ok := store.Num(d["n"])
		i := int(f) - lo
		if !ok || i < 0 || i >= len(turns) || seen[i] {
			return nil, fmt.Errorf("session %s: turn document %v: bad or repeated turn number", sessionID, d[store.IDKey])
		}
		t, err := objects.TurnFromDoc(d["turn"])
		if err != nil {
			return nil, fmt.Errorf("session %s: turn document %v: %w", sessionID, d[store.IDKey], err)
		}
		turns[i], seen[i] = t, true
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("session %s: %s: missing (the chat has %d turns)", sessionID, turnDocID(sessionID, lo+i), hi)
		}
	}
	return turns, nil
}

// TurnPage is the size of the chat that EachTurn's tests read across (it
// read TurnPage turn documents at a time before it read them one by one).
const TurnPage = 256

// EachTurn calls fn with every turn of session sessionID's chat as of basis
// b, in order, reading one turn document at a time: a reader that keeps
// only part of each turn (the texts recall indexes) holds one turn at a
// time, not the whole chat (a server's memory must not grow with its
// sessions' length).
func EachTurn(ctx context.Context, st store.Store, sessionID string, b store.Basis, fn func(n int, t objects.Turn) error) error {
	_, err := EachTurnFrom(ctx, st, sessionID, b, 0, fn)
	return err
}

// EachTurnFrom is EachTurn from turn from on: it calls fn with turns
// from, from+1, … of the chat as of basis b, one document at a time, and
// returns the chat's turn count, so that a reader that has seen the first
// from turns reads only the new ones (recall's index runs). A
// count below from means the chat is not the one that reader saw (fn is
// not called); the reader starts again from 0.
func EachTurnFrom(ctx context.Context, st store.Store, sessionID string, b store.Basis, from int, fn func(n int, t objects.Turn) error) (int, error) {
	from = max(0, from)
	doc, err := st.Entity(ctx, objects.ChatObjectID(sessionID), b)
	if err != nil {
		return 0, fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	head, err := objects.FromDoc(doc)
	if err != nil {
		return 0, fmt.Errorf("session %s: decoding chat: %w", sessionID, err)
	}
	if head.Kind() != objects.KindChat || head.Extra[fieldTurnsIn] != turnType {
		n := len(head.Chat.Turns)
		for i := from; i < n; i++ {
			if err := fn(i, head.Chat.Turns[i]); err != nil {
				return n, err
			}
		}
		return n, nil
	}
	// One point read per turn: a range query's candidate sets (every
	// document of the session, every chat turn of the store) grow with
	// the store, and with them the memory and time of each page (issue
	// 18); a point read's do not. Without a transaction in b, the reads
	// are pinned to the head's.
	n := int(head.Chat.TurnCount)
	if from >= n {
		return n, nil
	}
	if b.TxID == nil && b.TxTime == nil {
		et, err := st.EntityTx(ctx, objects.ChatObjectID(sessionID), b)
		if err != nil {
			return 0, fmt.Errorf("session %s: chat: %w", sessionID, err)
		}
		b = store.AtTx(et.TxID, b.ValidTime)
	}
	for i := from; i < n; i++ {
		d, err := st.Entity(ctx, turnDocID(sessionID, i), b)
		if errors.Is(err, store.ErrNotFound) {
			return n, fmt.Errorf("session %s: %s: missing (the chat has %d turns)", sessionID, turnDocID(sessionID, i), n)
		}
		if err != nil {
			return n, fmt.Errorf("session %s: reading the chat's turns: %w", sessionID, err)
		}
		t, err := objects.TurnFromDoc(d["turn"])
		if err != nil {
			return n, fmt.Errorf("session %s: turn document %v: %w", sessionID, d[store.IDKey], err)
		}
		if err := fn(i, t); err != nil {
			return n, err
		}
	}
	return n, nil
}

// turnDoc builds the document of turn n of a session's chat.
func turnDoc(sessionID string, n int, t objects.Turn) (store.Doc, error) {
	td, err := t.Doc()
	if err != nil {
		return nil, fmt.Errorf("session %s: turn %d: %w", sessionID, n, err)
	}
	return store.Doc{
		store.IDKey:    turnDocID(sessionID, n),
		"type":         turnType,
		fieldSessionID: sessionID,
		"chat_ref":     objects.ChatObjectID(sessionID),
		"n":            int64(n),
		"turn":         td,
	}, nil
}

// AppendTurns appends turns to the session's chat: it writes one document
// per new turn and a new version of the chat head (turn_count follows),
// guarded by a match on the head version it read, so a concurrent append
// makes it fail with an error wrapping store.ErrConflict instead of losing
// either. What it writes does not grow with the chat, except once: a chat
// still in the earlier single-document form is converted by its first
// append (every earlier turn gets its document). It is the hook the
// harness ingestion uses; it returns the chat (the head
// written, without the turns) and its transaction.
func (s *Session) AppendTurns(ctx context.Context, turns ...objects.Turn) (*objects.Object, int64, error) {
	if len(turns) == 0 {
		return nil, 0, errors.New("session: no turns to append")
	}
	id := s.Info().ChatID
	prev, err := s.st.Entity(ctx, id, store.Basis{})
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	cur, err := objects.FromDoc(prev)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: decoding chat: %w", s.id, err)
	}
	ops := []store.Op{store.Match(id, prev)}
	base := int(cur.Chat.TurnCount)
	if cur.Extra[fieldTurnsIn] != turnType {
		// The earlier form: its turns get their documents now.
		turns = append(append([]objects.Turn(nil), cur.Chat.Turns...), turns...)
		base = 0
	}
	for i, t := range turns {
		d, err := turnDoc(s.id, base+i, t)
		if err != nil {
			return nil, 0, err
		}
		if base == 0 && i < len(cur.Chat.Turns) && cur.Extra[fieldTurnsIn] != turnType {
			// Indexed for search from the chat versions that held it.
			d["converted"] = true
		}
		ops = append(ops, store.Put(d))
	}
	next := cur.Clone()
	next.Chat = objects.ChatFields{SessionRef: objects.SessionObjectID(s.id), TurnCount: int64(base + len(turns))}
	next.Extra = maps.Clone(cur.Extra)
	if next.Extra == nil {
		next.Extra = map[string]any{}
	}
	next.Extra[fieldTurnsIn] = turnType
	if err := next.Seal(); err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	doc, err := next.Doc()
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	// The head goes last: search (bitemporal) takes a turn as visible once
	// the visible head's document is at least as new as the turn's.
	ops = append(ops, store.Put(doc))
	tx, err := store.SubmitWait(ctx, s.st, ops)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: appending to the chat: %w", s.id, err)
	}
	return next, tx.ID, nil
}

// ChatViewDoc returns doc, a document read at basis b, as readers of
// whole objects should see it: a chat head in the turn-document form
// becomes the chat with every turn (ExpandChat's view, as a document);
// every other document is returned as it is.
func ChatViewDoc(ctx context.Context, st store.Store, doc store.Doc, b store.Basis) (store.Doc, error) {
	if doc["type"] != string(objects.KindChat) || doc[fieldTurnsIn] != turnType {
		return doc, nil
	}
	head, err := objects.FromDoc(doc)
	if err != nil {
		return nil, err
	}
	view, err := ExpandChat(ctx, st, head, b)
	if err != nil {
		return nil, err
	}
	return view.Doc()
}

// ReadTurns reads the turns of session sessionID's latest chat from turn
// from on, and the chat's turn count: what a reader that has seen the
// first from turns needs, read in proportion to what is new (one point
// read of the head and one query of the turn documents from from on; a
// chat in the earlier form is read whole).
func ReadTurns(ctx context.Context, st store.Store, sessionID string, from int) ([]objects.Turn, int, error) {
	id := objects.ChatObjectID(sessionID)
	et, err := st.EntityTx(ctx, id, store.Basis{})
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	b := store.AtTx(et.TxID, et.ValidTime)
	doc, err := st.Entity(ctx, id, b)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	head, err := objects.FromDoc(doc)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: decoding chat: %w", sessionID, err)
	}
	n := int(head.Chat.TurnCount)
	from = max(0, from)
	if head.Extra[fieldTurnsIn] != turnType {
		if from >= len(head.Chat.Turns) {
			return nil, len(head.Chat.Turns), nil
		}
		return head.Chat.Turns[from:], len(head.Chat.Turns), nil
	}
	if from >= n {
		return nil, n, nil
	}
	var docs []store.Doc
	if n-from <= pointReads {
		// A few new turns: point reads, whose cost does not depend on how
		// many documents the store holds (a query's candidate sets do).
		for i := from; i < n; i++ {
			d, err := st.Entity(ctx, turnDocID(sessionID, i), b)
			if errors.Is(err, store.ErrNotFound) {
				continue // reported as missing below
			}
			if err != nil {
				return nil, 0, fmt.Errorf("session %s: reading the chat's turns: %w", sessionID, err)
			}
			docs = append(docs, d)
		}
	} else {
		docs, err = st.Query(ctx, store.Query{
			Where: []store.Pred{store.Where("type", turnType), store.Where(fieldSessionID, sessionID),
				{Field: "n", Op: store.Gte, Value: int64(from)}, {Field: "n", Op: store.Lt, Value: int64(n)}},
			Find:  []string{"n", "turn"},
			Basis: b,
		})
		if err != nil {
			return nil, 0, fmt.Errorf("session %s: reading the chat's turns: %w", sessionID, err)
		}
	}
	turns := make([]objects.Turn, n-from)
	seen := make([]bool, n-from)
	for _, d := range docs {
		f, ok := store.Num(d["n"])
		i := int(f) - from
		if !ok || i < 0 || i >= len(turns) || seen[i] {
			return nil, 0, fmt.Errorf("session %s: turn document %v: bad or repeated turn number", sessionID, d[store.IDKey])
		}
		if turns[i], err = objects.TurnFromDoc(d["turn"]); err != nil {
			return nil, 0, fmt.Errorf("session %s: turn document %v: %w", sessionID, d[store.IDKey], err)
		}
		seen[i] = true
	}
	for i, ok := range seen {
		if !ok {
			return nil, 0, fmt.Errorf("session %s: %s: missing (the chat has %d turns)", sessionID, turnDocID(sessionID, from+i), n)
		}
	}
	return turns, n, nil
}
