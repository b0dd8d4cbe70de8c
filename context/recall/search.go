// Package recall is ctxstore's memory across sessions (docs/recall.md):
// full-text search within a caller's scope, the session index (generated
// names, descriptions, summaries and tags, stored as versions of a
// session_meta object), @@session references and query_session. See
// docs/recall.md.
package recall

import (
	"context"
	"slices"

	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Scope says what a caller may find. The zero Scope finds everything (the
// CLI, an unrestricted token). A restricted scope (Restricted set) finds
// only what its sessions may see: each session's own objects (chat turns,
// toolcalls and metadata, whose hits name the session) and the objects
// that session has in its index (files, notes and user objects it has
// seen, which belong to no session). Session isolation (a token limited to
// sessions) plugs in here.
type Scope struct {
	Restricted bool
	Sessions   []string
}

// SessionScope returns the scope of a caller limited to sessions ids.
func SessionScope(ids ...string) Scope { return Scope{Restricted: true, Sessions: ids} }

// Allows reports whether hit is within sc; states are the scope's sessions'
// states (by session id), read by the caller.
func (sc Scope) allows(hit store.SearchHit, states map[string]session.State) bool {
	if !sc.Restricted {
		return true
	}
	if hit.Session != "" {
		return slices.Contains(sc.Sessions, hit.Session)
	}
	for _, st := range states {
		if st.Indexed(hit.ID) || st.InPool(hit.ID) {
			return true
		}
	}
	return false
}

// Search runs q on st within sc. A store without a full-text index (no
// store.Searcher) gives ErrUnavailable. A query naming sessions outside a
// restricted scope finds nothing from them.
func Search(ctx context.Context, st store.Store, q store.SearchQuery, sc Scope) ([]store.SearchHit, error) {
	s, ok := st.(store.Searcher)
	if !ok {
		return nil, store.Errorf("search", store.ErrUnavailable, "", "this store has no full-text index")
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	if !sc.Restricted {
		return s.Search(ctx, q)
	}
	if len(q.Sessions) > 0 {
		var keep []string
		for _, id := range q.Sessions {
			if slices.Contains(sc.Sessions, id) {
				keep = append(keep, id)
			}
		}
		if len(keep) == 0 {
			return nil, nil
		}
		q.Sessions = keep
	}
	states := map[string]session.State{}
	for _, id := range sc.Sessions {
		_, state, err := session.ReadState(ctx, st, id, store.Basis{})
		if err == nil {
			states[id] = state
		} else if store.KindOf(err) != store.ErrNotFound {
			return nil, err
		}
	}
	// Ask for more than wanted, filter, and widen until enough pass or the
	// index has no more.
	want := q.Limit
	for ask := 4 * want; ; ask *= 4 {
		q.Limit = min(ask, store.MaxSearchLimit)
		hits, err := s.Search(ctx, q)
		if err != nil {
			return nil, err
		}
		var out []store.SearchHit
		for _, h := range hits {
			if sc.allows(h, states) && len(out) < want {
				out = append(out, h)
			}
		}
		if len(out) >= want || len(hits) < q.Limit || q.Limit == store.MaxSearchLimit {
			return out, nil
		}
	}
}
