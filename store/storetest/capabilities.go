package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// capability is an optional interface of the store contract
// (store/capabilities.go) and the cases that check it.
type capability struct {
	name    string
	claimed func(store.Store) bool
	cases   []testCase
}

func capabilities() []capability {
	return []capability{
		{"TxTimeSubmitter", func(s store.Store) bool { _, ok := s.(store.TxTimeSubmitter); return ok }, []testCase{
			{"submit-at-keeps-the-time", testSubmitAtKeepsTime},
			{"submit-at-before-latest-refused", testSubmitAtBeforeLatest},
			{"submit-at-validates-like-submit", testSubmitAtValidates},
		}},
		{"CanonicalTxLogger", func(s store.Store) bool { _, ok := s.(store.CanonicalTxLogger); return ok }, []testCase{
			{"canonical-tx-log-is-tx-log", testCanonicalTxLog},
		}},
		{"ValueLister", func(s store.Store) bool { _, ok := s.(store.ValueLister); return ok }, []testCase{
			{"values", testValues},
		}},
		{"Searcher", func(s store.Store) bool { _, ok := s.(store.Searcher); return ok }, []testCase{
			{"search", func(e *env) { RunSearch(e.t, e.h) }},
		}},
	}
}

// runCapabilities runs the cases of every capability the backend claims,
// found by a type assertion on a store from h.New (as fstest and
// database/sql find optional interfaces); it logs the ones it does not.
func runCapabilities(t *testing.T, h Harness) {
	probe := h.New(t)
	if h.Capabilities != nil {
		var have []string
		for _, c := range capabilities() {
			if c.claimed(probe) {
				have = append(have, c.name)
			}
		}
		slices.Sort(have)
		want := slices.Sorted(slices.Values(h.Capabilities))
		if !slices.Equal(have, want) {
			t.Errorf("storetest: %q implements %v, its harness says %v", h.Name, have, want)
		}
	}
	for _, c := range capabilities() {
		if !c.claimed(probe) {
			t.Logf("storetest: %q does not implement store.%s; callers use its documented fallback", h.Name, c.name)
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range c.cases {
				t.Run(tc.name, func(t *testing.T) { tc.run(newEnv(t, h)) })
			}
		})
	}
}

// latestTime is the store's latest logged tx time (the zero time if none).
func (e *env) latestTime() time.Time {
	e.t.Helper()
	st, err := e.s.Status(e.ctx)
	if err != nil {
		e.t.Fatalf("Status: %v", err)
	}
	if st.LatestSubmitted == nil {
		return time.Time{}
	}
	return st.LatestSubmitted.Time
}

// testSubmitAtKeepsTime: SubmitAt logs the transaction with the given tx
// time (to the millisecond), the same as the latest's or later; reads,
// EntityTx and TxLog see that time.
func testSubmitAtKeepsTime(e *env) {
	at := e.s.(store.TxTimeSubmitter)
	e.submit(store.PutAt(e.doc("before"), inst("2019-01-01")))
	t1 := store.MS(e.latestTime().Add(90*time.Second + 1234567*time.Nanosecond))
	tx, err := at.SubmitAt(e.ctx, []store.Op{store.PutAt(e.doc("a", "v", 1), inst("2019-01-01"))}, t1.Add(999*time.Microsecond))
	if err != nil {
		e.t.Fatalf("SubmitAt: %v", err)
	}
	if !tx.Time.Equal(t1) {
		e.t.Errorf("SubmitAt returned tx time %s, want %s", store.FormatTime(tx.Time), store.FormatTime(t1))
	}
	if _, err := e.s.AwaitTx(e.ctx, tx.ID, 0); err != nil {
		e.t.Fatalf("AwaitTx: %v", err)
	}
	if ok, err := e.s.TxCommitted(e.ctx, tx.ID); err != nil || !ok {
		e.t.Fatalf("TxCommitted = %v, %v", ok, err)
	}
	// The same time again is allowed (several txs may share a millisecond).
	tx2, err := at.SubmitAt(e.ctx, []store.Op{store.PutAt(e.doc("a", "v", 2), inst("2019-02-01"))}, t1)
	if err != nil || !tx2.Time.Equal(t1) || tx2.ID <= tx.ID {
		e.t.Fatalf("SubmitAt at the latest tx time = %+v, %v", tx2, err)
	}
	e.wantEntity(e.id("a"), store.AtTx(tx.ID, inst("2019-06-01")), e.doc("a", "v", 1))
	etx, err := e.s.EntityTx(e.ctx, e.id("a"), store.AtTx(tx.ID, inst("2019-06-01")))
	if err != nil || etx.TxID != tx.ID || !etx.TxTime.Equal(t1) {
		e.t.Errorf("EntityTx = %+v, %v; want tx %d at %s", etx, err, tx.ID, store.FormatTime(t1))
	}
	log, err := e.s.TxLog(e.ctx, tx.ID-1, 2)
	if err != nil || len(log) != 2 || log[0].ID != tx.ID || !log[0].Time.Equal(t1) || !log[1].Time.Equal(t1) {
		e.t.Errorf("TxLog after tx %d = %+v, %v; want txs %d and %d at %s", tx.ID-1, log, err, tx.ID, tx2.ID, store.FormatTime(t1))
	}
	// A later plain Submit never goes back before it.
	tx3 := e.submit(store.PutAt(e.doc("after"), inst("2019-01-01")))
	if tx3.Time.Before(t1) {
		e.t.Errorf("Submit after SubmitAt(%s) got tx time %s", store.FormatTime(t1), store.FormatTime(tx3.Time))
	}
}

