package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxstore/ctxstore/store"
)

// A session's roots are the directories its tools may read and index
// files in (docs/security.md, "What the agent's tools may touch"). The
// server that opens a session decides them, and records them in the
// document "session-roots:{id}", so that a server started later on the
// same store bounds a re-opened session by them: re-opening may narrow
// a session's roots, never widen them, across restarts and servers.
//
// The document is the store's alone: it is in the session's derived
// namespace (Namespace), carries no "session_id", so a bundle export
// never holds it, and CheckID refuses it from every client and bundle,
// the session's own included. Paths are a machine's: a session imported
// elsewhere takes the roots of the first server that opens it there.

// rootsType is the "type" of roots documents.
const rootsType = "session_roots"

// RootsID returns the id of the document recording session id's roots.
func RootsID(id string) string { return nsRoots + id }

// Roots are the roots recorded for a session, as read by ReadRoots.
type Roots struct {
	// Dirs are the directories, absolute and with their symbolic links
	// resolved when they were recorded; nil when none are recorded.
	Dirs []string
	doc  store.Doc // the version read, which WriteRoots matches
}

// ReadRoots reads the roots recorded for session id (Dirs nil when none
// are).
func ReadRoots(ctx context.Context, st store.Store, id string) (Roots, error) {
	doc, err := st.Entity(ctx, RootsID(id), store.Basis{})
	if errors.Is(err, store.ErrNotFound) {
		return Roots{}, nil
	}
	if err != nil {
		return Roots{}, fmt.Errorf("session %s: reading its roots: %w", id, err)
	}
	raw, _ := doc["roots"].([]any)
	dirs := make([]string, 0, len(raw))
	for _, v := range raw {
		d, ok := v.(string)
		if !ok || d == "" {
			return Roots{}, fmt.Errorf("session %s: %s: roots holds %v, not a directory", id, RootsID(id), v)
		}
		dirs = append(dirs, d)
	}
	if t, _ := doc["type"].(string); t != rootsType || len(dirs) == 0 {
		return Roots{}, fmt.Errorf("session %s: %s is not a roots document of at least one directory", id, RootsID(id))
	}
	return Roots{Dirs: dirs, doc: doc}, nil
}

// WriteRoots records dirs (at least one) as session id's roots, in one
// transaction guarded by a match on prev, the roots ReadRoots gave: if
// another writer recorded roots since, nothing is written and the error
// wraps store.ErrConflict (read again, check again). The caller decides
// that dirs are within prev.Dirs.
func WriteRoots(ctx context.Context, st store.Store, id string, prev Roots, dirs []string) (int64, error) {
	if len(dirs) == 0 {
		return 0, fmt.Errorf("session %s: recording no roots", id)
	}
	list := make([]any, len(dirs))
	for i, d := range dirs {
		list[i] = d
	}
	doc := store.Doc{store.IDKey: RootsID(id), "type": rootsType, "roots": list}
	tx, err := store.SubmitWait(ctx, st, []store.Op{store.Match(RootsID(id), prev.doc), store.Put(doc)})
	if errors.Is(err, store.ErrConflict) {
		return 0, fmt.Errorf("session %s: its roots were recorded by another writer: %w", id, err)
	}
	if err != nil {
		return 0, fmt.Errorf("session %s: recording its roots: %w", id, err)
	}
	return tx.ID, nil
}
