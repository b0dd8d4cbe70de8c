package postgres_test

import (
	"context"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
)

// TestConformance runs the whole conformance suite, every case on a fresh
// store (a schema of its own) with a clock the suite may freeze.
func TestConformance(t *testing.T) {
	clock := &frozenClock{}
	storetest.Run(t, storetest.Harness{
		Name:             "postgres",
		New:              func(t *testing.T) store.Store { return openTemp(t, clock.now) },
		SetClock:         clock.set,
		Capabilities:     []string{"TxTimeSubmitter", "CanonicalTxLogger", "Searcher", "ValueLister"},
		LongStringRanges: true,
	})
}

// TestDifferentialAgainstModel runs the randomized differential test of
// the PostgreSQL backend against the naive executable model.
func TestDifferentialAgainstModel(t *testing.T) {
	cfg := storetest.DiffConfig{Seed: 20261206, Txs: 200, Entities: 30, BasisPoints: 600}
	if testing.Short() {
		cfg.Txs, cfg.BasisPoints = 100, 300
	}
	storetest.Differential(t, func(t *testing.T) (store.Store, store.Store) {
		return storetest.NewModel(nil), openTemp(t, nil)
	}, cfg)
}

// TestDifferentialAgainstSQLite runs the same generated transactions on the
// SQLite store and on PostgreSQL and compares every read.
func TestDifferentialAgainstSQLite(t *testing.T) {
	cfg := storetest.DiffConfig{Seed: 7, Txs: 200, Entities: 30, BasisPoints: 600}
	if testing.Short() {
		cfg.Txs, cfg.BasisPoints = 100, 300
	}
	storetest.Differential(t, func(t *testing.T) (store.Store, store.Store) {
		sq, err := bitemporal.Open(context.Background(), ":memory:", bitemporal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sq.Close() })
		return sq, openTemp(t, nil)
	}, cfg)
}
