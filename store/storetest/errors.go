package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

func errorCases() []testCase {
	return []testCase{
		{"invalid-ops-write-nothing", testInvalidOps},
		{"not-found", testNotFound},
		{"numbers-held-exactly", testNumbersExact},
		{"over-long-id-reads", testLongIDReads},
		{"calls-after-close", testAfterClose},
	}
}

// testInvalidOps: every invalid op makes Submit fail with ErrInvalid, with
// a message naming the op's index and the field (and id) at fault, and
// nothing of the transaction is written.
func testInvalidOps(e *env) {
	id := e.id("bad")
	marker := e.submit(store.PutAt(e.doc("marker"), inst("2019-01-01")))
	y2019, y2020 := inst("2019-01-01"), inst("2020-01-01")
	for _, c := range []struct {
		name string
		op   store.Op
		want []string // substrings of the message
	}{
		{"put without a document", store.Op{Kind: store.OpPut, ID: id}, []string{`"doc"`, id}},
		{"document without an id", store.Op{Kind: store.OpPut, Doc: store.Doc{"a": 1}}, []string{`"xt/id"`}},
		{"non-string id", store.Op{Kind: store.OpPut, Doc: store.Doc{store.IDKey: 5}}, []string{`"xt/id"`}},
		{"empty id", store.Op{Kind: store.OpPut, Doc: store.Doc{store.IDKey: ""}}, []string{`"xt/id"`}},
		{"op id differs from the document's", store.Op{Kind: store.OpPut, ID: id + "x", Doc: e.doc("bad")}, []string{`"xt/id"`}},
		{"delete without an id", store.Op{Kind: store.OpDelete}, []string{`"id"`}},
		{"evict without an id", store.Op{Kind: store.OpEvict}, []string{`"id"`}},
		{"match without an id", store.Op{Kind: store.OpMatch, Doc: e.doc("bad")}, []string{`"id"`}},
		{"match document of another id", store.Match(id, e.doc("other")), []string{`"xt/id"`, id}},
		{"put end before start", store.PutRange(e.doc("bad"), y2020, y2019), []string{`"valid_to"`, id}},
		{"delete end before start", store.DeleteRange(id, y2020, &y2019), []string{`"valid_to"`, id}},
		{"end without a start", store.Op{Kind: store.OpDelete, ID: id, ValidTo: &y2020}, []string{`"valid_from"`, id}},
		{"match with an end", store.Op{Kind: store.OpMatch, ID: id, ValidFrom: &y2019, ValidTo: &y2020}, []string{`"valid_to"`, id}},
		{"evict with a start", store.Op{Kind: store.OpEvict, ID: id, ValidFrom: &y2019}, []string{`"valid_from"`, id}},
		{"evict with a range", store.Op{Kind: store.OpEvict, ID: id, ValidFrom: &y2019, ValidTo: &y2020}, []string{"evict", id}},
		{"unknown op kind", store.Op{Kind: "upsert", ID: id}, []string{"upsert", id}},
		{"delete with a document", store.Op{Kind: store.OpDelete, ID: id, Doc: e.doc("bad")}, []string{`"doc"`, id}},
		{"document with an empty key", store.Put(e.doc("bad", "", 1)), []string{id}},
		// The input rules (docs/security.md): numbers are held exactly or
		// refused, reserved ids are the version log's.
		{"integer beyond 2^53", store.Put(e.doc("bad", "n", json.Number("9007199254740993"))), []string{`"n"`, id, "9007199254740993"}},
		{"nested integer beyond 2^53", store.Put(e.doc("bad", "a", map[string]any{"b": []any{1, json.Number("18446744073709551616")}})), []string{`a.b[1]`, id}},
		{"whole number between 2^53 and 1e21", store.Put(e.doc("bad", "n", json.Number("1.2345678901234567e19"))), []string{`"n"`, id}},
		{"float64 between 2^53 and 1e21", store.Put(e.doc("bad", "n", 1.2345678901234567e19)), []string{`"n"`, id}},
		{"over-precise decimal", store.Put(e.doc("bad", "n", json.Number("0.1000000000000000000001"))), []string{`"n"`, id}},
		{"number beyond float64", store.Put(e.doc("bad", "n", json.Number("1e400"))), []string{`"n"`, id}},
		{"match with a number beyond 2^53", store.Match(id, e.doc("bad", "n", json.Number("9007199254740993"))), []string{`"n"`, id}},
		{"put of a reserved id", store.Put(store.Doc{store.IDKey: store.ReservedPrefix + "cursor:" + e.pfx}), []string{"reserved", store.ReservedPrefix}},
		{"delete of a reserved id", store.Delete(store.ReservedPrefix + "cursor:" + e.pfx), []string{"reserved"}},
		{"evict of a reserved id", store.Evict(store.ReservedPrefix + "session:" + e.pfx), []string{"reserved"}},
		{"document with XTDB's xt/fn key", store.Put(e.doc("bad", store.FnKey, "(fn [ctx] [])")), []string{`"doc"`, store.FnKey, id}},
		{"expected document with xt/fn", store.Match(id, e.doc("bad", store.FnKey, "x")), []string{`"doc"`, store.FnKey, id}},
		{"put of an over-long id", store.Put(store.Doc{store.IDKey: longID(e)}), []string{`"xt/id"`, "MaxIDBytes"}},
		{"delete of an over-long id", store.Delete(longID(e)), []string{`"id"`, "MaxIDBytes"}},
	} {
		ops := []store.Op{store.PutAt(e.doc("good", "case", c.name), inst("2019-01-01")), c.op}
		_, err := e.s.Submit(e.ctx, ops)
		if !errors.Is(err, store.ErrInvalid) {
			e.t.Errorf("%s: Submit = %v, want an error wrapping ErrInvalid", c.name, err)
			continue
		}
		for _, w := range append([]string{"op 2"}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				e.t.Errorf("%s: error %q does not name %s", c.name, err, w)
			}
		}
	}
	e.wantEntity(e.id("good"), allVT, nil)
	e.wantEntity(id, allVT, nil)
	// Nothing was logged: no tx between two markers mentions the case's ids.
	marker2 := e.submit(store.PutAt(e.doc("marker"), inst("2019-01-02")))
	log, err := e.s.TxLog(e.ctx, marker.ID, 0)
	if err != nil {
		e.t.Fatalf("TxLog: %v", err)
	}
	for _, l := range log {
		if l.ID >= marker2.ID {
			break
		}
		for _, op := range l.Ops {
			if strings.HasPrefix(op.ID, e.pfx) {
				e.t.Errorf("tx %d was logged from an invalid submission: %s", l.ID, showOps(l.Ops))
			}
		}
	}
}

