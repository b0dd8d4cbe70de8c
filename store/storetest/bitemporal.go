package storetest

import (
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// rangeTx is one transaction of test-put-delete-range-semantics: a put of
// value (nil: a delete) from `from`, until `to` if set.
type rangeTx struct {
	value    any
	from, to string
}

// rangeRow is one expected ascending history row: valid time, index of the
// tx that wrote it, value (nil: a tombstone).
type rangeRow struct {
	vt    string
	tx    int
	value any
}

// putDeleteRangeSemantics is XTDB 1.24.5 tx_test.clj
// test-put-delete-range-semantics, all ten cases, as facts.
var putDeleteRangeSemantics = []struct {
	name string
	txs  []rangeTx
	want []rangeRow
}{
	{"range on an empty entity",
		[]rangeTx{{26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-26", 0, 26}, {"2019-11-29", 0, nil}}},
	{"re-instates the previous value at the end of the range",
		[]rangeTx{{25, "2019-11-25", ""}, {26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 1, 26}, {"2019-11-29", 0, 25}}},
	{"delete a range",
		[]rangeTx{{25, "2019-11-25", ""}, {nil, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 1, nil}, {"2019-11-29", 0, 25}}},
	{"override a range",
		[]rangeTx{{25, "2019-11-25", "2019-11-27"}, {nil, "2019-11-25", "2019-11-27"}, {26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 1, nil}, {"2019-11-26", 2, 26}, {"2019-11-27", 2, 26}, {"2019-11-29", 0, nil}}},
	{"merge a range",
		[]rangeTx{{25, "2019-11-25", "2019-11-27"}, {26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 1, 26}, {"2019-11-27", 1, 26}, {"2019-11-29", 0, nil}}},
	{"does not override the value at the end if there is one there",
		[]rangeTx{{25, "2019-11-25", ""}, {29, "2019-11-29", ""}, {26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 2, 26}, {"2019-11-29", 1, 29}}},
	{"re-instates 28 at the end of the range",
		[]rangeTx{{25, "2019-11-25", ""}, {28, "2019-11-28", ""}, {26, "2019-11-26", "2019-11-29"}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 2, 26}, {"2019-11-28", 2, 26}, {"2019-11-29", 1, 28}}},
	{"26.1 overwrites the full range",
		[]rangeTx{{28, "2019-11-28", ""}, {26, "2019-11-26", "2019-11-29"}, {26.1, "2019-11-26", ""}},
		[]rangeRow{{"2019-11-26", 2, 26.1}, {"2019-11-28", 2, 26.1}, {"2019-11-29", 0, 28}}},
	{"27 overrides the latter half of the range",
		[]rangeTx{{25, "2019-11-25", ""}, {26, "2019-11-26", "2019-11-29"}, {27, "2019-11-27", ""}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 1, 26}, {"2019-11-27", 2, 27}, {"2019-11-29", 0, 25}}},
	{"27 still overrides the latter half of the range",
		[]rangeTx{{25, "2019-11-25", ""}, {28, "2019-11-28", ""}, {26, "2019-11-26", "2019-11-29"}, {27, "2019-11-27", ""}},
		[]rangeRow{{"2019-11-25", 0, 25}, {"2019-11-26", 2, 26}, {"2019-11-27", 3, 27}, {"2019-11-28", 3, 27}, {"2019-11-29", 1, 28}}},
}

func bitemporalCases() []testCase {
	return []testCase{
		{"test-put-delete-range-semantics", testPutDeleteRangeSemantics},
		{"jupiter-tests", testJupiter},
		{"overlapping-valid-time-ranges-434", testOverlapping434},
		{"test-multiple-txs-in-same-ms-441", testSameMS441},
		{"test-can-index-tx-ops-acceptance-test", testAcceptance},
		{"entity-tx", testEntityTx},
		{"several-ops-on-one-entity-in-one-tx", testSeveralOpsOneTx},
	}
}

func testPutDeleteRangeSemantics(e *env) {
	for _, c := range putDeleteRangeSemantics {
		e.sub(c.name, func(e *env) {
			ivan := func(v any) store.Doc {
				if v == nil {
					return nil
				}
				return e.doc("ivan", "name", "Ivan", "value", v)
			}
			var txs []store.Tx
			for _, rt := range c.txs {
				var op store.Op
				switch {
				case rt.value == nil && rt.to == "":
					op = store.DeleteRange(e.id("ivan"), inst(rt.from), nil)
				case rt.value == nil:
					op = store.DeleteRange(e.id("ivan"), inst(rt.from), instPtr(rt.to))
				case rt.to == "":
					op = store.PutAt(ivan(rt.value), inst(rt.from))
				default:
					op = store.PutRange(ivan(rt.value), inst(rt.from), inst(rt.to))
				}
				txs = append(txs, e.submit(op))
			}
			want := make([]hrow, len(c.want))
			for i, w := range c.want {
				want[i] = hrow{w.vt, w.tx, ivan(w.value)}
			}
			rows := e.hist(e.id("ivan"), store.HistoryOptions{Order: store.Asc, WithDocs: true,
				StartValidTime: instPtr(c.want[0].vt), Basis: allVT})
			e.checkRows("history asc", txs, rows, want, true)
		})
	}
}

// testJupiter ports space_tutorial_test.clj jupiter-tests: four range puts
// in one transaction, then a range delete over all of them.
func testJupiter(e *env) {
	id := e.id("kaarlang/clients")
	doc := func(clients ...any) store.Doc { return e.doc("kaarlang/clients", "clients", clients) }
	doc1 := doc("encompass-trade")
	doc2 := doc("encompass-trade", "blue-energy")
	doc3 := doc("blue-energy")
	doc4 := doc("blue-energy", "gold-harmony", "tombaugh-resources")
	tx0 := e.submit(
		store.PutRange(doc1, inst("2110-01-01T09"), inst("2111-01-01T09")),
		store.PutRange(doc2, inst("2111-01-01T09"), inst("2113-01-01T09")),
		store.PutRange(doc3, inst("2113-01-01T09"), inst("2114-01-01T09")),
		store.PutRange(doc4, inst("2114-01-01T09"), inst("2115-01-01T09")))
	e.wantEntity(id, store.Basis{ValidTime: inst("2114-01-01T09")}, doc4)
	at := store.Basis{ValidTime: inst("2116-01-01T09")}
	txs := []store.Tx{tx0}
	e.checkRows("history after the puts", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: at}),
		[]hrow{{"2110-01-01T09", 0, doc1}, {"2111-01-01T09", 0, doc2}, {"2113-01-01T09", 0, doc3},
			{"2114-01-01T09", 0, doc4}, {"2115-01-01T09", 0, nil}}, true)

	txs = append(txs, e.submit(store.DeleteRange(id, inst("2110-01-01"), instPtr("2116-01-01"))))
	e.wantEntity(id, store.Basis{ValidTime: inst("2114-01-01T09")}, nil)
	e.checkRows("history after the delete", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, Basis: at}),
		[]hrow{{"2110-01-01", 1, nil}, {"2110-01-01T09", 1, nil}, {"2111-01-01T09", 1, nil},
			{"2113-01-01T09", 1, nil}, {"2114-01-01T09", 1, nil}, {"2115-01-01T09", 1, nil},
			{"2116-01-01", 0, nil}}, false)
}

