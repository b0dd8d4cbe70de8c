package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// vlBase is where the version log scenarios' times start.
var vlBase = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// vlOpen opens (creating) a SQLite store at path.
func vlOpen(t testing.TB, path string) *bitemporal.Store {
	t.Helper()
	s, err := bitemporal.Open(context.Background(), path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// vlSource creates a SQLite store at dir/name holding nTx random
// transactions over ids with prefix (see vlPopulate) and closes it.
func vlSource(t testing.TB, dir, name, prefix string, nTx int, seed uint64) (string, []string) {
	t.Helper()
	path := filepath.Join(dir, name)
	s := vlOpen(t, path)
	defer s.Close()
	ids := make([]string, 6)
	for i := range ids {
		ids[i] = fmt.Sprintf("%sdoc%d", prefix, i)
	}
	vlPopulate(t, s, ids, nTx, seed)
	return path, ids
}

// vlPopulate writes nTx transactions of 1-3 ops: puts at the tx time, at
// past valid times and over ranges, deletes (open and bounded) and, now
// and then, an evict.
func vlPopulate(t testing.TB, s store.Store, ids []string, nTx int, seed uint64) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 3))
	vt := func() time.Time { return vlBase.Add(time.Duration(r.IntN(500)) * time.Minute) }
	for i := range nTx {
		var ops []store.Op
		evicted := map[string]bool{}
		for range 1 + r.IntN(3) {
			id := ids[r.IntN(len(ids))]
			if evicted[id] {
				continue
			}
			doc := store.Doc{"xt/id": id, "i": json.Number(strconv.Itoa(i)), "k": json.Number(strconv.Itoa(r.IntN(3))), "pad": "ünï \"q\""}
			switch k := r.IntN(14); {
			case k < 4:
				ops = append(ops, store.Put(doc))
			case k < 7:
				ops = append(ops, store.PutAt(doc, vt()))
			case k < 9:
				from := vt()
				ops = append(ops, store.PutRange(doc, from, from.Add(time.Duration(1+r.IntN(60))*time.Minute)))
			case k < 10:
				ops = append(ops, store.Delete(id))
			case k < 12:
				from := vt()
				to := from.Add(time.Duration(1+r.IntN(60)) * time.Minute)
				ops = append(ops, store.DeleteRange(id, from, &to))
			case k < 13 || i%7 != 0:
				ops = append(ops, store.PutAt(doc, vt()))
			default:
				ops = append(ops, store.Evict(id))
				evicted[id] = true
			}
		}
		if len(ops) == 0 {
			continue
		}
		if _, err := store.SubmitWait(ctx, s, ops); err != nil {
			t.Fatalf("populate tx %d: %v", i, err)
		}
	}
}

// vlCommitted lists src's committed tx ids.
func vlCommitted(t testing.TB, src store.Store) []int64 {
	t.Helper()
	log, err := src.TxLog(context.Background(), -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(log))
	for i, tx := range log {
		ids[i] = tx.ID
	}
	return ids
}

// vlSameHistories checks every id's history (ascending, with corrections
// and documents) in src at every stride-th source tx of txMap (and the
// last) against dst at the mapped tx; with sameTimes, tx times too.
func vlSameHistories(t testing.TB, src, dst store.Store, ids []string, txMap map[int64]int64, sameTimes bool, stride int) {
	t.Helper()
	ctx := context.Background()
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	bases := make([]int64, 0, len(txMap))
	for k := range txMap {
		bases = append(bases, k)
	}
	slices.Sort(bases)
	rows, bad := 0, 0
	for _, id := range ids {
		for i, b := range bases {
			if i%stride != 0 && i != len(bases)-1 {
				continue
			}
			sb, db := b, txMap[b]
			want, err := src.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, Basis: store.Basis{ValidTime: far, TxID: &sb}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := dst.History(ctx, id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, Basis: store.Basis{ValidTime: far, TxID: &db}})
			if err != nil {
				t.Fatal(err)
			}
			rows += len(want)
			if msg := vlDiff(want, got, txMap, sameTimes); msg != "" {
				if bad++; bad <= 5 {
					t.Errorf("%s at source tx %d (target tx %d): %s", id, sb, db, msg)
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d histories differ in all", bad)
	}
	if rows == 0 {
		t.Error("every history was empty: nothing was compared")
	}
}

func vlDiff(want, got []store.HistoryEntry, txMap map[int64]int64, sameTimes bool) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		switch mapped, ok := txMap[w.TxID]; {
		case !w.ValidTime.Equal(g.ValidTime) || w.Deleted != g.Deleted:
			return fmt.Sprintf("row %d: (%s, deleted %v), want (%s, deleted %v)", i, store.FormatTime(g.ValidTime), g.Deleted, store.FormatTime(w.ValidTime), w.Deleted)
		case !ok || mapped != g.TxID:
			return fmt.Sprintf("row %d: tx %d, want %d (source tx %d)", i, g.TxID, mapped, w.TxID)
		case !store.SameDoc(w.Doc, g.Doc):
			return fmt.Sprintf("row %d: document %v, want %v", i, g.Doc, w.Doc)
		case sameTimes && !w.TxTime.Equal(g.TxTime):
			return fmt.Sprintf("row %d: tx time %s, want %s", i, store.FormatTime(g.TxTime), store.FormatTime(w.TxTime))
		}
	}
	return ""
}
