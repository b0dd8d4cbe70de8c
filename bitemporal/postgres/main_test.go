package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
)

// The tests share one PostgreSQL server per process (pgtest.Shared); every
// store lives in a schema of its own.
func TestMain(m *testing.M) {
	// The many-writers test re-executes this binary as writer processes.
	if u := os.Getenv(writerEnv); u != "" {
		os.Exit(writerChild(u))
	}
	code := m.Run()
	if err := pgtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping PostgreSQL:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// newSchema creates an empty schema and returns the URL of a store in it.
func newSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Shared(t).Schema(t)
}

func withParam(t testing.TB, raw, key, value string) string {
	return pgtest.WithParam(t, raw, key, value)
}

// openURL opens the store at u, closed when the test ends.
func openURL(t testing.TB, u string, clock func() time.Time) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), u, postgres.Options{Clock: clock})
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTemp opens a store in a new schema.
func openTemp(t testing.TB, clock func() time.Time) *postgres.Store {
	t.Helper()
	return openURL(t, newSchema(t), clock)
}

// frozenClock is a clock tests can freeze.
type frozenClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *frozenClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		return time.Now()
	}
	return c.at
}

func (c *frozenClock) set(t time.Time) {
	c.mu.Lock()
	c.at = t
	c.mu.Unlock()
}
