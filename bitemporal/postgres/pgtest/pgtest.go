// Package pgtest gives tests a PostgreSQL database for the PostgreSQL
// backend (tests only): CTXSTORE_POSTGRES_URL, or a server started in a
// temporary directory on a loopback port the way the XTDB cluster tests
// start theirs (xtdbtest.StartPostgres, scripts/ensure-postgres.sh).
// Each store a test opens lives in a new schema, so tests never see each
// other's data. Under -short no server is started and the test is skipped
// (unless CTXSTORE_POSTGRES_URL names one), as with XTDB; without a server
// a test is skipped, unless CI=true, where it fails: CI runs every test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// Server is a PostgreSQL database tests use.
type Server struct {
	// URL is the database's URL.
	URL      string
	pg       *xtdbtest.Postgres // nil: CTXSTORE_POSTGRES_URL
	watchdog *exec.Cmd
}

// Start returns CTXSTORE_POSTGRES_URL's database, or starts a server.
// Stop it with Stop.
func Start(ctx context.Context) (*Server, error) {
	if u := os.Getenv("CTXSTORE_POSTGRES_URL"); u != "" {
		return &Server{URL: u}, nil
	}
	pg, err := xtdbtest.StartPostgres(ctx)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: pg.URL(), pg: pg}
	s.watch()
	return s, nil
}

// watch starts a process that stops the server once this test process has
// ended, whatever way it ended: pg_ctl runs the server as a daemon, and a
// test binary without a TestMain that calls StopShared (or one killed by
// go test's timeout) would leave it running. Stop ends the watchdog.
func (s *Server) watch() {
	script := `while kill -0 "$1" 2>/dev/null; do sleep 1; done
pid=$(head -n 1 "$2/data/postmaster.pid" 2>/dev/null) && kill -INT "$pid"
sleep 5; rm -rf "$2"`
	cmd := exec.Command("sh", "-c", script, "pgtest-watchdog", strconv.Itoa(os.Getpid()), s.pg.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() == nil {
		s.watchdog = cmd
	}
}

// Restart stops the server (open connections are cut) and starts it again
// on the same port and data; a server the tests did not start cannot be.
func (s *Server) Restart(ctx context.Context) error {
	if s.pg == nil {
		return fmt.Errorf("pgtest: the server at CTXSTORE_POSTGRES_URL is not the tests' to restart")
	}
	return s.pg.Restart(ctx)
}

// Down stops the server (fast: open connections are cut) and starts it
// again after d, on the same port and data: for d, connections are
// refused.
func (s *Server) Down(ctx context.Context, d time.Duration) error {
	if s.pg == nil {
		return fmt.Errorf("pgtest: the server at CTXSTORE_POSTGRES_URL is not the tests' to stop")
	}
	bin, err := xtdbtest.EnsurePostgres(ctx)
	if err != nil {
		return err
	}
	args := []string{filepath.Join(bin, "pg_ctl"), "-D", filepath.Join(s.pg.Dir, "data"), "-w", "-m", "fast", "stop"}
	if os.Geteuid() == 0 { // the server runs as postgres (xtdbtest.StartPostgres)
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: stopping the server: %v\n%s", err, out)
	}
	time.Sleep(d)
	return s.pg.Start(ctx)
}

// Stop stops a server Start started.
func (s *Server) Stop() error {
	if s == nil || s.pg == nil {
		return nil
	}
	if s.watchdog != nil {
		_ = s.watchdog.Process.Kill()
		_ = s.watchdog.Wait()
		s.watchdog = nil
	}
	return s.pg.Stop()
}

// ForTest returns a server for t alone, stopped when t ends; skipped or
// failed (CI=true) when none can be had.
func ForTest(t testing.TB) *Server {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		missing(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping PostgreSQL: %v", err)
		}
	})
	return s
}

var (
	shared    *Server
	sharedErr error
	sharedMu  sync.Mutex
)

// Shared returns the server of this test process, starting it on first
// use; the package's TestMain stops it with StopShared.
func Shared(t testing.TB) *Server {
	t.Helper()
	skipShort(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		shared, sharedErr = Start(ctx)
		cancel()
	}
	if sharedErr != nil {
		missing(t, sharedErr)
	}
	return shared
}

