package versionlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

func TestMain(m *testing.M) {
	// The memory benchmark re-executes this binary as a child that
	// imports or exports one log and reports its peak RSS.
	if mode := os.Getenv(rssChildEnv); mode != "" {
		os.Exit(rssChild(mode))
	}
	code := m.Run()
	if err := xtdbtest.StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the XTDB server:", err)
	}
	os.Exit(code)
}

// base is the start of the scenarios' times.
var base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// farFuture is a valid time after every one the scenarios write.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// stepClock is a deterministic clock: each call is one second after the
// last.
func stepClock(start time.Time) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// openSQLite opens a new SQLite store in t's temporary directory, with a
// deterministic clock.
func openSQLite(t testing.TB, name string) *bitemporal.Store {
	t.Helper()
	s, err := bitemporal.Open(context.Background(), filepath.Join(t.TempDir(), name), bitemporal.Options{Clock: stepClock(base)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// scenarioDoc is a document of id; small n makes contents repeat, so some
// documents are shared by several versions.
func scenarioDoc(id string, n int) store.Doc {
	return store.Doc{
		store.IDKey: id,
		"n":         json.Number(strconv.Itoa(n)),
		"text":      "ünïcödé \"quoted\" <tag> & \\ \t tab",
		"list":      []any{json.Number("1"), json.Number("2.5"), "x", nil, true},
		"nested":    map[string]any{"b": false, "a": map[string]any{"deep": json.Number(strconv.Itoa(n * 7))}},
	}
}

// populate writes nTx random transactions over ids: puts and deletes with
// default, open and bounded valid times, corrections in the past, matches
// that pass (so are logged) and fail (so abort), and evicts followed by
// new puts.
func populate(t testing.TB, s store.Store, ids []string, seed uint64, nTx int) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	vt := func() time.Time { return base.Add(time.Duration(r.IntN(400)) * time.Minute) }
	for i := range nTx {
		var ops []store.Op
		evicted := map[string]bool{}
		for j := range 1 + r.IntN(3) {
			id := ids[r.IntN(len(ids))]
			if evicted[id] {
				continue
			}
			doc := scenarioDoc(id, r.IntN(4))
			switch k := r.IntN(20); {
			case k < 5:
				ops = append(ops, store.Put(doc))
			case k < 9:
				ops = append(ops, store.PutAt(doc, vt()))
			case k < 11:
				from := vt()
				ops = append(ops, store.PutRange(doc, from, from.Add(time.Duration(1+r.IntN(120))*time.Minute)))
			case k < 12:
				ops = append(ops, store.Delete(id))
			case k < 14:
				from := vt()
				to := from.Add(time.Duration(1+r.IntN(90)) * time.Minute)
				ops = append(ops, store.DeleteRange(id, from, &to))
			case k < 15:
				ops = append(ops, store.DeleteRange(id, vt(), nil))
			case k < 18 && j == 0:
				// A match that holds: the document visible now at vt.
				at := vt()
				cur, err := s.Entity(ctx, id, store.Basis{ValidTime: at})
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Fatal(err)
				}
				ops = append(ops, store.Op{Kind: store.OpMatch, ID: id, Doc: cur, ValidFrom: &at})
			case k < 18:
				ops = append(ops, store.PutAt(doc, vt()))
			case k < 19 && i%5 == 0:
				// A match that fails: the transaction aborts.
				ops = append(ops, store.Match(id, scenarioDoc(id, 99)))
			default:
				ops = append(ops, store.Evict(id))
				evicted[id] = true
			}
		}
		if len(ops) == 0 {
			continue
		}
		tx, err := s.Submit(ctx, ops)
		if err != nil {
			t.Fatalf("populate tx %d: %v", i, err)
		}
		if _, err := s.AwaitTx(ctx, tx.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// scenarioIDs returns n ids with prefix.
func scenarioIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%se%d", prefix, i)
	}
	return ids
}

// committed returns the ids of src's committed transactions after `after`.
func committed(t testing.TB, src store.Store, after int64) []int64 {
	t.Helper()
	log, err := src.TxLog(context.Background(), after, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(log))
	for i, tx := range log {
		ids[i] = tx.ID
	}
	return ids
}

// sameHistories checks that every id has the same history (ascending,
// with corrections, with documents) in src at every source tx of txMap and
// in dst at the mapped tx: the same valid times, tombstones and documents,
// written by mapped transactions. With sameTimes, tx times must be equal
// too.
func sameHistories(t testing.TB, src, dst store.Store, ids []string, txMap map[int64]int64, sameTimes bool) {
	t.Helper()
	ctx := context.Background()
	bases := make([]int64, 0, len(txMap))
	for k := range txMap {
		bases = append(bases, k)
	}
	slices.Sort(bases)
	if len(bases) == 0 {
		t.Fatal("no transactions to compare at")
	}
	compared, errs := 0, 0
	for _, id := range ids {
		for _, b := range bases {
			sb, db := b, txMap[b]
			opts := func(tx *int64) store.HistoryOptions {
				return store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true,
					Basis: store.Basis{ValidTime: farFuture, TxID: tx}}
			}
			want, err := src.History(ctx, id, opts(&sb))
			if err != nil {
				t.Fatal(err)
			}
			got, err := dst.History(ctx, id, opts(&db))
			if err != nil {
				t.Fatal(err)
			}
			if msg := diffHistory(want, got, txMap, sameTimes); msg != "" {
				errs++
				if errs <= 5 {
					t.Errorf("%s at source tx %d / target tx %d: %s\nsource: %s\ntarget: %s", id, sb, db, msg, dump(want), dump(got))
				}
			}
			compared += len(want)
		}
	}
	if errs > 5 {
		t.Errorf("... %d mismatches in all", errs)
	}
	if compared == 0 {
		t.Error("every history was empty: the comparison compared nothing")
	}
}

func diffHistory(want, got []store.HistoryEntry, txMap map[int64]int64, sameTimes bool) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		mapped, ok := txMap[w.TxID]
		switch {
		case !w.ValidTime.Equal(g.ValidTime):
			return fmt.Sprintf("row %d: valid time %s, want %s", i, store.FormatTime(g.ValidTime), store.FormatTime(w.ValidTime))
		case !ok || mapped != g.TxID:
			return fmt.Sprintf("row %d: tx %d, want the image of source tx %d (%d)", i, g.TxID, w.TxID, mapped)
		case w.Deleted != g.Deleted:
			return fmt.Sprintf("row %d: deleted %v, want %v", i, g.Deleted, w.Deleted)
		case !store.SameDoc(w.Doc, g.Doc):
			return fmt.Sprintf("row %d: document differs", i)
		case sameTimes && !w.TxTime.Equal(g.TxTime):
			return fmt.Sprintf("row %d: tx time %s, want %s", i, store.FormatTime(g.TxTime), store.FormatTime(w.TxTime))
		}
	}
	return ""
}

func dump(h []store.HistoryEntry) string {
	var b bytes.Buffer
	for _, e := range h {
		fmt.Fprintf(&b, "\n  vt %s tx %d deleted %v doc %v", store.FormatTime(e.ValidTime), e.TxID, e.Deleted, e.Doc)
	}
	return b.String()
}

// exportBytes exports src after `after` into memory.
func exportBytes(t testing.TB, src store.Store, after int64) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := versionlog.Export(context.Background(), src, &b, versionlog.ExportOptions{After: after}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// importMapped imports log into dst (accepting a partial history) and
// returns source tx -> target tx.
func importMapped(t testing.TB, dst store.Store, log []byte) (map[int64]int64, versionlog.ImportSummary) {
	t.Helper()
	m := map[int64]int64{}
	sum, err := versionlog.Import(context.Background(), dst, bytes.NewReader(log), versionlog.ImportOptions{
		OnTx:    func(src versionlog.Tx, dst store.Tx) { m[src.ID] = dst.ID },
		Partial: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, sum
}

// txCount is the number of committed transactions in s.
func txCount(t testing.TB, s store.Store) int {
	t.Helper()
	return len(committed(t, s, -1))
}
