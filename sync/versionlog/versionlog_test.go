package versionlog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/sync/versionlog"
)

// TestRoundTripSQLite exports a store with every kind of op, imports the
// log into an empty store and compares every entity's history at every
// basis; tx times are kept exactly.
func TestRoundTripSQLite(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	ids := scenarioIDs("", 6)
	populate(t, src, ids, 1, 150)
	log := exportBytes(t, src, -1)
	if again := exportBytes(t, src, -1); !bytes.Equal(log, again) {
		t.Fatal("two exports of the same store differ")
	}
	dst := openSQLite(t, "dst.db")
	m, sum := importMapped(t, dst, log)
	srcTxs := committed(t, src, -1)
	if len(m) != len(srcTxs) || sum.Applied != int64(len(srcTxs)) || sum.KeptTxTimes != sum.Applied {
		t.Fatalf("applied %d (%d mapped, %d with their tx time) of %d source txs", sum.Applied, len(m), sum.KeptTxTimes, len(srcTxs))
	}
	if sum.Evicted == 0 {
		t.Error("the scenario evicted nothing: it does not test evicted ops")
	}
	sameHistories(t, src, dst, ids, m, true)

	// The cursor's history records the same mapping.
	maps, err := versionlog.Mappings(ctx, dst, sum.Source.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != len(m) {
		t.Fatalf("cursor history has %d versions, %d txs were applied", len(maps), len(m))
	}
	for _, mp := range maps {
		if m[mp.Source.ID] != mp.Target.ID || !mp.Target.Time.Equal(mp.Source.Time) {
			t.Errorf("cursor history maps source tx %d to %d at %v; the import applied it as %d", mp.Source.ID, mp.Target.ID, mp.Target.Time, m[mp.Source.ID])
		}
	}

	// Importing the same log again changes nothing.
	before := txCount(t, dst)
	_, sum2 := importMapped(t, dst, log)
	if sum2.Applied != 0 || sum2.Skipped != int64(len(srcTxs)) || txCount(t, dst) != before {
		t.Errorf("second import applied %d, skipped %d; target went from %d to %d txs", sum2.Applied, sum2.Skipped, before, txCount(t, dst))
	}

	// The target's own export holds the same ops as the source's, and no
	// cursor.
	back := exportBytes(t, dst, -1)
	if bytes.Contains(back, []byte(versionlog.ReservedPrefix)) {
		t.Error("an export holds a reserved cursor entity")
	}
	if a, b := opsOnly(t, log), opsOnly(t, back); a != b {
		t.Errorf("the re-export's ops differ from the original's:\n%s\n---\n%s", a, b)
	}
}

// opsOnly returns a log's doc and tx lines with the tx ids cut out (the
// target numbers its transactions itself).
func opsOnly(t *testing.T, log []byte) string {
	t.Helper()
	rd, err := versionlog.NewReader(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for {
		tx, err := rd.Next()
		if err != nil {
			break
		}
		for _, op := range tx.Ops {
			if op.Evicted {
				continue // the target never had it
			}
			b.WriteString(string(op.Kind) + " " + op.ID + " " + op.DocHash + " " + store.FormatTime(op.ValidFrom))
			if op.ValidTo != nil {
				b.WriteString(" " + store.FormatTime(*op.ValidTo))
			}
			b.WriteString("\n")
		}
		b.WriteString(store.FormatTime(tx.Time) + "\n")
	}
	return b.String()
}

// TestExportGzipDeterministic: a compressed export is byte-identical too,
// and reads back.
func TestExportGzipDeterministic(t *testing.T) {
	src := openSQLite(t, "src.db")
	populate(t, src, scenarioIDs("", 4), 2, 40)
	gz := func() []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := versionlog.Export(context.Background(), src, zw, versionlog.ExportOptions{After: -1}); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := gz(), gz()
	if !bytes.Equal(a, b) {
		t.Fatal("two compressed exports differ")
	}
	h, tr, err := versionlog.Verify(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if h.After != -1 || tr.Txs == 0 || tr.Lines < tr.Txs+1 {
		t.Errorf("header %+v trailer %+v", h, tr)
	}
}

// TestExportCanonicalSameBytes: exporting SQLite through its canonical tx
// log (documents as stored) gives the same bytes as through store.TxLog
// (documents decoded and canonicalized again).
func TestExportCanonicalSameBytes(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	if _, ok := any(src).(store.CanonicalTxLogger); !ok {
		t.Fatal("bitemporal.Store does not implement store.CanonicalTxLogger")
	}
	populate(t, src, scenarioIDs("", 5), 3, 80)
	odd := store.Doc{"xt/id": "odd", "f": json.Number("1.5e300"), "i": json.Number("-0"), "big": json.Number("1e21"),
		"s": "\u2028 \u00e9 \x00 ok", "o": map[string]any{"z": []any{}, "a": map[string]any{}}}
	if _, err := store.SubmitWait(ctx, src, []store.Op{store.Match("odd", nil), store.Put(odd)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, src, []store.Op{store.Match("odd", odd), store.Delete("odd")}); err != nil {
		t.Fatal(err)
	}
	canonical := exportBytes(t, src, -1)
	plain := exportBytes(t, struct{ store.Store }{src}, -1)
	if !bytes.Equal(canonical, plain) {
		t.Fatalf("exports differ:\ncanonical:\n%s\nplain:\n%s", canonical, plain)
	}
	if !bytes.Contains(canonical, []byte(`"evicted":true`)) {
		t.Error("the scenario evicts nothing: the test does not cover evicted ops")
	}
}

// TestEvictedContentNeverExported: neither an evicted put's document nor
// a match that expected it reaches the log, and the import's result is the
// source's.
func TestEvictedContentNeverExported(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t, "src.db")
	secret := store.Doc{"xt/id": "x", "secret": "S3CR3T-VALUE"}
	steps := [][]store.Op{
		{store.Put(secret)},
		{store.Match("x", secret), store.Put(store.Doc{"xt/id": "y", "v": "ok"})},
		{store.DeleteRange("x", base, nil)},
		{store.Evict("x")},
		{store.Put(store.Doc{"xt/id": "x", "after": "evict"})},
	}
	for _, ops := range steps {
		if _, err := store.SubmitWait(ctx, src, ops); err != nil {
			t.Fatal(err)
		}
	}
	log := exportBytes(t, src, -1)
	if bytes.Contains(log, []byte("S3CR3T")) {
		t.Fatalf("evicted content in the export:\n%s", log)
	}
	if n := bytes.Count(log, []byte(`"evicted":true`)); n != 2 {
		t.Errorf("%d ops marked evicted, want 2 (the put and the match)\n%s", n, log)
	}
	dst := openSQLite(t, "dst.db")
	m, _ := importMapped(t, dst, log)
	sameHistories(t, src, dst, []string{"x", "y"}, m, true)
}

// TestDocWindow: with a tiny window, documents that fall out of it are
// written again and the log still reads back exactly.
func TestDocWindow(t *testing.T) {
	src := openSQLite(t, "src.db")
	ids := scenarioIDs("", 5)
	populate(t, src, ids, 4, 80)
	var small, large bytes.Buffer
	ssum, err := versionlog.Export(context.Background(), src, &small, versionlog.ExportOptions{After: -1, DocWindow: 1})
	if err != nil {
		t.Fatal(err)
	}
	lsum, err := versionlog.Export(context.Background(), src, &large, versionlog.ExportOptions{After: -1})
	if err != nil {
		t.Fatal(err)
	}
	if ssum.Docs <= lsum.Docs {
		t.Errorf("window 1 wrote %d doc lines, the default window %d: nothing was written again", ssum.Docs, lsum.Docs)
	}
	dst := openSQLite(t, "dst.db")
	m, _ := importMapped(t, dst, small.Bytes())
	sameHistories(t, src, dst, ids, m, true)
}

// TestDiverged: a source match that fails on a target changed behind the
// sync's back aborts that transaction with an error naming it; the cursor
// stays before it.
func TestDiverged(t *testing.T) {
	ctx := context.Background()
	src, dst := openSQLite(t, "src.db"), openSQLite(t, "dst.db")
	a := store.Doc{"xt/id": "a", "v": "1"}
	tx0, err := store.SubmitWait(ctx, src, []store.Op{store.Put(a)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	// A correction on the target, from the source's first version on.
	if _, err := store.SubmitWait(ctx, dst, []store.Op{store.PutAt(store.Doc{"xt/id": "a", "v": "changed on the target"}, tx0.Time)}); err != nil {
		t.Fatal(err)
	}
	tx, err := store.SubmitWait(ctx, src, []store.Op{store.Match("a", a), store.Put(store.Doc{"xt/id": "b"})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = versionlog.Sync(ctx, src, dst, versionlog.SyncOptions{})
	var le *versionlog.LineError
	if !errors.Is(err, versionlog.ErrDiverged) || !errors.As(err, &le) || le.TxID != tx.ID {
		t.Fatalf("sync after divergence: %v, want ErrDiverged naming source tx %d", err, tx.ID)
	}
	if !strings.Contains(err.Error(), "match op") {
		t.Errorf("error %q does not say a match failed", err)
	}
	st, _ := src.Status(ctx)
	cur, err := versionlog.ReadCursor(ctx, dst, versionlog.SourceOf(st, "").ID)
	if err != nil || cur == nil || cur.TxID != 0 {
		t.Errorf("cursor %+v (%v), want it still at source tx 0", cur, err)
	}
	if _, err := dst.Entity(ctx, "b", store.Basis{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("b: %v, want not found (the aborted tx wrote nothing)", err)
	}
}
