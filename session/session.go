// Package session keeps an agent session's context state (004 §3): the
// append-only session index, the metadata pool, the active set and the
// pinned set, with the session's chat and system prompt objects always
// active. The state is persisted as the object "session:{id}", with a new
// version on every change; writes carry a match op on the previous version,
// so two writers of one session never silently lose each other's updates.
// Many sessions share one store: each has its own session object, chat and
// system prompt, and they share every other object.
package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Session is one agent session bound to a store. It is safe for concurrent
// use; each Update is applied atomically to the in-memory state and the
// store.
type Session struct {
	st store.Store
	id string

	mu    sync.Mutex
	state State
	info  Info
	doc   store.Doc // the stored version the next write must match
	tx    int64     // transaction of that version
}

// Info holds the immutable session fields.
type Info struct {
	// ID is the session id; the session object is "session:{ID}".
	ID string
	// ChatID and SystemPromptID are the ids of the session's locked
	// objects.
	ChatID, SystemPromptID string
	// Harness names the harness driving the session ("pi", …), optional.
	Harness string
}

// CreateOptions configure Create.
type CreateOptions struct {
	// SystemPrompt is the text of the session's system prompt object.
	SystemPrompt string
	// Harness is recorded in the session object, optional.
	Harness string
}

// Create starts a new session id in st: it writes, in one transaction, the
// session object (guarded by a match op asserting it is absent), an empty
// chat "chat:{id}" and the system prompt "system_prompt:{id}". Both are
// in the index, the pool and the active set from the start. An existing
// session gives an error wrapping store.ErrConflict.
func Create(ctx context.Context, st store.Store, id string, o CreateOptions) (*Session, error) {
	info := Info{ID: id, ChatID: objects.ChatObjectID(id), SystemPromptID: objects.SystemPromptObjectID(id), Harness: o.Harness}
	chat, err := objects.NewChat(id, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("session %s: chat object: %w", id, err)
	}
	sp, err := objects.NewSystemPrompt(id, o.SystemPrompt)
	if err != nil {
		return nil, fmt.Errorf("session %s: system prompt object: %w", id, err)
	}
	var state State
	state.Activate(info.SystemPromptID)
	state.Activate(info.ChatID)
	doc, err := encode(info, &state)
	if err != nil {
		return nil, err
	}
	chatDoc, err := chat.Doc()
	if err != nil {
		return nil, fmt.Errorf("session %s: chat document: %w", id, err)
	}
	spDoc, err := sp.Doc()
	if err != nil {
		return nil, fmt.Errorf("session %s: system prompt document: %w", id, err)
	}
	sid := objects.SessionObjectID(id)
	tx, err := store.SubmitWait(ctx, st, []store.Op{
		store.Match(sid, nil), store.Put(doc), store.Put(chatDoc), store.Put(spDoc),
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, fmt.Errorf("session %s already exists: %w", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: creating: %w", id, err)
	}
	return &Session{st: st, id: id, state: state, info: info, doc: doc, tx: tx.ID}, nil
}

// Open loads the latest version of session id from st, as when resuming in
// a new process. A missing session gives an error wrapping
// store.ErrNotFound.
func Open(ctx context.Context, st store.Store, id string) (*Session, error) {
	s := &Session{st: st, id: id}
	if err := s.Reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload replaces the in-memory state with the latest stored version, as
// after a conflict.
func (s *Session) Reload(ctx context.Context) error {
	sid := objects.SessionObjectID(s.id)
	et, err := s.st.EntityTx(ctx, sid, store.Basis{})
	if err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	b := store.AtTx(et.TxID, et.ValidTime)
	doc, err := s.st.Entity(ctx, sid, b)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	info, state, err := decode(doc)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	if info.ID != s.id {
		return fmt.Errorf("session %s: stored session_id is %q", s.id, info.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info, s.state, s.doc, s.tx = info, state, doc, et.TxID
	return nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Info returns the immutable session fields.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// Store returns the session's store.
func (s *Session) Store() store.Store { return s.st }

// State returns a copy of the current state.
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Clone()
}

// Tx returns the transaction that wrote the current session version.
func (s *Session) Tx() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx
}

// Update applies fn to a copy of the state and, if the state changed,
// writes the new session version in one transaction together with extra
// (objects to put alongside, such as a new toolcall), guarded by a match on
// the version this Session last read or wrote. If another writer changed
// the session since, the transaction aborts, the in-memory state is left
// as it was, and the error wraps store.ErrConflict: Reload and retry. An
// error from fn aborts with nothing written. If the state did not change
// and extra is empty, nothing is written and written is false.
func (s *Session) Update(ctx context.Context, extra []store.Op, fn func(*State) error) (tx int64, written bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.state.Clone()
	if fn != nil {
		if err := fn(&next); err != nil {
			return s.tx, false, err
		}
	}
	doc, err := encode(s.info, &next)
	if err != nil {
		return s.tx, false, err
	}
	same := store.SameDoc(doc, s.doc)
	if same && len(extra) == 0 {
		return s.tx, false, nil
	}
	sid := objects.SessionObjectID(s.id)
	ops := append([]store.Op{store.Match(sid, s.doc)}, extra...)
	if !same {
		ops = append(ops, store.Put(doc))
	}
	t, err := store.SubmitWait(ctx, s.st, ops)
	if errors.Is(err, store.ErrConflict) {
		return s.tx, false, fmt.Errorf("session %s was changed by another writer since tx %d; reload and retry: %w", s.id, s.tx, err)
	}
	if err != nil {
		return s.tx, false, fmt.Errorf("session %s: writing: %w", s.id, err)
	}
	s.state = next
	if !same {
		s.doc, s.tx = doc, t.ID
	}
	return t.ID, true, nil
}

// SetSystemPrompt writes a new version of the session's system prompt
// object (it stays locked and active).
func (s *Session) SetSystemPrompt(ctx context.Context, prompt string) (int64, error) {
	sp, err := objects.NewSystemPrompt(s.id, prompt)
	if err != nil {
		return 0, fmt.Errorf("session %s: system prompt object: %w", s.id, err)
	}
	doc, err := sp.Doc()
	if err != nil {
		return 0, fmt.Errorf("session %s: system prompt document: %w", s.id, err)
	}
	tx, err := store.SubmitWait(ctx, s.st, []store.Op{store.Put(doc)})
	if err != nil {
		return 0, fmt.Errorf("session %s: writing system prompt: %w", s.id, err)
	}
	return tx.ID, nil
}

// List returns the ids of the sessions in st (the session ids, not the
// object ids), sorted.
func List(ctx context.Context, st store.Store) ([]string, error) {
	docs, err := st.Query(ctx, store.Query{
		Where:   []store.Pred{store.Where("type", string(objects.KindSession))},
		Find:    []string{fieldSessionID},
		OrderBy: []store.Order{{Field: fieldSessionID}},
	})
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		if id, ok := d[fieldSessionID].(string); ok {
			out = append(out, id)
		}
	}
	return out, nil
}
