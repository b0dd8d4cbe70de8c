// Package sqlcore is the part of the SQL layer that the SQLite backend
// (bitemporal) and the PostgreSQL backend (bitemporal/postgres) share: the
// reads whose logic does not depend on the dialect, written once with the
// dialect's placeholders as a parameter (sqlx bind types). Both backends
// keep the same tables for it (txs, points; migrations/ and
// migrations/postgres/): a point is (ent, vt, tx_id, tx_time, doc), times
// in milliseconds since the epoch.
package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/store"
)

// Queryer runs a query for one row (a *sqlx.DB, *sqlx.Tx or *sqlx.Conn).
type Queryer interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}

// UnboundedTx is a tx bound above every tx id (with room for +1): the tx
// bound of the latest basis, where every point was written by a committed
// transaction.
const UnboundedTx = int64(1) << 62

// Known caches the latest tx id known to exist. It only grows and never
// passes the truth, so a basis at or below it is valid without asking the
// database. The zero value knows of no transaction.
type Known struct{ next atomic.Int64 } // the id + 1

// Load returns the latest tx id known, -1 for none.
func (k *Known) Load() int64 { return k.next.Load() - 1 }

// Note records that tx id exists.
func (k *Known) Note(id int64) {
	for {
		cur := k.next.Load()
		if id+1 <= cur || k.next.CompareAndSwap(cur, id+1) {
			return
		}
	}
}

// Latest returns the latest transaction, nil if there is none.
func Latest(ctx context.Context, q Queryer) (*store.Tx, error) {
	var row struct {
		ID   int64 `db:"tx_id"`
		Time int64 `db:"tx_time"`
	}
	err := q.GetContext(ctx, &row, "SELECT tx_id, tx_time FROM txs ORDER BY tx_id DESC LIMIT 1")
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &store.Tx{ID: row.ID, Time: time.UnixMilli(row.Time).UTC()}, nil
}

// Reader is what a backend's reads share: its dialect's placeholders
// (sqlx.QUESTION, sqlx.DOLLAR), its clock, the latest tx id it knows,
// and how it turns a database error into a store error.
type Reader struct {
	Bind  int
	Now   func() time.Time
	Known *Known
	DBErr func(op, id string, err error) error
}

// Resolve turns a basis into a valid time and a tx id (-1: before any
// transaction), checking the basis is not beyond the latest transaction.
func (r Reader) Resolve(ctx context.Context, q Queryer, op string, b store.Basis) (vt, tx int64, err error) {
	vt = r.Now().UnixMilli()
	if !b.ValidTime.IsZero() {
		vt = b.ValidTime.UnixMilli()
	}
	switch {
	case b.TxID != nil:
		if *b.TxID > r.Known.Load() {
			last, err := Latest(ctx, q)
			if err != nil {
				return 0, 0, r.DBErr(op, "", err)
			}
			if last != nil {
				r.Known.Note(last.ID)
			}
			if latest := r.Known.Load(); *b.TxID > latest {
				return 0, 0, store.Errorf(op, store.ErrInvalid, "", fmt.Sprintf("basis tx %d is after the latest transaction (%d)", *b.TxID, latest))
			}
		}
		return vt, *b.TxID, nil
	case b.TxTime != nil:
		last, err := Latest(ctx, q)
		if err != nil {
			return 0, 0, r.DBErr(op, "", err)
		}
		t := b.TxTime.UnixMilli()
		if last == nil || t > last.Time.UnixMilli() {
			return 0, 0, store.Errorf(op, store.ErrInvalid, "", fmt.Sprintf("basis tx time %s is after the latest transaction", store.FormatTime(*b.TxTime)))
		}
		var id sql.NullInt64
		if err := q.GetContext(ctx, &id, sqlx.Rebind(r.Bind, "SELECT max(tx_id) FROM txs WHERE tx_time <= ?"), t); err != nil {
			return 0, 0, r.DBErr(op, "", err)
		}
		if !id.Valid {
			return vt, -1, nil
		}
		return vt, id.Int64, nil
	}
	return vt, UnboundedTx, nil
}

// HistoryWhere gives the conditions on points p of a history read with
// options o at the resolved basis (vt, tx), in XTDB's bounds (see
// store.Store.History), as " AND ..." with ? placeholders (sqlx.Rebind
// turns them into the dialect's), and their arguments.
func HistoryWhere(o store.HistoryOptions, vt, tx int64) (string, []any) {
	var where string
	var args []any
	add := func(cond string, v int64) {
		where += " AND " + cond
		args = append(args, v)
	}
	if o.Order == store.Desc {
		add("p.vt <= ?", min(optMS(o.StartValidTime, vt), vt))
		add("p.tx_id <= ?", min(optInt(o.StartTxID, tx), tx))
		if o.EndValidTime != nil {
			add("p.vt > ?", o.EndValidTime.UnixMilli())
		}
		if o.EndTxID != nil {
			add("p.tx_id > ?", *o.EndTxID)
		}
	} else {
		add("p.vt < ?", min(optMS(o.EndValidTime, vt+1), vt+1))
		add("p.tx_id < ?", min(optInt(o.EndTxID, tx+1), tx+1))
		if o.StartValidTime != nil {
			add("p.vt >= ?", o.StartValidTime.UnixMilli())
		}
		if o.StartTxID != nil {
			add("p.tx_id >= ?", *o.StartTxID)
		}
	}
	return where, args
}

