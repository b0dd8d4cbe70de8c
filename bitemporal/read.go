package bitemporal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/bitemporal/internal/sqlcore"
	"github.com/ctxstore/ctxstore/store"
)

// visiblePoint returns the point of eid seen at valid time vt as of tx: the
// greatest valid time <= vt among points of tx <= tx, the latest tx
// breaking ties; nil if none. A tombstone has a nil Hash.
func visiblePoint(ctx context.Context, q *sqlx.Stmt, eid string, vt, tx int64) (*pointRow, error) {
	var p pointRow
	err := q.GetContext(ctx, &p, eid, vt, tx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// resolve turns a basis into a valid time and a tx id (-1: before any
// transaction), checking the basis is not beyond the latest transaction.
func (s *Store) resolve(ctx context.Context, q queryer, op string, b store.Basis) (vt, tx int64, err error) {
	if err := s.check(op); err != nil {
		return 0, 0, err
	}
	return s.rd.Resolve(ctx, q, op, b)
}

// AwaitTx implements store.Store: transactions are indexed by Submit, so it
// only checks that txID was submitted.
func (s *Store) AwaitTx(ctx context.Context, txID int64, timeout time.Duration) (store.Tx, error) {
	if err := s.check("await"); err != nil {
		return store.Tx{}, err
	}
	return s.rd.AwaitTx(ctx, s.r, txID)
}

// TxCommitted implements store.Store.
func (s *Store) TxCommitted(ctx context.Context, txID int64) (bool, error) {
	if err := s.check("tx-committed"); err != nil {
		return false, err
	}
	return s.rd.TxCommitted(ctx, s.r, txID)
}

// Entity implements store.Store: one prepared statement.
func (s *Store) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if err := store.CheckReadID("entity", id); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "entity", b)
	if err != nil {
		return nil, err
	}
	var raw sql.NullString
	err = s.rstmts.entity.GetContext(ctx, &raw, id, vt, tx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !raw.Valid) {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document at this basis")
	}
	if err != nil {
		return nil, dbErr("entity", id, err)
	}
	return decodeStored(raw.String, id)
}

const entitySQL = `SELECT json(ctxs_doc(d.doc, (SELECT b.doc FROM docs b WHERE b.id = d.base))) FROM points p LEFT JOIN docs d ON d.id = p.doc
	WHERE p.ent = ` + entSQL + ` AND p.vt <= ? AND p.tx_id <= ? ORDER BY p.vt DESC, p.tx_id DESC LIMIT 1`

func decodeStored(raw, id string) (store.Doc, error) { return sqlcore.DecodeStored(raw, id) }

// EntityTx implements store.Store: one prepared statement.
func (s *Store) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	if err := store.CheckReadID("entity-tx", id); err != nil {
		return store.EntityTx{}, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "entity-tx", b)
	if err != nil {
		return store.EntityTx{}, err
	}
	p, err := visiblePoint(ctx, s.rstmts.visible, id, vt, tx)
	if err != nil {
		return store.EntityTx{}, dbErr("entity-tx", id, err)
	}
	if p == nil {
		return store.EntityTx{}, store.Errorf("entity-tx", store.ErrNotFound, id, "no point at this basis")
	}
	return store.EntityTx{ID: id, ValidTime: fromMS(p.VT), TxID: p.TxID, TxTime: fromMS(p.TT), ContentHash: str(p.Hash), Deleted: p.Hash == nil}, nil
}

