package storetest

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// modelHarness returns a harness making fresh models that share one
// settable clock.
func modelHarness() Harness {
	var mu sync.Mutex
	var frozen time.Time
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if frozen.IsZero() {
			return time.Now()
		}
		return frozen
	}
	return Harness{
		Name: "model",
		New:  func(t *testing.T) store.Store { return NewModel(clock) },
		SetClock: func(t time.Time) {
			mu.Lock()
			defer mu.Unlock()
			frozen = t
		},
	}
}

func TestModelConformance(t *testing.T) {
	Run(t, modelHarness())
}

// TestModelConformanceWithoutClock runs the suite as it runs against a
// backend whose clock cannot be set, e.g. a real XTDB server.
func TestModelConformanceWithoutClock(t *testing.T) {
	h := modelHarness()
	h.SetClock = nil
	Run(t, h)
}

// TestModelConformanceShared runs the suite with every case on one store,
// as it runs against a shared server that is not empty.
func TestModelConformanceShared(t *testing.T) {
	shared := NewModel(nil)
	Run(t, Harness{Name: "shared-model", New: func(t *testing.T) store.Store {
		if t.Name() == "TestModelConformanceShared/errors/calls-after-close" {
			return NewModel(nil) // the one case that closes its store
		}
		return shared
	}})
}

func freshModels(t *testing.T) (store.Store, store.Store) { return NewModel(nil), NewModel(nil) }

// TestDifferentialModelModel: two models never diverge.
func TestDifferentialModelModel(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 42, 20260101} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			Differential(t, freshModels, DiffConfig{Seed: seed})
		})
	}
	t.Run("random seed", func(t *testing.T) {
		Differential(t, freshModels, DiffConfig{Txs: 60, Entities: 4, BasisPoints: 40})
	})
}

// shiftStore has a write bug: a put of a document with "v" 3 starts 1ms
// late.
type shiftStore struct{ store.Store }

func (s shiftStore) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	ops = slices.Clone(ops)
	for i, op := range ops {
		if op.Kind == store.OpPut && op.Doc["v"] == 3 && op.ValidFrom != nil {
			t := op.ValidFrom.Add(time.Millisecond)
			ops[i].ValidFrom = &t
		}
	}
	return s.Store.Submit(ctx, ops)
}

// dropStore has a write bug: every 7th transaction's ops are dropped (it
// commits having done nothing).
type dropStore struct {
	store.Store
	n *int
}

func (s dropStore) Submit(ctx context.Context, ops []store.Op) (store.Tx, error) {
	if *s.n++; *s.n%7 == 0 {
		ops = []store.Op{store.Match("nothing-at-all", nil)}
	}
	return s.Store.Submit(ctx, ops)
}

// queryStore has a read bug: a query with several results loses its last.
type queryStore struct{ store.Store }

func (s queryStore) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	docs, err := s.Store.Query(ctx, q)
	if len(docs) > 1 {
		docs = docs[:len(docs)-1]
	}
	return docs, err
}

// brokenDiff runs the differential test of a model against a broken one
// and returns the divergence it must report.
func brokenDiff(t *testing.T, seed int64, broken func(store.Store) store.Store) *divergenceError {
	t.Helper()
	var log strings.Builder
	err := diff(t, func(*testing.T) (store.Store, store.Store) { return NewModel(nil), broken(NewModel(nil)) },
		DiffConfig{Seed: seed, Log: &log})
	var de *divergenceError
	if !errors.As(err, &de) {
		t.Fatalf("differential test of a broken store: %v, want a divergence", err)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("seed %d", seed)) || !strings.Contains(log.String(), "txs := [][]store.Op{") {
		t.Errorf("the log lacks the seed or the repro:\n%s", log.String())
	}
	t.Logf("reported:\n%s", de)
	return de
}

func TestDifferentialFindsShiftedValidTime(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		de := brokenDiff(t, seed, func(s store.Store) store.Store { return shiftStore{s} })
		if len(de.prog) != 1 || countOps(de.prog) != 1 || de.prog[0].ops[0].v != 3 {
			t.Errorf("seed %d: minimized to %d txs, %d ops; want the one put of v 3:\n%s", seed, len(de.prog), countOps(de.prog), reproProgram(de.prog))
		}
	}
}

func TestDifferentialFindsDroppedTxs(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		de := brokenDiff(t, seed, func(s store.Store) store.Store { return dropStore{s, new(int)} })
		if len(de.prog) != 7 || countOps(de.prog) != 7 {
			t.Errorf("seed %d: minimized to %d txs, %d ops; want 7 of one op each:\n%s", seed, len(de.prog), countOps(de.prog), reproProgram(de.prog))
		}
	}
}

func TestDifferentialFindsQueryBug(t *testing.T) {
	de := brokenDiff(t, 4, func(s store.Store) store.Store { return queryStore{s} })
	if !strings.HasPrefix(de.minimized.what, "Query(") {
		t.Errorf("divergence at %s, want a query", de.minimized.what)
	}
	if countOps(de.prog) > 2 {
		t.Errorf("minimized to %d ops, want at most 2 (two documents)", countOps(de.prog))
	}
}

// TestXTDBStringIDHash: the suite's copy of XTDB's string id hash gives
// the ids the XTDB driver computes (xtdb.EIDHash, checked against a node),
// and sortingLast finds a name whose id starts with 20 one bits.
func TestXTDBStringIDHash(t *testing.T) {
	for _, c := range []struct{ id, hash string }{
		{"foo", "86006c90f111907ef2d0f56b33da9151b59f601e"},
		{"bar", "a80958d39791159ba381bc5d1117614843e6f487"},
	} {
		if h := xtdbStringIDHash(c.id); hex.EncodeToString(h[:]) != c.hash {
			t.Errorf("xtdbStringIDHash(%q) = %x, want %s", c.id, h, c.hash)
		}
	}
	h := xtdbStringIDHash("st-0123456789ab-" + sortingLast("st-0123456789ab-"))
	if h[0] != 0xff || h[1] != 0xff || h[2] < 0xf0 {
		t.Errorf("sortingLast: id hash %x does not start with 20 one bits", h)
	}
}
