// Package storetestenv gives the tests of the packages above the store
// (session, context/...) a store on each backend, so that one test body
// runs on SQLite and on XTDB:
//
//	func TestMain(m *testing.M) { storetestenv.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		storetestenv.Run(t, func(t *testing.T, e *storetestenv.Env) {
//			s, err := session.Create(ctx, e.Store, e.ID("s1"), …)
//			…
//		})
//	}
//
// SQLite is a new database file in a temp directory per Env. XTDB is the
// per-process server of xtdbtest.ForTest (or XTDB_URL): with CI=true a
// missing server fails the test, otherwise the XTDB subtest is skipped; with
// -short it is skipped. Every test of a process shares that XTDB database,
// so ids a test chooses must come from Env.ID, which makes them unique.
//
// CTXSTORE_TEST_BACKENDS (a comma-separated list of "sqlite", "xtdb",
// "postgres") restricts the backends, for quick local runs. PostgreSQL is
// run only when named there: a schema per Env on the process's server
// (bitemporal/postgres/pgtest), to check the packages above the store on
// it (docs/postgres.md).
package storetestenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// The backends.
const (
	SQLite   = "sqlite"
	XTDB     = "xtdb"
	Postgres = "postgres"
)

// Env is one test's database on one backend.
type Env struct {
	// Backend is SQLite, XTDB or Postgres.
	Backend string
	// Store is a handle on the database, closed when the test ends.
	Store store.Store

	tb     testing.TB
	open   func() (store.Store, error)
	suffix string
}

// Backends returns the backends tests run on: SQLite and XTDB, unless
// CTXSTORE_TEST_BACKENDS names others.
func Backends() []string {
	all := []string{SQLite, XTDB}
	v := strings.TrimSpace(os.Getenv("CTXSTORE_TEST_BACKENDS"))
	if v == "" {
		return all
	}
	var out []string
	for _, b := range strings.Split(v, ",") {
		if b = strings.TrimSpace(b); slices.Contains(all, b) || b == Postgres {
			out = append(out, b)
		}
	}
	return out
}

// Run runs fn as one subtest per backend, named after it.
func Run(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b, func(t *testing.T) { fn(t, New(t, b)) })
	}
}

// RunParallel is Run with the backends' subtests in parallel (t.Parallel):
// for tests whose runs share nothing but the XTDB node (each Env has its
// own SQLite file, and unique ids on XTDB), so a slow XTDB run overlaps the
// SQLite one.
func RunParallel(t *testing.T, fn func(t *testing.T, e *Env)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, New(t, b))
		})
	}
}

// New returns a new database on backend for tb (skipping or failing tb as
// the package doc says when XTDB cannot be had).
func New(tb testing.TB, backend string) *Env {
	tb.Helper()
	e := &Env{Backend: backend, tb: tb, suffix: uniqueSuffix()}
	switch backend {
	case SQLite:
		path := filepath.Join(tb.TempDir(), "store.db")
		e.open = func() (store.Store, error) {
			return bitemporal.Open(context.Background(), path, bitemporal.Options{})
		}
	case XTDB:
		if testing.Short() && os.Getenv("XTDB_URL") == "" {
			tb.Skip("storetestenv: XTDB needs a JVM; skipped with -short")
		}
		base := xtdbtest.ForTest(tb)
		e.open = func() (store.Store, error) {
			return xtdb.Open(context.Background(), base, xtdb.Options{})
		}
	case Postgres:
		u := pgtest.Shared(tb).Schema(tb)
		e.open = func() (store.Store, error) {
			return postgres.Open(context.Background(), u, postgres.Options{})
		}
	default:
		tb.Fatalf("storetestenv: unknown backend %q", backend)
	}
	e.Store = e.Reopen()
	return e
}

// Reopen returns a new handle on the same database, as another process
// would open it; it is closed when the test ends.
func (e *Env) Reopen() store.Store {
	e.tb.Helper()
	st, err := e.open()
	if err != nil {
		e.tb.Fatalf("storetestenv: opening %s: %v", e.Backend, err)
	}
	e.tb.Cleanup(func() { st.Close() })
	return st
}

// ID returns name made unique to this Env ("name-<suffix>"), for ids the
// test chooses itself: session ids, toolcall ids, note ids. It is the same
// for the same name within one Env.
func (e *Env) ID(name string) string { return name + "-" + e.suffix }

var counter atomic.Int64

// uniqueSuffix is unique within the process (the counter) and across
// processes sharing one XTDB server (the start time and pid).
func uniqueSuffix() string {
	return fmt.Sprintf("%x%x.%d", start.UnixNano()&0xffffffffff, os.Getpid()&0xffff, counter.Add(1))
}

var start = time.Now()

// Main runs the tests of a package and stops the XTDB and PostgreSQL
// servers the tests started, if any. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := xtdbtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "storetestenv:", err)
	}
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "storetestenv:", err)
	}
	os.Exit(code)
}
