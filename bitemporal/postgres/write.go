package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/bitemporal/internal/sqlcore"
	"github.com/ctxstore/ctxstore/store"
)

// prepared is one op made ready for the database before the write lock.
type prepared struct {
	op    store.Op
	hash  string // content hash of op.Doc, lowercase hex ("" for none)
	canon string // canonical JSON of op.Doc
	jsonb string // canon as jsonb accepts it (jsonbText)
}

// loggedOp is how an op is kept in the txs table: its document by content
// hash. The SQLite store keeps the same form; Doc and Evicted stay empty
// here (a match names its document by hash too).
type loggedOp = sqlcore.LoggedOp

func prepare(ops []store.Op) ([]prepared, []byte, error) {
	out := make([]prepared, len(ops))
	logged := make([]loggedOp, len(ops))
	for i, op := range ops {
		p := prepared{op: op}
		if op.Doc != nil {
			c, err := store.Canonical(op.Doc)
			if err != nil {
				return nil, nil, &store.Error{Op: "submit", Kind: store.ErrInvalid, OpIndex: i + 1, ID: op.ID, Field: "doc", Err: err}
			}
			sum := sha256.Sum256(c)
			p.hash, p.canon = hex.EncodeToString(sum[:]), string(c)
			p.jsonb = jsonbText(p.canon)
		}
		out[i] = p
		logged[i] = loggedOp{Kind: op.Kind, ID: op.ID, Hash: p.hash, ValidFrom: optMS(op.ValidFrom), ValidTo: optMS(op.ValidTo)}
	}
	text, err := json.Marshal(logged)
	if err != nil {
		return nil, nil, err
	}
	return out, text, nil
}

// jsonbText is canonical JSON text as PostgreSQL's jsonb accepts it: jsonb
// refuses the escape \u0000 (its strings cannot hold U+0000), so it
// becomes \ufffd. Only the jsonb copy of a document (for queries and
// search) changes; the canonical text is kept as it is.
func jsonbText(canon string) string {
	if !strings.Contains(canon, `\u0000`) {
		return canon
	}
	var b strings.Builder
	for i := 0; i < len(canon); i++ {
		if canon[i] != '\\' || i+1 >= len(canon) {
			b.WriteByte(canon[i])
			continue
		}
		if strings.HasPrefix(canon[i:], `\u0000`) {
			b.WriteString(`\ufffd`)
			i += len(`\u0000`) - 1
			continue
		}
		b.WriteString(canon[i : i+2]) // any other escape, whole
		i++
	}
	return b.String()
}

func optMS(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	m := ms(*t)
	return &m
}

// Submit implements store.Store. The transaction is applied and indexed
// before Submit returns; a failed match records it as aborted.
func (s *Store) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	return s.submit(ctx, ops, nil)
}

// SubmitAt implements store.TxTimeSubmitter: Submit with a given
// transaction time, for imports that keep the original times. txTime must
// not be before the latest transaction's time (ErrInvalid otherwise).
func (s *Store) SubmitAt(ctx context.Context, ops []store.Op, txTime time.Time) (store.Tx, error) {
	t := store.MS(txTime)
	return s.submit(ctx, ops, &t)
}

func (s *Store) submit(ctx context.Context, ops []store.Op, at *time.Time) (store.Tx, error) {
	if err := s.check("submit"); err != nil {
		return store.Tx{}, err
	}
	ops, err := store.Normalize(ops)
	if err != nil {
		return store.Tx{}, err
	}
	if err := store.CheckReserved(ctx, ops); err != nil {
		return store.Tx{}, err
	}
	prep, logged, err := prepare(ops)
	if err != nil {
		return store.Tx{}, err
	}
	for i := 1; ; i++ {
		receipt, sent, err := s.submitOnce(ctx, prep, logged, at)
		if err == nil {
			return receipt, nil
		}
		if !retryable(ctx, err) {
			return store.Tx{}, err
		}
		if sent { // the COMMIT went out and its answer was lost
			ok, cerr := s.committedAs(ctx, receipt, logged)
			if cerr == nil && ok {
				s.known.Note(receipt.ID)
				return receipt, nil
			}
			if cerr != nil {
				return store.Tx{}, err
			}
		}
		if i == attempts || !pause(ctx, i) {
			return store.Tx{}, err
		}
	}
}