// testSubmitAtBeforeLatest: a tx time before the latest transaction's is
// refused with ErrInvalid and nothing is logged.
func testSubmitAtBeforeLatest(e *env) {
	at := e.s.(store.TxTimeSubmitter)
	last := e.submit(store.PutAt(e.doc("x"), inst("2019-01-01")))
	_, err := at.SubmitAt(e.ctx, []store.Op{store.PutAt(e.doc("late"), inst("2019-01-01"))}, last.Time.Add(-time.Millisecond))
	e.wantErr("SubmitAt before the latest tx time", err, store.ErrInvalid)
	e.wantEntity(e.id("late"), allVT, nil)
	st, serr := e.s.Status(e.ctx)
	if serr != nil || st.LatestSubmitted == nil || st.LatestSubmitted.ID != last.ID {
		e.t.Errorf("Status after a refused SubmitAt = %+v, %v; want latest tx %d", st.LatestSubmitted, serr, last.ID)
	}
}

// testSubmitAtValidates: SubmitAt refuses what Submit refuses (an invalid
// op, a number it cannot hold, a reserved id), logging nothing.
func testSubmitAtValidates(e *env) {
	at := e.s.(store.TxTimeSubmitter)
	t := store.MS(e.latestTime().Add(time.Second))
	for name, op := range map[string]store.Op{
		"put without a document": {Kind: store.OpPut, ID: e.id("bad")},
		"integer beyond 2^53":    store.Put(e.doc("bad", "n", json.Number("9007199254740993"))),
		"reserved id":            store.Put(store.Doc{store.IDKey: store.ReservedPrefix + "cursor:" + e.pfx}),
	} {
		_, err := at.SubmitAt(e.ctx, []store.Op{store.Put(e.doc("good")), op}, t)
		e.wantErr("SubmitAt with "+name, err, store.ErrInvalid)
		if err != nil && !strings.Contains(err.Error(), "op 2") {
			e.t.Errorf("SubmitAt with %s: error %q does not name op 2", name, err)
		}
	}
	e.wantEntity(e.id("good"), allVT, nil)
}

// testCanonicalTxLog: TxLogCanonical gives TxLog's transactions with each
// op's document as canonical JSON bytes (nil for none or evicted) and no
// decoded Doc.
func testCanonicalTxLog(e *env) {
	cl := e.s.(store.CanonicalTxLogger)
	odd := e.doc("odd", "html", "<a href='x'>&</a>", "sep", "\u2028\u2029", "one", json.Number("1.0"),
		"big", json.Number("1.5e300"), "neg", json.Number("-0"), "nested", map[string]any{"z": []any{json.Number("2"), nil, true}, "a": map[string]any{}})
	first := e.submit(store.Match(e.id("odd"), nil), store.PutAt(odd, inst("2019-01-01")))
	e.submit(store.Match(e.id("odd"), odd), store.DeleteRange(e.id("odd"), inst("2019-06-01"), nil))
	e.submit(store.PutAt(e.doc("gone", "secret", "s"), inst("2019-01-01")))
	e.submit(store.Match(e.id("gone"), e.doc("gone", "secret", "s")), store.PutAt(e.doc("kept", "v", 1), inst("2019-01-01")))
	last := e.submit(store.Evict(e.id("gone")))

	plain, err := e.s.TxLog(e.ctx, first.ID-1, 0)
	if err != nil {
		e.t.Fatalf("TxLog: %v", err)
	}
	txs, docs, err := cl.TxLogCanonical(e.ctx, first.ID-1, 0)
	if err != nil {
		e.t.Fatalf("TxLogCanonical: %v", err)
	}
	if len(txs) != len(plain) || len(docs) != len(txs) {
		e.t.Fatalf("TxLogCanonical gave %d txs and %d doc lists, TxLog %d txs", len(txs), len(docs), len(plain))
	}
	seen := 0
	for i, p := range plain {
		c := txs[i]
		if c.ID != p.ID || !c.Time.Equal(p.Time) || len(c.Ops) != len(p.Ops) || len(docs[i]) != len(c.Ops) {
			e.t.Fatalf("tx %d: canonical %+v (%d docs), plain %+v", p.ID, c.Tx, len(docs[i]), p.Tx)
		}
		if p.ID > last.ID || p.ID < first.ID {
			continue
		}
		seen++
		for j, op := range p.Ops {
			cop := c.Ops[j]
			if cop.Kind != op.Kind || cop.ID != op.ID || cop.Evicted != op.Evicted || cop.Doc != nil {
				e.t.Errorf("tx %d op %d: canonical %+v, plain %+v (a canonical op carries no Doc)", p.ID, j+1, cop, op)
			}
			switch {
			case op.Doc == nil && docs[i][j] != nil:
				e.t.Errorf("tx %d op %d (%s, evicted %v): canonical document %s, want none", p.ID, j+1, op.Kind, op.Evicted, docs[i][j])
			case op.Doc != nil:
				want, err := store.Canonical(op.Doc)
				if err != nil {
					e.t.Fatal(err)
				}
				if !bytes.Equal(docs[i][j], want) {
					e.t.Errorf("tx %d op %d: canonical document %s, want %s", p.ID, j+1, docs[i][j], want)
				}
			}
		}
	}
	if seen != int(last.ID-first.ID+1) {
		e.t.Errorf("TxLog after tx %d holds %d of the case's %d txs", first.ID-1, seen, last.ID-first.ID+1)
	}
	_, _, err = cl.TxLogCanonical(e.ctx, last.ID, 0)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("TxLogCanonical after the latest tx: %v", err)
	}
}

