package xtdb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// TestTxLogIDsBoundedMemory: a client that never saw the ids (a new one,
// with a cache of two) names the entities of deletes, matches and evicts
// in the tx log from the node, and its id memory stays within the cache.
// EIDHash is checked against the node on the way: an id is only accepted
// when its EIDHash is the hash the node logged.
func TestTxLogIDsBoundedMemory(t *testing.T) {
	ctx := context.Background()
	base := xtdbtest.ForTest(t)
	writer, err := Open(ctx, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	p := fmt.Sprintf("ids-%d-", time.Now().UnixNano())
	long := p + strings.Repeat("é", 100)                 // over 127 bytes: a longer nippy header
	hexID := fmt.Sprintf("%040X", time.Now().UnixNano()) // 40 hex digits: hashed like any string
	plain := []string{p + "a", p + "b", p + "c", p + "d", long, hexID}
	var puts []store.Op
	for _, id := range plain {
		puts = append(puts, store.Put(store.Doc{"xt/id": id, "v": "1"}))
	}
	t1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(24 * time.Hour)
	steps := [][]store.Op{
		puts,
		// A put overwritten in its own transaction: no point holds its doc.
		{store.PutAt(store.Doc{"xt/id": p + "gone"}, t1), store.DeleteRange(p+"gone", t1, nil)},
		{store.Delete(p + "only-deleted")},
		{store.Delete(p + "a"), store.Match(p+"b", store.Doc{"xt/id": p + "b", "v": "1"}), store.Delete(long),
			store.Delete(hexID), store.Evict(p + "c"), store.DeleteRange(p+"gone", t1.Add(time.Hour), nil),
			store.Delete(p + "only-deleted"),
			// Before d's put: d has no document at this op's valid time.
			store.DeleteRange(p+"d", t1, &t2)},
	}
	var last store.Tx
	for _, ops := range steps {
		if last, err = store.SubmitWait(ctx, writer, ops); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{p + "a", p + "b", long, hexID, p + "c", p + "gone", p + "only-deleted", p + "d"}

	reader, err := Open(ctx, base, Options{IDCache: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	for _, c := range []struct {
		name string
		s    *Store
		want []string
	}{
		// The writer sent these ids; the new reader finds them on the node,
		// except those of entities with no document left.
		{"writer", writer, want},
		{"reader", reader, []string{p + "a", p + "b", long, hexID, UnknownIDPrefix + EIDHash(p+"c"), p + "gone",
			UnknownIDPrefix + EIDHash(p+"only-deleted"), p + "d"}},
	} {
		log, err := c.s.TxLog(ctx, last.ID-1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 1 || len(log[0].Ops) != len(c.want) {
			t.Fatalf("%s: tx log %+v", c.name, log)
		}
		for i, op := range log[0].Ops {
			if op.ID != c.want[i] {
				t.Errorf("%s: op %d (%s) names %q, want %q", c.name, i+1, op.Kind, op.ID, c.want[i])
			}
		}
	}
	if n := reader.ids.len(); n > 2 {
		t.Errorf("the reader keeps %d ids, more than its cache of 2", n)
	}
	// Again, with the unresolvable ones remembered as such: same answer.
	log, err := reader.TxLog(ctx, last.ID-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := log[0].Ops[6].ID; got != UnknownIDPrefix+EIDHash(p+"only-deleted") {
		t.Errorf("second read: %q", got)
	}
}