// testOverlapping434 ports tx_test.clj overlapping-valid-time-ranges-434:
// later ops of a transaction see the earlier ones. The tx indexes follow
// from the range rules (a restored point keeps its tx).
func testOverlapping434(e *env) {
	v := func(name string, n int) store.Doc { return e.doc(name, "v", n) }
	tx0 := e.submit(
		store.PutAt(v("foo", 10), inst("2020-01-10")),
		store.PutAt(v("bar", 5), inst("2020-01-05")),
		store.PutAt(v("bar", 10), inst("2020-01-10")),
		store.PutAt(v("baz", 10), inst("2020-01-10")))
	tx1 := e.submit(
		store.PutAt(v("bar", 7), inst("2020-01-07")),
		store.PutRange(v("foo", 8), inst("2020-01-08"), inst("2020-01-12")),
		store.PutRange(v("foo", 9), inst("2020-01-09"), inst("2020-01-11")),
		store.PutRange(v("bar", 8), inst("2020-01-08"), inst("2020-01-09")),
		store.PutRange(v("bar", 11), inst("2020-01-11"), inst("2020-01-12")))
	txs := []store.Tx{tx0, tx1}
	o := store.HistoryOptions{Order: store.Asc, WithDocs: true, StartValidTime: instPtr("2020-01-01"), Basis: allVT}
	e.checkRows("foo", txs, e.hist(e.id("foo"), o), []hrow{
		{"2020-01-08", 1, v("foo", 8)}, {"2020-01-09", 1, v("foo", 9)}, {"2020-01-10", 1, v("foo", 9)},
		{"2020-01-11", 1, v("foo", 8)}, {"2020-01-12", 0, v("foo", 10)}}, true)
	e.checkRows("bar", txs, e.hist(e.id("bar"), o), []hrow{
		{"2020-01-05", 0, v("bar", 5)}, {"2020-01-07", 1, v("bar", 7)}, {"2020-01-08", 1, v("bar", 8)},
		{"2020-01-09", 1, v("bar", 7)}, {"2020-01-10", 0, v("bar", 10)}, {"2020-01-11", 1, v("bar", 11)},
		{"2020-01-12", 0, v("bar", 10)}}, true)
	e.checkRows("baz", txs, e.hist(e.id("baz"), o), []hrow{{"2020-01-10", 0, v("baz", 10)}}, true)
}

