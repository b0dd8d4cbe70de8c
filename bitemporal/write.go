package bitemporal

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

// prepared is one op made ready for the database outside the write lock.
type prepared struct {
	op     store.Op
	hash   string // content hash of op.Doc ("" for none)
	canon  string // canonical JSON of op.Doc
	fields []fieldRow
	// family is op.Doc's top-level "type" string ("" for none): a new
	// entity's first version is compressed against the latest row of its
	// family stored whole (Store.keys).
	family string
}

type fieldRow struct {
	field, kind string
	value       any
}

// loggedOp is how an op is kept in the txs table: its document by hash.
type loggedOp = sqlcore.LoggedOp

func prepare(ops []store.Op, indexed indexSet) ([]prepared, []loggedOp, error) {
	out := make([]prepared, len(ops))
	logged := make([]loggedOp, len(ops))
	for i, op := range ops {
		p := prepared{op: op}
		if op.Doc != nil {
			c, err := store.CanonicalString(op.Doc)
			if err != nil {
				return nil, nil, &store.Error{Op: "submit", Kind: store.ErrInvalid, OpIndex: i + 1, ID: op.ID, Field: "doc", Err: err}
			}
			p.hash, p.canon = hashString(c), c
			p.family, _ = op.Doc["type"].(string)
			if op.Kind == store.OpPut {
				p.fields = indexed.filter(fieldRows(op.Doc))
			}
		}
		out[i] = p
		logged[i] = loggedOp{Kind: op.Kind, ID: op.ID, ValidFrom: optMS(op.ValidFrom), ValidTo: optMS(op.ValidTo)}
		// Every op names its document by content hash: a match
		// that held expected exactly the document its entity had, which is
		// in docs under that hash; earlier stores kept a match's document
		// inline (Doc), which the tx log still reads.
		logged[i].Hash = p.hash
	}
	return out, logged, nil
}

// hashString is the SHA-256 of s in hex, s hashed in pieces rather than
// copied whole into a byte slice.
func hashString(s string) string {
	h := sha256.New()
	buf := make([]byte, min(len(s), 32<<10))
	for len(s) > 0 {
		n := copy(buf, s)
		h.Write(buf[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

func optMS(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	m := ms(*t)
	return &m
}

// Long strings in the field index. A string of more than
// longStringBytes bytes of UTF-8 is indexed as kind 'S' with only its first
// longPrefixChars characters as the value; queries on such values narrow by
// that prefix and check the document itself (predSQL). Every entity id fits
// under the limit (store.MaxIDBytes), so reference fields stay whole and
// RefBy reads ids from the index alone. Migration 00004 applies the same
// rule to stores written before: SQLite's length(CAST(v AS BLOB)) counts the
// bytes and substr() the characters, as here.
const (
	longStringBytes = store.MaxIDBytes
	longPrefixChars = 64
)

// stringField returns the field-index kind and value of string s.
func stringField(s string) (string, string) {
	if len(s) <= longStringBytes {
		return "s", s
	}
	return "S", prefixChars(s, longPrefixChars)
}

// prefixChars returns the first n characters (runes) of s.
func prefixChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// fieldRows indexes the top-level scalar values of doc, array elements one
// row each (the portable query's element-wise semantics).
func fieldRows(doc store.Doc) []fieldRow {
	var rows []fieldRow
	add := func(k string, v any) {
		switch x := v.(type) {
		case string:
			kind, val := stringField(x)
			rows = append(rows, fieldRow{k, kind, val})
		case bool:
			b := 0
			if x {
				b = 1
			}
			rows = append(rows, fieldRow{k, "b", b})
		case json.Number:
			if f, err := x.Float64(); err == nil {
				rows = append(rows, fieldRow{k, "n", f})
			}
		case float64:
			rows = append(rows, fieldRow{k, "n", x})
		case int:
			rows = append(rows, fieldRow{k, "n", float64(x)})
		case int64:
			rows = append(rows, fieldRow{k, "n", float64(x)})
		}
	}
	for k, v := range doc {
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				add(k, e)
			}
			continue
		}
		if arr, ok := v.([]string); ok {
			for _, e := range arr {
				add(k, e)
			}
			continue
		}
		add(k, v)
	}
	return rows
}

// Submit implements store.Store. The transaction is applied and indexed
// before Submit returns; a failed match records it as aborted.
func (s *Store) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	return s.submit(ctx, ops, nil)
}

// SubmitAt is Submit with a given transaction time, for imports that keep
// the original times. txTime must not be before the latest transaction's
// time (ErrInvalid otherwise).
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
	prep, logged, err := prepare(ops, s.indexed)
	if err != nil {
		return store.Tx{}, err
	}
	opsJSON, err := json.Marshal(logged)
	if err != nil {
		return store.Tx{}, err
	}
	// Compressed outside the write lock, against the base as it is now;
	// again inside it in the rare case another transaction moved the base
	// in between.
	alone := packLog(opsJSON)
	base := s.logBase.Load()
	stored, delta, isBase := packLogAgainst(opsJSON, alone, base)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if b := s.logBase.Load(); b != base {
		base = b
		stored, delta, isBase = packLogAgainst(opsJSON, alone, base)
	}
	l := logRow{ops: stored}
	if delta {
		l.base = &base.txID
	}
	receipt, err := s.submitLocked(ctx, prep, l, at)
	if err == nil && isBase {
		// Only now: a base must be a row that committed.
		s.logBase.Store(&logBase{txID: receipt.ID, text: opsJSON})
	}
	return receipt, err
}

