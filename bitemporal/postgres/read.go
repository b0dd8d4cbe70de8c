package postgres

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

// resolve turns a basis into a valid time and a tx id (-1: before any
// transaction), checking the basis is not beyond the latest transaction.
func (s *Store) resolve(ctx context.Context, op string, b store.Basis) (vt, tx int64, err error) {
	if err := s.check(op); err != nil {
		return 0, 0, err
	}
	return s.rd.Resolve(ctx, s.db, op, b)
}

// awaitTx is AwaitTx, one attempt.
func (s *Store) awaitTx(ctx context.Context, txID int64, timeout time.Duration) (store.Tx, error) {
	if err := s.check("await"); err != nil {
		return store.Tx{}, err
	}
	return s.rd.AwaitTx(ctx, s.db, txID)
}

// txCommitted is TxCommitted, one attempt.
func (s *Store) txCommitted(ctx context.Context, txID int64) (bool, error) {
	if err := s.check("tx-committed"); err != nil {
		return false, err
	}
	return s.rd.TxCommitted(ctx, s.db, txID)
}

const entitySQL = `SELECT d.body FROM points p LEFT JOIN docs d ON d.id = p.doc
	WHERE p.ent = $1 AND p.vt <= $2 AND p.tx_id <= $3 ORDER BY p.vt DESC, p.tx_id DESC LIMIT 1`

// entity is Entity, one attempt.
func (s *Store) entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	if err := store.CheckReadID("entity", id); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, "entity", b)
	if err != nil {
		return nil, err
	}
	var raw sql.NullString
	err = s.db.GetContext(ctx, &raw, entitySQL, []byte(id), vt, tx)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !raw.Valid) {
		return nil, store.Errorf("entity", store.ErrNotFound, id, "no document at this basis")
	}
	if err != nil {
		return nil, dbErr("entity", id, err)
	}
	return decodeStored(raw.String, id)
}

func decodeStored(raw, id string) (store.Doc, error) { return sqlcore.DecodeStored(raw, id) }

// entityTx is EntityTx, one attempt.
func (s *Store) entityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	if err := store.CheckReadID("entity-tx", id); err != nil {
		return store.EntityTx{}, err
	}
	vt, tx, err := s.resolve(ctx, "entity-tx", b)
	if err != nil {
		return store.EntityTx{}, err
	}
	p, err := visiblePoint(ctx, s.db, id, vt, tx)
	if err != nil {
		return store.EntityTx{}, dbErr("entity-tx", id, err)
	}
	if p == nil {
		return store.EntityTx{}, store.Errorf("entity-tx", store.ErrNotFound, id, "no point at this basis")
	}
	return store.EntityTx{ID: id, ValidTime: fromMS(p.VT), TxID: p.TxID, TxTime: fromMS(p.TT), ContentHash: str(p.Hash), Deleted: p.Hash == nil}, nil
}

// history is History, one attempt, with XTDB's bounds (see store.Store).
func (s *Store) history(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	if err := store.CheckReadID("history", id); err != nil {
		return nil, err
	}
	if err := o.Validate(id); err != nil {
		return nil, err
	}
	vt, tx, err := s.resolve(ctx, "history", o.Basis)
	if err != nil {
		return nil, err
	}
	where, args := sqlcore.HistoryWhere(o, vt, tx)
	body := "NULL"
	if o.WithDocs {
		body = "h.body"
	}
	q := fmt.Sprintf("SELECT "+pointColsBody+" WHERE p.ent = ?%s%s", body, where, sqlcore.HistoryOrder(o))
	switch {
	case o.Limit > 0 && o.WithCorrections:
		q += fmt.Sprintf(" LIMIT %d", o.Limit)
	case o.Limit > 0:
		// One row per valid time, its latest tx (the one History keeps),
		// so that LIMIT counts entries, not points.
		dir := "ASC"
		if o.Order == store.Desc {
			dir = "DESC"
		}
		q = fmt.Sprintf("SELECT DISTINCT ON (p.vt) "+pointColsBody+" WHERE p.ent = ?%s ORDER BY p.vt %s, p.tx_id DESC LIMIT %d", body, where, dir, o.Limit)
	}
	q = sqlx.Rebind(sqlx.DOLLAR, q)
	args = append([]any{[]byte(id)}, args...)
	var rows []struct {
		pointRow
		Body *string `db:"body"`
	}
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, dbErr("history", id, err)
	}
	h := sqlcore.NewHistory(o)
	for _, r := range rows {
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
	return h.Entries(), nil
}

