// Package xtdbtest gives tests a real XTDB 1.24.5 node: one per test
// process, started from Maven artifacts by package xtdbserver, or the server
// XTDB_URL names. It lives apart from xtdbserver so that the shipped binary
// does not link package testing.
//
// Typical use:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		xtdbtest.StopShared()
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		base := xtdbtest.ForTest(t) // e.g. "http://127.0.0.1:41234"
//		...
//	}
package xtdbtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbserver"
)

// shared is the per-process server behind ForTest.
var shared struct {
	mu      sync.Mutex
	started bool // the first ForTest ran (its result is memoised)
	srv     *xtdbserver.Server
	url     string
	err     error
}

// ForTest returns the base URL (e.g. "http://127.0.0.1:41234", no trailing slash)
// of an XTDB 1.24.5 HTTP server for t.
//
//   - If XTDB_URL is set, that server is used, after checking that its
//     /_xtdb/status answers 200.
//   - Otherwise the first call starts one in-memory server (Start with default
//     Options) that all tests of the process share; the package's TestMain should
//     call StopShared after m.Run. Its output is appended to the file named by
//     XTDB_SERVER_LOG, if set.
//
// Under -short (make test-short) no JVM is started: t is skipped, also with
// CI=true, since CI runs the full suite. XTDB_URL is still honoured.
//
// The outcome of the first call is reused by later calls. When no server can be
// had, t fails (Fatalf) if CI=true, and is skipped (Skipf) otherwise; the message
// gives the reason. Tests share one database: use unique entity ids per test.
func ForTest(t testing.TB) string {
	t.Helper()
	if testing.Short() && os.Getenv("XTDB_URL") == "" {
		t.Skip("xtdbtest: -short starts no JVM (set XTDB_URL to use a running node)")
	}
	url, err := sharedURL()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("xtdbtest: no XTDB server: %v", err)
		}
		t.Skipf("xtdbtest: no XTDB server (set CI=true to fail instead): %v", err)
	}
	return url
}

func sharedURL() (string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.started {
		return shared.url, shared.err
	}
	shared.started = true
	if u := strings.TrimRight(os.Getenv("XTDB_URL"), "/"); u != "" {
		if err := xtdbserver.StatusOK(context.Background(), u, 10*time.Second); err != nil {
			shared.err = fmt.Errorf("XTDB_URL=%s does not answer: %w", u, err)
		}
		shared.url = u
		return shared.url, shared.err
	}
	opts := xtdbserver.Options{}
	if name := os.Getenv("XTDB_SERVER_LOG"); name != "" {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			shared.err = fmt.Errorf("XTDB_SERVER_LOG: %w", err)
			return "", shared.err
		}
		opts.Log = f // left open: the JVM may write until StopShared
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	shared.srv, shared.err = xtdbserver.Start(ctx, opts)
	if shared.err == nil {
		shared.url = shared.srv.URL()
	}
	return shared.url, shared.err
}

// StopShared stops the server started by ForTest, if any, and forgets it, so a
// later ForTest starts a new one. Call it from TestMain after m.Run. (On Linux the
// JVM is also killed if the test process dies without calling it.)
func StopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var err error
	if shared.srv != nil {
		err = shared.srv.Stop()
	}
	shared.started, shared.srv, shared.url, shared.err = false, nil, "", nil
	return err
}
