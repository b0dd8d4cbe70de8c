package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Model is a deliberately naive, in-memory executable model of the store
// rules (XTDB 1.24.5's, see docs/xtdb-semantics.md): every read scans every
// point. It is the oracle the differential runner compares a real backend
// with until a real XTDB server is at hand, and it is itself checked by the
// conformance suite. It is not meant for anything but tests.
type Model struct {
	mu      sync.Mutex
	now     func() time.Time
	txs     []modelTx
	points  map[string][]point
	docs    map[string]store.Doc
	evicted map[string]int64 // entity -> tx id of its last evict
	closed  bool
}

type modelTx struct {
	store.Tx
	ops       []store.Op
	committed bool
}

// point is one (entity, valid time, tx) entry; hash "" is a tombstone.
type point struct {
	vt, tx, tt int64
	hash       string
}

var _ store.Store = (*Model)(nil)

// NewModel returns an empty model using clock for tx times and "now" (nil:
// time.Now).
func NewModel(clock func() time.Time) *Model {
	if clock == nil {
		clock = time.Now
	}
	return &Model{now: clock, points: map[string][]point{}, docs: map[string]store.Doc{}, evicted: map[string]int64{}}
}

func ms(t time.Time) int64     { return t.UnixMilli() }
func fromMS(m int64) time.Time { return time.UnixMilli(m).UTC() }
func modelHash(d store.Doc) string {
	c, err := store.Canonical(d)
	if err != nil {
		panic(err)
	}
	h := sha256.Sum256(c)
	return hex.EncodeToString(h[:])
}

// Submit implements store.Store.
func (m *Model) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	ops, err := store.Normalize(ops)
	if err != nil {
		return store.Tx{}, err
	}
	if err := store.CheckReserved(ctx, ops); err != nil {
		return store.Tx{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return store.Tx{}, store.Errorf("submit", store.ErrUnavailable, "", "store is closed")
	}
	tt := ms(m.now())
	if n := len(m.txs); n > 0 && ms(m.txs[n-1].Time) > tt {
		tt = ms(m.txs[n-1].Time)
	}
	tx := store.Tx{ID: int64(len(m.txs)), Time: fromMS(tt)}
	work := map[string][]point{}
	get := func(id string) []point {
		if p, ok := work[id]; ok {
			return p
		}
		return slices.Clone(m.points[id])
	}
	var evicts []string
	newDocs := map[string]store.Doc{}
	committed := true
	for _, op := range ops {
		pts := get(op.ID)
		switch op.Kind {
		case store.OpPut, store.OpDelete:
			h := ""
			if op.Kind == store.OpPut {
				h = modelHash(op.Doc)
				newDocs[h] = op.Doc
			}
			start := tt
			if op.ValidFrom != nil {
				start = ms(*op.ValidFrom)
			}
			var end *int64
			if op.ValidTo != nil {
				e := ms(*op.ValidTo)
				end = &e
			}
			work[op.ID] = writeRange(pts, start, end, tx.ID, tt, h)
		case store.OpMatch:
			at := tt
			if op.ValidFrom != nil {
				at = ms(*op.ValidFrom)
			}
			cur := ""
			if p := visible(pts, at, tx.ID); p != nil {
				cur = p.hash
			}
			want := ""
			if op.Doc != nil {
				want = modelHash(op.Doc)
			}
			if cur != want {
				committed = false
			}
		case store.OpEvict:
			work[op.ID] = nil
			evicts = append(evicts, op.ID)
		}
		if !committed {
			break
		}
	}
	m.txs = append(m.txs, modelTx{Tx: tx, ops: ops, committed: committed})
	if committed {
		for id, p := range work {
			m.points[id] = p
		}
		for h, d := range newDocs {
			m.docs[h] = d
		}
		for _, id := range evicts {
			m.evicted[id] = tx.ID
			if len(m.points[id]) == 0 {
				delete(m.points, id)
			}
		}
	}
	return tx, nil
}

// visible is the point of pts seen at valid time vt as of tx: the greatest
// valid time at or before vt among points of tx <= tx, the latest tx
// breaking ties. It returns nil if there is none; a tombstone is returned.
func visible(pts []point, vt, tx int64) *point {
	var best *point
	for i := range pts {
		p := &pts[i]
		if p.vt > vt || p.tx > tx {
			continue
		}
		if best == nil || p.vt > best.vt || (p.vt == best.vt && p.tx > best.tx) {
			best = p
		}
	}
	return best
}

// winners returns, for each valid time, the point with the latest tx,
// ascending by valid time.
func winners(pts []point) []point {
	byVT := map[int64]point{}
	for _, p := range pts {
		if w, ok := byVT[p.vt]; !ok || p.tx > w.tx {
			byVT[p.vt] = p
		}
	}
	out := make([]point, 0, len(byVT))
	for _, p := range byVT {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b point) int { return cmp64(a.vt, b.vt) })
	return out
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// put replaces the point at (vt, tx) or adds it.
func put(pts []point, p point) []point {
	for i := range pts {
		if pts[i].vt == p.vt && pts[i].tx == p.tx {
			pts[i] = p
			return pts
		}
	}
	return append(pts, p)
}

// writeRange applies a put (hash != "") or delete (hash == "") of valid
// range [start, end) (end nil: open-ended) by transaction tx at time tt.
func writeRange(pts []point, start int64, end *int64, tx, tt int64, hash string) []point {
	vts := []int64{start}
	if end == nil {
		// Open-ended: also rewrite the points after start that continue the
		// version visible at start (same tx and hash); a tombstone has no
		// continuation.
		if vis := visible(pts, start, tx); vis != nil && vis.hash != "" {
			v := *vis
			for _, w := range winners(pts) {
				if w.vt <= start {
					continue
				}
				if w.tx != v.tx || w.tt != v.tt || w.hash != v.hash {
					break
				}
				vts = append(vts, w.vt)
			}
		}
		for _, vt := range vts {
			pts = put(pts, point{vt: vt, tx: tx, tt: tt, hash: hash})
		}
		return pts
	}
	e := *end
	if e == start {
		return pts
	}
	ws := winners(pts)
	var restore *point
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		if w.vt > e {
			continue
		}
		if restore == nil {
			restore = &ws[i]
		}
		if w.vt <= start {
			break
		}
		if w.vt != e {
			vts = append(vts, w.vt)
		}
	}
	for _, vt := range vts {
		if vt != e {
			pts = put(pts, point{vt: vt, tx: tx, tt: tt, hash: hash})
		}
	}
	if restore != nil {
		r := *restore
		r.vt = e
		pts = put(pts, r)
	} else {
		pts = put(pts, point{vt: e, tx: tx, tt: tt})
	}
	return pts
}