// TxLog implements store.Store.
func (s *Store) TxLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, error) {
	txs, docs, err := s.txLog(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	for i := range txs {
		for j := range txs[i].Ops {
			if raw := docs[i][j]; raw != nil {
				if txs[i].Ops[j].Doc, err = decodeStored(string(raw), txs[i].Ops[j].ID); err != nil {
					return nil, err
				}
			}
		}
	}
	return txs, nil
}

// TxLogCanonical implements store.CanonicalTxLogger: documents are kept as
// their canonical JSON (docs.body), handed out as they are.
func (s *Store) TxLogCanonical(ctx context.Context, after int64, limit int) ([]store.LoggedTx, [][]json.RawMessage, error) {
	return s.txLog(ctx, after, limit)
}

// txLogOnce reads a page of the log and its documents in one REPEATABLE
// READ transaction, so an evict committed in between cannot split the page.
func (s *Store) txLogOnce(ctx context.Context, after int64, limit int) ([]store.LoggedTx, [][]json.RawMessage, error) {
	if err := s.check("tx-log"); err != nil {
		return nil, nil, err
	}
	rtx, err := s.db.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, nil, dbErr("tx-log", "", err)
	}
	defer rtx.Rollback()
	q := "SELECT tx_id, tx_time, ops FROM txs WHERE tx_id > $1 AND committed ORDER BY tx_id"
	args := []any{after}
	if limit > 0 {
		q += " LIMIT $2"
		args = append(args, limit)
	}
	var rows []struct {
		ID   int64  `db:"tx_id"`
		Time int64  `db:"tx_time"`
		Ops  string `db:"ops"`
	}
	if err := rtx.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, nil, dbErr("tx-log", "", err)
	}
	txs := make([]store.Tx, len(rows))
	logged := make([][]loggedOp, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal([]byte(r.Ops), &logged[i]); err != nil {
			return nil, nil, &store.Error{Op: "tx-log", Kind: store.ErrInvalid, Msg: fmt.Sprintf("tx %d: stored ops are corrupt", r.ID), Err: err}
		}
		txs[i] = store.Tx{ID: r.ID, Time: fromMS(r.Time)}
	}
	out, docs, err := sqlcore.TxLogPage(txs, logged, sqlcore.LogReader{
		DocsByHash: func(hashes []string) (map[string]json.RawMessage, error) {
			list, err := json.Marshal(hashes)
			if err != nil {
				return nil, err
			}
			var found []struct {
				Hash string `db:"hash"`
				Body string `db:"body"`
			}
			err = rtx.SelectContext(ctx, &found, `SELECT encode(d.hash, 'hex') AS hash, d.body FROM docs d
				WHERE d.hash IN (SELECT decode(h, 'hex') FROM jsonb_array_elements_text($1::jsonb) AS h)`, string(list))
			if err != nil {
				return nil, dbErr("tx-log", "", err)
			}
			byHash := make(map[string]json.RawMessage, len(found))
			for _, f := range found {
				byHash[f.Hash] = json.RawMessage(f.Body)
			}
			return byHash, nil
		},
		FirstTx: func(id string) (sql.NullInt64, error) {
			var f sql.NullInt64
			err := rtx.GetContext(ctx, &f, "SELECT min(tx_id) FROM points WHERE ent = $1", []byte(id))
			return f, dbErr("tx-log", id, err)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return out, docs, rtx.Commit()
}