// History implements store.Store with XTDB's bounds (see store.Store).
func (s *Store) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	if err := store.CheckReadID("history", id); err != nil {
		return nil, err
	}
	if err := o.Validate(id); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, s.r, "history", o.Basis)
	if err != nil {
		return nil, err
	}
	where, args := sqlcore.HistoryWhere(o, vt, tx)
	docCol := "NULL"
	join := ""
	if o.WithDocs {
		docCol, join = "json(ctxs_doc(d.doc, "+baseOf("d")+"))", " LEFT JOIN docs d ON d.id = p.doc"
	}
	q := fmt.Sprintf(`SELECT p.vt, p.tx_id, p.tx_time, (SELECT lower(hex(h.hash)) FROM docs h WHERE h.id = p.doc) AS hash, p.doc, %s AS body FROM points p%s
		WHERE p.ent = %s%s%s`, docCol, join, entSQL, where, sqlcore.HistoryOrder(o))
	if o.WithCorrections && o.Limit > 0 {
		// Without corrections the rows are read one by one and the read
		// stops after the Limit-th valid time (below).
		q += fmt.Sprintf(" LIMIT %d", o.Limit)
	}
	rows, err := s.r.QueryxContext(ctx, q, append([]any{id}, args...)...)
	if err != nil {
		return nil, dbErr("history", id, err)
	}
	defer rows.Close()
	h := sqlcore.NewHistory(o)
	for rows.Next() {
		var r struct {
			pointRow
			Body *string `db:"body"`
		}
		if err := rows.StructScan(&r); err != nil {
			return nil, dbErr("history", id, err)
		}
		e := store.HistoryEntry{ValidTime: fromMS(r.VT), TxID: r.TxID, TxTime: fromMS(r.TT), ContentHash: str(r.Hash), Deleted: r.Hash == nil}
		if r.Body != nil {
			if e.Doc, err = decodeStored(*r.Body, id); err != nil {
				return nil, err
			}
		}
		if !h.Add(e) {
			break
		}
	}
	return h.Entries(), dbErr("history", id, rows.Err())
}

