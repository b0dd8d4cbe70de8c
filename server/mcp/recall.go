package mcp

import (
	"context"

	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/store"
)

// RecallSearch is Searcher over context/recall's full-text search
// (unrestricted scope: the MCP server reads the whole store, as the CLI
// does). The store must have a full-text index (store.Searcher).
type RecallSearch struct{ Store store.Store }

// Search implements Searcher.
func (r RecallSearch) Search(ctx context.Context, query string, limit int) ([]SearchHit, error) {
	hits, err := recall.Search(ctx, r.Store, store.SearchQuery{Text: query, Limit: limit}, recall.Scope{})
	if err != nil {
		return nil, err
	}
	out := make([]SearchHit, 0, len(hits))
	for _, h := range hits {
		out = append(out, SearchHit{ID: h.ID, Session: h.Session, Kind: h.Kind, Turn: h.Turn, Title: h.Title, Score: h.Score, Snippet: h.Snippet})
	}
	return out, nil
}

// RecallQuerier is SessionQuerier over context/recall's query_session:
// with Settings naming a provider a model answers; with nil (offline) the
// answer is the session's best-matching passages.
type RecallQuerier struct {
	Store    store.Store
	Settings *recall.Settings
}

// QuerySession implements SessionQuerier.
func (r RecallQuerier) QuerySession(ctx context.Context, session, question string) (string, error) {
	a, err := recall.QuerySession(ctx, r.Store, r.Settings, recall.Scope{}, session, question)
	if err != nil {
		return "", err
	}
	return a.Text, nil
}

// recallMeta returns the session index's name and description of a
// session, if it has been indexed.
func recallMeta(ctx context.Context, st store.Store, id string) (name, description string) {
	m, err := recall.ReadMeta(ctx, st, id, store.Basis{})
	if err != nil || m == nil {
		return "", ""
	}
	return m.Name, m.Description
}
