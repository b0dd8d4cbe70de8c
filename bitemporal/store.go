// Package bitemporal is the embedded backend of ctxstore: a bitemporal
// document store with XTDB 1.24.5 semantics on one SQLite file
// (modernc.org/sqlite, no cgo).
//
// The file holds XTDB's index shape as tables: points (entity, valid time,
// tx id) naming a content hash or a tombstone, documents stored once per
// content hash, a transaction table, and an index of top-level field
// values for the portable query. One writer connection (WAL, busy timeout,
// immediate transactions) applies transactions synchronously, so a
// transaction is indexed when Submit returns; a pool of read-only
// connections serves reads. Several processes may open the same file.
package bitemporal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"modernc.org/sqlite" // the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ctxstore/ctxstore/bitemporal/internal/sqlcore"
	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
)

// applicationID marks a SQLite file as a ctxstore store ("ctxs").
const applicationID = 0x63747873

// Options configure Open.
type Options struct {
	// Clock gives transaction times and the default valid time (nil:
	// time.Now). Transaction times never go backwards, whatever it says.
	Clock func() time.Time
	// Readers is the size of the read connection pool (default 4).
	Readers int
	// Durable sets synchronous=FULL, so a committed transaction survives a
	// power loss, not only a process crash (the default, NORMAL in WAL mode).
	Durable bool
	// BusyTimeout is how long a connection waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
}

// Store is the SQLite backend. It is safe for concurrent use.
type Store struct {
	path   string
	w      *sqlx.DB // the one writer connection
	r      *sqlx.DB // read-only pool (== w for in-memory stores)
	now    func() time.Time
	wmu    sync.Mutex
	closed atomic.Bool
	// wstmts caches statements prepared on the writer connection (guarded
	// by wmu): re-preparing each statement of a 1,000-put transaction
	// would cost more than running it.
	wstmts map[string]*sqlx.Stmt
	// rstmts are the hot reads, prepared on the reader pool.
	rstmts struct{ entity, visible *sqlx.Stmt }
	// known caches the latest tx id known to exist; it only grows, so it
	// never claims a tx that does not exist.
	known sqlcore.Known
	// rd is the reads shared with the PostgreSQL backend.
	rd sqlcore.Reader
	// indexed is the set of fields the field index holds (the table
	// indexed_fields, migration 00007), read once at Open.
	indexed indexSet
	// keys is, per document type (the top-level "type" string, "" for
	// none), the docs.id of the latest row of that type stored whole: the
	// row a new entity's first version is compressed against (migration
	// 00013). Guarded by wmu. A row it names that a rolled-back
	// transaction or an evict removed is harmless: a missing row is no
	// base, and any other row is a valid one (docs.base records it).
	keys map[string]int64
	// logBase is the tx log row the next transaction's ops are compressed
	// against (migration 00017, packLogAgainst); nil until the first
	// transaction this process logs stores one.
	logBase atomic.Pointer[logBase]
	// counted, when set (by the tests), adds up the field-index rows the
	// query driver counts to choose its candidates.
	counted *atomic.Int64
}

var _ store.Store = (*Store)(nil)

