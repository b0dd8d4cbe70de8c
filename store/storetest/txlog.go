package storetest

import (
	"fmt"

	"github.com/ctxstore/ctxstore/store"
)

func txLogCases() []testCase {
	return []testCase{
		{"test-tx-log", testTxLog},
	}
}

// sameOps reports how got differs from the normalized form of want, or "".
// Documents compare with SameDoc, times as instants.
func sameOps(got, want []store.Op) string {
	norm, err := store.Normalize(want)
	if err != nil {
		return "expected ops are invalid: " + err.Error()
	}
	if len(got) != len(norm) {
		return fmt.Sprintf("%d ops, want %d", len(got), len(norm))
	}
	sameTime := func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	fmtTime := func(op store.Op) (*string, *string) {
		var f, t *string
		if op.ValidFrom != nil {
			f = ptr(store.FormatTime(*op.ValidFrom))
		}
		if op.ValidTo != nil {
			t = ptr(store.FormatTime(*op.ValidTo))
		}
		return f, t
	}
	for i := range got {
		g, w := got[i], norm[i]
		gf, gt := fmtTime(g)
		wf, wt := fmtTime(w)
		if g.Kind != w.Kind || g.ID != w.ID || !store.SameDoc(g.Doc, w.Doc) || !sameTime(gf, wf) || !sameTime(gt, wt) {
			return fmt.Sprintf("op %d is %s, want %s", i+1, showOp(g), showOp(w))
		}
	}
	return ""
}

// testTxLog ports api_test.clj test-tx-log: the log lists committed
// transactions after a tx id, ascending, with their ops as submitted
// (valid times as given), and skips aborted ones.
func testTxLog(e *env) {
	ivan := e.doc("ivan", "name", "Ivan")
	petr := e.doc("petr", "name", "Petr", "tags", []any{"a", "b"}, "n", 1.5)
	subs := [][]store.Op{
		{store.PutAt(ivan, inst("2019-03-04T05:06:07.089Z"))},
		{store.PutRange(petr, inst("2019-01-01"), inst("2019-12-31T23:59:59.999Z")),
			store.DeleteRange(e.id("ivan"), inst("2019-05-01T00:00:00.001Z"), nil),
			{Kind: store.OpMatch, ID: e.id("petr"), Doc: petr, ValidFrom: instPtr("2019-02-01")}},
		{store.Match(e.id("ivan"), e.doc("ivan", "name", "Ivan2")), store.PutAt(e.doc("ivan", "name", "Ivan3"), inst("2019-01-01"))},
		{store.Match(e.id("nobody"), nil), store.Put(e.doc("other")),
			store.DeleteRange(e.id("petr"), inst("2019-06-01"), instPtr("2019-07-01")), store.Delete(e.id("ivan"))},
	}
	aborted := 2
	var txs []store.Tx
	for i, ops := range subs {
		if i == aborted {
			txs = append(txs, e.submitAborting(ops...))
		} else {
			txs = append(txs, e.submit(ops...))
		}
	}
	e.increasing(txs...)
	after := txs[0].ID - 1

	log, err := e.s.TxLog(e.ctx, after, 0)
	if err != nil {
		e.t.Fatalf("TxLog(%d): %v", after, err)
	}
	var ours []store.LoggedTx
	for i, l := range log {
		if l.ID <= after {
			e.t.Errorf("TxLog(%d) returned tx %d", after, l.ID)
		}
		if i > 0 && l.ID <= log[i-1].ID {
			e.t.Errorf("TxLog not ascending: %d after %d", l.ID, log[i-1].ID)
		}
		if txIndex(txs, l.ID) >= 0 {
			ours = append(ours, l)
		}
	}
	var want []int
	for i := range subs {
		if i != aborted {
			want = append(want, i)
		}
	}
	if len(ours) != len(want) {
		e.t.Fatalf("TxLog holds %d of our txs, want %d (all but the aborted)", len(ours), len(want))
	}
	for k, i := range want {
		l := ours[k]
		if l.ID != txs[i].ID || !l.Time.Equal(txs[i].Time) {
			e.t.Errorf("logged tx %d: id %d time %s, want the receipt's %d %s", k, l.ID, store.FormatTime(l.Time), txs[i].ID, store.FormatTime(txs[i].Time))
		}
		if err := checkTime(l.Time); err != nil {
			e.t.Errorf("logged tx %d: %v", l.ID, err)
		}
		if diff := sameOps(l.Ops, subs[i]); diff != "" {
			e.t.Errorf("logged tx %d (tx#%d): %s", l.ID, i, diff)
		}
	}

	// Limit: the first n of the same log.
	for _, n := range []int{1, 2} {
		got, err := e.s.TxLog(e.ctx, after, n)
		if err != nil {
			e.t.Fatalf("TxLog(%d, %d): %v", after, n, err)
		}
		if len(got) != n {
			e.t.Errorf("TxLog(%d, %d) returned %d txs", after, n, len(got))
			continue
		}
		for k := range got {
			if got[k].ID != log[k].ID {
				e.t.Errorf("TxLog(%d, %d)[%d] is tx %d, want %d", after, n, k, got[k].ID, log[k].ID)
			}
		}
	}
	// After: strictly after, so the log from a tx leaves it out.
	got, err := e.s.TxLog(e.ctx, txs[0].ID, 0)
	if err != nil {
		e.t.Fatalf("TxLog(%d): %v", txs[0].ID, err)
	}
	for _, l := range got {
		if l.ID <= txs[0].ID {
			e.t.Errorf("TxLog(%d) returned tx %d", txs[0].ID, l.ID)
		}
	}
	if len(got) == 0 || (got[0].ID != txs[1].ID && txIndex(txs, got[0].ID) >= 0) {
		e.t.Errorf("TxLog(%d) does not start at the next committed tx %d", txs[0].ID, txs[1].ID)
	}
	last := txs[len(txs)-1].ID
	got, err = e.s.TxLog(e.ctx, last, 0)
	if err != nil {
		e.t.Fatalf("TxLog(%d): %v", last, err)
	}
	for _, l := range got {
		if txIndex(txs, l.ID) >= 0 {
			e.t.Errorf("TxLog(%d) returned our tx %d", last, l.ID)
		}
	}
}
