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

// rawSubmit sends a submit-tx body as another XTDB client would, and
// waits for the node to index it.
func rawSubmit(t *testing.T, s *Store, ctype, body string) store.Tx {
	t.Helper()
	ctx := context.Background()
	data, err := s.do(ctx, request{op: "submit", method: "POST", path: "/submit-tx", body: []byte(body), ctype: ctype, accept: "application/edn"})
	if err != nil {
		t.Fatalf("raw submit %s: %v", body, err)
	}
	v, err := decodeEDN(data)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := txFromEDN(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AwaitTx(ctx, tx.ID, 0); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestTxLogForeignEvictAndPut: a transaction written by another client that
// evicts an entity and puts it again (XTDB loses the put, and its tx log
// then holds the eviction marker, {:crux.db/id #xtdb/id "...",
// :xtdb.api/evicted? true}, in place of the put's document) is read: the
// evict names the entity (from the cache, else by hash), the put is marked
// evicted and names the same entity.
func TestTxLogForeignEvictAndPut(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, xtdbtest.ForTest(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := fmt.Sprintf("foreign-evict-%d", time.Now().UnixNano())
	first := rawSubmit(t, s, "application/json", `{"tx-ops":[["put",{"xt/id":"`+id+`","v":1}]]}`)
	rawSubmit(t, s, "application/json", `{"tx-ops":[["evict","`+id+`"],["put",{"xt/id":"`+id+`","v":2}]]}`)
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"new client", Options{}, UnknownIDPrefix + EIDHash(id)},
	} {
		r, err := Open(ctx, s.URL(), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		log, err := r.TxLog(ctx, first.ID, 1)
		r.Close()
		if err != nil {
			t.Fatalf("%s: TxLog: %v", c.name, err)
		}
		if len(log) != 1 || len(log[0].Ops) != 2 {
			t.Fatalf("%s: tx log %+v", c.name, log)
		}
		ev, put := log[0].Ops[0], log[0].Ops[1]
		if ev.Kind != store.OpEvict || ev.ID != c.want {
			t.Errorf("%s: op 1 = %+v, want evict of %s", c.name, ev, c.want)
		}
		if put.Kind != store.OpPut || !put.Evicted || put.ID != c.want || put.Doc != nil {
			t.Errorf("%s: op 2 = %+v, want an evicted put of %s", c.name, put, c.want)
		}
	}
	// The first put's document was evicted too.
	log, err := s.TxLog(ctx, first.ID-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || !log[0].Ops[0].Evicted {
		t.Errorf("first tx: %+v", log)
	}
}

// TestIntegersKeepContentHash: the driver writes documents as EDN, so an
// integer field is a long, as ctxstore's own front always stored it, and
// the content hash is the one an EDN client gets. XTDB's JSON reader makes
// small integers java.lang.Integer, which hash differently: the node
// (here ctxstore's front, which reads JSON as XTDB's module does) shows it.
func TestIntegersKeepContentHash(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, xtdbtest.ForTest(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := fmt.Sprintf("ints-%d-", time.Now().UnixNano())
	doc := func(id string) store.Doc {
		return store.Doc{"xt/id": id, "n": 1, "big": int64(1) << 40, "f": 1.5, "nested": map[string]any{"m": 2}, "list": []any{3, "x"}}
	}
	// The same document written first by another client, as EDN and as
	// JSON, then by the driver: the driver's write keeps the EDN one's hash.
	rawSubmit(t, s, "application/edn", `{:tx-ops [[:xtdb.api/put {:xt/id "`+p+`edn", :n 1, :big 1099511627776, :f 1.5, :nested {:m 2}, :list [3 "x"]}]]}`)
	rawSubmit(t, s, "application/json", `{"tx-ops":[["put",{"xt/id":"`+p+`json","n":1,"big":1099511627776,"f":1.5,"nested":{"m":2},"list":[3,"x"]}]]}`)
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(doc(p + "edn"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(doc(p + "json"))}); err != nil {
		t.Fatal(err)
	}
	// A put of an identical document keeps the content hash; history shows
	// whether the driver's second write changed it.
	for _, c := range []struct {
		id   string
		same bool
	}{{p + "edn", true}, {p + "json", false}} {
		h, err := s.History(ctx, c.id, store.HistoryOptions{Order: store.Asc, WithCorrections: true})
		if err != nil || len(h) != 2 {
			t.Fatalf("history of %s: %v %v", c.id, h, err)
		}
		if same := h[0].ContentHash == h[1].ContentHash; same != c.same {
			t.Errorf("%s: first write %s, driver's %s: same=%v, want %v", c.id, h[0].ContentHash, h[1].ContentHash, same, c.same)
		}
	}
}

// A match whose entity the same transaction puts (a create-only commit, a
// session head's new version: one per context call) is not remembered by
// the client, whose cache would otherwise fill over a long session; the
// log still names it, from the put beside it. A match alone is
// remembered.
func TestMatchBesidePutNotRemembered(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, xtdbtest.ForTest(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := fmt.Sprintf("mp-%d-", time.Now().UnixNano())
	before := s.ids.len()
	var last store.Tx
	for i := range 5 {
		id := fmt.Sprintf("%scommit-%d", p, i)
		if last, err = store.SubmitWait(ctx, s, []store.Op{store.Match(id, nil), store.Put(store.Doc{"xt/id": id, "n": i})}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.ids.len(); n != before {
		t.Fatalf("five create-only commits left %d ids in the cache, want %d", n, before)
	}
	log, err := s.TxLog(ctx, last.ID-1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || len(log[0].Ops) != 2 || log[0].Ops[0].ID != p+"commit-4" {
		t.Fatalf("the last commit's log: %+v", log)
	}
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Match(p+"commit-0", store.Doc{"xt/id": p + "commit-0", "n": 0})}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ids.get(EIDHash(p + "commit-0")); !ok {
		t.Fatal("a match alone was not remembered")
	}
}
