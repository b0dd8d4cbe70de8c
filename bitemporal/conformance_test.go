package bitemporal_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
)

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

func openTemp(t *testing.T, clock func() time.Time) *bitemporal.Store {
	t.Helper()
	s, err := bitemporal.Open(context.Background(), filepath.Join(t.TempDir(), "store.db"), bitemporal.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// indexEveryField makes s index every field (bitemporal.IndexEveryField).
func indexEveryField(t *testing.T, s *bitemporal.Store) *bitemporal.Store {
	t.Helper()
	if err := bitemporal.IndexEveryField(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the suite twice: with the store's own field index,
// which holds none of the suite's fields but "type" (its predicates on the
// others are evaluated on the documents), and with every field indexed
// (the field index answers them).
func TestConformance(t *testing.T) {
	for _, every := range []bool{false, true} {
		name := "sqlite"
		if every {
			name = "sqlite-every-field-indexed"
		}
		clock := &frozenClock{}
		storetest.Run(t, storetest.Harness{
			Name: name,
			New: func(t *testing.T) store.Store {
				s := openTemp(t, clock.now)
				if every {
					indexEveryField(t, s)
				}
				return s
			},
			SetClock:         clock.set,
			Capabilities:     []string{"TxTimeSubmitter", "CanonicalTxLogger", "Searcher", "ValueLister"},
			LongStringRanges: true,
		})
	}
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		Name: "sqlite-memory",
		New: func(t *testing.T) store.Store {
			s, err := bitemporal.Open(context.Background(), ":memory:", bitemporal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		LongStringRanges: true,
	})
}

// TestDifferentialAgainstModel runs the randomized differential test of the
// SQLite backend against the naive executable model.
func TestDifferentialAgainstModel(t *testing.T) {
	cfg := storetest.DiffConfig{Seed: 20261122, Txs: 300, Entities: 40, BasisPoints: 2000}
	if testing.Short() {
		cfg.Txs, cfg.BasisPoints = 150, 800
	}
	for _, every := range []bool{false, true} {
		t.Run(map[bool]string{false: "indexed-fields", true: "every-field"}[every], func(t *testing.T) {
			storetest.Differential(t, func(t *testing.T) (store.Store, store.Store) {
				s := openTemp(t, nil)
				if every {
					indexEveryField(t, s)
				}
				return storetest.NewModel(nil), s
			}, cfg)
		})
	}
}