// Open opens (creating it if needed) the store in the SQLite file at path,
// applying any pending migrations. Path ":memory:" opens a private
// in-memory store. A file that is not a SQLite database, a SQLite database
// of another application, or a store written by a newer ctxstore is refused
// with an error wrapping store.ErrInvalid; the file is left as it was.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if err := registerFuncs(); err != nil {
		return nil, &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: "registering the document functions", Err: err}
	}
	s := &Store{path: path, now: o.Clock, wstmts: map[string]*sqlx.Stmt{}, keys: map[string]int64{}}
	s.rd = sqlcore.Reader{Bind: sqlx.QUESTION, Now: o.Clock, Known: &s.known, DBErr: dbErr}
	syncMode := "NORMAL"
	if o.Durable {
		syncMode = "FULL"
	}
	pragmas := []string{
		fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()),
		"journal_mode(WAL)", "synchronous(" + syncMode + ")", "foreign_keys(ON)", "temp_store(MEMORY)",
		"secure_delete(ON)", // evicted content is overwritten, not left in free pages
	}
	memory := path == ":memory:"
	if memory {
		pragmas[1] = "journal_mode(MEMORY)"
	} else {
		// Openers creating or migrating one store at once take turns.
		unlock, err := lockInit(ctx, path, o.BusyTimeout)
		if err != nil {
			return nil, &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: path, Err: err}
		}
		defer unlock()
		if err := checkFile(ctx, path); err != nil {
			return nil, err
		}
	}
	dsn := func(extra ...string) string {
		q := url.Values{}
		for _, p := range append(pragmas, extra...) {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate")
		if memory {
			return ":memory:?" + q.Encode()
		}
		return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	w, err := sqlx.Open("sqlite", dsn())
	if err != nil {
		return nil, openErr(path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	s.w = w
	if err := s.init(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if err := s.prepareWrites(ctx); err != nil {
		w.Close()
		return nil, err
	}
	if memory {
		s.r = w
		return s, s.prepareReads(ctx)
	}
	r, err := sqlx.Open("sqlite", dsn("query_only(1)"))
	if err != nil {
		w.Close()
		return nil, openErr(path, err)
	}
	r.SetMaxOpenConns(o.Readers)
	r.SetMaxIdleConns(o.Readers)
	s.r = r
	if err := s.prepareReads(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// prepareReads prepares the hot read statements and primes the latest tx
// id cache.
func (s *Store) prepareReads(ctx context.Context) error {
	var err error
	if s.rstmts.entity, err = s.r.PreparexContext(ctx, entitySQL); err != nil {
		return openErr(s.path, err)
	}
	if s.rstmts.visible, err = s.r.PreparexContext(ctx, visibleSQL); err != nil {
		return openErr(s.path, err)
	}
	last, err := s.latest(ctx, s.r)
	if err != nil {
		return openErr(s.path, err)
	}
	if last != nil {
		s.known.Note(last.ID)
	}
	return nil
}

// checkFile refuses, before any connection that could write to it is
// opened, a file that is not a SQLite database or is one of another
// application. It reads the header and, through a read-only connection,
// the application id and the tables.
func checkFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return openErr(path, err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := f.Read(head)
	if n == 0 {
		return nil
	}
	if n < 16 || string(head) != "SQLite format 3\x00" {
		return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s is not a SQLite database (corrupt or foreign file)", path)}
	}
	ro, err := sqlx.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return openErr(path, err)
	}
	defer ro.Close()
	return checkOwner(ctx, ro, path)
}

// checkOwner refuses a database that has tables but is not marked as a
// ctxstore store, or is marked by another application.
func checkOwner(ctx context.Context, db *sqlx.DB, path string) error {
	var appID int64
	if err := db.GetContext(ctx, &appID, "PRAGMA application_id"); err != nil {
		return openErr(path, err)
	}
	var tables int
	// goose's version table alone is a store another opener is creating
	// right now (it is made before the migration that marks the file).
	if err := db.GetContext(ctx, &tables, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'goose_db_version'"); err != nil {
		return openErr(path, err)
	}
	switch {
	case appID == 0 && tables > 0:
		return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s is a SQLite database of another application (it has tables but no ctxstore mark); refusing to touch it", path)}
	case appID != 0 && appID != applicationID:
		return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s belongs to another application (application_id %#x)", path, appID)}
	}
	return nil
}

func openErr(path string, err error) error {
	return &store.Error{Op: "open", Kind: sqliteKind(err), Msg: path, Err: err}
}

// sqliteKind classifies a database error by SQLite's result code (never by
// its text): a corrupt or foreign file (SQLITE_CORRUPT, SQLITE_NOTADB,
// SQLITE_FORMAT) is ErrInvalid, since retrying fails the same way; every
// other failure (busy, locked, I/O, full disk, a cancelled context) is
// ErrUnavailable.
func sqliteKind(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT:
			return store.ErrInvalid
		}
	}
	return store.ErrUnavailable
}

// init checks the file belongs to ctxstore and migrates it.
func (s *Store) init(ctx context.Context) error {
	if err := checkOwner(ctx, s.w, s.path); err != nil {
		return err
	}
	var tables int
	if err := s.w.GetContext(ctx, &tables, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"); err != nil {
		return openErr(s.path, err)
	}
	mig, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w.DB, mig)
	if err != nil {
		return &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: "loading migrations", Err: err}
	}
	if tables > 0 {
		cur, err := p.GetDBVersion(ctx)
		if err != nil {
			return openErr(s.path, err)
		}
		srcs := p.ListSources()
		if latest := srcs[len(srcs)-1].Version; cur > latest {
			return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s has schema version %d, newer than this ctxstore knows (%d); upgrade ctxstore", s.path, cur, latest)}
		}
	}
	applied, err := p.Up(ctx)
	if err != nil {
		return &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: "migrating " + s.path, Err: err}
	}
	if tables > 0 && len(applied) > 0 && s.path != ":memory:" {
		s.vacuum(ctx)
	}
	return s.loadIndexed(ctx)
}

// vacuum rebuilds the file after migrations upgraded an existing store:
// most of them rewrite tables (copy, drop, rename), and SQLite keeps the
// old tables' pages as free pages in the file, often most of it. VACUUM
// gives them back to the file system once, at the upgrade. It is best effort: a store it cannot
// rebuild (no room for the copy it writes) stays valid and is migrated,
// and "sqlite3 FILE VACUUM" with no ctxstore process on it does the same
// later (docs/cli.md).
func (s *Store) vacuum(ctx context.Context) {
	if _, err := s.w.ExecContext(ctx, "VACUUM"); err != nil {
		return
	}
	_, _ = s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
}

// Close implements store.Store. It runs PRAGMA optimize and closes every
// connection.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, st := range s.wstmts {
		st.Close()
	}
	for _, st := range []*sqlx.Stmt{s.rstmts.entity, s.rstmts.visible} {
		if st != nil {
			st.Close()
		}
	}
	_, _ = s.w.Exec("PRAGMA optimize")
	var errs []error
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	return errors.Join(errs...)
}

