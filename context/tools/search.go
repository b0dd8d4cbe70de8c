package tools

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/session"
	"github.com/ctxstore/ctxstore/store"
)

// Search is search(query): full-text search over
// every object ctxstore holds, within sc (the zero Scope: everything). The
// agent gets metadata lines with snippets, never content; the objects found
// join the session's metadata pool, so activate(id) loads any of them. A
// session's metadata (session_meta) and chats of other sessions are listed
// but not pooled: query_session answers from a session. The session's own
// chat is always active and is left out.
func (t *Tools) Search(ctx context.Context, q store.SearchQuery, sc recall.Scope) (Result, []store.SearchHit, error) {
	hits, err := recall.Search(ctx, t.s.Store(), q, sc)
	if err != nil {
		return Result{}, nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	own := t.s.Info().ChatID
	var keep []store.SearchHit
	var pool []string
	for _, h := range hits {
		if h.ID == own {
			continue
		}
		keep = append(keep, h)
		if k, err := objects.ParseKind(h.Kind); err == nil && k != objects.KindChat && !slices.Contains(pool, h.ID) {
			pool = append(pool, h.ID)
		}
	}
	tx := t.s.Tx()
	if len(pool) > 0 {
		tx, _, err = t.s.Update(ctx, nil, func(s *session.State) error {
			for _, id := range pool {
				s.AddToPool(id)
			}
			return nil
		})
		if err != nil {
			return Result{}, nil, fmt.Errorf("search %q: %w", q.Text, err)
		}
	}
	return Result{Message: RenderHits(q.Text, keep), Tx: tx}, keep, nil
}

// RenderHits is what the agent is told about hits: one line each, kind, id
// (shortened as contexts show ids), session and turn, title, and the
// snippet.
func RenderHits(text string, hits []store.SearchHit) string {
	if len(hits) == 0 {
		return "No matches for " + strconv.Quote(text) + "."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d match(es) for %s; activate(id) loads an object, query_session(session, question) asks a session:", len(hits), strconv.Quote(text))
	for i, h := range hits {
		fmt.Fprintf(&b, "\n%d. %s id=%s", i+1, h.Kind, objects.DisplayID(h.ID))
		if h.Session != "" {
			fmt.Fprintf(&b, " session=%s", h.Session)
		}
		if h.Turn >= 0 {
			fmt.Fprintf(&b, " turn=%d", h.Turn)
		}
		fmt.Fprintf(&b, " at=%s", h.TxTime.Format("2006-01-02T15:04Z"))
		if h.Title != "" {
			fmt.Fprintf(&b, " %s", strconv.Quote(h.Title))
		}
		fmt.Fprintf(&b, ": %s", strings.Join(strings.Fields(h.Snippet), " "))
	}
	return b.String()
}