// HistoryOrder is the ORDER BY of a history read: valid time, then tx id,
// in the read's direction.
func HistoryOrder(o store.HistoryOptions) string {
	if o.Order == store.Desc {
		return " ORDER BY p.vt DESC, p.tx_id DESC"
	}
	return " ORDER BY p.vt ASC, p.tx_id ASC"
}

// History collects the entries of a history read from its points, read in
// HistoryOrder: without corrections one entry per valid time, its latest
// tx; at most o.Limit entries.
type History struct {
	o   store.HistoryOptions
	out []store.HistoryEntry
}

// NewHistory starts the entries of a read with options o.
func NewHistory(o store.HistoryOptions) *History { return &History{o: o} }

// Add takes the next point read. It reports false, and takes nothing,
// when the read has all the entries it needs: the caller stops reading.
func (h *History) Add(e store.HistoryEntry) bool {
	if n := len(h.out); !h.o.WithCorrections && n > 0 && h.out[n-1].ValidTime.Equal(e.ValidTime) {
		if h.o.Order != store.Desc { // ascending keeps the latest tx of each valid time
			h.out[n-1] = e
		}
		return true
	}
	if h.o.Full(len(h.out)) {
		return false
	}
	h.out = append(h.out, e)
	return true
}

// Entries returns the entries collected.
func (h *History) Entries() []store.HistoryEntry { return h.out }

func optMS(t *time.Time, def int64) int64 {
	if t == nil {
		return def
	}
	return t.UnixMilli()
}

func optInt(t *int64, def int64) int64 {
	if t == nil {
		return def
	}
	return *t
}

// AwaitTx checks that txID was submitted and returns the latest
// transaction: a backend indexes a transaction as it commits it.
func (r Reader) AwaitTx(ctx context.Context, q Queryer, txID int64) (store.Tx, error) {
	last, err := Latest(ctx, q)
	if err != nil {
		return store.Tx{}, r.DBErr("await", "", err)
	}
	if last == nil || last.ID < txID {
		return store.Tx{}, store.Errorf("await", store.ErrUnavailable, "", fmt.Sprintf("transaction %d has not been submitted", txID))
	}
	return *last, nil
}

// TxCommitted reports whether transaction txID committed; ErrNotFound
// when there is none.
func (r Reader) TxCommitted(ctx context.Context, q Queryer, txID int64) (bool, error) {
	var ok bool
	err := q.GetContext(ctx, &ok, sqlx.Rebind(r.Bind, "SELECT committed FROM txs WHERE tx_id = ?"), txID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, store.Errorf("tx-committed", store.ErrNotFound, "", fmt.Sprintf("no transaction %d", txID))
	}
	return ok, r.DBErr("tx-committed", "", err)
}

// DecodeStored decodes a document as stored (its canonical JSON) for
// entity id; a document that does not decode is corrupt.
func DecodeStored(raw, id string) (store.Doc, error) {
	doc, err := store.DecodeStored([]byte(raw))
	if err != nil {
		return nil, &store.Error{Op: "read", Kind: store.ErrInvalid, ID: id, Msg: "stored document is corrupt", Err: err}
	}
	return doc, nil
}

// Point is a row of points: one version of an entity from valid time VT
// on, written by transaction TxID at TT, naming document Doc (nil: a
// tombstone) whose content hash is Hash.
type Point struct {
	VT   int64   `db:"vt"`
	TxID int64   `db:"tx_id"`
	TT   int64   `db:"tx_time"`
	Hash *string `db:"hash"`
	Doc  *int64  `db:"doc"`
}