// testNotFound: reads of an id that never existed give ErrNotFound naming
// it (history gives no rows), as does TxCommitted of an unknown tx.
func testNotFound(e *env) {
	tx := e.submit(store.PutAt(e.doc("known"), inst("2019-01-01")))
	id := e.id("never")
	for _, b := range []store.Basis{{}, allVT, store.AtTx(tx.ID, inst("2019-06-01"))} {
		_, err := e.s.Entity(e.ctx, id, b)
		e.wantErr("Entity of an unknown id", err, store.ErrNotFound)
		if err != nil && !strings.Contains(err.Error(), id) {
			e.t.Errorf("Entity error %q does not name the id %q", err, id)
		}
		_, err = e.s.EntityTx(e.ctx, id, b)
		e.wantErr("EntityTx of an unknown id", err, store.ErrNotFound)
		if err != nil && !strings.Contains(err.Error(), id) {
			e.t.Errorf("EntityTx error %q does not name the id %q", err, id)
		}
	}
	// Known, but not yet valid.
	_, err := e.s.Entity(e.ctx, e.id("known"), store.Basis{ValidTime: inst("2018-01-01")})
	e.wantErr("Entity before its valid time", err, store.ErrNotFound)
	_, err = e.s.TxCommitted(e.ctx, tx.ID+1_000_000)
	e.wantErr("TxCommitted of an unknown tx", err, store.ErrNotFound)
}

