package storetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// hrow is an expected history row: its valid time (see inst), the index
// among the case's receipts of the tx that wrote the point, and its
// document (nil: a tombstone).
type hrow struct {
	vt  string
	tx  int
	doc store.Doc
}

// txIndex maps the tx id of a row to its index among txs, or -1.
func txIndex(txs []store.Tx, id int64) int {
	for i, tx := range txs {
		if tx.ID == id {
			return i
		}
	}
	return -1
}

func showTxRef(txs []store.Tx, id int64) string {
	if i := txIndex(txs, id); i >= 0 {
		return fmt.Sprintf("tx#%d", i)
	}
	return fmt.Sprintf("foreign-tx(%d)", id)
}

// showRows renders history rows, one per line, with tx ids as indexes of
// txs and documents in canonical JSON (so equal renderings mean SameDoc).
func showRows(txs []store.Tx, rows []store.HistoryEntry, withDocs bool) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\n\t%s %s ", store.FormatTime(r.ValidTime), showTxRef(txs, r.TxID))
		switch {
		case r.Deleted:
			b.WriteString("deleted")
		case withDocs:
			b.WriteString(showDoc(r.Doc))
		default:
			b.WriteString("doc")
		}
	}
	if len(rows) == 0 {
		b.WriteString(" (none)")
	}
	return b.String()
}

func showWant(want []hrow, withDocs bool) string {
	var b strings.Builder
	for _, w := range want {
		fmt.Fprintf(&b, "\n\t%s tx#%d ", store.FormatTime(inst(w.vt)), w.tx)
		switch {
		case w.doc == nil:
			b.WriteString("deleted")
		case withDocs:
			b.WriteString(showDoc(w.doc))
		default:
			b.WriteString("doc")
		}
	}
	if len(want) == 0 {
		b.WriteString(" (none)")
	}
	return b.String()
}

// checkRows compares history rows with want (valid time, tx, document or
// tombstone) and checks the invariants every row must meet.
func (e *env) checkRows(what string, txs []store.Tx, got []store.HistoryEntry, want []hrow, withDocs bool) {
	e.t.Helper()
	if g, w := showRows(txs, got, withDocs), showWant(want, withDocs); g != w {
		e.t.Errorf("%s:\ngot:%s\nwant:%s", what, g, w)
	}
	e.checkRowInvariants(what, txs, got, withDocs)
}

// checkRowInvariants checks what holds of any history: times in UTC at
// millisecond precision, a row's tx time is that of the tx it names,
// tombstones have no hash and no document, documents only with WithDocs,
// and two rows share a content hash exactly when their documents are the
// same.
func (e *env) checkRowInvariants(what string, txs []store.Tx, rows []store.HistoryEntry, withDocs bool) {
	e.t.Helper()
	for i, r := range rows {
		if err := checkTime(r.ValidTime); err != nil {
			e.t.Errorf("%s: row %d valid time: %v", what, i, err)
		}
		if err := checkTime(r.TxTime); err != nil {
			e.t.Errorf("%s: row %d tx time: %v", what, i, err)
		}
		if k := txIndex(txs, r.TxID); k >= 0 && !r.TxTime.Equal(txs[k].Time) {
			e.t.Errorf("%s: row %d names tx#%d but has tx time %s, the tx's is %s", what, i, k,
				store.FormatTime(r.TxTime), store.FormatTime(txs[k].Time))
		}
		if r.Deleted != (r.ContentHash == "") {
			e.t.Errorf("%s: row %d: deleted=%v but content hash %q", what, i, r.Deleted, r.ContentHash)
		}
		if r.Deleted && r.Doc != nil {
			e.t.Errorf("%s: row %d is a tombstone with a document", what, i)
		}
		if !withDocs && r.Doc != nil {
			e.t.Errorf("%s: row %d has a document though WithDocs was not asked", what, i)
		}
		if withDocs && !r.Deleted && r.Doc == nil {
			e.t.Errorf("%s: row %d has no document though WithDocs was asked", what, i)
		}
		if !withDocs || r.Deleted {
			continue
		}
		for j := range i {
			p := rows[j]
			if p.Deleted {
				continue
			}
			if same := store.SameDoc(p.Doc, r.Doc); same != (p.ContentHash == r.ContentHash) {
				e.t.Errorf("%s: rows %d and %d: same document %v but same content hash %v", what, j, i, same, !same)
			}
		}
	}
}

// checkTime checks that t is UTC at millisecond precision.
func checkTime(t time.Time) error {
	if t.Location() != time.UTC {
		return fmt.Errorf("%s is not in UTC", t)
	}
	if !t.Equal(t.Truncate(time.Millisecond)) {
		return fmt.Errorf("%s has sub-millisecond precision", t.Format(time.RFC3339Nano))
	}
	return nil
}

// checkEntityTx compares an EntityTx with the expected point: valid time,
// tx index among txs and tombstone flag.
func (e *env) checkEntityTx(id string, b store.Basis, txs []store.Tx, vt string, tx int, deleted bool) store.EntityTx {
	e.t.Helper()
	et, err := e.s.EntityTx(e.ctx, id, b)
	if err != nil {
		e.t.Errorf("EntityTx(%q, %s): %v", id, showBasis(b), err)
		return et
	}
	got := fmt.Sprintf("%s %s deleted=%v", store.FormatTime(et.ValidTime), showTxRef(txs, et.TxID), et.Deleted)
	want := fmt.Sprintf("%s tx#%d deleted=%v", store.FormatTime(inst(vt)), tx, deleted)
	if got != want {
		e.t.Errorf("EntityTx(%q, %s) = %s, want %s", id, showBasis(b), got, want)
	}
	if et.ID != id {
		e.t.Errorf("EntityTx(%q).ID = %q", id, et.ID)
	}
	if k := txIndex(txs, et.TxID); k >= 0 && !et.TxTime.Equal(txs[k].Time) {
		e.t.Errorf("EntityTx(%q, %s): tx time %s, tx#%d's is %s", id, showBasis(b), store.FormatTime(et.TxTime), k, store.FormatTime(txs[k].Time))
	}
	for _, t := range []time.Time{et.ValidTime, et.TxTime} {
		if err := checkTime(t); err != nil {
			e.t.Errorf("EntityTx(%q): %v", id, err)
		}
	}
	if !deleted && et.ContentHash == "" {
		e.t.Errorf("EntityTx(%q, %s): empty content hash for a document", id, showBasis(b))
	}
	return et
}

// wantNoEntityTx checks that EntityTx gives ErrNotFound.
func (e *env) wantNoEntityTx(id string, b store.Basis) {
	e.t.Helper()
	et, err := e.s.EntityTx(e.ctx, id, b)
	if err == nil {
		e.t.Errorf("EntityTx(%q, %s) = %+v, want ErrNotFound", id, showBasis(b), et)
		return
	}
	e.wantErr(fmt.Sprintf("EntityTx(%q, %s)", id, showBasis(b)), err, store.ErrNotFound)
}
