package xtdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"olympos.io/encoding/edn"

	"github.com/ctxstore/ctxstore/store"
)

// basisParams renders a basis as query parameters: always a tx id (or a
// tx time when that is what was asked), valid time only when given (the
// server's clock is "now").
func basisParams(q url.Values, b store.Basis) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if !b.ValidTime.IsZero() {
		q.Set("valid-time", store.FormatTime(b.ValidTime))
	}
	switch {
	case b.TxID != nil:
		q.Set("tx-id", strconv.FormatInt(*b.TxID, 10))
	case b.TxTime != nil:
		q.Set("tx-time", store.FormatTime(*b.TxTime))
	}
	return q
}

// Entity implements store.Store.
func (s *Store) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if err := store.CheckReadID("entity", id); err != nil {
		return nil, err
	}
	if b.TxID != nil && *b.TxID < 0 {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document before the first transaction")
	}
	return s.entity(ctx, url.Values{"eid": {id}}, id, b)
}

// entity reads the document of the entity that eid names (eid or eid-edn
// parameter) at b; id names it in errors.
func (s *Store) entity(ctx context.Context, eid url.Values, id string, b store.Basis) (store.Doc, error) {
	q := basisParams(maps.Clone(eid), b)
	v, err := s.readEDN(ctx, request{op: "entity", id: id, method: http.MethodGet, path: "/entity", query: q})
	if err != nil {
		return nil, err
	}
	if v == nil || evictionMarker(v) {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document at this basis")
	}
	doc, err := ednDoc(v)
	if err != nil {
		return nil, &store.Error{Op: "entity", Kind: store.ErrUnavailable, ID: id, Msg: "unexpected document", Err: err}
	}
	if len(doc) == 0 || doc[store.IDKey] == nil {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document at this basis")
	}
	return doc, nil
}

// EntityTx implements store.Store.
func (s *Store) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	if err := store.CheckReadID("entity-tx", id); err != nil {
		return store.EntityTx{}, err
	}
	return s.entityTx(ctx, id, b)
}

// entityTx is EntityTx for any id the node holds, also one another client
// wrote that the store's input rules refuse.
func (s *Store) entityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	if b.TxID != nil && *b.TxID < 0 {
		return store.EntityTx{}, store.Errorf("entity-tx", store.ErrNotFound, id, "no point before the first transaction")
	}
	q := basisParams(url.Values{"eid": {id}}, b)
	v, err := s.readEDN(ctx, request{op: "entity-tx", id: id, method: http.MethodGet, path: "/entity-tx", query: q})
	if err != nil {
		return store.EntityTx{}, err
	}
	m, ok := ednMap(v)
	if !ok || len(m) == 0 {
		return store.EntityTx{}, store.Errorf("entity-tx", store.ErrNotFound, id, "no point at this basis")
	}
	row, err := historyRow(m, false)
	if err != nil {
		return store.EntityTx{}, &store.Error{Op: "entity-tx", Kind: store.ErrUnavailable, ID: id, Err: err}
	}
	return store.EntityTx{ID: id, ValidTime: row.ValidTime, TxID: row.TxID, TxTime: row.TxTime, ContentHash: row.ContentHash, Deleted: row.Deleted}, nil
}

// historyRow reads one entity-history or entity-tx map.
func historyRow(m map[string]any, withDoc bool) (store.HistoryEntry, error) {
	var e store.HistoryEntry
	var err error
	if e.TxID, err = ednInt(m["xtdb.api/tx-id"]); err != nil {
		return e, fmt.Errorf("tx-id: %w", err)
	}
	if e.TxTime, err = ednTime(m["xtdb.api/tx-time"]); err != nil {
		return e, fmt.Errorf("tx-time: %w", err)
	}
	if e.ValidTime, err = ednTime(m["xtdb.api/valid-time"]); err != nil {
		return e, fmt.Errorf("valid-time: %w", err)
	}
	e.ContentHash = ednHash(m["xtdb.api/content-hash"])
	e.Deleted = e.ContentHash == ""
	if withDoc && !e.Deleted {
		if d := m["xtdb.api/doc"]; d != nil && !evictionMarker(d) {
			if e.Doc, err = ednDoc(d); err != nil {
				return e, fmt.Errorf("doc: %w", err)
			}
		}
	}
	return e, nil
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	if err := store.CheckReadID("history", id); err != nil {
		return nil, err
	}
	if err := o.Validate(id); err != nil {
		return nil, err
	}
	return s.history(ctx, url.Values{"eid": {id}}, id, o)
}

// history reads the history of the entity that eid names (eid or eid-edn
// parameter); id names it in errors. An ascending read from a start valid
// time that comes back empty is read again without the start, and the
// rows from the start on are kept: XTDB 1.24.5 on a RocksDB index answers
// () to an ascending read from before the entity's first version when the
// entity's keys are the last of its bitemporal index
// (kv/index_store.clj all-keys-in-prefix; docs/xtdb-cluster.md). The node
// ctxstore starts corrects that in XTDB itself; this serves a stock server,
// at one more read where the history really is empty from the start on.
func (s *Store) history(ctx context.Context, eid url.Values, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	out, err := s.historyOnce(ctx, eid, id, o, nil)
	if err != nil || len(out) > 0 || o.Order == store.Desc || o.StartValidTime == nil {
		return out, err
	}
	from := *o.StartValidTime
	o.StartValidTime = nil
	return s.historyOnce(ctx, eid, id, o, func(e store.HistoryEntry) bool { return !e.ValidTime.Before(from) })
}