// testAfterClose: every call after Close fails with ErrUnavailable.
func testAfterClose(e *env) {
	tx := e.submit(store.PutAt(e.doc("x"), inst("2019-01-01")))
	if err := e.s.Close(); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	id := e.id("x")
	b := store.AtTx(tx.ID, inst("2019-06-01"))
	calls := map[string]func() error{
		"Submit": func() error { _, err := e.s.Submit(e.ctx, []store.Op{store.Put(e.doc("y"))}); return err },
		"AwaitTx": func() error {
			_, err := e.s.AwaitTx(e.ctx, tx.ID, time.Second)
			return err
		},
		"TxCommitted": func() error { _, err := e.s.TxCommitted(e.ctx, tx.ID); return err },
		"Entity":      func() error { _, err := e.s.Entity(e.ctx, id, b); return err },
		"EntityTx":    func() error { _, err := e.s.EntityTx(e.ctx, id, b); return err },
		"History": func() error {
			_, err := e.s.History(e.ctx, id, store.HistoryOptions{Order: store.Asc, Basis: b})
			return err
		},
		"Query": func() error {
			_, err := e.s.Query(e.ctx, store.Query{Where: []store.Pred{store.Where(store.IDKey, id)}, Basis: b})
			return err
		},
		"TxLog":  func() error { _, err := e.s.TxLog(e.ctx, tx.ID-1, 0); return err },
		"Status": func() error { _, err := e.s.Status(e.ctx); return err },
	}
	for name, call := range calls {
		e.wantErr(name+" after Close", call(), store.ErrUnavailable)
	}
}

// testNumbersExact: the numbers the input rules accept read back as the
// same value, at the edges of what a 64-bit float holds.
func testNumbersExact(e *env) {
	d := e.doc("n", "max", json.Number("9007199254740992"), "min", json.Number("-9007199254740992"),
		"e21", json.Number("1e21"), "tiny", json.Number("5e-324"), "big", json.Number("1.7976931348623157e308"),
		"third", json.Number("0.30000000000000004"), "l", []any{json.Number("-0"), json.Number("2.5")})
	tx := e.submit(store.PutAt(d, inst("2019-01-01")))
	got := e.entity(e.id("n"), store.AtTx(tx.ID, inst("2019-06-01")))
	e.wantEntity(e.id("n"), store.AtTx(tx.ID, inst("2019-06-01")), d)
	for _, k := range []string{"max", "min", "e21", "tiny", "big", "third"} {
		want, _ := store.Num(d[k])
		if v, ok := store.Num(got[k]); !ok || v != want {
			e.t.Errorf("%s: read back %v, want %v", k, got[k], d[k])
		}
	}
	// What was read can be written again (export, then import).
	e.submit(store.PutAt(got, inst("2019-02-01")))
}

// longID is an id one byte over store.MaxIDBytes.
func longID(e *env) string {
	id := e.id("long-")
	return id + strings.Repeat("é", (store.MaxIDBytes-len(id))/2) + "xx"
}

// testLongIDReads: an id over store.MaxIDBytes (which XTDB's HTTP API could
// not carry in a URL) is refused by every read with ErrInvalid, not
// reported missing; an id of exactly the limit is written and read back.
func testLongIDReads(e *env) {
	long := longID(e)
	if len(long) != store.MaxIDBytes+1 {
		e.t.Fatalf("longID is %d bytes", len(long))
	}
	b := store.Basis{}
	_, err := e.s.Entity(e.ctx, long, b)
	e.wantErr("Entity of an over-long id", err, store.ErrInvalid)
	_, err = e.s.EntityTx(e.ctx, long, b)
	e.wantErr("EntityTx of an over-long id", err, store.ErrInvalid)
	_, err = e.s.History(e.ctx, long, store.HistoryOptions{Order: store.Asc})
	e.wantErr("History of an over-long id", err, store.ErrInvalid)
	if err != nil && !strings.Contains(err.Error(), "MaxIDBytes") {
		e.t.Errorf("History error %q does not name the limit", err)
	}
	// The longest id allowed, of multi-byte characters (URL-encoded: 6 KiB).
	max := long[:len(long)-1]
	tx := e.submit(store.PutAt(store.Doc{store.IDKey: max, "v": "max"}, inst("2019-01-01")))
	doc, err := e.s.Entity(e.ctx, max, store.AtTx(tx.ID, inst("2019-06-01")))
	if err != nil || doc["v"] != "max" {
		e.t.Errorf("Entity of a %d-byte id = %v, %v", len(max), doc, err)
	}
	hist, err := e.s.History(e.ctx, max, store.HistoryOptions{Order: store.Asc, Basis: store.AtTx(tx.ID, inst("2019-06-01"))})
	if err != nil || len(hist) != 1 {
		e.t.Errorf("History of a %d-byte id = %v, %v", len(max), hist, err)
	}
}
