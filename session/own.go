package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// Which ids a session may write (docs/security.md, "What a session
// owns"). Every id a session writes on a client's word (a tool call id of
// observe, of a tool call or of a context request's log; an entity of a
// session bundle) passes CheckID, and then Claim, before anything is
// written. The rule has two halves:
//
//   - Namespaces. ctxstore derives some ids itself: a session's head, chat
//     and system prompt ("session:{id}", "chat:{id}", "system_prompt:{id}"),
//     its chunk and turn documents ("session-chunk:{id}:{list}:{n}"), its
//     roots ("session-roots:{id}", RootsID), its per-call commits ("ctx-{id}-{n}"), its recall index
//     ("session-meta:{id}", "session-index-attempt:{id}:{uuid}"), and, for
//     no one session, conversation commits and their content, principals
//     and caches (every other "ctx-…"), cursors ("import-cursor:…",
//     "ctxstore:…") and XTDB's unknown ids ("xtdb-eid-hash:…"). A client
//     never names such an id for an object it creates (a tool call id):
//     the session, or another, writes it later (ctx-{victim}-{n} is
//     predictable), and whoever wrote it first would break that write. A
//     bundle of session S may carry S's own derived ids (an export holds
//     them) but no other session's, present or future, none derived
//     for no one session, and not S's roots: the server that opens a
//     session decides those.
//   - Presence. Any other id is the session's when the session holds it
//     (its index, or for a bundle the entities earlier imports of the same
//     source carried) or when the store does not hold it at all; an id the
//     store holds from elsewhere is another session's object.
//
// Session ids may hold ':' and '-', so ids are split from the right, where
// the parts ctxstore appends (":{list}:{n}", "-{n}", ":{uuid}") never hold
// the separator.

// ErrForeignID is returned (wrapped) when a session would write an id that
// is not its to write: in another session's namespace, derived by ctxstore
// itself, or held by the store for another session.
var ErrForeignID = errors.New("the id is not this session's to write")

// Origin says how an id reaches a session's write.
type Origin int

const (
	// FromClient is an id a client names for an object it creates: a
	// tool call id (observe, a tool call, a context request's log).
	FromClient Origin = iota
	// FromBundle is an entity of a bundle of the session.
	FromBundle
)

// The prefixes of derived ids. The session package writes the first ones;
// the others are written by packages above it (context/assemble,
// session/commits, context/recall, harness/importer, store, xtdb), which
// server/httpapi's TestDerivedNamespacesKnown checks against.
const (
	nsSession      = "session:"
	nsChat         = "chat:"
	nsSystemPrompt = "system_prompt:"
	nsChunk        = chunkPrefix // "session-chunk:"
	nsRoots        = "session-roots:"
	nsMeta         = "session-meta:"
	nsAttempt      = "session-index-attempt:"
	nsCtx          = "ctx-"
	nsStore        = "ctxstore:"
	nsImportCursor = "import-cursor:"
	nsXTDB         = "xtdb-eid-hash:"
)

