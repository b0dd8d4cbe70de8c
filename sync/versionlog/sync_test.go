package versionlog_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/sync/versionlog/versionlogtest"
)

// TestSyncIncremental: sync applies everything, a second sync nothing,
// and after new source transactions only those.
func TestSyncIncremental(t *testing.T) {
	ctx := context.Background()
	src, dst := openSQLite(t, "src.db"), openSQLite(t, "dst.db")
	ids := scenarioIDs("", 5)
	populate(t, src, ids, 10, 50)
	s1, err := versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n1 := len(committed(t, src, -1))
	if s1.Import.Applied != int64(n1) {
		t.Fatalf("first sync applied %d of %d", s1.Import.Applied, n1)
	}
	before := targetState(t, dst)
	s2, err := versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s2.Import.Applied != 0 || s2.Export.Txs != 0 || targetState(t, dst) != before {
		t.Errorf("second sync applied %d (exported %d); target %s, was %s", s2.Import.Applied, s2.Export.Txs, targetState(t, dst), before)
	}
	last := *s1.Import.LastTx
	populate(t, src, ids, 11, 40)
	s3, err := versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(committed(t, src, last)); s3.Import.Applied != int64(want) || s3.Export.After != last {
		t.Errorf("third sync exported after %d and applied %d, want after %d and %d", s3.Export.After, s3.Import.Applied, last, want)
	}
	m := versionlogtest.Mapping(t, dst, s1.Import.Source.ID)
	if len(m) != len(committed(t, src, -1)) || txCount(t, dst) != len(m) {
		t.Fatalf("%d txs mapped, %d in the target, %d in the source", len(m), txCount(t, dst), len(committed(t, src, -1)))
	}
	sameHistories(t, src, dst, ids, m, true)
}

// TestConcurrentImports: two importers of one log into one target race;
// the cursor's match guard lets each transaction land once, and a re-run
// completes the import.
func TestConcurrentImports(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	ids := scenarioIDs("", 4)
	populate(t, src, ids, 12, 60)
	log := exportBytes(t, src, -1)
	path := filepath.Join(t.TempDir(), "dst.db")
	// Create the target first: bitemporal.Open of a new file is not safe
	// to race (the second opener may see a half-made schema).
	if s, err := bitemporal.Open(ctx, path, bitemporal.Options{}); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			dst, err := bitemporal.Open(ctx, path, bitemporal.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer dst.Close()
			sum, err := versionlog.Import(ctx, dst, bytes.NewReader(log), versionlog.ImportOptions{})
			if err != nil && !errors.Is(err, versionlog.ErrDiverged) {
				t.Errorf("importer %d: %v", i, err)
			}
			t.Logf("importer %d applied %d, skipped %d: %v", i, sum.Applied, sum.Skipped, err)
		})
	}
	wg.Wait()
	dst, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	sum, err := versionlog.Import(ctx, dst, bytes.NewReader(log), versionlog.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := versionlogtest.Mapping(t, dst, sum.Source.ID)
	if n := len(committed(t, src, -1)); len(m) != n || txCount(t, dst) != n {
		t.Fatalf("%d source txs mapped, target has %d committed txs, source %d", len(m), txCount(t, dst), n)
	}
	// Tx times are not compared: a racing importer that aborts may leave
	// a later tx time behind (see Import).
	sameHistories(t, src, dst, ids, m, false)
}
