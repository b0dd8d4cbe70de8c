package session

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ctxstore/ctxstore/objects"
)

// ErrLocked is returned (wrapped) when the agent tries to deactivate a
// locked object: a chat or a system prompt.
var ErrLocked = errors.New("object is locked")

// ErrNotInPool is returned (wrapped) when an operation needs an object the
// session does not know.
var ErrNotInPool = errors.New("object is not in the session")

// Toolcall is the session's record of one toolcall, used by the
// auto-activation policy.
type Toolcall struct {
	// ID is the toolcall object id.
	ID string `json:"id"`
	// Turn is the turn in which the toolcall ran, or in which the agent
	// last activated it explicitly (which puts it back in the window).
	Turn int `json:"turn"`
	// Seq orders toolcalls by that same moment; higher is more recent.
	Seq int64 `json:"seq"`
	// Management marks context-management calls (activate, deactivate,
	// pin, unpin), which the policy does not count.
	Management bool `json:"management,omitempty"`
	// Target is the object whose activation the call stands for (a read's
	// file): the policy collapses that object with the call, not the
	// call's own output.
	Target string `json:"target,omitempty"`
	// Tokens is what keeping the call active costs, in tokens (an
	// estimate: its output, and its arguments, or its target's content),
	// for the policy's budget; 0 when unknown (sessions recorded before).
	Tokens int `json:"tokens,omitempty"`
}

// State is a session's context state. Slices keep their order
// of entry. Invariants, kept by the methods: Active ⊆ Pool ⊆ Index, Index
// only grows, and the chat and system prompt are always active. Pinned
// objects are in the pool but need not be active.
type State struct {
	// Index is every object id the session has encountered (append-only).
	Index []string
	// Pool is the metadata pool: ids shown to the agent as metadata.
	Pool []string
	// Active is the active set: ids whose content is loaded.
	Active []string
	// Pinned is the pinned set: ids exempt from auto-collapse.
	Pinned []string
	// Turn is the current turn number (0 before the first turn).
	Turn int
	// Seq is the last sequence number given to a Toolcall.
	Seq int64
	// Toolcalls records every toolcall of the session, oldest first.
	Toolcalls []Toolcall

	// shared is, in the state Session.Update gives its function, how many
	// leading Toolcalls share their array with the session's current
	// state (Index and Pool share theirs too, and are only appended to):
	// a method that changes one of them copies the list first
	// (ownToolcalls), so the state a failed Update leaves is untouched.
	shared int
	// look, when set, finds ids in the long lists without a scan
	// (lookup.go); nil in a State built by hand or cloned, which scans.
	look *lookup
}

// ownToolcalls gives s a Toolcalls array of its own before a method
// changes entry i in place.
func (s *State) ownToolcalls(i int) {
	if i < s.shared {
		s.Toolcalls = slices.Clone(s.Toolcalls)
		s.shared = 0
	}
}

// Clone returns a deep copy of s.
func (s *State) Clone() State {
	return State{
		Index: slices.Clone(s.Index), Pool: slices.Clone(s.Pool), Active: slices.Clone(s.Active),
		Pinned: slices.Clone(s.Pinned), Turn: s.Turn, Seq: s.Seq, Toolcalls: slices.Clone(s.Toolcalls),
	}
}

// draft returns the state Session.Update changes: Index, Pool and
// Toolcalls share their arrays with s (appending writes past s's entries,
// which s does not see; a Toolcalls entry is copied before it is
// changed), and the small Active and Pinned sets are copies. Copying the
// long lists at every change would cost time and garbage in proportion to
// the session.
func (s *State) draft() State {
	return State{
		Index: s.Index, Pool: s.Pool, Active: slices.Clone(s.Active),
		Pinned: slices.Clone(s.Pinned), Turn: s.Turn, Seq: s.Seq, Toolcalls: s.Toolcalls, shared: len(s.Toolcalls),
		look: s.look,
	}
}

// changedFrom reports whether next, a draft of prev changed by State's
// methods, differs from it. The shared prefixes of Index, Pool and
// Toolcalls are prev's own entries, so only lengths and what was copied
// are compared, not the whole lists.
func (next *State) changedFrom(prev *State) bool {
	if next.Turn != prev.Turn || next.Seq != prev.Seq || len(next.Index) != len(prev.Index) || len(next.Pool) != len(prev.Pool) ||
		len(next.Toolcalls) != len(prev.Toolcalls) || !slices.Equal(next.Active, prev.Active) || !slices.Equal(next.Pinned, prev.Pinned) {
		return true
	}
	return next.shared < len(prev.Toolcalls) && !slices.Equal(next.Toolcalls, prev.Toolcalls)
}

// firstChange returns, for each list (listNames' order), the first entry
// where next, a draft of prev, may differ from it: the lists appended to
// keep their entries.
func (next *State) firstChange(prev *State) map[string]int {
	tc := len(prev.Toolcalls)
	if next.shared < tc {
		tc = 0
	}
	return map[string]int{listIndex: len(prev.Index), listPool: len(prev.Pool), listActive: 0, listPinned: 0, listToolcalls: tc}
}

