// Package postgres is the PostgreSQL backend of ctxstore: the bitemporal
// document store of package bitemporal (XTDB 1.24.5 semantics, the same
// schema ideas) on a PostgreSQL database that any number of ctxstore
// processes share (docs/postgres.md).
//
// The database holds points (entity, valid time, tx id) naming a document
// stored once per content hash, a transaction table and a search layer
// (migrations/postgres). Every writing transaction first locks the one row
// of tx_clock and updates it: writers, in one process or many, take turns,
// so tx ids are totally ordered and gap-free and a transaction is indexed
// when its SQL transaction commits. Reads run on a pool of connections
// under READ COMMITTED; a read that takes several statements (a tx log
// page) runs them in one REPEATABLE READ transaction.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/ctxstore/ctxstore/bitemporal/internal/sqlcore"
	pgmigrations "github.com/ctxstore/ctxstore/migrations/postgres"
	"github.com/ctxstore/ctxstore/store"
)

// Backend is the name Status gives the backend.
const Backend = "postgres"

// Options configure Open.
type Options struct {
	// Clock gives transaction times and the default valid time (nil:
	// time.Now). Transaction times never go backwards, whatever it says:
	// with several processes on one database, each one's clock only moves
	// the shared tx time forward.
	Clock func() time.Time
	// MaxConns bounds the connections this process opens (default 8).
	MaxConns int
	// MustExist refuses a database (or schema) that holds no store yet,
	// with an error wrapping store.ErrNotFound, instead of creating one.
	MustExist bool
}

// Store is the PostgreSQL backend. It is safe for concurrent use, and
// several Stores (in one process or many) may share one database.
type Store struct {
	db       *sqlx.DB
	location string // the URL without its password
	now      func() time.Time
	closed   atomic.Bool
	// known caches the latest tx id known to exist. Tx ids only grow,
	// whichever process writes them, so it never claims a tx that does
	// not exist and a basis at or below it needs no look-up.
	known sqlcore.Known
	// rd is the reads shared with the SQLite backend.
	rd sqlcore.Reader
}

var _ store.Store = (*Store)(nil)

// Open connects to the PostgreSQL database at url (postgres:// or
// postgresql://, any libpq connection parameters; search_path=SCHEMA
// keeps the store in a schema of its own) and applies any pending
// migrations; concurrent openers take turns through a session advisory
// lock. A database (or schema) that has tables but is not a ctxstore
// store, or holds a store written by a newer ctxstore, is refused with an
// error wrapping store.ErrInvalid; an unreachable server gives
// store.ErrUnavailable.
func Open(ctx context.Context, rawURL string, o Options) (*Store, error) {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	loc := redact(rawURL)
	db, err := sqlx.Open("pgx", rawURL)
	if err != nil {
		return nil, &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: loc, Err: err}
	}
	db.SetMaxOpenConns(o.MaxConns)
	db.SetMaxIdleConns(o.MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, location: loc, now: o.Clock}
	s.rd = sqlcore.Reader{Bind: sqlx.DOLLAR, Now: o.Clock, Known: &s.known, DBErr: dbErr}
	if err := s.init(ctx, o.MustExist); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// redact gives url without its password, as Status reports it.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// init checks the database belongs to ctxstore and migrates it.
func (s *Store) init(ctx context.Context, mustExist bool) error {
	if err := s.db.PingContext(ctx); err != nil {
		return s.openErr(err)
	}
	var schema sql.NullString
	if err := s.db.GetContext(ctx, &schema, "SELECT current_schema()"); err != nil {
		return s.openErr(err)
	}
	if !schema.Valid {
		return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s: no schema of the search path exists; create it (CREATE SCHEMA) or name another", s.location)}
	}
	var tables, marked int
	err := s.db.GetContext(ctx, &tables, `SELECT count(*) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename <> 'goose_db_version'`)
	if err != nil {
		return s.openErr(err)
	}
	if tables > 0 {
		err := s.db.GetContext(ctx, &marked, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'ctxstore_meta'`)
		if err != nil {
			return s.openErr(err)
		}
		if marked == 0 {
			return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s: the schema has tables but no ctxstore mark (table ctxstore_meta); refusing to touch it", s.location)}
		}
	}
	if mustExist && marked == 0 {
		return &store.Error{Op: "open", Kind: store.ErrNotFound, Msg: fmt.Sprintf("no store at %s: nothing has been written yet", s.location)}
	}
	mig, err := fs.Sub(pgmigrations.FS, ".")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: "migration lock", Err: err}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, s.db.DB, mig, goose.WithSessionLocker(locker))
	if err != nil {
		return &store.Error{Op: "open", Kind: store.ErrUnavailable, Msg: "loading migrations", Err: err}
	}
	if marked > 0 {
		cur, err := p.GetDBVersion(ctx)
		if err != nil {
			return s.openErr(err)
		}
		srcs := p.ListSources()
		if latest := srcs[len(srcs)-1].Version; cur > latest {
			return &store.Error{Op: "open", Kind: store.ErrInvalid, Msg: fmt.Sprintf("%s has schema version %d, newer than this ctxstore knows (%d); upgrade ctxstore", s.location, cur, latest)}
		}
	}
	if _, err := p.Up(ctx); err != nil {
		return &store.Error{Op: "open", Kind: pgKind(err), Msg: "migrating " + s.location, Err: err}
	}
	return nil
}

func (s *Store) openErr(err error) error {
	return &store.Error{Op: "open", Kind: pgKind(err), Msg: s.location, Err: err}
}

// pgKind classifies a database error by its SQLSTATE (never by its text):
// a data exception (class 22) or an undefined object or privilege error
// (class 42) is ErrInvalid, since retrying fails the same way; every
// other failure (a connection refused or cut, a server shutting down, a
// serialization failure, a cancelled context) is ErrUnavailable.
func pgKind(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "22"), strings.HasPrefix(pe.Code, "42"):
			return store.ErrInvalid
		}
	}
	return store.ErrUnavailable
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
	kind := pgKind(err)
	if errors.Is(err, sql.ErrNoRows) {
		kind = store.ErrNotFound
	}
	return &store.Error{Op: op, Kind: kind, ID: id, Err: err}
}

// Close implements store.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

func (s *Store) check(op string) error {
	if s.closed.Load() {
		return store.Errorf(op, store.ErrUnavailable, "", "store is closed")
	}
	return nil
}

// status is Status, one attempt.
func (s *Store) status(ctx context.Context) (store.Status, error) {
	if err := s.check("status"); err != nil {
		return store.Status{}, err
	}
	st := store.Status{Backend: Backend, Version: "1", Location: s.location}
	last, err := latest(ctx, s.db)
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
	err = s.db.GetContext(ctx, &n, `SELECT (SELECT count(DISTINCT ent) FROM points) AS entities,
		(SELECT count(*) FROM docs) AS docs, (SELECT count(*) FROM points) AS points`)
	if err != nil {
		return st, dbErr("status", "", err)
	}
	st.Detail = map[string]int64{"entities": n.Entities, "documents": n.Docs, "points": n.Points}
	return st, nil
}

type queryer interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}

// latest returns the latest transaction, nil if there is none.
func latest(ctx context.Context, q queryer) (*store.Tx, error) { return sqlcore.Latest(ctx, q) }

func ms(t time.Time) int64     { return t.UnixMilli() }
func fromMS(m int64) time.Time { return time.UnixMilli(m).UTC() }