// testValues: ValueLister.Values lists the distinct strings a field holds
// in the documents a query matches, visible at the basis (a deleted
// document's at a basis before the delete; an evicted one's never), an
// array's string elements each, past after, cut to limit, ascending, as
// store.ValuesByQuery reads them from the documents; also once the field
// holds a string longer than the index keeps whole.
func testValues(e *env) {
	vl := e.s.(store.ValueLister)
	typ := e.pfx + "valued"
	p := func(s string) string { return e.pfx + s }
	e.submit(store.Put(e.doc("c1", "type", typ, "session", p("a"))), store.Put(e.doc("c2", "type", typ, "session", p("a"))),
		store.Put(e.doc("c3", "type", typ, "session", p("b"))),
		store.Put(e.doc("c4", "type", typ, "session", []any{p("c"), p("d"), json.Number("7")})),
		store.Put(e.doc("c5", "type", e.pfx+"other", "session", p("e"))), store.Put(e.doc("c6", "type", typ, "session", json.Number("5"))),
		store.Put(e.doc("c7", "type", typ, "session", p("f"))))
	before := e.submit(store.Evict(e.id("c7")))
	e.submit(store.Delete(e.id("c3")))
	q := store.Query{Where: []store.Pred{store.Where("type", typ)}}
	old := q
	old.Basis = store.AtTx(before.ID, time.Time{})
	check := func(q store.Query, after string, limit int, want []string) {
		e.t.Helper()
		got, err := vl.Values(e.ctx, q, "session", after, limit)
		if err != nil {
			e.t.Fatalf("Values(after %q, limit %d): %v", after, limit, err)
		}
		ref, err := store.ValuesByQuery(e.ctx, e.s, q, "session", after, limit)
		if err != nil {
			e.t.Fatalf("ValuesByQuery: %v", err)
		}
		if !slices.Equal(got, want) || !slices.Equal(ref, want) {
			e.t.Errorf("values after %q, limit %d: got %q, ValuesByQuery %q, want %q", after, limit, got, ref, want)
		}
	}
	check(q, "", 0, []string{p("a"), p("c"), p("d")})
	check(q, p("a"), 0, []string{p("c"), p("d")})
	check(q, "", 2, []string{p("a"), p("c")})
	check(old, "", 0, []string{p("a"), p("b"), p("c"), p("d")})
	check(old, p("a"), 1, []string{p("b")})
	check(store.Query{Where: []store.Pred{store.Where("type", e.pfx+"nothing")}}, "", 0, nil)
	long := p("g") + strings.Repeat("x", 2100)
	e.submit(store.Put(e.doc("c8", "type", typ, "session", long)))
	check(q, "", 0, []string{p("a"), p("c"), p("d"), long})
	check(q, p("d"), 5, []string{long})
	if _, err := vl.Values(e.ctx, q, "bad field", "", 0); !errors.Is(err, store.ErrInvalid) {
		e.t.Errorf("Values of an invalid field name: %v, want ErrInvalid", err)
	}
}