// testSameMS441 ports tx_test.clj test-multiple-txs-in-same-ms-441: two
// transactions in one millisecond both write valid time t. With a settable
// clock both take the default valid time (the tx time) and the case checks
// that the two tx times are equal; without one the valid time is explicit.
func testSameMS441(e *env) {
	t := inst("2019-11-29")
	frozen := e.setClock(t)
	ivan1, ivan2 := e.doc("ivan", "value", 1), e.doc("ivan", "value", 2)
	put := func(d store.Doc) store.Op {
		if frozen {
			return store.Put(d)
		}
		return store.PutAt(d, t)
	}
	txs := []store.Tx{e.submit(put(ivan1)), e.submit(put(ivan2))}
	if txs[1].ID <= txs[0].ID {
		e.t.Errorf("tx ids %d then %d: not increasing", txs[0].ID, txs[1].ID)
	}
	vt := store.FormatTime(t)
	if frozen {
		if !txs[0].Time.Equal(txs[1].Time) {
			e.t.Errorf("with the clock frozen, tx times %s and %s differ", txs[0].Time, txs[1].Time)
		}
		vt = store.FormatTime(txs[0].Time)
	}
	id := e.id("ivan")
	tx0, tx1 := txs[0].ID, txs[1].ID
	e.checkRows("desc with corrections", txs,
		e.hist(id, store.HistoryOptions{Order: store.Desc, WithCorrections: true, WithDocs: true, Basis: allVT}),
		[]hrow{{vt, 1, ivan2}, {vt, 0, ivan1}}, true)
	e.checkRows("desc from (t, tx#1)", txs,
		e.hist(id, store.HistoryOptions{Order: store.Desc, WithDocs: true, StartValidTime: ptr(inst(vt)), StartTxID: &tx1, Basis: allVT}),
		[]hrow{{vt, 1, ivan2}}, true)
	e.checkRows("desc from (t, tx#0)", txs,
		e.hist(id, store.HistoryOptions{Order: store.Desc, WithDocs: true, StartValidTime: ptr(inst(vt)), StartTxID: &tx0, Basis: allVT}),
		[]hrow{{vt, 0, ivan1}}, true)
	// At the default basis: with the clock frozen "now" is t itself, so this
	// also checks that ascending history includes the basis valid time.
	e.checkRows("asc from t", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithDocs: true, StartValidTime: ptr(inst(vt))}),
		[]hrow{{vt, 1, ivan2}}, true)
	e.wantEntity(id, store.AtTx(tx0, inst(vt)), ivan1)
	e.wantEntity(id, store.AtTx(tx1, inst(vt)), ivan2)
}

