package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Chat returns the latest version of the session's chat object.
func (s *Session) Chat(ctx context.Context) (*objects.Object, error) {
	id := s.Info().ChatID
	doc, err := s.st.Entity(ctx, id, store.Basis{})
	if err != nil {
		return nil, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	o, err := objects.FromDoc(doc)
	if err != nil {
		return nil, fmt.Errorf("session %s: decoding chat: %w", s.id, err)
	}
	return o, nil
}

// AppendTurns writes a new version of the session's chat with turns
// appended (turn_count and toolcall_refs follow), guarded by a match on the
// version it read, so a concurrent append makes it fail with an error
// wrapping store.ErrConflict instead of losing either. It is the hook the
// harness ingestion (issue 5, item 8) uses; it returns the chat version
// written and its transaction.
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
	all := append(append([]objects.Turn(nil), cur.Chat.Turns...), turns...)
	next := cur.Clone()
	next.Chat = objects.ChatFieldsFromTurns(s.id, all)
	if err := next.Seal(); err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	doc, err := next.Doc()
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: chat: %w", s.id, err)
	}
	tx, err := store.SubmitWait(ctx, s.st, []store.Op{store.Match(id, prev), store.Put(doc)})
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: appending to the chat: %w", s.id, err)
	}
	return next, tx.ID, nil
}
