// Package session keeps an agent session's context state: the
// append-only session index, the metadata pool, the active set and the
// pinned set, with the session's chat and system prompt objects always
// active. The state is persisted as the object "session:{id}" (the head),
// with a new version on every change, plus chunk documents holding the
// older entries of long lists, so that a change writes what changed rather
// than the whole state; writes carry a match op on the previous head
// version, so two writers of one session never silently lose each other's
// updates. Many sessions share one store: each has its own session object,
// chat and system prompt, and they share every other object.
package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

	mu     sync.Mutex
	state  State
	info   Info
	doc    store.Doc // the stored head version the next write must match
	tx     int64     // transaction of that version
	stored stored    // chunk size and revision of that version
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
	sto := stored{size: chunkSize}
	doc, err := encodeHead(info, &state, sto.size, sto.rev)
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
	state.look = newLookup(&state)
	return &Session{st: st, id: id, state: state, info: info, doc: doc, tx: tx.ID, stored: sto}, nil
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
	doc, info, state, sto, err := load(ctx, s.st, s.id, store.AtTx(et.TxID, et.ValidTime))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	state.look = newLookup(&state)
	s.info, s.state, s.doc, s.tx, s.stored = info, state, doc, et.TxID, sto
	return nil
}

// ReadState reads the state of session id as of basis b: the head visible
// at b and the chunks it names, read at the same basis. With
// store.AtTx(tx, time.Time{}) it gives the state any past version had.
func ReadState(ctx context.Context, st store.Store, id string, b store.Basis) (Info, State, error) {
	_, info, state, _, err := load(ctx, st, id, b)
	return info, state, err
}

// load reads the head of session id at basis b and assembles its state.
func load(ctx context.Context, st store.Store, id string, b store.Basis) (store.Doc, Info, State, stored, error) {
	fail := func(err error) (store.Doc, Info, State, stored, error) {
		return nil, Info{}, State{}, stored{}, fmt.Errorf("session %s: %w", id, err)
	}
	doc, err := st.Entity(ctx, objects.SessionObjectID(id), b)
	if err != nil {
		return fail(err)
	}
	h, err := decodeHead(doc)
	if err != nil {
		return fail(err)
	}
	if h.SessionID != id {
		return fail(fmt.Errorf("stored session_id is %q", h.SessionID))
	}
	var chunks []store.Doc
	if h.needsChunks() {
		// One query for every chunk, at the head's basis: chunks are only
		// written in the transactions that write the head, so these are
		// the ones it names (stale chunks beyond its lengths are ignored).
		chunks, err = st.Query(ctx, store.Query{
			Where: []store.Pred{store.Where("type", chunkType), store.Where(fieldSessionID, id)},
			Basis: b,
		})
		if err != nil {
			return fail(fmt.Errorf("reading chunks: %w", err))
		}
	}
	info, state, sto, err := h.state(chunks)
	if err != nil {
		return fail(err)
	}
	return doc, info, state, sto, nil
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

// PoolSince returns the pool entries from the i-th on (all of them when
// the pool has fewer than i) and the pool's length: State copies every
// list of the session, which grows with it, and a caller that only follows
// the pool's new entries need not.
func (s *Session) PoolSince(i int) ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.state.Pool)
	if i > n {
		i = 0
	}
	return slices.Clone(s.state.Pool[i:]), n
}

// Active returns a copy of the active set.
func (s *Session) Active() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.Active)
}

// IsActive reports whether id is in the active set.
func (s *Session) IsActive(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.IsActive(id)
}

// Indexed, InPool and Recorded report whether id is in the session index,
// the pool and its recorded toolcalls, and Pinned returns
// a copy of the pinned set: reads of the state without a copy of its long
// lists (State copies them all).
func (s *Session) Indexed(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Indexed(id)
}

func (s *Session) InPool(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.InPool(id)
}

func (s *Session) Recorded(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Recorded(id)
}

func (s *Session) Pinned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state.Pinned)
}

// Tx returns the transaction that wrote the current session version.
func (s *Session) Tx() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tx
}

// Update applies fn to a draft of the state (fn changes it through
// State's methods; the session's state is left as it was when Update
// fails) and, if the state changed,
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
	next := s.state.draft() // not a copy of the long lists
	if fn != nil {
		if err := fn(&next); err != nil {
			return s.tx, false, err
		}
	}
	changed := next.changedFrom(&s.state)
	if !changed && len(extra) == 0 {
		return s.tx, false, nil
	}
	sid := objects.SessionObjectID(s.id)
	ops := append([]store.Op{store.Match(sid, s.doc)}, extra...)
	var doc store.Doc
	sto := s.stored
	if changed {
		ops = append(ops, chunkOps(s.id, &s.state, &next, s.stored, next.firstChange(&s.state))...)
		sto.rev++
		sto.legacy = false
		if doc, err = encodeHead(s.info, &next, sto.size, sto.rev); err != nil {
			return s.tx, false, err
		}
		ops = append(ops, store.Put(doc))
	}
	t, err := store.SubmitWait(ctx, s.st, ops)
	if errors.Is(err, store.ErrConflict) {
		return s.tx, false, fmt.Errorf("session %s was changed by another writer since tx %d; reload and retry: %w", s.id, s.tx, err)
	}
	if err != nil {
		return s.tx, false, fmt.Errorf("session %s: writing: %w", s.id, err)
	}
	next.shared = 0
	s.state = next
	s.state.look.extend(&s.state) // the written entries join the lookup
	if changed {
		s.doc, s.tx, s.stored = doc, t.ID, sto
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