// TxLog implements store.Store. A page of the log takes two queries: its
// transactions, then the documents its ops name; and one per entity with
// a document in the page, to tell whether it was evicted since.
func (s *Store) TxLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, error) {
	txs, docs, err := s.txLog(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	for i := range txs {
		for j := range txs[i].Ops {
			op := &txs[i].Ops[j]
			if raw := docs[i][j]; raw != nil {
				if op.Doc, err = decodeStored(string(raw), op.ID); err != nil {
					return nil, err
				}
			}
		}
	}
	return txs, nil
}

// TxLogCanonical is TxLog for exporters: the ops carry no decoded Doc;
// instead docs[i][j] holds the document of op j of txs[i] as the store
// keeps it (json(doc) of its JSONB gives the text back byte for byte),
// RFC 8785 canonical JSON (store.Canonical) whose SHA-256 is the
// content hash, and nil for an op without a document. As in TxLog, an op
// whose document was evicted has none and is marked Evicted.
func (s *Store) TxLogCanonical(ctx context.Context, after int64, limit int) (txs []store.LoggedTx, docs [][]json.RawMessage, err error) {
	if txs, docs, err = s.txLog(ctx, after, limit); err != nil {
		return nil, nil, err
	}
	for i := range txs {
		for j, op := range txs[i].Ops {
			if op.Kind != store.OpMatch || docs[i][j] == nil {
				continue
			}
			// A match's document is kept inline in the tx's ops, where
			// encoding/json escaped it for HTML: canonicalize it again.
			doc, err := decodeStored(string(docs[i][j]), op.ID)
			if err != nil {
				return nil, nil, err
			}
			c, err := store.Canonical(doc)
			if err != nil {
				return nil, nil, &store.Error{Op: "tx-log", Kind: store.ErrInvalid, ID: op.ID, Msg: "stored document", Err: err}
			}
			docs[i][j] = c
		}
	}
	return txs, docs, nil
}

// docsByHashSQL reads the documents of a JSON array of content hashes.
const docsByHashSQL = "SELECT lower(hex(d.hash)), json(ctxs_doc(d.doc, (SELECT b.doc FROM docs b WHERE b.id = d.base))) FROM json_each(?) j JOIN docs d ON substr(d.hash, 1, 8) = substr(unhex(j.value), 1, 8) AND d.hash = unhex(j.value)"

// firstPointTxSQL is the least tx id of entity ?'s points (NULL: none).
const firstPointTxSQL = "SELECT min(tx_id) FROM points WHERE ent = " + entSQL

// txLogChunk bounds the hashes looked up by one query.
const txLogChunk = 500

// docRef is op `op` of the page's tx `tx`, which names document hash.
type docRef struct {
	tx, op int
	hash   string
}

func (s *Store) txLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, [][]json.RawMessage, error) {
	if err := s.check("tx-log"); err != nil {
		return nil, nil, err
	}
	rtx, err := s.r.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, dbErr("tx-log", "", err)
	}
	defer rtx.Rollback()
	// A row's base (migration 00017) may come before the range, or be an
	// aborted tx's row: it is joined by id, whatever its place.
	q := "SELECT t.tx_id, t.tx_time, t.ops, b.ops AS base FROM txs t LEFT JOIN txs b ON b.tx_id = t.base WHERE t.tx_id > ? AND t.committed = 1 ORDER BY t.tx_id"
	args := []any{after}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	var rows []struct {
		ID   int64  `db:"tx_id"`
		Time int64  `db:"tx_time"`
		Ops  []byte `db:"ops"`
		Base []byte `db:"base"`
	}
	if err := rtx.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, nil, dbErr("tx-log", "", err)
	}
	out := make([]store.LoggedTx, len(rows))
	docs := make([][]json.RawMessage, len(rows))
	// Documents by hash, read for the whole page at once (in the same read
	// transaction: an evict in between cannot split the page).
	byHash := map[string]json.RawMessage{}
	var hashes []string
	var refs []docRef
	for i, r := range rows {
		var logged []loggedOp
		text, err := unpackLog(r.Ops, r.Base)
		if err == nil {
			err = json.Unmarshal(text, &logged)
		}
		if err != nil {
			return nil, nil, &store.Error{Op: "tx-log", Kind: store.ErrInvalid, Msg: fmt.Sprintf("tx %d: stored ops are corrupt", r.ID), Err: err}
		}
		out[i] = store.LoggedTx{Tx: store.Tx{ID: r.ID, Time: fromMS(r.Time)}, Ops: make([]store.Op, len(logged))}
		docs[i] = make([]json.RawMessage, len(logged))
		for j, l := range logged {
			op := store.Op{Kind: l.Kind, ID: l.ID}
			if l.ValidFrom != nil {
				t := fromMS(*l.ValidFrom)
				op.ValidFrom = &t
			}
			if l.ValidTo != nil {
				t := fromMS(*l.ValidTo)
				op.ValidTo = &t
			}
			if len(l.Doc) > 0 {
				docs[i][j] = l.Doc
			}
			op.Evicted = l.Evicted
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
		n := min(len(hashes), txLogChunk)
		list, err := json.Marshal(hashes[:n])
		if err != nil {
			return nil, nil, err
		}
		hashes = hashes[n:]
		drows, err := rtx.QueryContext(ctx, docsByHashSQL, string(list))
		if err != nil {
			return nil, nil, dbErr("tx-log", "", err)
		}
		for drows.Next() {
			var h string
			var raw []byte
			if err := drows.Scan(&h, &raw); err != nil {
				drows.Close()
				return nil, nil, dbErr("tx-log", "", err)
			}
			byHash[h] = raw
		}
		if err := drows.Close(); err != nil {
			return nil, nil, dbErr("tx-log", "", err)
		}
		if err := drows.Err(); err != nil {
			return nil, nil, dbErr("tx-log", "", err)
		}
	}
	for _, r := range refs {
		// A hash with no document left was evicted: the op gets none.
		if docs[r.tx][r.op] = byHash[r.hash]; docs[r.tx][r.op] == nil {
			out[r.tx].Ops[r.op].Evicted = true
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
	// saw. A match keeps its expected document in its tx's ops, or names
	// it by hash.
	first := map[string]sql.NullInt64{} // per entity: the least tx of its points
	for i := range out {
		for j, op := range out[i].Ops {
			if (op.Kind != store.OpMatch && op.Kind != store.OpPut) || docs[i][j] == nil {
				continue
			}
			f, ok := first[op.ID]
			if !ok {
				if err := rtx.GetContext(ctx, &f, firstPointTxSQL, op.ID); err != nil {
					return nil, nil, dbErr("tx-log", op.ID, err)
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
