package sqlcore

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// TestKnown: the zero value knows of no transaction, and the id only
// grows, whatever order concurrent notes come in.
func TestKnown(t *testing.T) {
	var k Known
	if got := k.Load(); got != -1 {
		t.Fatalf("zero Known: %d, want -1", got)
	}
	k.Note(0)
	if got := k.Load(); got != 0 {
		t.Fatalf("after Note(0): %d", got)
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); k.Note(int64(99 - i)) }()
	}
	wg.Wait()
	k.Note(5)
	if got := k.Load(); got != 99 {
		t.Fatalf("after notes up to 99 and a late 5: %d, want 99", got)
	}
}

// TestHistoryWhere: the bounds of a history read, clipped by the basis
// (the conformance suite checks what they select on both backends).
func TestHistoryWhere(t *testing.T) {
	tx := int64(3)
	where, args := HistoryWhere(store.HistoryOptions{Order: store.Desc, StartTxID: &tx}, 1000, 7)
	if where != " AND p.vt <= ? AND p.tx_id <= ?" || len(args) != 2 || args[0] != int64(1000) || args[1] != int64(3) {
		t.Fatalf("desc from tx 3 at (1000, 7): %q %v", where, args)
	}
	where, args = HistoryWhere(store.HistoryOptions{Order: store.Asc, EndTxID: &tx}, 1000, 2)
	if where != " AND p.vt < ? AND p.tx_id < ?" || args[0] != int64(1001) || args[1] != int64(3) {
		t.Fatalf("asc to tx 3 at (1000, 2): %q %v", where, args)
	}
}

// TestRangePoints: a write over [15, 30) on points at 30 (two txs), 20 and
// 10 puts the version at 15 and 20, and restores at 30 the winner there.
func TestRangePoints(t *testing.T) {
	rows := []Point{{VT: 30, TxID: 2}, {VT: 30, TxID: 1}, {VT: 20, TxID: 1}, {VT: 10, TxID: 0}}
	vts, restore, err := RangePoints(15, 30, func(fn func(Point) bool) error {
		winner := Winners()
		for _, r := range rows {
			if winner(r) && !fn(r) {
				break
			}
		}
		return nil
	})
	if err != nil || fmt.Sprint(vts) != "[15 20]" || restore == nil || restore.VT != 30 || restore.TxID != 2 {
		t.Fatalf("RangePoints: %v %+v %v", vts, restore, err)
	}
	vts, restore, _ = RangePoints(15, 30, func(fn func(Point) bool) error { return nil })
	if fmt.Sprint(vts) != "[15]" || restore != nil {
		t.Fatalf("RangePoints of an empty history: %v %+v", vts, restore)
	}
}