func (s *Store) check(op string) error {
	if s.closed.Load() {
		return store.Errorf(op, store.ErrUnavailable, "", "store is closed")
	}
	return nil
}

// dbErr wraps a database error met while doing op.
func dbErr(op, id string, err error) error {
	if err == nil {
		return nil
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	kind := sqliteKind(err)
	if errors.Is(err, sql.ErrNoRows) {
		kind = store.ErrNotFound
	}
	return &store.Error{Op: op, Kind: kind, ID: id, Err: err}
}

// Status implements store.Store.
func (s *Store) Status(ctx context.Context) (store.Status, error) {
	if err := s.check("status"); err != nil {
		return store.Status{}, err
	}
	st := store.Status{Backend: "sqlite", Version: "1", Location: s.path}
	last, err := s.latest(ctx, s.r)
	if err != nil {
		return st, dbErr("status", "", err)
	}
	if last != nil {
		st.LatestCompleted, st.LatestSubmitted = last, last
	}
	var n struct {
		Entities int64 `db:"entities"`
		Docs     int64 `db:"docs"`
		Points   int64 `db:"points"`
	}
	err = s.r.GetContext(ctx, &n, `SELECT (SELECT count(DISTINCT ent) FROM points) AS entities,
		(SELECT count(*) FROM docs) AS docs, (SELECT count(*) FROM points) AS points`)
	if err != nil {
		return st, dbErr("status", "", err)
	}
	// synchronous as the writer connection has it: 2 (FULL) or 3 (EXTRA)
	// is durable across power loss (Options.Durable).
	var syncMode int64
	if err := s.w.GetContext(ctx, &syncMode, "PRAGMA synchronous"); err != nil {
		return st, dbErr("status", "", err)
	}
	durable := int64(0)
	if syncMode >= 2 {
		durable = 1
	}
	st.Detail = map[string]int64{"entities": n.Entities, "documents": n.Docs, "points": n.Points, "durable": durable}
	return st, nil
}

type queryer interface {
	sqlx.QueryerContext
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
}

// latest returns the latest transaction, nil if there is none.
func (s *Store) latest(ctx context.Context, q queryer) (*store.Tx, error) {
	return sqlcore.Latest(ctx, q)
}

func ms(t time.Time) int64     { return t.UnixMilli() }
func fromMS(m int64) time.Time { return time.UnixMilli(m).UTC() }
