package session

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// PutRecordedChat writes the chat of a session known only from its
// context commits (an imported or captured transcript, which has no
// session object), so that full-text search and recall read it as they
// read a served session's chat: turns from, from+1, … (each turn document
// replaced when it was there: an imported turn grows until its next
// prompt) and the chat head with turn_count from+len(turns), in one
// transaction guarded by a match on the head read. from is at most the
// stored turn count. A chat that is not in the turn-document form (a
// served session's in the earlier form) is refused.
func PutRecordedChat(ctx context.Context, st store.Store, sessionID string, from int, turns []objects.Turn) error {
	id := objects.ChatObjectID(sessionID)
	var head *objects.Object
	ops := []store.Op{}
	prev, err := st.Entity(ctx, id, store.Basis{})
	switch {
	case errors.Is(err, store.ErrNotFound):
		if head, err = objects.NewChat(sessionID, nil, nil); err != nil {
			return fmt.Errorf("session %s: chat object: %w", sessionID, err)
		}
		ops = append(ops, store.Match(id, nil))
	case err != nil:
		return fmt.Errorf("session %s: chat: %w", sessionID, err)
	default:
		if head, err = objects.FromDoc(prev); err != nil {
			return fmt.Errorf("session %s: decoding chat: %w", sessionID, err)
		}
		if head.Extra[fieldTurnsIn] != turnType {
			return fmt.Errorf("session %s: the chat is not a recorded session's", sessionID)
		}
		ops = append(ops, store.Match(id, prev))
	}
	if n := int(head.Chat.TurnCount); from < 0 || from > n {
		return fmt.Errorf("session %s: writing turns from %d of a chat of %d", sessionID, from, n)
	}
	for i, t := range turns {
		d, err := turnDoc(sessionID, from+i, t)
		if err != nil {
			return err
		}
		ops = append(ops, store.Put(d))
	}
	next := head.Clone()
	next.Chat = objects.ChatFields{SessionRef: objects.SessionObjectID(sessionID), TurnCount: int64(from + len(turns))}
	next.Extra = maps.Clone(head.Extra)
	if next.Extra == nil {
		next.Extra = map[string]any{}
	}
	next.Extra[fieldTurnsIn] = turnType
	if err := next.Seal(); err != nil {
		return fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	doc, err := next.Doc()
	if err != nil {
		return fmt.Errorf("session %s: chat: %w", sessionID, err)
	}
	ops = append(ops, store.Put(doc)) // the head last, as AppendTurns writes it
	if _, err := store.SubmitWait(ctx, st, ops); err != nil {
		return fmt.Errorf("session %s: writing the recorded chat: %w", sessionID, err)
	}
	return nil
}