// testAcceptance ports tx_test.clj test-can-index-tx-ops-acceptance-test:
// one entity read at many bases as versions are added in the past, in the
// future, corrected and deleted.
func testAcceptance(e *env) {
	id := e.id("picasso")
	p0 := e.doc("picasso", "name", "Pablo")
	txs := []store.Tx{e.submit(store.PutAt(p0, inst("2018-05-21")))}
	at := func(vt string, tx int) store.Basis { return store.AtTx(txs[tx].ID, inst(vt)) }
	before := store.Basis{ValidTime: inst("2018-05-21"), TxTime: ptr(txs[0].Time.Add(-time.Millisecond))}

	e.wantEntity(id, at("2018-05-21", 0), p0)
	e.checkEntityTx(id, at("2018-05-21", 0), txs, "2018-05-21", 0, false)
	e.wantEntity(id, at("2018-05-20", 0), nil) // before its valid time
	e.wantEntity(id, before, nil)              // before its tx
	e.wantNoEntityTx(id, before)
	e.wantEntity(id, at("2018-05-22", 0), p0)
	e.checkRows("history desc", txs, e.hist(id, store.HistoryOptions{Order: store.Desc, Basis: allVT}),
		[]hrow{{"2018-05-21", 0, p0}}, false)

	// A version in the past.
	p1 := e.doc("picasso", "name", "Pablo", "foo", "bar")
	txs = append(txs, e.submit(store.PutAt(p1, inst("2018-05-20"))))
	e.wantEntity(id, at("2018-05-20", 1), p1)
	e.wantEntity(id, at("2018-05-20", 0), nil)
	e.wantEntity(id, at("2018-05-21", 1), p0)

	// A version in the future.
	p2 := e.doc("picasso", "name", "Pablo", "baz", "boz")
	txs = append(txs, e.submit(store.PutAt(p2, inst("2018-05-22"))))
	e.wantEntity(id, at("2018-05-22", 2), p2)
	e.checkEntityTx(id, at("2018-05-22", 2), txs, "2018-05-22", 2, false)
	e.wantEntity(id, at("2018-05-22", 0), p0)
	e.checkEntityTx(id, at("2018-05-22", 0), txs, "2018-05-21", 0, false)

	// A correction at an earlier valid time.
	p3 := e.doc("picasso", "name", "Pablo", "bar", "foo")
	txs = append(txs, e.submit(store.PutAt(p3, inst("2018-05-22"))))
	e.wantEntity(id, at("2018-05-22", 3), p3)
	e.checkEntityTx(id, at("2018-05-22", 2), txs, "2018-05-22", 2, false)

	// A delete: the first version is still visible in the past.
	txs = append(txs, e.submit(store.DeleteRange(id, inst("2018-05-23"), nil)))
	e.wantEntity(id, at("2018-05-23", 4), nil)
	e.checkEntityTx(id, at("2018-05-23", 4), txs, "2018-05-23", 4, true)
	e.wantEntity(id, at("2018-05-21", 4), p0)
	e.checkEntityTx(id, at("2018-05-21", 4), txs, "2018-05-21", 0, false)

	e.checkRows("history desc with corrections", txs,
		e.hist(id, store.HistoryOptions{Order: store.Desc, WithCorrections: true, WithDocs: true, Basis: allVT}),
		[]hrow{{"2018-05-23", 4, nil}, {"2018-05-22", 3, p3}, {"2018-05-22", 2, p2}, {"2018-05-21", 0, p0}, {"2018-05-20", 1, p1}}, true)
}