// Same reports whether q continues p's version: the same transaction and
// content.
func (p Point) Same(q Point) bool {
	return p.TxID == q.TxID && p.TT == q.TT && str(p.Hash) == str(q.Hash)
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Winners filters points read by valid time, the latest tx first within
// one valid time: it reports true for the first point of each valid time,
// the one that wins it.
func Winners() func(Point) bool {
	first, last := true, int64(0)
	return func(p Point) bool {
		if !first && p.VT == last {
			return false // an earlier tx at this valid time
		}
		first, last = false, p.VT
		return true
	}
}

// RangePoints is the rule of a write over valid times [start, end), start
// < end. winners calls fn with the winning point of each valid time <= end,
// the latest valid time first, until fn returns false. The write puts the
// new version at start and at every winner's valid time inside the range
// (vts), and at end restores the version visible there before the write
// (restore; nil when none was: a tombstone).
func RangePoints(start, end int64, winners func(fn func(Point) bool) error) (vts []int64, restore *Point, err error) {
	vts = []int64{start}
	err = winners(func(r Point) bool {
		if restore == nil {
			rr := r
			restore = &rr
		}
		if r.VT <= start {
			return false
		}
		if r.VT != end {
			vts = append(vts, r.VT)
		}
		return true
	})
	return vts, restore, err
}

// LoggedOp is how an op is kept in the txs table (its column ops, a JSON
// array): its document by content hash.
type LoggedOp struct {
	Kind store.OpKind `json:"op"`
	ID   string       `json:"id"`
	Hash string       `json:"hash,omitempty"`
	// Doc holds a match op's expected document inline (the SQLite store;
	// put documents are referenced by Hash). An evict of the entity
	// removes it and sets Evicted, so evicted content is gone from the
	// file.
	Doc       json.RawMessage `json:"doc,omitempty"`
	Evicted   bool            `json:"evicted,omitempty"`
	ValidFrom *int64          `json:"vf,omitempty"`
	ValidTo   *int64          `json:"vt,omitempty"`
}

// TxLogChunk bounds the hashes looked up by one query of TxLogPage.
const TxLogChunk = 500

// LogReader is what TxLogPage reads, all in the read transaction of the
// page (so that an evict in between cannot split it). Its errors are the
// backend's store errors, returned as they are.
type LogReader struct {
	// DocsByHash returns the documents (canonical JSON) of content hashes,
	// at most TxLogChunk of them; a hash with no document left is missing.
	DocsByHash func(hashes []string) (map[string]json.RawMessage, error)
	// FirstTx returns the least tx id of an entity's points; not Valid
	// when it has none.
	FirstTx func(id string) (sql.NullInt64, error)
}

// TxLogPage turns a page of the tx log, its transactions and their logged
// ops, into the ops and their documents as store.TxLog gives them.
func TxLogPage(txs []store.Tx, logged [][]LoggedOp, r LogReader) ([]store.LoggedTx, [][]json.RawMessage, error) {
	type docRef struct {
		tx, op int
		hash   string
	}
	out := make([]store.LoggedTx, len(txs))
	docs := make([][]json.RawMessage, len(txs))
	// Documents by hash, read for the whole page at once.
	byHash := map[string]json.RawMessage{}
	var hashes []string
	var refs []docRef
	for i, tx := range txs {
		out[i] = store.LoggedTx{Tx: tx, Ops: make([]store.Op, len(logged[i]))}
		docs[i] = make([]json.RawMessage, len(logged[i]))
		for j, l := range logged[i] {
			op := store.Op{Kind: l.Kind, ID: l.ID, Evicted: l.Evicted}
			if l.ValidFrom != nil {
				t := time.UnixMilli(*l.ValidFrom).UTC()
				op.ValidFrom = &t
			}
			if l.ValidTo != nil {
				t := time.UnixMilli(*l.ValidTo).UTC()
				op.ValidTo = &t
			}
			if len(l.Doc) > 0 {
				docs[i][j] = l.Doc
			}
			if l.Hash != "" {
				refs = append(refs, docRef{i, j, l.Hash})
				if _, ok := byHash[l.Hash]; !ok {
					byHash[l.Hash] = nil
					hashes = append(hashes, l.Hash)
				}
			}
			out[i].Ops[j] = op
		}
	}
	for len(hashes) > 0 {
		n := min(len(hashes), TxLogChunk)
		found, err := r.DocsByHash(hashes[:n])
		if err != nil {
			return nil, nil, err
		}
		hashes = hashes[n:]
		for h, d := range found {
			byHash[h] = d
		}
	}
	for _, ref := range refs {
		// A hash with no document left was evicted: the op gets none.
		if docs[ref.tx][ref.op] = byHash[ref.hash]; docs[ref.tx][ref.op] == nil {
			out[ref.tx].Ops[ref.op].Evicted = true
		}
	}
	// An op's document is evicted when its entity was evicted after it (by
	// a later tx, or later in its own): the store contract (store.TxLog).
	// Only an evict removes points, and every later point has a later tx,
	// so that is when the entity has no point of the op's tx or earlier: a
	// put wrote one (unless its valid time range is empty, a case the
	// contract decides the same way), and a match that held saw one. The
	// same content put again after the evict makes the hash resolve (its
	// docs row is new), but does not bring back the points the op wrote or
	// saw.
	first := map[string]sql.NullInt64{} // per entity: the least tx of its points
	for i := range out {
		for j, op := range out[i].Ops {
			if (op.Kind != store.OpMatch && op.Kind != store.OpPut) || docs[i][j] == nil {
				continue
			}
			f, ok := first[op.ID]
			if !ok {
				var err error
				if f, err = r.FirstTx(op.ID); err != nil {
					return nil, nil, err
				}
				first[op.ID] = f
			}
			if !f.Valid || f.Int64 > out[i].ID {
				docs[i][j], out[i].Ops[j].Evicted = nil, true
			}
		}
	}
	return out, docs, nil
}
