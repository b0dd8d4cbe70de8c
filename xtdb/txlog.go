package xtdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
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
// evicted documents) by entity hash (see EIDHash); their ids are resolved
// from the ids this client sent lately, the puts of the same page, and the
// entity's history on the node (see resolve), else given as
// UnknownIDPrefix + hash. Memory does not grow with the number of
// entities.
func (s *Store) TxLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, error) {
	raw, err := s.rawTxLog(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	// A delete or match usually comes soon after its entity's put.
	for _, r := range raw {
		for j, op := range r.ops {
			if op.Kind == store.OpPut && r.hashes[j] == "" && op.ID != "" {
				s.ids.add(op.ID)
			}
		}
	}
	// Hashes named from memory first; the others are looked up on the node,
	// several at a time, each once per page.
	var pending []lookup
	seen := map[string]bool{}
	for _, r := range raw {
		for j, h := range r.hashes {
			if h == "" {
				continue
			}
			op := &r.ops[j]
			if id, ok := op.Doc[store.IDKey].(string); ok && EIDHash(id) == h {
				op.ID = id // a match's expected document names its entity
				s.ids.add(id)
				continue
			}
			if e, ok := s.ids.get(h); ok && e.id != "" {
				op.ID = e.id
				continue
			}
			if !seen[h] {
				seen[h] = true
				vt := r.Time
				if op.ValidFrom != nil {
					vt = *op.ValidFrom
				}
				pending = append(pending, lookup{hash: h, hint: store.AtTx(r.ID-1, vt)})
			}
		}
	}
	found, err := s.resolveAll(ctx, pending)
	if err != nil {
		return nil, err
	}
	for _, r := range raw {
		for j, h := range r.hashes {
			if id, ok := found[h]; ok && r.ops[j].ID == "" {
				r.ops[j].ID = id
			}
		}
	}
	if err := s.markEvicted(ctx, raw); err != nil {
		return nil, err
	}
	out := make([]store.LoggedTx, len(raw))
	for i, r := range raw {
		out[i] = store.LoggedTx{Tx: r.Tx, Ops: r.ops}
	}
	return out, nil
}

// markEvicted takes the documents out of the page's put and match ops
// whose entity was evicted after them (by a later tx, or later in its
// own), marking them Evicted, as the store contract says (store.TxLog).
// The node's log alone does not tell: XTDB keeps documents by content
// hash, an evict replaces the entity's documents by eviction markers, and
// any later submission of the same content (a put, or a match expecting
// it, even in a transaction that aborts) stores the document again under
// that hash, so the log gives it back to every op naming it.
//
// An evict in the page shows itself; one after the page is found on the
// node: the entity was evicted after tx T exactly when no point of tx T or
// earlier is left (only an evict removes points, and points written after
// it have later txs). Per entity, one entity-tx read at its last op with
// a document tells: a put wrote a point at (its valid time, T), a match
// that held saw one at its valid time, so without an evict since some
// point is visible there. If none is, the entity's history up to T
// confirms it (a put whose range is empty writes no visible point).
func (s *Store) markEvicted(ctx context.Context, raw []rawTx) error {
	type at struct{ tx, op int }
	pending := map[string][]at{} // entity hash -> ops with a document since its last evict in the page
	evict := func(ps []at) {
		for _, p := range ps {
			op := &raw[p.tx].ops[p.op]
			op.Doc, op.Evicted = nil, true
		}
	}
	for i, r := range raw {
		for j, op := range r.ops {
			switch {
			case op.Kind == store.OpEvict:
				h := r.hashes[j]
				evict(pending[h])
				delete(pending, h)
			case (op.Kind == store.OpPut || op.Kind == store.OpMatch) && op.Doc != nil && !op.Evicted &&
				op.ID != "" && !strings.HasPrefix(op.ID, UnknownIDPrefix):
				h := EIDHash(op.ID)
				pending[h] = append(pending[h], at{i, j})
			}
		}
	}
	if len(pending) == 0 {
		return nil
	}
	type check struct {
		hash string
		id   string
		tx   int64
		vt   time.Time
	}
	var checks []check
	var last int64
	for h, ps := range pending {
		p := ps[len(ps)-1]
		r, op := raw[p.tx], raw[p.tx].ops[p.op]
		vt := r.Time
		if op.ValidFrom != nil {
			vt = *op.ValidFrom
		}
		checks = append(checks, check{h, op.ID, r.ID, vt})
		last = max(last, r.ID)
	}
	// The page's transactions are in the log; reads at their basis need
	// them indexed.
	if _, err := s.AwaitTx(ctx, last, 0); err != nil {
		return err
	}
	gone := make([]bool, len(checks))
	err := parallel(ctx, len(checks), func(ctx context.Context, k int) error {
		c := checks[k]
		var err error
		gone[k], err = s.evictedAfter(ctx, c.id, c.tx, c.vt)
		return err
	})
	if err != nil {
		return err
	}
	for k, c := range checks {
		if gone[k] {
			evict(pending[c.hash])
			continue
		}
		// A put whose valid time range is empty wrote no point: the
		// last op's point may be of a later tx, so such a put is kept
		// only if the entity had a point of its tx or earlier.
		for _, p := range pending[c.hash] {
			r, op := raw[p.tx], &raw[p.tx].ops[p.op]
			if op.Kind != store.OpPut || op.ValidTo == nil {
				continue
			}
			from := r.Time
			if op.ValidFrom != nil {
				from = *op.ValidFrom
			}
			if op.ValidTo.After(from) {
				continue
			}
			none, err := s.noPointBy(ctx, op.ID, r.ID)
			if err != nil {
				return err
			}
			if none {
				op.Doc, op.Evicted = nil, true
			}
		}
	}
	return nil
}

// noPointBy reports whether entity id has no point of tx txID or earlier.
func (s *Store) noPointBy(ctx context.Context, id string, txID int64) (bool, error) {
	end := txID + 1
	rows, err := s.history(ctx, url.Values{"eid": {id}}, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, EndTxID: &end,
		Basis: store.Basis{ValidTime: store.FarFuture}})
	if err != nil {
		return false, err
	}
	return len(rows) == 0, nil
}

