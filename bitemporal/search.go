package bitemporal

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/store"
)

var _ store.Searcher = (*Store)(nil)

// RankWindow bounds how many matches a query ranks: the newest ones (see
// Search).
const RankWindow = 20_000

// titleMax caps a hit's title, in code points (a toolcall's arguments can
// be long).
const titleMax = 200

// searchWindowSQL ranks one window of FTS5 matches and keeps those whose
// unit belongs to the version visible at the basis: for a whole document,
// the visible point names its docs row; for a chat turn, the visible chat
// version is that row or a later one (chats grow by appending). %s is the
// extra filters.
const searchWindowSQL = `
SELECT c.rank, (SELECT e.eid FROM ents e WHERE e.id = u.ent), u.kind, coalesce(u.session, ''), u.part, u.title, u.id, p.tx_id, p.tx_time, p.vt
FROM (SELECT rowid AS id, rank FROM search_fts WHERE search_fts MATCH ? AND rowid > ? ORDER BY rank LIMIT ? OFFSET ?) c
JOIN search_units u ON u.id = c.id
JOIN points p ON (p.ent, p.vt, p.tx_id) = (SELECT q.ent, q.vt, q.tx_id FROM points q
    WHERE q.ent = u.ent AND q.vt <= ? AND q.tx_id <= ? ORDER BY q.vt DESC, q.tx_id DESC LIMIT 1)
WHERE CASE WHEN u.part >= 0 THEN p.doc >= u.doc ELSE p.doc = u.doc END %s
ORDER BY c.rank, u.id`

// Search implements store.Searcher with SQLite's FTS5 (migrations/00002_search.sql):
// the index is maintained by triggers in each write's own transaction, so
// a version is findable as soon as Submit returns, and an evicted entity's
// text leaves the index in the evicting transaction.
func (s *Store) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "search", q.Basis)
	if err != nil {
		return nil, err
	}
	match := ftsMatch(q.Text)
	var filters []string
	var fargs []any
	if len(q.Kinds) > 0 {
		filters = append(filters, "u.kind IN ("+placeholders(len(q.Kinds))+")")
		for _, k := range q.Kinds {
			fargs = append(fargs, k)
		}
	}
	if len(q.Sessions) > 0 {
		filters = append(filters, "u.session IN ("+placeholders(len(q.Sessions))+")")
		for _, k := range q.Sessions {
			fargs = append(fargs, k)
		}
	}
	if !q.Since.IsZero() {
		filters = append(filters, "p.tx_time >= ?")
		fargs = append(fargs, ms(q.Since))
	}
	if !q.Until.IsZero() {
		filters = append(filters, "p.tx_time < ?")
		fargs = append(fargs, ms(q.Until))
	}
	extra := ""
	if len(filters) > 0 {
		extra = " AND " + strings.Join(filters, " AND ")
	}
	stmt := strings.Replace(searchWindowSQL, "%s", extra, 1)
	// A broad query (more than RankWindow matches) is ranked among its
	// newest RankWindow matches only: BM25 over every match of a word in
	// most documents costs seconds at a million documents, and the newest
	// are what an agent most often wants. floor is the rowid below them.
	var floor int64
	if err := s.r.GetContext(ctx, &floor, `SELECT rowid FROM search_fts WHERE search_fts MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?`,
		match, RankWindow); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, searchErr(err)
	}
	type cand struct {
		hit  store.SearchHit
		unit int64
	}
	var hits []cand
	// Windows of ranked matches, growing, until enough hits pass the
	// basis and filters or the matches run out.
	window := max(4*q.Limit, 64)
	for offset := 0; len(hits) < q.Limit; {
		args := append([]any{match, floor, window, offset, vt, tx}, fargs...)
		rows, err := s.r.QueryxContext(ctx, stmt, args...)
		if err != nil {
			return nil, searchErr(err)
		}
		for rows.Next() {
			var c cand
			var rank float64
			var txTime, vtime int64
			if err := rows.Scan(&rank, &c.hit.ID, &c.hit.Kind, &c.hit.Session, &c.hit.Turn, &c.hit.Title,
				&c.unit, &c.hit.TxID, &txTime, &vtime); err != nil {
				rows.Close()
				return nil, dbErr("search", "", err)
			}
			c.hit.Score = -rank
			c.hit.TxTime, c.hit.ValidTime = fromMS(txTime), fromMS(vtime)
			c.hit.Title = cut(c.hit.Title, titleMax)
			if len(hits) < q.Limit {
				hits = append(hits, c)
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, dbErr("search", "", err)
		}
		rows.Close()
		// Whether the window was full: count the matches it held.
		var n int
		if err := s.r.GetContext(ctx, &n, `SELECT count(*) FROM (SELECT rowid FROM search_fts WHERE search_fts MATCH ? AND rowid > ? LIMIT ? OFFSET ?)`,
			match, floor, window, offset); err != nil {
			return nil, searchErr(err)
		}
		if n < window {
			break
		}
		offset += window
		window *= 2
	}
	out := make([]store.SearchHit, len(hits))
	for i, c := range hits {
		h := c.hit
		if err := s.r.GetContext(ctx, &h.Snippet,
			`SELECT snippet(search_fts, -1, ?, ?, '…', 16) FROM search_fts WHERE search_fts MATCH ? AND rowid = ?`,
			store.SnippetOpen, store.SnippetClose, match, c.unit); err != nil {
			return nil, searchErr(err)
		}
		out[i] = h
	}
	return out, nil
}

// ftsMatch renders the user's text as an FTS5 query: every term a quoted
// phrase (so no FTS5 syntax leaks through), a prefix term with '*', all
// terms required.
func ftsMatch(text string) string {
	var parts []string
	for _, t := range store.SearchTerms(text) {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func searchErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "fts5") {
		return store.Errorf("search", store.ErrInvalid, "", "text: "+err.Error())
	}
	return dbErr("search", "", err)
}
