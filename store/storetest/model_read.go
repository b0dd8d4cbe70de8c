package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// resolve turns a basis into (valid time ms, tx id); tx -1 means "before
// any transaction".
func (m *Model) resolve(op string, b store.Basis) (int64, int64, error) {
	if m.closed {
		return 0, 0, store.Errorf(op, store.ErrUnavailable, "", "store is closed")
	}
	vt := ms(m.now())
	if !b.ValidTime.IsZero() {
		vt = ms(b.ValidTime)
	}
	latest := int64(len(m.txs) - 1)
	switch {
	case b.TxID != nil:
		if *b.TxID > latest {
			return 0, 0, store.Errorf(op, store.ErrInvalid, "", "basis tx is after the latest transaction")
		}
		return vt, *b.TxID, nil
	case b.TxTime != nil:
		t := ms(*b.TxTime)
		if latest < 0 || t > ms(m.txs[latest].Time) {
			return 0, 0, store.Errorf(op, store.ErrInvalid, "", "basis tx time is after the latest transaction")
		}
		tx := int64(-1)
		for _, x := range m.txs {
			if ms(x.Time) <= t {
				tx = x.ID
			}
		}
		return vt, tx, nil
	}
	return vt, latest, nil
}

// AwaitTx implements store.Store: the model indexes synchronously.
func (m *Model) AwaitTx(ctx context.Context, txID int64, timeout time.Duration) (store.Tx, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return store.Tx{}, store.Errorf("await", store.ErrUnavailable, "", "store is closed")
	}
	if txID >= int64(len(m.txs)) || txID < 0 {
		return store.Tx{}, store.Errorf("await", store.ErrUnavailable, "", "transaction not submitted")
	}
	return m.txs[len(m.txs)-1].Tx, nil
}

// TxCommitted implements store.Store.
func (m *Model) TxCommitted(ctx context.Context, txID int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, store.Errorf("tx-committed", store.ErrUnavailable, "", "store is closed")
	}
	if txID < 0 || txID >= int64(len(m.txs)) {
		return false, store.Errorf("tx-committed", store.ErrNotFound, "", "no such transaction")
	}
	return m.txs[txID].committed, nil
}

// Entity implements store.Store.
func (m *Model) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if err := store.CheckReadID("entity", id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vt, tx, err := m.resolve("entity", b)
	if err != nil {
		return nil, err
	}
	p := visible(m.points[id], vt, tx)
	if p == nil || p.hash == "" {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document at this basis")
	}
	return m.docs[p.hash], nil
}

// EntityTx implements store.Store.
func (m *Model) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	if err := store.CheckReadID("entity-tx", id); err != nil {
		return store.EntityTx{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vt, tx, err := m.resolve("entity-tx", b)
	if err != nil {
		return store.EntityTx{}, err
	}
	p := visible(m.points[id], vt, tx)
	if p == nil {
		return store.EntityTx{}, store.Errorf("entity-tx", store.ErrNotFound, id, "no point at this basis")
	}
	return store.EntityTx{ID: id, ValidTime: fromMS(p.vt), TxID: p.tx, TxTime: fromMS(p.tt), ContentHash: p.hash, Deleted: p.hash == ""}, nil
}

// History implements store.Store, with XTDB's bounds: see store.Store.
func (m *Model) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	if err := store.CheckReadID("history", id); err != nil {
		return nil, err
	}
	if err := o.Validate(id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vt, tx, err := m.resolve("history", o.Basis)
	if err != nil {
		return nil, err
	}
	pts := slices.Clone(m.points[id])
	desc := o.Order == store.Desc
	slices.SortFunc(pts, func(a, b point) int {
		c := cmp64(a.vt, b.vt)
		if c == 0 {
			c = cmp64(a.tx, b.tx)
		}
		if desc {
			return -c
		}
		return c
	})
	in := func(p point) bool {
		if desc {
			hiVT := min(opt(o.StartValidTime, vt), vt)
			hiTx := min(optTx(o.StartTxID, tx), tx)
			return p.vt <= hiVT && p.tx <= hiTx &&
				(o.EndValidTime == nil || p.vt > ms(*o.EndValidTime)) &&
				(o.EndTxID == nil || p.tx > *o.EndTxID)
		}
		endVT := min(opt(o.EndValidTime, vt+1), vt+1)
		endTx := min(optTx(o.EndTxID, tx+1), tx+1)
		return p.vt < endVT && p.tx < endTx &&
			(o.StartValidTime == nil || p.vt >= ms(*o.StartValidTime)) &&
			(o.StartTxID == nil || p.tx >= *o.StartTxID)
	}
	var rows []point
	for _, p := range pts {
		if !in(p) {
			continue
		}
		if !o.WithCorrections && len(rows) > 0 && rows[len(rows)-1].vt == p.vt {
			if !desc { // ascending keeps the last (latest tx) per valid time
				rows[len(rows)-1] = p
			}
			continue
		}
		rows = append(rows, p)
	}
	if o.Limit > 0 && len(rows) > o.Limit {
		rows = rows[:o.Limit]
	}
	out := make([]store.HistoryEntry, 0, len(rows))
	for _, p := range rows {
		e := store.HistoryEntry{ValidTime: fromMS(p.vt), TxID: p.tx, TxTime: fromMS(p.tt), ContentHash: p.hash, Deleted: p.hash == ""}
		if o.WithDocs && p.hash != "" {
			e.Doc = m.docs[p.hash]
		}
		out = append(out, e)
	}
	return out, nil
}

func opt(t *time.Time, def int64) int64 {
	if t == nil {
		return def
	}
	return ms(*t)
}

func optTx(t *int64, def int64) int64 {
	if t == nil {
		return def
	}
	return *t
}

// Query implements store.Store by scanning every entity.
func (m *Model) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vt, tx, err := m.resolve("query", q.Basis)
	if err != nil {
		return nil, err
	}
	at := func(id string) store.Doc {
		if p := visible(m.points[id], vt, tx); p != nil && p.hash != "" {
			return m.docs[p.hash]
		}
		return nil
	}
	var docs []store.Doc
	for id := range m.points {
		if d := at(id); d != nil && MatchDoc(d, q.Where, at) {
			docs = append(docs, d)
		}
	}
	return FinishQuery(docs, q), nil
}

// TxLog implements store.Store.
func (m *Model) TxLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, store.Errorf("tx-log", store.ErrUnavailable, "", "store is closed")
	}
	var out []store.LoggedTx
	for _, t := range m.txs {
		if t.ID <= after || !t.committed {
			continue
		}
		ops := slices.Clone(t.ops)
		for i := range ops {
			if ops[i].Doc == nil {
				continue
			}
			// Evicted since, or (a put whose valid time range is empty)
			// no point of this tx or earlier left: store.Store.TxLog.
			ev, ok := m.evicted[ops[i].ID]
			if ok && t.ID <= ev || !slices.ContainsFunc(m.points[ops[i].ID], func(p point) bool { return p.tx <= t.ID }) {
				ops[i].Doc, ops[i].Evicted = nil, true
			}
		}
		out = append(out, store.LoggedTx{Tx: t.Tx, Ops: ops})
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// Status implements store.Store.
func (m *Model) Status(ctx context.Context) (store.Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return store.Status{}, store.Errorf("status", store.ErrUnavailable, "", "store is closed")
	}
	st := store.Status{Backend: "model", Version: "1"}
	if n := len(m.txs); n > 0 {
		t := m.txs[n-1].Tx
		st.LatestCompleted, st.LatestSubmitted = &t, &t
	}
	return st, nil
}

// Close implements store.Store.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