// evictedAfter reports whether entity id was evicted after tx txID, given
// that it had a point visible at valid time vt as of that tx then.
func (s *Store) evictedAfter(ctx context.Context, id string, txID int64, vt time.Time) (bool, error) {
	_, err := s.entityTx(ctx, id, store.AtTx(txID, vt))
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return s.noPointBy(ctx, id, txID)
}

// parallel runs f(0..n-1), resolveWorkers at a time, and returns the
// first error (the others are cancelled).
func parallel(ctx context.Context, n int, f func(ctx context.Context, k int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, resolveWorkers)
	for k := range n {
		sem <- struct{}{}
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(ctx, k); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// lookup is an id hash to resolve, with where its entity probably had a
// document (see resolve).
type lookup struct {
	hash string
	hint store.Basis
}

// resolveWorkers bounds the lookups of one TxLog call run at once.
const resolveWorkers = 8

// resolveAll resolves every hash of ls, resolveWorkers at a time.
func (s *Store) resolveAll(ctx context.Context, ls []lookup) (map[string]string, error) {
	found := make(map[string]string, len(ls))
	var mu sync.Mutex
	err := parallel(ctx, len(ls), func(ctx context.Context, k int) error {
		id, err := s.resolve(ctx, ls[k].hash, &ls[k].hint)
		if err != nil {
			return err
		}
		mu.Lock()
		found[ls[k].hash] = id
		mu.Unlock()
		return nil
	})
	return found, err
}

// rawTxLog reads up to limit transactions (0: all) after tx after.
// XTDB's HTTP module takes no limit: /tx-log answers the whole rest of the
// log, streamed. The answer is read element by element and the connection
// dropped after the page, so memory and transfer stay bounded by the page.
func (s *Store) rawTxLog(ctx context.Context, after int64, limit int) ([]rawTx, error) {
	q := url.Values{"with-ops?": {"true"}}
	if after >= 0 {
		q.Set("after-tx-id", strconv.FormatInt(after, 10))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // drops the connection when the page is read
	var body io.ReadCloser
	if _, err := s.read(ctx, request{op: "tx-log", method: http.MethodGet, path: "/tx-log", query: q, accept: "application/edn", stream: &body}); err != nil {
		return nil, err
	}
	defer body.Close()
	sr := newSeqReader(body)
	var out []rawTx
	for limit <= 0 || len(out) < limit {
		r, more, err := sr.next()
		if err != nil {
			return nil, &store.Error{Op: "tx-log", Kind: store.ErrUnavailable, Msg: "reading the tx log", Err: err}
		}
		if !more {
			break
		}
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
			// XTDB's eviction marker: {:crux.db/id #xtdb/id "<hash>",
			// :xtdb.api/evicted? true} (kv/index_store.clj, 1.24.5).
			hash, op.Evicted = evictedHash(m), true
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
			// eviction marker: there is no document to give back, and the
			// match does not assert absence.
			if m, isMap := ednMap(vec[2]); isMap {
				if ev, _ := m["xtdb.api/evicted?"].(bool); ev {
					op.Evicted = true
				} else if op.Doc, err = ednDoc(vec[2]); err != nil {
					return op, "", err
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

// evictedHash is the entity hash of an eviction marker document, which
// XTDB 1.24.5 writes with the legacy :crux.db/id key.
func evictedHash(m map[string]any) string {
	for _, k := range []string{"crux.db/id", "xt/id"} {
		if h := ednHash(m[k]); h != "" {
			return h
		}
	}
	return ""
}
