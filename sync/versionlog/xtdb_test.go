package versionlog_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/sync/versionlog/versionlogtest"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// openXTDB connects to the test XTDB node (shared: use unique ids).
func openXTDB(t *testing.T) *xtdb.Store {
	t.Helper()
	url := xtdbtest.ForTest(t)
	x, err := xtdb.Open(context.Background(), url, xtdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// uniquePrefix makes ids no other test on the shared node uses.
func uniquePrefix(name string) string {
	return fmt.Sprintf("%s-%d-", name, time.Now().UnixNano())
}

// minValue is the smallest value of m.
func minValue(m map[int64]int64) int64 {
	vs := make([]int64, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	return slices.Min(vs)
}

// TestFidelityAcrossBackends: SQLite -> log -> XTDB -> log -> SQLite keeps
// every entity's history at every basis mapped by transaction order; XTDB
// records the original tx ids and times in the cursor; exporting XTDB
// twice gives the same bytes.
func TestFidelityAcrossBackends(t *testing.T) {
	ctx := context.Background()
	x := openXTDB(t)
	src := openSQLite(t, "src.db")
	ids := scenarioIDs(uniquePrefix("fidelity"), 6)
	populate(t, src, ids, 20, 120)
	log1 := exportBytes(t, src, -1)

	m1, sum1 := importMapped(t, x, log1)
	srcTxs := committed(t, src, -1)
	if len(m1) != len(srcTxs) || sum1.KeptTxTimes != 0 {
		t.Fatalf("XTDB applied %d of %d source txs (%d kept their time; XTDB cannot)", len(m1), len(srcTxs), sum1.KeptTxTimes)
	}
	sameHistories(t, src, x, ids, m1, false)

	// XTDB keeps the source's tx ids and times in the cursor's history.
	maps, err := versionlog.Mappings(ctx, x, sum1.Source.ID)
	if err != nil {
		t.Fatal(err)
	}
	srcLog, err := src.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != len(srcLog) {
		t.Fatalf("cursor history has %d versions, want %d", len(maps), len(srcLog))
	}
	for i, mp := range maps {
		if mp.Source.ID != srcLog[i].ID || !mp.Source.Time.Equal(srcLog[i].Time) || mp.Target.ID != m1[mp.Source.ID] {
			t.Errorf("cursor version %d: %+v, want source tx %d at %s applied as %d", i, mp, srcLog[i].ID, store.FormatTime(srcLog[i].Time), m1[srcLog[i].ID])
		}
	}

	after := minValue(m1) - 1
	log2 := exportBytes(t, x, after)
	if again := exportBytes(t, x, after); !bytes.Equal(log2, again) {
		t.Fatal("two exports of the same XTDB range differ")
	}
	if bytes.Contains(log2, []byte(versionlog.ReservedPrefix)) {
		t.Fatal("the XTDB export holds a reserved cursor entity")
	}
	dst := openSQLite(t, "dst.db")
	m2, _ := importMapped(t, dst, log2)
	m := make(map[int64]int64, len(m1))
	for s, xt := range m1 {
		d, ok := m2[xt]
		if !ok {
			t.Fatalf("XTDB tx %d (source tx %d) was not re-imported", xt, s)
		}
		m[s] = d
	}
	sameHistories(t, src, dst, ids, m, false)
}

// TestXTDBEvictedNotExported: content evicted from XTDB is not in its
// export, neither as a put's document nor as a match's expectation.
func TestXTDBEvictedNotExported(t *testing.T) {
	cases := []struct {
		name string
		ops  func(p string, secret store.Doc) [][]store.Op
	}{
		{"put", func(p string, secret store.Doc) [][]store.Op {
			return [][]store.Op{
				{store.Put(secret)},
				{store.Put(store.Doc{"xt/id": p + "y"}), store.DeleteRange(p+"x", base, nil)},
				{store.Evict(p + "x")},
			}
		}},
		{"match", func(p string, secret store.Doc) [][]store.Op {
			return [][]store.Op{
				{store.Put(secret)},
				{store.Match(p+"x", secret), store.Put(store.Doc{"xt/id": p + "y"})},
				{store.Evict(p + "x")},
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			x := openXTDB(t)
			p := uniquePrefix("evict")
			secret := store.Doc{"xt/id": p + "x", "secret": "XTDB-S3CR3T"}
			var first int64 = -1
			for _, ops := range c.ops(p, secret) {
				tx, err := store.SubmitWait(ctx, x, ops)
				if err != nil {
					t.Fatal(err)
				}
				if first < 0 {
					first = tx.ID
				}
			}
			var b bytes.Buffer
			_, err := versionlog.Export(ctx, x, &b, versionlog.ExportOptions{After: first - 1})
			if err != nil {
				t.Fatal(err)
			}
			log := b.Bytes()
			if bytes.Contains(log, []byte("S3CR3T")) {
				t.Fatalf("evicted content in the XTDB export:\n%s", log)
			}
			// The put is marked evicted, and so is the match that expected
			// its document (XTDB logs the eviction marker in its place):
			// it must not read as a match asserting absence.
			want := map[string]int{"put": 1, "match": 2}[c.name]
			if n := bytes.Count(log, []byte(`"evicted":true`)); n != want {
				t.Errorf("%d ops marked evicted, want %d\n%s", n, want, log)
			}
			// The log applies cleanly.
			if _, err := versionlog.Import(ctx, openSQLite(t, "dst.db"), bytes.NewReader(log), versionlog.ImportOptions{Partial: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSyncSQLiteToXTDB: incremental sync into XTDB, twice in a row changes
// nothing.
func TestSyncSQLiteToXTDB(t *testing.T) {
	ctx := context.Background()
	x := openXTDB(t)
	src := openSQLite(t, "src.db")
	ids := scenarioIDs(uniquePrefix("sync"), 4)
	populate(t, src, ids, 21, 30)
	if _, err := versionlog.Sync(ctx, src, x, versionlog.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	st1, err := x.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := versionlog.Sync(ctx, src, x, versionlog.SyncOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := x.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Import.Applied != 0 || st2.LatestSubmitted.ID != st1.LatestSubmitted.ID {
		t.Errorf("second sync applied %d; XTDB went from tx %d to %d", s2.Import.Applied, st1.LatestSubmitted.ID, st2.LatestSubmitted.ID)
	}
	populate(t, src, ids, 22, 30)
	if _, err := versionlog.Sync(ctx, src, x, versionlog.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	m := versionlogtest.Mapping(t, x, s2.Import.Source.ID)
	if len(m) != len(committed(t, src, -1)) {
		t.Fatalf("%d txs mapped, source has %d", len(m), len(committed(t, src, -1)))
	}
	sameHistories(t, src, x, ids, m, false)
}
