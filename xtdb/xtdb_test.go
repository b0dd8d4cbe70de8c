package xtdb_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := xtdbtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// open returns a new client of the shared test server (XTDB_URL, or one
// this test process starts).
func open(t *testing.T) *xtdb.Store {
	t.Helper()
	base := xtdbtest.ForTest(t)
	s, err := xtdb.Open(context.Background(), base, xtdb.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", base, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{Name: "xtdb", New: func(t *testing.T) store.Store { return open(t) }, Capabilities: []string{"Searcher", "ValueLister"}})
}

// TestDifferential runs the same generated transactions on SQLite and on the
// real XTDB server and compares every read. CI runs a fixed seed at a
// moderate size; XTDB_DIFF_TXS, XTDB_DIFF_BASIS and XTDB_DIFF_SEED scale it
// (see docs/xtdb.md for the big run).
func TestDifferential(t *testing.T) {
	cfg := storetest.DiffConfig{Seed: 1, Txs: 300, Entities: 50, BasisPoints: 400}
	envInt(t, "XTDB_DIFF_TXS", &cfg.Txs)
	envInt(t, "XTDB_DIFF_BASIS", &cfg.BasisPoints)
	var seed int
	if envInt(t, "XTDB_DIFF_SEED", &seed) {
		cfg.Seed = int64(seed)
	}
	storetest.Differential(t, func(t *testing.T) (store.Store, store.Store) {
		sq, err := bitemporal.Open(context.Background(), ":memory:", bitemporal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sq.Close() })
		return sq, open(t)
	}, cfg)
}

func envInt(t *testing.T, name string, dst *int) bool {
	v := os.Getenv(name)
	if v == "" {
		return false
	}
	if _, err := fmt.Sscan(v, dst); err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return true
}
