package xtdb

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// rawTx is one transaction of the server's log, with the entity hash of
// each op whose id the log does not spell out.
type rawTx struct {
	store.Tx
	ops    []store.Op
	hashes []string // per op: the eid hash when ops[i].ID is unknown
}

// TxLog implements store.Store with /tx-log, read as EDN so that times keep
// their milliseconds. XTDB logs delete, evict and match ops (and puts of
// evicted documents) by entity hash; their ids are resolved from the ids
// this client sent and the documents in the log (see EIDHash), else given
// as UnknownIDPrefix + hash.
func (s *Store) TxLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, error) {
	raw, err := s.rawTxLog(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]store.LoggedTx, len(raw))
	for i, r := range raw {
		for j, h := range r.hashes {
			if h == "" {
				continue
			}
			if r.ops[j].ID, err = s.resolve(ctx, h); err != nil {
				return nil, err
			}
		}
		out[i] = store.LoggedTx{Tx: r.Tx, Ops: r.ops}
	}
	return out, nil
}

func (s *Store) rawTxLog(ctx context.Context, after int64, limit int) ([]rawTx, error) {
	q := url.Values{"with-ops?": {"true"}}
	if after >= 0 {
		q.Set("after-tx-id", strconv.FormatInt(after, 10))
	}
	if limit > 0 {
		// ctxstore's HTTP front pages with it; XTDB's own module ignores it
		// and the cut below applies.
		q.Set("limit", strconv.Itoa(limit))
	}
	v, err := s.readEDN(ctx, request{op: "tx-log", method: http.MethodGet, path: "/tx-log", query: q})
	if err != nil {
		return nil, err
	}
	rows, ok := v.([]any)
	if !ok && v != nil {
		return nil, store.Errorf("tx-log", store.ErrUnavailable, "", fmt.Sprintf("unexpected answer %T", v))
	}
	var out []rawTx
	for _, r := range rows {
		m, ok := ednMap(r)
		if !ok {
			return nil, store.Errorf("tx-log", store.ErrUnavailable, "", "tx-log row is not a map")
		}
		tx, err := txFromEDN(r)
		if err != nil {
			return nil, &store.Error{Op: "tx-log", Kind: store.ErrUnavailable, Err: err}
		}
		s.seen(tx.ID)
		rt := rawTx{Tx: tx}
		ops, _ := m["xtdb.api/tx-ops"].([]any)
		for i, o := range ops {
			op, hash, err := opFromEDN(o)
			if err != nil {
				return nil, &store.Error{Op: "tx-log", Kind: store.ErrUnavailable, OpIndex: i + 1, Msg: fmt.Sprintf("tx %d", tx.ID), Err: err}
			}
			rt.ops = append(rt.ops, op)
			rt.hashes = append(rt.hashes, hash)
		}
		out = append(out, rt)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// opFromEDN reads one logged op: [:xtdb.api/put doc vt? vt?],
// [:xtdb.api/delete #xtdb/id vt? vt?], [:xtdb.api/match #xtdb/id doc|#xtdb/id vt?],
// [:xtdb.api/evict #xtdb/id]. It returns the entity hash when the op does
// not carry its id.
func opFromEDN(v any) (store.Op, string, error) {
	vec, ok := v.([]any)
	if !ok || len(vec) < 2 {
		return store.Op{}, "", fmt.Errorf("op is not a vector")
	}
	times := func(from int) (*time.Time, *time.Time, error) {
		var ts [2]*time.Time
		for i := 0; i < 2 && from+i < len(vec); i++ {
			if vec[from+i] == nil {
				continue
			}
			t, err := ednTime(vec[from+i])
			if err != nil {
				return nil, nil, err
			}
			ts[i] = &t
		}
		return ts[0], ts[1], nil
	}
	var op store.Op
	var hash string
	var err error
	switch kind := keyName(vec[0]); kind {
	case "xtdb.api/put":
		op.Kind = store.OpPut
		m, _ := ednMap(vec[1])
		if ev, _ := m["xtdb.api/evicted?"].(bool); ev {
			hash = ednHash(m["xt/id"])
		} else {
			if op.Doc, err = ednDoc(vec[1]); err != nil {
				return op, "", err
			}
			op.ID, _ = op.Doc[store.IDKey].(string)
		}
		op.ValidFrom, op.ValidTo, err = times(2)
	case "xtdb.api/delete":
		op.Kind, hash = store.OpDelete, ednHash(vec[1])
		op.ValidFrom, op.ValidTo, err = times(2)
	case "xtdb.api/match":
		op.Kind, hash = store.OpMatch, ednHash(vec[1])
		if len(vec) > 2 {
			// An expected document that was evicted since reads as the
			// eviction marker: there is no document to give back.
			if m, isMap := ednMap(vec[2]); isMap {
				if ev, _ := m["xtdb.api/evicted?"].(bool); !ev {
					if op.Doc, err = ednDoc(vec[2]); err != nil {
						return op, "", err
					}
				}
			}
		}
		op.ValidFrom, _, err = times(3)
	case "xtdb.api/evict":
		op.Kind, hash = store.OpEvict, ednHash(vec[1])
	default:
		return op, "", fmt.Errorf("unknown op %s", kind)
	}
	return op, hash, err
}
