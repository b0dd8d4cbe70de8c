package sessionbundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// What belongs to a session, for an import (docs/security.md, "What a
// session owns"): its head, chat and system prompt (ids carrying its
// session id), its context commits ("ctx-{id}-{n}"), its chunk documents
// ("session-chunk:{id}:…"), every document whose "session_id" names it,
// and the objects it uses (toolcalls, files, notes) as long as the target
// does not hold them from elsewhere. A bundle is refused whole, before
// anything is written, when it reaches further (ErrForeign).

// chunkPrefix is the session package's chunk id prefix.
const chunkPrefix = "session-chunk:"

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
	if versionlog.Reserved(e.ID) {
		return fmt.Errorf("%w: entity %q has a reserved id", ErrForeign, e.ID)
	}
	if _, other, ok := objects.SessionIDOf(e.ID); ok && other != s {
		return fmt.Errorf("%w: entity %q belongs to session %s, the bundle is session %s's", ErrForeign, e.ID, other, s)
	}
	if rest, ok := strings.CutPrefix(e.ID, chunkPrefix); ok && !strings.HasPrefix(rest, s+":") {
		return fmt.Errorf("%w: entity %q is another session's chunk, the bundle is session %s's", ErrForeign, e.ID, s)
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
// or evict it.
func checkOwnTarget(ctx context.Context, target store.Store, m *manifest, had map[string]bool) error {
	for i, e := range m.ents {
		if had[e.ID] {
			continue
		}
		_, err := target.EntityTx(ctx, e.ID, store.Basis{ValidTime: store.FarFuture})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s in the target: %w", e.ID, err)
		}
		return &versionlog.LineError{Line: int64(i + 2), TxID: -1, Err: fmt.Errorf(
			"%w: the target holds %s already, not from an earlier import of %s (another session's object); an import never overwrites what is not its own: import into a store without it",
			ErrForeign, e.ID, m.h.Source.ID)}
	}
	return nil
}
