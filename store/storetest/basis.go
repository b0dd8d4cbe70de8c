package storetest

import (
	"fmt"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

func basisCases() []testCase {
	return []testCase{
		{"test-resolve-tx", testResolveTx},
		{"handles-start-tx-time-between-txs-1732", testStartTxBetweenTxs1732},
		{"test-db-throws-if-future-tx-time-provided-546", testFutureBasis546},
		{"default-valid-time-is-the-tx-time", testDefaultValidTime},
		{"future-versions-hidden-at-the-default-basis", testFutureHidden},
		{"default-basis-is-the-clock-now", testDefaultBasisFrozen},
		{"entity-at-tx-bases", testEntityAtTxBases},
	}
}

// twoTxs writes v0 and then v1 of entity foo (valid from 2019-01-01) in two
// transactions with different tx times: at 2020 and 2022 with a settable
// clock (as test-resolve-tx does), else 10ms apart on the real clock.
func (e *env) twoTxs() (txs []store.Tx, v0, v1 store.Doc) {
	e.t.Helper()
	v0, v1 = e.doc("foo", "v", 0), e.doc("foo", "v", 1)
	frozen := e.setClock(inst("2020-01-01"))
	txs = append(txs, e.submit(store.PutAt(v0, inst("2019-01-01"))))
	if frozen {
		e.h.SetClock(inst("2022-01-01"))
	} else {
		time.Sleep(10 * time.Millisecond)
	}
	txs = append(txs, e.submit(store.PutAt(v1, inst("2019-01-01"))))
	if !txs[1].Time.After(txs[0].Time) {
		e.t.Skipf("tx times %s and %s are not apart; cannot read between them", txs[0].Time, txs[1].Time)
	}
	return txs, v0, v1
}

// testResolveTx ports kv/index_store_test.clj test-resolve-tx: a basis tx
// time resolves to the latest transaction at or before it, so a time
// between two transactions reads the earlier one; before any of the
// case's transactions its entity is absent.
func testResolveTx(e *env) {
	txs, v0, v1 := e.twoTxs()
	id := e.id("foo")
	vt := inst("2019-06-01")
	tt := func(t time.Time) store.Basis { return store.Basis{ValidTime: vt, TxTime: &t} }
	e.wantEntity(id, tt(txs[0].Time), v0)
	e.wantEntity(id, tt(txs[1].Time.Add(-time.Millisecond)), v0)
	e.wantEntity(id, tt(txs[1].Time), v1)
	e.wantEntity(id, tt(txs[0].Time.Add(-time.Millisecond)), nil)
	e.wantEntity(id, store.AtTx(txs[0].ID, vt), v0)
	e.wantEntity(id, store.AtTx(txs[1].ID, vt), v1)
	e.wantEntity(id, store.Basis{ValidTime: vt}, v1)
	if e.h.SetClock != nil {
		e.wantEntity(id, tt(inst("2021-01-01")), v0)
	}
}

// testStartTxBetweenTxs1732 ports query_test.clj
// handles-start-tx-time-between-txs-1732: a history bounded to start at
// the later of two transactions shows only that one's row, and a basis
// between the two shows only the earlier one's.
func testStartTxBetweenTxs1732(e *env) {
	txs, v0, v1 := e.twoTxs()
	id := e.id("foo")
	e.checkRows("asc from tx#1 with corrections", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, StartTxID: &txs[1].ID, Basis: allVT}),
		[]hrow{{"2019-01-01", 1, v1}}, true)
	between := txs[1].Time.Add(-time.Millisecond)
	e.checkRows("asc with corrections as of a tx time between the txs", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true,
			Basis: store.Basis{ValidTime: endOfTime, TxTime: &between}}),
		[]hrow{{"2019-01-01", 0, v0}}, true)
	e.checkRows("all, with corrections", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithCorrections: true, WithDocs: true, Basis: allVT}),
		[]hrow{{"2019-01-01", 0, v0}, {"2019-01-01", 1, v1}}, true)
}

// testFutureBasis546 ports api_test.clj
// test-db-throws-if-future-tx-time-provided-546: a basis beyond the latest
// transaction (by tx time or tx id) is invalid for every read.
func testFutureBasis546(e *env) {
	tx := e.submit(store.PutAt(e.doc("foo"), inst("2019-01-01")))
	future := tx.Time.Add(24 * time.Hour)
	futureID := tx.ID + 1_000_000
	id := e.id("foo")
	for _, b := range []store.Basis{
		{ValidTime: future, TxTime: &future},
		{TxTime: &future},
		store.AtTx(futureID, time.Time{}),
		store.AtTx(futureID, inst("2019-06-01")),
	} {
		what := func(call string) string { return fmt.Sprintf("%s at %s", call, showBasis(b)) }
		_, err := e.s.Entity(e.ctx, id, b)
		e.wantErr(what("Entity"), err, store.ErrInvalid)
		_, err = e.s.EntityTx(e.ctx, id, b)
		e.wantErr(what("EntityTx"), err, store.ErrInvalid)
		_, err = e.s.History(e.ctx, id, store.HistoryOptions{Order: store.Asc, Basis: b})
		e.wantErr(what("History"), err, store.ErrInvalid)
		_, err = e.s.Query(e.ctx, store.Query{Where: []store.Pred{store.Where(store.IDKey, id)}, Basis: b})
		e.wantErr(what("Query"), err, store.ErrInvalid)
	}
}