// submitOnce applies prep in one SQL transaction and logs it as logged.
// sent reports that the COMMIT was sent: an error then leaves the outcome
// unknown.
func (s *Store) submitOnce(ctx context.Context, prep []prepared, logged []byte, at *time.Time) (receipt store.Tx, sent bool, err error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return store.Tx{}, false, dbErr("submit", "", err)
	}
	defer tx.Rollback()
	// The clock row first: every writer waits here for the one before it
	// to commit or roll back, then reads what it left.
	var clock struct {
		ID   int64 `db:"tx_id"`
		Time int64 `db:"tx_time"`
	}
	if err := tx.GetContext(ctx, &clock, "SELECT tx_id, tx_time FROM tx_clock FOR UPDATE"); err != nil {
		return store.Tx{}, false, dbErr("submit", "", err)
	}
	receipt = store.Tx{ID: clock.ID + 1, Time: store.MS(s.now())}
	if at != nil {
		receipt.Time = *at
	}
	if clock.ID >= 0 && ms(receipt.Time) < clock.Time {
		if at != nil {
			return store.Tx{}, false, store.Errorf("submit", store.ErrInvalid, "", fmt.Sprintf("tx time %s is before the latest transaction's (%s)", store.FormatTime(*at), store.FormatTime(fromMS(clock.Time))))
		}
		receipt.Time = fromMS(clock.Time)
	}
	// Only a match can abort a transaction, and it only has something to
	// undo if a write came before it.
	needSavepoint, wrote := false, false
	for _, p := range prep {
		if p.op.Kind == store.OpMatch {
			needSavepoint = needSavepoint || wrote
		} else {
			wrote = true
		}
	}
	if needSavepoint {
		if _, err := tx.ExecContext(ctx, "SAVEPOINT ops"); err != nil {
			return store.Tx{}, false, dbErr("submit", "", err)
		}
	}
	a := applier{ctx: ctx, tx: tx, txID: receipt.ID, tt: ms(receipt.Time)}
	committed := true
	for i, p := range prep {
		ok, err := a.apply(p)
		if err != nil {
			return store.Tx{}, false, dbErr("submit", p.op.ID, fmt.Errorf("op %d (%s): %w", i+1, p.op.Kind, err))
		}
		if !ok {
			committed = false
			break
		}
	}
	if needSavepoint {
		q := "RELEASE SAVEPOINT ops"
		if !committed {
			q = "ROLLBACK TO SAVEPOINT ops"
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return store.Tx{}, false, dbErr("submit", "", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO txs (tx_id, tx_time, committed, ops) VALUES ($1, $2, $3, $4)",
		receipt.ID, ms(receipt.Time), committed, string(logged)); err != nil {
		return store.Tx{}, false, dbErr("submit", "", err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE tx_clock SET tx_id = $1, tx_time = $2", receipt.ID, ms(receipt.Time)); err != nil {
		return store.Tx{}, false, dbErr("submit", "", err)
	}
	if err := tx.Commit(); err != nil {
		return receipt, true, dbErr("submit", "", err)
	}
	s.known.Note(receipt.ID)
	return receipt, true, nil
}

// applier applies the ops of one transaction inside its SQL transaction.
type applier struct {
	ctx  context.Context
	tx   *sqlx.Tx
	txID int64
	tt   int64
}

// pointCols are the columns of a point: hash is the content hash of the
// document it names, NULL for a tombstone.
const (
	pointCols = "p.vt, p.tx_id, p.tx_time, encode(h.hash, 'hex') AS hash, p.doc FROM points p LEFT JOIN docs h ON h.id = p.doc"
	// pointColsBody is pointCols with column body: the document's
	// canonical text when %s is h.body, else NULL.
	pointColsBody = "p.vt, p.tx_id, p.tx_time, encode(h.hash, 'hex') AS hash, p.doc, %s AS body FROM points p LEFT JOIN docs h ON h.id = p.doc"
)

const (
	visibleSQL     = "SELECT " + pointCols + " WHERE p.ent = $1 AND p.vt <= $2 AND p.tx_id <= $3 ORDER BY p.vt DESC, p.tx_id DESC LIMIT 1"
	rangeSQL       = "SELECT " + pointCols + " WHERE p.ent = $1 AND p.vt <= $2 ORDER BY p.vt DESC, p.tx_id DESC"
	insertPointSQL = `INSERT INTO points (ent, vt, tx_id, tx_time, doc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (ent, vt, tx_id) DO UPDATE SET tx_time = EXCLUDED.tx_time, doc = EXCLUDED.doc`
)

// pointRow is a row of points, read with its document's hash.
type pointRow = sqlcore.Point

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// visiblePoint returns the point of eid seen at valid time vt as of tx: the
// greatest valid time <= vt among points of tx <= tx, the latest tx
// breaking ties; nil if none. A tombstone has a nil Hash.
func visiblePoint(ctx context.Context, q queryer, eid string, vt, tx int64) (*pointRow, error) {
	var p pointRow
	err := q.GetContext(ctx, &p, visibleSQL, []byte(eid), vt, tx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// apply applies one op; false means a match failed and the tx aborts.
func (a *applier) apply(p prepared) (bool, error) {
	op := p.op
	switch op.Kind {
	case store.OpPut, store.OpDelete:
		start := a.tt
		if op.ValidFrom != nil {
			start = ms(*op.ValidFrom)
		}
		// An open-ended write is one statement: the document stored if it
		// is new, then the points (migration 00002's functions).
		docSQL, args := "NULL", []any{[]byte(op.ID), start, a.txID, a.tt}
		if op.Kind == store.OpPut {
			docSQL, args = putDocSQL(5), append(args, putDocArgs(p)...)
		}
		if op.ValidTo == nil {
			_, err := a.tx.ExecContext(a.ctx, "SELECT ctxs_write_open($1, $2, $3, $4, "+docSQL+")", args...)
			return true, err
		}
		var doc *int64 // a tombstone unless a put
		if op.Kind == store.OpPut {
			var id int64
			if err := a.tx.GetContext(a.ctx, &id, "SELECT "+putDocSQL(1), args[4:]...); err != nil {
				return false, err
			}
			doc = &id
		}
		return true, a.writeRange(op.ID, start, ms(*op.ValidTo), doc)
	case store.OpMatch:
		at := a.tt
		if op.ValidFrom != nil {
			at = ms(*op.ValidFrom)
		}
		cur, err := visiblePoint(a.ctx, a.tx, op.ID, at, a.txID)
		if err != nil {
			return false, err
		}
		have := ""
		if cur != nil {
			have = str(cur.Hash)
		}
		return have == p.hash, nil
	case store.OpEvict:
		// The points first (they name the documents); the search units
		// go with their documents (ON DELETE CASCADE).
		for _, q := range []string{"DELETE FROM points WHERE ent = $1", "DELETE FROM docs WHERE ent = $1"} {
			if _, err := a.tx.ExecContext(a.ctx, q, []byte(op.ID)); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("unknown op %q", op.Kind)
}

// putDocSQL calls ctxs_put_doc with the arguments putDocArgs gives, from
// placeholder $n on.
func putDocSQL(n int) string {
	ph := make([]string, 13)
	for i := range ph {
		ph[i] = fmt.Sprintf("$%d", n+i)
	}
	return "ctxs_put_doc(decode(" + ph[0] + ", 'hex'), " + strings.Join(ph[1:3], ", ") + ", " + ph[3] + "::jsonb, " + strings.Join(ph[4:], ", ") + ")"
}

// putDocArgs are ctxs_put_doc's arguments for p's document: its hash,
// entity, canonical text and jsonb text, and its search units.
func putDocArgs(p prepared) []any {
	units, chat := unitsOf(p.op.ID, p.op.Doc)
	var (
		ents                                      [][]byte
		parts                                     []int64
		kinds, sessions, titles, bodies, tws, bws []string
	)
	for _, u := range units {
		ents = append(ents, []byte(u.ent))
		kinds = append(kinds, u.kind)
		sessions = append(sessions, clean(u.session))
		parts = append(parts, int64(u.part))
		titles = append(titles, clean(u.title))
		bodies = append(bodies, clean(u.body))
		tws = append(tws, indexText(u.title))
		bws = append(bws, indexText(u.body))
	}
	return []any{p.hash, []byte(p.op.ID), p.canon, p.jsonb, chat, ents, kinds, sessions, parts, titles, bodies, tws, bws}
}

func (a *applier) point(eid string, vt, txID, tt int64, doc *int64) error {
	_, err := a.tx.ExecContext(a.ctx, insertPointSQL, []byte(eid), vt, txID, tt, doc)
	return err
}

// winners runs q (ordered by valid time, latest tx first within one) and
// calls fn with the winning point of each valid time until fn returns
// false. The rows are read whole first: a connection runs one statement
// at a time.
func (a *applier) winners(q string, args []any, fn func(pointRow) bool) error {
	var rows []pointRow
	if err := a.tx.SelectContext(a.ctx, &rows, q, args...); err != nil {
		return err
	}
	winner := sqlcore.Winners()
	for _, r := range rows {
		if !winner(r) {
			continue
		}
		if !fn(r) {
			break
		}
	}
	return nil
}

// writeRange writes [start, end): at start and every winning point strictly
// inside, then restores at end the version that was visible there (keeping
// its tx), or a tombstone if there was none.
func (a *applier) writeRange(eid string, start, end int64, doc *int64) error {
	if start == end {
		return nil
	}
	vts, restore, err := sqlcore.RangePoints(start, end, func(fn func(pointRow) bool) error {
		return a.winners(rangeSQL, []any{[]byte(eid), end}, fn)
	})
	if err != nil {
		return err
	}
	for _, vt := range vts {
		if err := a.point(eid, vt, a.txID, a.tt, doc); err != nil {
			return err
		}
	}
	if restore != nil {
		return a.point(eid, end, restore.TxID, restore.TT, restore.Doc)
	}
	return a.point(eid, end, a.txID, a.tt, nil)
}
