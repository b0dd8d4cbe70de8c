package sessionbundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// What belongs to a session, for an import (docs/security.md, "What a
// session owns"): the one rule of session.CheckID and session.Claim. Its
// head, chat and system prompt, its context commits ("ctx-{id}-{n}"), its
// chunk documents ("session-chunk:{id}:…") and the rest of its derived
// namespace; every document whose "session_id" names it; and the objects it
// uses (toolcalls, files, notes) as long as the target does not hold them
// from elsewhere. No other session's derived id, present or future, and no
// id ctxstore derives for no one session. A bundle is refused whole, before
// anything is written, when it reaches further (ErrForeign).

// checkOwnManifest checks that the manifest's source and entities belong
// to the session it names.
func checkOwnManifest(m *manifest) error {
	s := m.h.Session
	if !strings.HasPrefix(m.h.Source.ID, objects.SessionObjectID(s)+"@") {
		return &versionlog.LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: source id %q is not one of session %s (want %q)",
			ErrForeign, m.h.Source.ID, s, SourceID(s, "STORE"))}
	}
	for i, e := range m.ents {
		if err := ownEntity(s, e); err != nil {
			return &versionlog.LineError{Line: int64(i + 2), TxID: -1, Err: err}
		}
	}
	return nil
}

// ownEntity checks one entity line against session s.
func ownEntity(s string, e Entity) error {
	if err := session.CheckID(s, e.ID, session.FromBundle); err != nil {
		return fmt.Errorf("%w: entity %q (the bundle is session %s's): %w", ErrForeign, e.ID, s, err)
	}
	if e.Role == RoleCommit && !isCommitOf(e.ID, s) {
		return fmt.Errorf("%w: commit %q is not one of session %s (ctx-%s-N)", ErrForeign, e.ID, s, s)
	}
	return nil
}

func isCommitOf(id, s string) bool {
	n, ok := strings.CutPrefix(id, "ctx-"+s+"-")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ownDoc checks that an op's document does not say it belongs to another
// session ("session_id").
func ownDoc(s string, i int, op versionlog.Op) error {
	if op.Doc == nil {
		return nil
	}
	var d struct {
		SessionID *string `json:"session_id"`
	}
	if err := json.Unmarshal(op.Doc, &d); err != nil {
		return fmt.Errorf("%w: op %d on %s: %v", ErrCorrupt, i+1, op.ID, err)
	}
	if d.SessionID != nil && *d.SessionID != s {
		return fmt.Errorf("%w: op %d writes %s with session_id %q, the bundle is session %s's", ErrForeign, i+1, op.ID, *d.SessionID, s)
	}
	return nil
}

// checkOwnTarget refuses a bundle carrying an entity that the target
// already holds from elsewhere: not carried by an earlier import of the
// same source (had). Such an entity is another session's (or the
// target's own) object, and applying the bundle would overwrite, delete
// or evict it. An entity an earlier import carried, outside the session's
// own derived namespace (a toolcall, a file), must since have been written
// only by imports of this source (recID's and the cursor's transactions):
// one the target wrote otherwise in between (another session recorded the
// toolcall id, read the file) is no longer the import's alone.
func checkOwnTarget(ctx context.Context, target store.Store, m *manifest, had map[string]bool, recID string) error {
	var ours map[int64]bool // the import's transactions, read when needed
	for i, e := range m.ents {
		line := int64(i + 2)
		err := session.Claim(ctx, target, m.h.Session, e.ID, session.FromBundle, func(id string) bool { return had[id] })
		if err != nil && !errors.Is(err, session.ErrForeignID) {
			return fmt.Errorf("reading %s in the target: %w", e.ID, err)
		}
		if err != nil {
			return &versionlog.LineError{Line: line, TxID: -1, Err: fmt.Errorf(
				"%w: the target holds %s already, not from an earlier import of %s (another session's object); an import never overwrites what is not its own: import into a store without it",
				ErrForeign, e.ID, m.h.Source.ID)}
		}
		if owner, derived := session.Namespace(e.ID); !had[e.ID] || (derived && owner == m.h.Session) {
			continue
		}
		if ours == nil {
			if ours, err = importTxs(ctx, target, recID, versionlog.CursorID(m.h.Source.ID)); err != nil {
				return err
			}
		}
		rows, err := target.History(ctx, e.ID, store.HistoryOptions{Order: store.Desc, WithCorrections: true, Basis: store.Basis{ValidTime: store.FarFuture}})
		if err != nil {
			return fmt.Errorf("reading the history of %s in the target: %w", e.ID, err)
		}
		for _, r := range rows {
			if !ours[r.TxID] {
				return &versionlog.LineError{Line: line, TxID: -1, Err: fmt.Errorf(
					"%w: target tx %d wrote %s, and not for an import of %s (another session used it since); an import never overwrites what is not its own: import into a store without it",
					ErrForeign, r.TxID, e.ID, m.h.Source.ID)}
			}
		}
	}
	return nil
}

// importTxs returns the target transactions that wrote the given
// documents (an import's record and cursor): those of the import.
func importTxs(ctx context.Context, target store.Store, ids ...string) (map[int64]bool, error) {
	out := map[int64]bool{}
	for _, id := range ids {
		rows, err := target.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, Basis: store.Basis{ValidTime: store.FarFuture}})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("reading the history of %s in the target: %w", id, err)
		}
		for _, r := range rows {
			out[r.TxID] = true
		}
	}
	return out, nil
}
