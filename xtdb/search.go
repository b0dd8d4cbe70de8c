package xtdb

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/store"
)

var _ store.Searcher = (*Store)(nil)

// Search implements store.Searcher with XTDB's Lucene module on the node
// (GET /_xtdb/ctxstore/search, served by ctxstore's HTTP front with its
// own indexer, xtdbserver/jvm/clj/ctxstore/xtdb_search.clj). A node
// started without the module answers 404, reported as ErrUnavailable.
func (s *Store) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	var terms, words []string
	for _, t := range store.SearchTerms(q.Text) {
		words = append(words, t.Words...)
		switch {
		case t.Prefix && len(t.Words) == 1:
			terms = append(terms, t.Words[0]+"*")
		default:
			terms = append(terms, `"`+strings.Join(t.Words, " ")+`"`)
		}
	}
	params := basisParams(url.Values{}, q.Basis)
	params.Set("text", strings.Join(terms, " "))
	params.Set("words", strings.Join(words, " "))
	params.Set("limit", strconv.Itoa(q.Limit))
	if len(q.Kinds) > 0 {
		params.Set("kinds", ednStrings(q.Kinds))
	}
	if len(q.Sessions) > 0 {
		params.Set("sessions", ednStrings(q.Sessions))
	}
	if !q.Since.IsZero() {
		params.Set("since", strconv.FormatInt(q.Since.UnixMilli(), 10))
	}
	if !q.Until.IsZero() {
		params.Set("until", strconv.FormatInt(q.Until.UnixMilli(), 10))
	}
	v, err := s.readEDN(ctx, request{op: "search", method: http.MethodGet, path: "/ctxstore/search", query: params})
	if err != nil {
		return nil, err
	}
	rows, ok := v.([]any)
	if !ok {
		return nil, &store.Error{Op: "search", Kind: store.ErrUnavailable, Msg: fmt.Sprintf("unexpected answer %T", v)}
	}
	out := make([]store.SearchHit, 0, len(rows))
	for _, r := range rows {
		m, ok := ednMap(r)
		if !ok {
			return nil, &store.Error{Op: "search", Kind: store.ErrUnavailable, Msg: "unexpected hit"}
		}
		h := store.SearchHit{}
		h.ID, _ = m["id"].(string)
		h.Kind, _ = m["kind"].(string)
		h.Session, _ = m["session"].(string)
		h.Title, _ = m["title"].(string)
		h.Snippet, _ = m["snippet"].(string)
		turn, err1 := ednInt(m["turn"])
		tx, err2 := ednInt(m["tx-id"])
		tt, err3 := ednTime(m["tx-time"])
		vt, err4 := ednTime(m["valid-time"])
		if e := firstErr(err1, err2, err3, err4); e != nil {
			return nil, &store.Error{Op: "search", Kind: store.ErrUnavailable, ID: h.ID, Msg: "unexpected hit", Err: e}
		}
		h.Turn, h.TxID, h.TxTime, h.ValidTime = int(turn), tx, tt, vt
		switch sc := m["score"].(type) {
		case float64:
			h.Score = sc
		case int64:
			h.Score = float64(sc)
		}
		out = append(out, h)
	}
	return out, nil
}

func ednStrings(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = ednString(s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