// testDefaultValidTime: a put or delete without a valid time takes the tx
// time, and reads at the default basis (now, latest tx) see it.
func testDefaultValidTime(e *env) {
	id := e.id("x")
	d := e.doc("x", "v", 1)
	frozen := e.setClock(inst("2020-01-01"))
	tx0 := e.submit(store.Put(d))
	e.wantEntity(id, store.Basis{}, d)
	if frozen {
		e.h.SetClock(inst("2020-01-02"))
	} else {
		time.Sleep(5 * time.Millisecond)
	}
	tx1 := e.submit(store.Delete(id))
	if !tx1.Time.After(tx0.Time) {
		e.t.Skipf("tx times %s and %s are not apart", tx0.Time, tx1.Time)
	}
	e.wantEntity(id, store.Basis{}, nil)
	txs := []store.Tx{tx0, tx1}
	e.checkRows("history", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: allVT}),
		[]hrow{{store.FormatTime(tx0.Time), 0, d}, {store.FormatTime(tx1.Time), 1, nil}}, true)
	e.checkEntityTx(id, store.AtTx(tx0.ID, time.Time{}), txs, store.FormatTime(tx0.Time), 0, false)
}

// testFutureHidden: the default basis is now, so versions valid in the
// future are hidden from Entity and from history in both orders.
func testFutureHidden(e *env) {
	id := e.id("x")
	now, later := e.doc("x", "v", "now"), e.doc("x", "v", "later")
	txs := []store.Tx{
		e.submit(store.PutAt(now, inst("2019-01-01"))),
		e.submit(store.PutAt(later, inst("2999-01-01"))),
	}
	e.wantEntity(id, store.Basis{}, now)
	e.wantEntity(id, store.Basis{ValidTime: inst("2999-01-01")}, later)
	for _, order := range []store.SortOrder{store.Asc, store.Desc} {
		e.checkRows(fmt.Sprintf("%s at the default basis", order), txs,
			e.hist(id, store.HistoryOptions{Order: order, WithDocs: true}),
			[]hrow{{"2019-01-01", 0, now}}, true)
	}
	e.checkRows("asc seeing every valid time", txs,
		e.hist(id, store.HistoryOptions{Order: store.Asc, WithDocs: true, Basis: allVT}),
		[]hrow{{"2019-01-01", 0, now}, {"2999-01-01", 1, later}}, true)

}

// testEntityAtTxBases: reads at each tx of a sequence see exactly the
// writes up to it, at any valid time.
func testEntityAtTxBases(e *env) {
	id := e.id("x")
	d := func(n int) store.Doc { return e.doc("x", "n", n) }
	var txs []store.Tx
	txs = append(txs, e.submit(store.PutAt(d(0), inst("2019-01-01"))))
	txs = append(txs, e.submit(store.PutAt(d(1), inst("2019-03-01"))))
	txs = append(txs, e.submit(store.PutRange(d(2), inst("2019-02-01"), inst("2019-04-01"))))
	txs = append(txs, e.submit(store.DeleteRange(id, inst("2019-01-15"), instPtr("2019-02-15"))))
	want := map[string][]store.Doc{ // valid time -> doc as of tx#0..#3
		"2018-12-31": {nil, nil, nil, nil},
		"2019-01-10": {d(0), d(0), d(0), d(0)},
		"2019-01-20": {d(0), d(0), d(0), nil},
		"2019-02-10": {d(0), d(0), d(2), nil},
		"2019-02-20": {d(0), d(0), d(2), d(2)},
		"2019-03-10": {d(0), d(1), d(2), d(2)},
		"2019-04-10": {d(0), d(1), d(1), d(1)},
	}
	for vt, docs := range want {
		for k, doc := range docs {
			e.wantEntity(id, store.AtTx(txs[k].ID, inst(vt)), doc)
		}
	}
}

// testDefaultBasisFrozen: with the clock frozen at t, the default basis
// reads at valid time t exactly: a version from t is seen, one from t+1ms
// is not, in Entity and in history of both orders.
func testDefaultBasisFrozen(e *env) {
	t := inst("2019-06-01T12:00:00.000Z")
	if !e.setClock(t) {
		e.t.Skip("the harness cannot set the clock")
	}
	id := e.id("x")
	a, b := e.doc("x", "v", "a"), e.doc("x", "v", "b")
	tx := e.submit(store.Put(a), store.PutAt(b, t.Add(time.Millisecond)))
	if !tx.Time.Equal(t) {
		e.t.Fatalf("with the clock frozen at %s, the tx time is %s", store.FormatTime(t), store.FormatTime(tx.Time))
	}
	e.wantEntity(id, store.Basis{}, a)
	txs := []store.Tx{tx}
	for _, order := range []store.SortOrder{store.Asc, store.Desc} {
		e.checkRows(fmt.Sprintf("%s at the default basis", order), txs,
			e.hist(id, store.HistoryOptions{Order: order, WithDocs: true}),
			[]hrow{{store.FormatTime(t), 0, a}}, true)
	}
}