// historyOnce is one history read (history), of the rows keep takes (all
// when nil). XTDB 1.24.5's history endpoint takes no limit
// (http_server/entity.clj): the answer is read row by row and the
// connection dropped after o.Limit rows kept, so a long history is not
// read whole for its first rows.
func (s *Store) historyOnce(ctx context.Context, eid url.Values, id string, o store.HistoryOptions, keep func(store.HistoryEntry) bool) ([]store.HistoryEntry, error) {
	if o.Basis.TxID != nil && *o.Basis.TxID < 0 {
		return nil, nil
	}
	order := "asc"
	if o.Order == store.Desc {
		order = "desc"
	}
	q := basisParams(maps.Clone(eid), o.Basis)
	q.Set("history", "true")
	q.Set("sort-order", order)
	q.Set("with-corrections", strconv.FormatBool(o.WithCorrections))
	q.Set("with-docs", strconv.FormatBool(o.WithDocs))
	setT := func(k string, t *time.Time) {
		if t != nil {
			q.Set(k, store.FormatTime(*t))
		}
	}
	setI := func(k string, v *int64) {
		if v != nil {
			q.Set(k, strconv.FormatInt(*v, 10))
		}
	}
	setT("start-valid-time", o.StartValidTime)
	setT("end-valid-time", o.EndValidTime)
	setI("start-tx-id", o.StartTxID)
	setI("end-tx-id", o.EndTxID)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // drops the connection when the rows wanted are read
	var body io.ReadCloser
	// XTDB answers a history read with a list, empty for an unknown entity,
	// never 404 (http_server/entity.clj search-entity-history): a 404 here
	// is an error (a wrong route or a proxy), not an empty history.
	_, err := s.read(ctx, request{op: "history", id: id, method: http.MethodGet, path: "/entity", query: q, accept: "application/edn", stream: &body})
	if errors.Is(err, store.ErrNotFound) {
		return nil, &store.Error{Op: "history", Kind: store.ErrUnavailable, ID: id, Msg: "XTDB answered 404 to an entity history read (it answers a list, empty when there is no history)", Err: err}
	}
	if err != nil {
		return nil, err
	}
	defer body.Close()
	sr := newSeqReader(body)
	var out []store.HistoryEntry
	for !o.Full(len(out)) {
		r, more, err := sr.next()
		if err != nil {
			return nil, &store.Error{Op: "history", Kind: store.ErrUnavailable, ID: id, Msg: "unexpected answer", Err: err}
		}
		if !more {
			break
		}
		m, ok := ednMap(r)
		if !ok {
			return nil, store.Errorf("history", store.ErrUnavailable, id, "history row is not a map")
		}
		e, err := historyRow(m, o.WithDocs)
		if err != nil {
			return nil, &store.Error{Op: "history", Kind: store.ErrUnavailable, ID: id, Err: err}
		}
		if keep == nil || keep(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Status implements store.Store.
func (s *Store) Status(ctx context.Context) (store.Status, error) {
	v, err := s.readEDN(ctx, request{op: "status", method: http.MethodGet, path: "/status"})
	if err != nil {
		return store.Status{}, err
	}
	m, _ := ednMap(v)
	detail := map[string]any{}
	for k, e := range m {
		if j, err := ednJSON(e); err == nil {
			detail[k] = j
		}
	}
	st := store.Status{Backend: "xtdb", Location: s.base, Detail: detail}
	st.Version, _ = m["xtdb.version/version"].(string)
	for _, x := range []struct {
		path string
		dst  **store.Tx
	}{{"/latest-completed-tx", &st.LatestCompleted}, {"/latest-submitted-tx", &st.LatestSubmitted}} {
		v, err := s.readEDN(ctx, request{op: "status", method: http.MethodGet, path: x.path})
		if errors.Is(err, store.ErrNotFound) || (err == nil && v == nil) {
			continue
		}
		if err != nil {
			return st, err
		}
		m, _ := ednMap(v)
		var tx store.Tx
		if tx.ID, err = ednInt(m["xtdb.api/tx-id"]); err != nil {
			return st, &store.Error{Op: "status", Kind: store.ErrUnavailable, Err: err}
		}
		if t, err := ednTime(m["xtdb.api/tx-time"]); err == nil {
			tx.Time = t // latest-submitted-tx carries no time
		}
		*x.dst = &tx
	}
	return st, nil
}

// evictionMarker reports whether v is the document XTDB keeps in place of
// an evicted one ({:xt/id #xtdb/id "<hash>", :xtdb.api/evicted? true};
// core/src/xtdb/kv/index_store.clj and codec.clj evicted-doc?, 1.24.5). A
// transaction that evicts and puts one entity (another client's: ctxstore
// refuses it) leaves it in the entity's history.
func evictionMarker(v any) bool {
	m, ok := v.(map[any]any)
	if !ok {
		return false
	}
	ev, _ := m[edn.Keyword("xtdb.api/evicted?")].(bool)
	return ev
}