// Namespace tells whether ctxstore derives id itself (derived) and, if
// so, for which session (owner; "" when it is derived for no one session,
// or malformed so that no session ever writes it).
func Namespace(id string) (owner string, derived bool) {
	for _, p := range []string{nsSession, nsChat, nsSystemPrompt, nsMeta, nsRoots} {
		if rest, ok := strings.CutPrefix(id, p); ok {
			return rest, true
		}
	}
	if rest, ok := strings.CutPrefix(id, nsChunk); ok {
		// {id}:{list}:{n}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return "", true
		}
		j := strings.LastIndexByte(rest[:i], ':')
		if j <= 0 {
			return "", true
		}
		return rest[:j], true
	}
	if rest, ok := strings.CutPrefix(id, nsAttempt); ok {
		// {id}:{uuid}
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return "", true
		}
		return rest[:i], true
	}
	if rest, ok := strings.CutPrefix(id, nsCtx); ok {
		// ctx-{id}-{n}, n decimal; any other ctx- id is shared.
		i := strings.LastIndexByte(rest, '-')
		if i > 0 && digits(rest[i+1:]) {
			return rest[:i], true
		}
		return "", true
	}
	for _, p := range []string{nsStore, nsImportCursor, nsXTDB} {
		if strings.HasPrefix(id, p) {
			return "", true
		}
	}
	return "", false
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// CheckID is the namespace half of the rule: whether session sessionID may
// write id reaching it as o, whatever the store holds. It reads nothing.
func CheckID(sessionID, id string, o Origin) error {
	if o == FromClient && strings.ContainsRune(id, utf8.RuneError) {
		// A lone surrogate escape or a bad byte, decoded: "k\ud800" and
		// "k\udfff" would be one id.
		return fmt.Errorf("%w: id %q holds U+FFFD (a lone surrogate escape or an invalid byte, decoded); ids are valid Unicode", objects.ErrInvalid, id)
	}
	owner, derived := Namespace(id)
	switch {
	case !derived:
		return nil
	case owner == sessionID && strings.HasPrefix(id, nsRoots):
		return fmt.Errorf("%w: %q records the roots the server gave session %s; neither a client nor a bundle names it", ErrForeignID, id, owner)
	case o == FromBundle && owner == sessionID:
		return nil
	case owner != "" && owner != sessionID:
		return fmt.Errorf("%w: %q is in session %s's namespace", ErrForeignID, id, owner)
	case owner == sessionID:
		return fmt.Errorf("%w: %q is an id ctxstore derives for session %s itself; a client never names one", ErrForeignID, id, owner)
	default:
		return fmt.Errorf("%w: %q is an id ctxstore derives for itself; a client never names one", ErrForeignID, id)
	}
}

// Claim is the whole rule: CheckID, then, unless mine(id) says the
// session holds id already, that the store does not hold id (at any valid
// time) from elsewhere. A client's id shaped as another session's renamed
// copy of an id the store holds (RenamedID) is refused too: that session
// would meet it when its forked log is ingested. It writes nothing.
func Claim(ctx context.Context, st store.Store, sessionID, id string, o Origin, mine func(string) bool) error {
	if err := CheckID(sessionID, id, o); err != nil {
		return err
	}
	if mine != nil && mine(id) {
		return nil
	}
	held := func(id string) (bool, error) {
		_, err := st.EntityTx(ctx, id, store.Basis{ValidTime: store.FarFuture})
		switch {
		case errors.Is(err, store.ErrNotFound):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("reading %s: %w", id, err)
		}
		return true, nil
	}
	if h, err := held(id); err != nil || h {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: the store holds %q, and not for this session", ErrForeignID, id)
	}
	if base, suffix, ok := splitRenamed(id); ok && o == FromClient && suffix != renameSuffix(sessionID) {
		if h, err := held(base); err != nil || h {
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: %q has the shape of another session's own copy of %q (RenamedID)", ErrForeignID, id, base)
		}
	}
	return nil
}

// RenamedID returns the id under which session sessionID records a tool
// call id that the store holds for another session (a forked log carries
// its parent's ids): id, "_" and eight hex digits of the SHA-256 of the
// session id. It is the same in every process, so a resumed session finds
// its toolcalls again, and it stays within what providers accept in tool
// call ids ([A-Za-z0-9_-]). Claim keeps every other session from taking
// it first.
func RenamedID(sessionID, id string) string { return id + renameSuffix(sessionID) }

func renameSuffix(sessionID string) string {
	h := sha256.Sum256([]byte(sessionID))
	return "_" + hex.EncodeToString(h[:4])
}

// splitRenamed splits an id of RenamedID's shape into the id renamed and
// the suffix.
func splitRenamed(id string) (base, suffix string, ok bool) {
	const n = 9 // "_" and eight hex digits
	if len(id) <= n || id[len(id)-n] != '_' {
		return "", "", false
	}
	for _, c := range id[len(id)-n+1:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", "", false
		}
	}
	return id[:len(id)-n], id[len(id)-n:], true
}