// testEntityTx checks EntityTx: the valid time is the winning point's
// (here a restore point), a tombstone gives Deleted, and an id that never
// existed gives ErrNotFound.
func testEntityTx(e *env) {
	id := e.id("e")
	a, b := e.doc("e", "v", "a"), e.doc("e", "v", "b")
	txs := []store.Tx{
		e.submit(store.PutAt(a, inst("2019-01-01"))),
		e.submit(store.PutRange(b, inst("2019-02-01"), inst("2019-03-01"))),
		e.submit(store.DeleteRange(id, inst("2019-04-01"), nil)),
	}
	vt := func(s string) store.Basis { return store.Basis{ValidTime: inst(s)} }
	ea := e.checkEntityTx(id, vt("2019-01-15"), txs, "2019-01-01", 0, false)
	e.checkEntityTx(id, vt("2019-02-15"), txs, "2019-02-01", 1, false)
	restored := e.checkEntityTx(id, vt("2019-03-15"), txs, "2019-03-01", 0, false)
	if ea.ContentHash != restored.ContentHash {
		e.t.Errorf("the restored point's content hash %q differs from the original's %q", restored.ContentHash, ea.ContentHash)
	}
	e.wantEntity(id, vt("2019-03-15"), a)
	e.checkEntityTx(id, vt("2019-05-01"), txs, "2019-04-01", 2, true)
	e.wantEntity(id, vt("2019-05-01"), nil)
	e.checkEntityTx(id, store.AtTx(txs[0].ID, inst("2019-02-15")), txs, "2019-01-01", 0, false)
	e.checkEntityTx(id, store.AtTx(txs[1].ID, inst("2019-05-01")), txs, "2019-03-01", 0, false)
	e.wantNoEntityTx(id, vt("2018-12-31"))
	e.wantNoEntityTx(e.id("never"), vt("2019-02-15"))
	e.wantNoEntityTx(e.id("never"), store.Basis{})
}

// testSeveralOpsOneTx checks that the ops of one transaction apply in
// order, each seeing the ones before it.
func testSeveralOpsOneTx(e *env) {
	vt := func(s string) store.Basis { return store.Basis{ValidTime: inst(s)} }
	e.sub("put twice at one valid time", func(e *env) {
		v1, v2 := e.doc("x", "v", 1), e.doc("x", "v", 2)
		txs := []store.Tx{e.submit(store.PutAt(v1, inst("2019-01-01")), store.PutAt(v2, inst("2019-01-01")))}
		e.wantEntity(e.id("x"), vt("2019-06-01"), v2)
		e.checkRows("history with corrections", txs,
			e.hist(e.id("x"), store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, Basis: allVT}),
			[]hrow{{"2019-01-01", 0, v2}}, true)
	})
	e.sub("put then delete", func(e *env) {
		e.submit(store.PutAt(e.doc("x", "v", 1), inst("2019-01-01")), store.DeleteRange(e.id("x"), inst("2019-01-01"), nil))
		e.wantEntity(e.id("x"), vt("2019-06-01"), nil)
	})
	e.sub("range put restores the version put earlier in the tx", func(e *env) {
		v1, v2 := e.doc("x", "v", 1), e.doc("x", "v", 2)
		txs := []store.Tx{e.submit(store.PutAt(v1, inst("2019-01-01")), store.PutRange(v2, inst("2019-02-01"), inst("2019-03-01")))}
		e.wantEntity(e.id("x"), vt("2019-02-15"), v2)
		e.wantEntity(e.id("x"), vt("2019-03-15"), v1)
		e.checkRows("history", txs, e.hist(e.id("x"), store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: allVT}),
			[]hrow{{"2019-01-01", 0, v1}, {"2019-02-01", 0, v2}, {"2019-03-01", 0, v1}}, true)
	})
	e.sub("range delete of a version put earlier in the tx", func(e *env) {
		v1 := e.doc("x", "v", 1)
		e.submit(store.PutAt(v1, inst("2019-01-01")), store.DeleteRange(e.id("x"), inst("2019-01-01"), instPtr("2019-02-01")))
		e.wantEntity(e.id("x"), vt("2019-01-15"), nil)
		e.wantEntity(e.id("x"), vt("2019-02-15"), v1)
	})
	e.sub("open put before an existing version stops at it", func(e *env) {
		a, b := e.doc("x", "v", "a"), e.doc("x", "v", "b")
		e.submit(store.PutAt(a, inst("2019-01-01")), store.PutAt(b, inst("2018-01-01")))
		e.wantEntity(e.id("x"), vt("2018-06-01"), b)
		e.wantEntity(e.id("x"), vt("2019-06-01"), a)
	})
}