// logRow is a tx's logged ops as stored (packLog, packLogAgainst) and
// the tx id of the row a delta is against.
type logRow struct {
	ops  any
	base *int64
}

// submitLocked applies prep and logs it as l.
func (s *Store) submitLocked(ctx context.Context, prep []prepared, l logRow, at *time.Time) (store.Tx, error) {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return store.Tx{}, dbErr("submit", "", err)
	}
	defer tx.Rollback()
	last, err := s.latest(ctx, tx)
	if err != nil {
		return store.Tx{}, dbErr("submit", "", err)
	}
	receipt := store.Tx{ID: 0, Time: store.MS(s.now())}
	if at != nil {
		receipt.Time = *at
	}
	if last != nil {
		receipt.ID = last.ID + 1
		if receipt.Time.Before(last.Time) {
			if at != nil {
				return store.Tx{}, store.Errorf("submit", store.ErrInvalid, "", fmt.Sprintf("tx time %s is before the latest transaction's (%s)", store.FormatTime(*at), store.FormatTime(last.Time)))
			}
			receipt.Time = last.Time
		}
	}
	// Only a match can abort a transaction, and it only has something to
	// undo if a write came before it; otherwise a savepoint would just
	// journal every page the transaction touches.
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
			return store.Tx{}, dbErr("submit", "", err)
		}
	}
	a := applier{ctx: ctx, tx: tx, s: s, txID: receipt.ID, tt: ms(receipt.Time)}
	committed := true
	for i, p := range prep {
		ok, err := a.apply(p)
		if err != nil {
			return store.Tx{}, dbErr("submit", p.op.ID, fmt.Errorf("op %d (%s): %w", i+1, p.op.Kind, err))
		}
		if !ok {
			committed = false
			break
		}
	}
	if needSavepoint {
		if !committed {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO ops"); err != nil {
				return store.Tx{}, dbErr("submit", "", err)
			}
		}
		if _, err := tx.ExecContext(ctx, "RELEASE ops"); err != nil {
			return store.Tx{}, dbErr("submit", "", err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO txs (tx_id, tx_time, committed, ops, base) VALUES (?, ?, ?, ?, ?)",
		receipt.ID, ms(receipt.Time), committed, l.ops, l.base); err != nil {
		return store.Tx{}, dbErr("submit", "", err)
	}
	if !committed {
		a.evicted = nil // rolled back
	}
	for _, id := range a.evicted {
		if err := a.scrubMatches(id); err != nil {
			return store.Tx{}, dbErr("submit", id, fmt.Errorf("evict: removing logged match documents: %w", err))
		}
	}
	if err := tx.Commit(); err != nil {
		return store.Tx{}, dbErr("submit", "", err)
	}
	s.known.Note(receipt.ID)
	if len(a.evicted) > 0 {
		// Evicted content must leave the file: secure_delete zeroes the
		// freed pages, and a checkpoint moves them out of the WAL (best
		// effort: a reader holding an old snapshot delays it to a later
		// checkpoint).
		_, _ = s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	return receipt, nil
}

// applier applies the ops of one transaction inside its SQL transaction.
type applier struct {
	ctx  context.Context
	tx   *sqlx.Tx
	s    *Store
	txID int64
	tt   int64
	// evicted lists the entities this transaction evicted, whose expected
	// documents in logged matches are removed once the tx is logged.
	evicted []string
}

// writeSQL lists every statement the write path runs; Open prepares them
// all on the writer connection (preparing inside a transaction would wait
// for the only connection, which the transaction holds).
func writeSQL() []string {
	qs := []string{visibleSQL}
	qs = append(qs, evictSQL...)
	qs = append(qs,
		insertDocSQL, keyDocSQL, docIDSQL, insertEntSQL, insertPointSQL, continuationSQL, rangeSQL,
	)
	for n := 1; n <= fieldChunk; n++ {
		qs = append(qs, insertFieldsSQL(n))
	}
	return qs
}

// evictSQL removes entity ? from the tables. The search index entries of
// its documents go first, while every docs row is there: the delete
// trigger (search_docs_bd) reads a document's text to remove it from the
// FTS5 index, and a delta's text needs its base row (migration 00011),
// which the docs delete may have removed before it reaches the delta.
var evictSQL = []string{
	"DELETE FROM points WHERE ent = " + entSQL,
	// The field index is keyed by value (migration 00016): this is one
	// pass over it, the price of holding its rows once.
	"DELETE FROM fields WHERE doc IN (SELECT id FROM docs WHERE ent = " + entSQL + ")",
	`INSERT INTO search_fts (search_fts, rowid, title, body)
		SELECT 'delete', s.id, s.title, s.body FROM search_src s
		WHERE s.id IN (SELECT u.id FROM search_units u WHERE u.doc IN (SELECT id FROM docs WHERE ent = ` + entSQL + `))`,
	"DELETE FROM search_units WHERE doc IN (SELECT id FROM docs WHERE ent = " + entSQL + ")",
	// Another entity's row compressed against one of the entity's rows
	// (migration 00013) is stored whole first: its text stays readable
	// and unchanged, so its hash and search units still hold.
	`UPDATE docs SET doc = ctxs_pack(ctxs_doc(doc, (SELECT b.doc FROM docs b WHERE b.id = docs.base))), base = NULL
		WHERE base IN (SELECT d.id FROM docs d WHERE d.ent = (SELECT e.id FROM ents e WHERE e.h = ` + idHashFunc + `(?1) AND e.eid = ?1))
		AND ent <> (SELECT e.id FROM ents e WHERE e.h = ` + idHashFunc + `(?1) AND e.eid = ?1)`,
	"DELETE FROM docs WHERE ent = " + entSQL,
	// The id itself goes too: an evict leaves nothing of the entity but
	// the tx log's record that it was evicted.
	"DELETE FROM ents WHERE h = " + idHashFunc + "(?1) AND eid = ?1",
}

// Documents are stored as JSONB, SQLite's binary JSON (migration 00006):
// reading one field of a document skips over the others instead of parsing
// the whole text. Every read into Go takes json(doc), which gives back the
// canonical text stored here byte for byte.
var (
	insertDocSQL = `WITH p (doc) AS MATERIALIZED (SELECT ctxs_pack(jsonb(?), (SELECT k.doc FROM docs k WHERE k.id = ?)))
		INSERT INTO docs (hash, ent, doc, base)
		SELECT unhex(?), ` + entSQL + `, p.doc, CASE WHEN substr(p.doc, 1, 2) = x'0d03' THEN ? END FROM p
		WHERE NOT EXISTS (SELECT 1 FROM docs x WHERE ` + hashIs("x") + `)
		RETURNING id, base`
	// keyDocSQL is the row a new version of entity ? may be compressed
	// against: its latest row, or the one that is compressed against.
	keyDocSQL       = "SELECT coalesce(base, id) FROM docs WHERE ent = " + entSQL + " ORDER BY id DESC LIMIT 1"
	docIDSQL        = "SELECT id FROM docs d WHERE " + hashIs("d")
	insertPointSQL  = "INSERT OR REPLACE INTO points (ent, vt, tx_id, tx_time, doc) VALUES (" + entSQL + ", ?, ?, ?, ?)"
	continuationSQL = "SELECT vt, tx_id, tx_time, " + pointHashSQL + ", doc FROM points WHERE ent = " + entSQL + " AND vt > ? ORDER BY vt, tx_id DESC"
	rangeSQL        = "SELECT vt, tx_id, tx_time, " + pointHashSQL + ", doc FROM points WHERE ent = " + entSQL + " AND vt <= ? ORDER BY vt DESC, tx_id DESC"
)

const fieldChunk = 8

func insertFieldsSQL(n int) string {
	return "INSERT OR IGNORE INTO fields (doc, field, kind, value) VALUES (?, ?, ?, ?)" + strings.Repeat(", (?, ?, ?, ?)", n-1)
}

// prepareWrites prepares writeSQL on the writer connection.
func (s *Store) prepareWrites(ctx context.Context) error {
	for _, q := range writeSQL() {
		st, err := s.w.PreparexContext(ctx, q)
		if err != nil {
			return openErr(s.path, err)
		}
		s.wstmts[q] = st
	}
	return nil
}

// stmt returns the prepared statement q bound to this transaction.
func (a *applier) stmt(q string) (*sqlx.Stmt, error) {
	st, ok := a.s.wstmts[q]
	if !ok {
		return nil, fmt.Errorf("statement not prepared: %s", q)
	}
	return a.tx.StmtxContext(a.ctx, st), nil
}

func (a *applier) exec(q string, args ...any) error {
	st, err := a.stmt(q)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(a.ctx, args...)
	return err
}

// hashIs is the condition that docs row alias holds the content hash
// bound to its two parameters (the same hex twice): through the index on
// the hash's first 8 bytes (docs_hash, migration 00014), then whole.
func hashIs(alias string) string {
	return "substr(" + alias + ".hash, 1, 8) = substr(unhex(?), 1, 8) AND " + alias + ".hash = unhex(?)"
}

// pointHashSQL is the content hash of the document a point of table
// points names, NULL for a tombstone: points hold only the docs.id
// (migration 00008). docs.hash holds the 32 bytes of the SHA-256
// (migration 00012); hashes enter and leave SQL as lowercase hex.
const pointHashSQL = "(SELECT lower(hex(h.hash)) FROM docs h WHERE h.id = points.doc) AS hash"

const visibleSQL = `SELECT vt, tx_id, tx_time, ` + pointHashSQL + `, doc FROM points
	WHERE ent = ` + entSQL + ` AND vt <= ? AND tx_id <= ? ORDER BY vt DESC, tx_id DESC LIMIT 1`

// visible is visiblePoint inside the write transaction.
func (a *applier) visible(eid string, vt int64) (*pointRow, error) {
	st, err := a.stmt(visibleSQL)
	if err != nil {
		return nil, err
	}
	return visiblePoint(a.ctx, st, eid, vt, a.txID)
}

// pointRow is a row of points, read with its document's hash.
type pointRow = sqlcore.Point

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// apply applies one op; false means a match failed and the tx aborts.
func (a *applier) apply(p prepared) (bool, error) {
	op := p.op
	switch op.Kind {
	case store.OpPut, store.OpDelete:
		// The entity's ents row first: its document and points name it.
		if err := a.exec(insertEntSQL, op.ID); err != nil {
			return false, err
		}
		var v version // a tombstone unless a put
		if op.Kind == store.OpPut {
			docID, err := a.putDoc(p)
			if err != nil {
				return false, err
			}
			v = version{doc: &docID}
		}
		start := a.tt
		if op.ValidFrom != nil {
			start = ms(*op.ValidFrom)
		}
		if op.ValidTo == nil {
			return true, a.writeOpen(op.ID, start, v)
		}
		return true, a.writeRange(op.ID, start, ms(*op.ValidTo), v)
	case store.OpMatch:
		at := a.tt
		if op.ValidFrom != nil {
			at = ms(*op.ValidFrom)
		}
		cur, err := a.visible(op.ID, at)
		if err != nil {
			return false, err
		}
		have := ""
		if cur != nil {
			have = str(cur.Hash)
		}
		return have == p.hash, nil
	case store.OpEvict:
		for _, q := range evictSQL {
			if err := a.exec(q, op.ID); err != nil {
				return false, err
			}
		}
		a.evicted = append(a.evicted, op.ID)
		return true, nil
	}
	return false, fmt.Errorf("unknown op %q", op.Kind)
}

// putDoc stores p's document unless its hash is stored already, with its
// field index rows, and returns its docs.id. The document is compressed
// against an earlier row (packAgainst): its entity's latest row stored
// whole, or for an entity's first version the latest row of its family
// stored whole (migration 00013); a row it stores whole becomes its
// family's.
func (a *applier) putDoc(p prepared) (int64, error) {
	var key sql.NullInt64
	kq, err := a.stmt(keyDocSQL)
	if err != nil {
		return 0, err
	}
	if err := kq.GetContext(a.ctx, &key, p.op.ID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	if !key.Valid {
		key.Int64, key.Valid = a.s.keys[p.family]
	}
	st, err := a.stmt(insertDocSQL)
	if err != nil {
		return 0, err
	}
	var row struct {
		ID   int64         `db:"id"`
		Base sql.NullInt64 `db:"base"`
	}
	if err := st.GetContext(a.ctx, &row, p.canon, key, p.hash, p.op.ID, key, p.hash, p.hash); errors.Is(err, sql.ErrNoRows) { // stored already, with its fields
		var id int64
		q, err := a.stmt(docIDSQL)
		if err != nil {
			return 0, err
		}
		return id, q.GetContext(a.ctx, &id, p.hash, p.hash)
	} else if err != nil {
		return 0, err
	}
	docID := row.ID
	if !row.Base.Valid {
		a.s.keys[p.family] = docID
	}
	// All of a document's fields in one statement, in chunks that keep the
	// number of distinct statements small.
	for rest := p.fields; len(rest) > 0; {
		n := min(len(rest), fieldChunk)
		q := insertFieldsSQL(n)
		args := make([]any, 0, 4*n)
		for _, f := range rest[:n] {
			args = append(args, docID, f.field, f.kind, f.value)
		}
		if err := a.exec(q, args...); err != nil {
			return 0, err
		}
		rest = rest[n:]
	}
	return docID, nil
}

// version is what a point names: a document (its docs.id) or, with doc
// nil, a tombstone.
type version struct {
	doc *int64
}

func (a *applier) point(eid string, vt, txID, tt int64, v version) error {
	return a.exec(insertPointSQL, eid, vt, txID, tt, v.doc)
}

// writeOpen writes from start until the next different version: at start,
// and at every later point that continues the version visible at start
// (same tx and content; a tombstone has no continuation).
func (a *applier) writeOpen(eid string, start int64, v version) error {
	vts := []int64{start}
	vis, err := a.visible(eid, start)
	if err != nil {
		return err
	}
	if vis != nil && vis.Hash != nil {
		st, err := a.stmt(continuationSQL)
		if err != nil {
			return err
		}
		err = a.winners(st, []any{eid, start}, func(r pointRow) bool {
			if !r.Same(*vis) {
				return false
			}
			vts = append(vts, r.VT)
			return true
		})
		if err != nil {
			return err
		}
	}
	for _, vt := range vts {
		if err := a.point(eid, vt, a.txID, a.tt, v); err != nil {
			return err
		}
	}
	return nil
}

// winners runs st (ordered by valid time, latest tx first within one) and
// calls fn with the winning point of each valid time until fn returns false.
func (a *applier) winners(st *sqlx.Stmt, args []any, fn func(pointRow) bool) error {
	rows, err := st.QueryxContext(a.ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	winner := sqlcore.Winners()
	for rows.Next() {
		var r pointRow
		if err := rows.StructScan(&r); err != nil {
			return err
		}
		if !winner(r) {
			continue
		}
		if !fn(r) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// writeRange writes [start, end): at start and every winning point strictly
// inside, then restores at end the version that was visible there (keeping
// its tx), or a tombstone if there was none.
func (a *applier) writeRange(eid string, start, end int64, v version) error {
	if start == end {
		return nil
	}
	st, err := a.stmt(rangeSQL)
	if err != nil {
		return err
	}
	vts, restore, err := sqlcore.RangePoints(start, end, func(fn func(pointRow) bool) error {
		return a.winners(st, []any{eid, end}, fn)
	})
	if err != nil {
		return err
	}
	for _, vt := range vts {
		if err := a.point(eid, vt, a.txID, a.tt, v); err != nil {
			return err
		}
	}
	if restore != nil {
		return a.point(eid, end, restore.TxID, restore.TT, version{restore.Doc})
	}
	return a.point(eid, end, a.txID, a.tt, version{})
}

// scrubMatches removes the expected documents of every logged match on id
// (an evict removes the entity's content everywhere, the tx log included),
// marking those ops Evicted. Only text rows can hold one (packLog).
func (a *applier) scrubMatches(id string) error {
	key, _ := json.Marshal(id)
	rows, err := a.tx.QueryContext(a.ctx, "SELECT tx_id, ops FROM txs WHERE typeof(ops) = 'text' AND instr(ops, ?) > 0 AND instr(ops, '\"doc\"') > 0", `"id":`+string(key))
	if err != nil {
		return err
	}
	found, err := loggedRows(rows)
	if err != nil {
		return err
	}
	for _, r := range found {
		var logged []loggedOp
		if err := json.Unmarshal([]byte(r.ops), &logged); err != nil {
			return fmt.Errorf("tx %d: stored ops are corrupt: %w", r.id, err)
		}
		changed := false
		for i := range logged {
			if logged[i].Kind == store.OpMatch && logged[i].ID == id && len(logged[i].Doc) > 0 {
				logged[i].Doc, logged[i].Evicted, changed = nil, true, true
			}
		}
		if !changed {
			continue
		}
		b, err := json.Marshal(logged)
		if err != nil {
			return err
		}
		if _, err := a.tx.ExecContext(a.ctx, "UPDATE txs SET ops = ? WHERE tx_id = ?", string(b), r.id); err != nil {
			return err
		}
	}
	return nil
}

// loggedRow is one row of txs read by scrubMatches.
type loggedRow struct {
	id  int64
	ops string
}

// rowScanner is what loggedRows needs of *sql.Rows.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// loggedRows reads (tx_id, ops) rows to the end and closes them. An error
// that ends the scan early (rows.Err) fails it: an evict that went on with
// the rows read so far would commit and leave evicted content behind in
// the rows not read.
func loggedRows(rows rowScanner) ([]loggedRow, error) {
	defer rows.Close()
	var found []loggedRow
	for rows.Next() {
		var r loggedRow
		if err := rows.Scan(&r.id, &r.ops); err != nil {
			return nil, err
		}
		found = append(found, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return found, rows.Close()
}