// StopShared stops the server Shared started, if any.
func StopShared() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	err := shared.Stop()
	shared = nil
	return err
}

// skipShort skips t under -short when no server is named.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() && os.Getenv("CTXSTORE_POSTGRES_URL") == "" {
		t.Skip("pgtest: -short starts no PostgreSQL server (CTXSTORE_POSTGRES_URL names one)")
	}
}

func missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("pgtest: no PostgreSQL server: %v", err)
	}
	t.Skipf("pgtest: no PostgreSQL server (set CI=true to fail instead): %v", err)
}

// Schema creates an empty schema, dropped when t ends, and returns the
// URL of a store in it.
func (s *Server) Schema(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	db, err := sqlx.Open("pgx", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := sqlx.Open("pgx", s.URL)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP SCHEMA " + name + " CASCADE")
	})
	return WithParam(t, s.URL, "search_path", name)
}

// WithParam returns raw with query parameter key set to value.
func WithParam(t testing.TB, raw, key, value string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Replicated starts, for t alone, a primary PostgreSQL server and one
// streaming replica of it, made synchronous (synchronous_standby_names
// '*', synchronous_commit on): a commit is acknowledged only once the
// replica has its WAL on disk, so a failover to the replica loses nothing
// acknowledged. Both are stopped when t ends. The pair is always started
// here (CTXSTORE_POSTGRES_URL names one server, not a pair).
func Replicated(t testing.TB) (primary, replica *Server) {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: -short starts no PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pg, err := xtdbtest.StartPostgres(ctx)
	if err != nil {
		missing(t, err)
	}
	primary = &Server{URL: pg.URL(), pg: pg}
	primary.watch()
	t.Cleanup(func() {
		if err := primary.Stop(); err != nil {
			t.Errorf("stopping the primary: %v", err)
		}
	})
	rp, err := pg.StartReplica(ctx)
	if err != nil {
		t.Fatalf("pgtest: starting a replica: %v", err)
	}
	replica = &Server{URL: rp.URL(), pg: rp}
	replica.watch()
	t.Cleanup(func() {
		if err := replica.Stop(); err != nil {
			t.Errorf("stopping the replica: %v", err)
		}
	})
	db, err := sqlx.Open("pgx", primary.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"ALTER SYSTEM SET synchronous_standby_names = '*'", "ALTER SYSTEM SET synchronous_commit = 'on'", "SELECT pg_reload_conf()"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("pgtest: %s: %v", q, err)
		}
	}
	for {
		var state string
		err := db.GetContext(ctx, &state, "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication")
		if err == nil && state == "sync" {
			return primary, replica
		}
		if ctx.Err() != nil {
			t.Fatalf("pgtest: the replica did not become synchronous: state %q, %v", state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, the postmaster and every process of
// it, as a crash of its machine would (xtdbtest.Postgres.Kill).
func (s *Server) Kill() error {
	if s.pg == nil {
		return fmt.Errorf("pgtest: the server at CTXSTORE_POSTGRES_URL is not the tests' to kill")
	}
	return s.pg.Kill()
}

// Promote makes a replica a primary that accepts writes.
func (s *Server) Promote(ctx context.Context) error {
	if s.pg == nil {
		return fmt.Errorf("pgtest: the server at CTXSTORE_POSTGRES_URL is not the tests' to promote")
	}
	return s.pg.Promote(ctx)
}

// FailoverURL is storeURL (a URL of primary's, as Schema gives) naming
// both servers, primary first, with target_session_attrs=read-write: a
// client (libpq, pgx) connects to the first that accepts writes, so once
// the replica is promoted, new connections reach it.
func FailoverURL(t testing.TB, storeURL string, primary, replica *Server) string {
	t.Helper()
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != fmt.Sprintf("127.0.0.1:%d", primary.pg.Port) {
		t.Fatalf("pgtest: %s is not a URL of the primary", storeURL)
	}
	u.Host += fmt.Sprintf(",127.0.0.1:%d", replica.pg.Port)
	return WithParam(t, u.String(), "target_session_attrs", "read-write")
}
