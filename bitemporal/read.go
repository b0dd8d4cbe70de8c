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
	txs := make([]store.Tx, len(rows))
	logged := make([][]loggedOp, len(rows))
	for i, r := range rows {
		text, err := unpackLog(r.Ops, r.Base)
		if err == nil {
			err = json.Unmarshal(text, &logged[i])
		}
		if err != nil {
			return nil, nil, &store.Error{Op: "tx-log", Kind: store.ErrInvalid, Msg: fmt.Sprintf("tx %d: stored ops are corrupt", r.ID), Err: err}
		}
		txs[i] = store.Tx{ID: r.ID, Time: fromMS(r.Time)}
	}
	return sqlcore.TxLogPage(txs, logged, sqlcore.LogReader{
		DocsByHash: func(hashes []string) (map[string]json.RawMessage, error) {
			list, err := json.Marshal(hashes)
			if err != nil {
				return nil, err
			}
			drows, err := rtx.QueryContext(ctx, docsByHashSQL, string(list))
			if err != nil {
				return nil, dbErr("tx-log", "", err)
			}
			defer drows.Close()
			found := map[string]json.RawMessage{}
			for drows.Next() {
				var h string
				var raw []byte
				if err := drows.Scan(&h, &raw); err != nil {
					return nil, dbErr("tx-log", "", err)
				}
				found[h] = raw
			}
			if err := drows.Close(); err != nil {
				return nil, dbErr("tx-log", "", err)
			}
			return found, dbErr("tx-log", "", drows.Err())
		},
		FirstTx: func(id string) (sql.NullInt64, error) {
			var f sql.NullInt64
			err := rtx.GetContext(ctx, &f, firstPointTxSQL, id)
			return f, dbErr("tx-log", id, err)
		},
	})
}