// Locked reports whether id names an object of a locked kind (chat,
// system prompt), which can never be deactivated.
func Locked(id string) bool {
	kind, _, ok := objects.SessionIDOf(id)
	return ok && kind.Locked()
}

// Indexed, InPool, IsActive and IsPinned report set membership.
func (s State) Indexed(id string) bool {
	if s.look == nil {
		return slices.Contains(s.Index, id)
	}
	return find(s.look.index, s.look.nIndex, s.Index, id)
}

func (s State) InPool(id string) bool {
	if s.look == nil {
		return slices.Contains(s.Pool, id)
	}
	return find(s.look.pool, s.look.nPool, s.Pool, id)
}

func (s State) IsActive(id string) bool { return slices.Contains(s.Active, id) }
func (s State) IsPinned(id string) bool { return slices.Contains(s.Pinned, id) }

// AddToIndex records id in the session index.
func (s *State) AddToIndex(id string) {
	if !s.Indexed(id) {
		s.Index = append(s.Index, id)
	}
}

// AddToPool adds id to the metadata pool (and the index).
func (s *State) AddToPool(id string) {
	s.AddToIndex(id)
	if !s.InPool(id) {
		s.Pool = append(s.Pool, id)
	}
}

// Activate adds id to the active set, promoting it to the pool first if
// needed.
func (s *State) Activate(id string) {
	s.AddToPool(id)
	if !s.IsActive(id) {
		s.Active = append(s.Active, id)
	}
}

// Deactivate removes id from the active set; it stays in the pool. A
// locked object gives an error wrapping ErrLocked; an object not in the
// pool one wrapping ErrNotInPool. Deactivating an inactive object is a
// no-op.
func (s *State) Deactivate(id string) error {
	if Locked(id) {
		return fmt.Errorf("cannot deactivate %s: %w (chats and system prompts are always active)", id, ErrLocked)
	}
	if !s.InPool(id) {
		return fmt.Errorf("cannot deactivate %s: %w", id, ErrNotInPool)
	}
	s.Active = slices.DeleteFunc(s.Active, func(x string) bool { return x == id })
	return nil
}

// Pin adds id to the pinned set (and the pool); it does not activate it.
func (s *State) Pin(id string) {
	s.AddToPool(id)
	if !s.IsPinned(id) {
		s.Pinned = append(s.Pinned, id)
	}
}

// Unpin removes id from the pinned set.
func (s *State) Unpin(id string) {
	s.Pinned = slices.DeleteFunc(s.Pinned, func(x string) bool { return x == id })
}

// AddToolcall records a toolcall run in the current turn and adds it to
// the pool.
func (s *State) AddToolcall(id string, management bool) {
	s.AddToPool(id)
	s.Seq++
	s.Toolcalls = append(s.Toolcalls, Toolcall{ID: id, Turn: s.Turn, Seq: s.Seq, Management: management})
}

// AddTargetToolcall records a toolcall that stands for the activation of
// target (a read of a file): it is counted by the policy, which collapses
// target when the call leaves the window; the toolcall itself is pooled
// but not activated.
func (s *State) AddTargetToolcall(id, target string) {
	s.AddToPool(id)
	s.Seq++
	s.Toolcalls = append(s.Toolcalls, Toolcall{ID: id, Turn: s.Turn, Seq: s.Seq, Target: target})
}

// SetToolcallTokens records what keeping toolcall id active costs in
// tokens (Toolcall.Tokens). The search runs from the end: callers set it
// right after adding the call.
func (s *State) SetToolcallTokens(id string, tokens int) {
	if i := s.lastToolcall(id); i >= 0 {
		s.ownToolcalls(i)
		s.Toolcalls[i].Tokens = tokens
	}
}

// lastToolcall returns the position of the last toolcall with id, or -1
// (ids are unique in practice; the search from the end is what
// SetToolcallTokens always did).
func (s *State) lastToolcall(id string) int {
	if s.look == nil {
		for i := len(s.Toolcalls) - 1; i >= 0; i-- {
			if s.Toolcalls[i].ID == id {
				return i
			}
		}
		return -1
	}
	for i := len(s.Toolcalls) - 1; i >= min(s.look.nCalls, len(s.Toolcalls)); i-- {
		if s.Toolcalls[i].ID == id {
			return i
		}
	}
	return s.toolcall(id)
}

// TouchTarget moves the most recent toolcall standing for target into the
// current turn, as when the agent edits a file it read: the file stays in
// the window. It reports whether there was one.
func (s *State) TouchTarget(target string) bool {
	ps := s.ToolcallsFor(target)
	if len(ps) == 0 {
		return false
	}
	i := ps[len(ps)-1]
	s.ownToolcalls(i)
	s.Seq++
	s.Toolcalls[i].Turn, s.Toolcalls[i].Seq = s.Turn, s.Seq
	return true
}

// TouchToolcall moves an existing toolcall to the current turn and the
// newest position, as when the agent activates it explicitly. It reports
// whether id is a recorded toolcall.
func (s *State) TouchToolcall(id string) bool {
	i := s.toolcall(id)
	if i < 0 {
		return false
	}
	s.ownToolcalls(i)
	s.Seq++
	s.Toolcalls[i].Turn, s.Toolcalls[i].Seq = s.Turn, s.Seq
	return true
}
