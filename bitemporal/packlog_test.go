package bitemporal

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// TestPackLog: ops text is packed when that is smaller and no op holds a
// document inline, and unpacks to the same bytes; a packed row cut short
// or of an unknown form is an error.
func TestPackLog(t *testing.T) {
	long := []byte(`[{"op":"put","id":"session:replay-0123456789abcdef","hash":"00"},{"op":"put","id":"session:replay-0123456789abcdef:chunk","hash":"11"}]`)
	for _, c := range []struct {
		name   string
		in     []byte
		packed bool
	}{
		{"short", []byte(`[{"op":"evict","id":"e"}]`), false},
		{"long", long, true},
		{"inline document", []byte(strings.Replace(string(long), `"hash":"00"`, `"doc":{"xt/id":"session:replay-0123456789abcdef"}`, 1)), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			stored := packLog(c.in)
			b, isBlob := stored.([]byte)
			if isBlob != c.packed {
				t.Fatalf("packed %v, want %v", isBlob, c.packed)
			}
			if !isBlob {
				b = []byte(stored.(string))
			} else if len(b) >= len(c.in) {
				t.Fatalf("packed to %d bytes from %d", len(b), len(c.in))
			}
			got, err := unpackLog(b, nil)
			if err != nil || !bytes.Equal(got, c.in) {
				t.Fatalf("unpacked to %s (%v)", got, err)
			}
		})
	}
	b := packLog(long).([]byte)
	for name, bad := range map[string][]byte{"cut short": b[:len(b)/2], "unknown form": append([]byte{0x02}, b[1:]...), "empty": nil} {
		if got, err := unpackLog(bad, nil); err == nil {
			t.Errorf("%s: unpacked without error to %q", name, got)
		}
	}
}

// TestMigrationPackedTxLog opens a store whose tx log is text, as every
// release before migration 00010 wrote it (made with today's code, its
// rows unpacked and one match's document put back inline as releases
// before migration 00010 logged it, the schema version taken back), and checks
// the migration packs every row but the one with the inline document, the
// tx log reads as before (decoded and canonical), an evict still scrubs
// the inline document, and Down gives text rows again.
func TestMigrationPackedTxLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := func(n string) string { return "session:replay-0123456789abcdef-" + n }
	secret := store.Doc{store.IDKey: id("a"), "text": "secret-c0ffee"}
	for _, ops := range [][]store.Op{
		{store.Put(secret), store.Put(store.Doc{store.IDKey: id("b"), "n": 1.0})},
		{store.Match(id("a"), secret), store.Put(store.Doc{store.IDKey: id("c"), "n": 2.0})},
		{store.Put(store.Doc{store.IDKey: id("b"), "n": 3.0}), store.Delete(id("c"))},
	} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	canon, err := store.Canonical(secret)
	if err != nil {
		t.Fatal(err)
	}
	inline := fmt.Sprintf(`[{"op":"match","id":%q,"doc":%s},{"op":"put","id":%q,"hash":%q}]`, id("a"), canon, id("c"), "")
	var putHash string
	if err := st.w.GetContext(ctx, &putHash, "SELECT lower(hex(hash)) FROM docs WHERE ent = (SELECT id FROM ents WHERE eid = ?)", id("c")); err != nil {
		t.Fatal(err)
	}
	inline = strings.Replace(inline, `"hash":""`, `"hash":"`+putHash+`"`, 1)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		// Every row text: a row against another first (00017), while its
		// base is still packed.
		{"UPDATE txs SET ops = ctxs_log_base(ops, (SELECT b.ops FROM txs b WHERE b.tx_id = txs.base)) WHERE base IS NOT NULL", nil},
		{"UPDATE txs SET ops = ctxs_log(ops), base = NULL", nil},
		{"UPDATE txs SET ops = ? WHERE tx_id = 1", []any{inline}},
	} {
		if _, err := st.w.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	forms := func() string {
		t.Helper()
		var f []string
		if err := st.w.SelectContext(ctx, &f, "SELECT typeof(ops) FROM txs ORDER BY tx_id"); err != nil {
			t.Fatal(err)
		}
		return strings.Join(f, " ")
	}
	reads := func() string {
		t.Helper()
		log, err := st.TxLog(ctx, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		txs, docs, err := st.TxLogCanonical(ctx, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%+v\n%+v\n%s", log, txs, docs)
	}
	if f := forms(); f != "text text text" {
		t.Fatalf("the old form: %s", f)
	}
	before := reads()
	if !strings.Contains(before, "secret-c0ffee") || strings.Count(before, "Evicted:true") != 0 {
		t.Fatalf("reads before the migration:\n%s", before)
	}
	migrateDown(t, st.w.DB, 10, "DELETE FROM goose_db_version WHERE version_id >= 10")
	st.Close()
	if st, err = Open(ctx, path, Options{}); err != nil { // migrates
		t.Fatal(err)
	}
	defer st.Close()
	if f := forms(); f != "blob text blob" {
		t.Fatalf("after the migration: %s, want blob text blob", f)
	}
	if after := reads(); after != before {
		t.Fatalf("after the migration\n%s\nbefore\n%s", after, before)
	}
	if _, err := store.SubmitWait(ctx, st, []store.Op{store.Evict(id("a"))}); err != nil {
		t.Fatal(err)
	}
	log, err := st.TxLog(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := log[0].Ops[0]; !m.Evicted || m.Doc != nil {
		t.Fatalf("the inline match after the evict: %+v", m)
	}
	var left int
	if err := st.w.GetContext(ctx, &left, "SELECT count(*) FROM txs WHERE instr(ops, 'secret-c0ffee') > 0"); err != nil || left != 0 {
		t.Fatalf("%d rows still hold the evicted document (%v)", left, err)
	}
	migrateDown(t, st.w.DB, 9)
	if f := forms(); f != "text text text text" {
		t.Fatalf("after Down: %s, want text only", f)
	}
}

// TestTxLogDeltas: a tx's ops are stored against the row of an earlier tx
// (migration 00017) when that saves enough, and every read of the log,
// from any tx on, in this process or a new one, before and after
// migration 00017's Down, gives the same ops.
func TestTxLogDeltas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := "session:replay-d703a1a9-1b7b-4fb1-b512-c9738b1fe617-ctxstore-stream"
	head := func(n int) store.Doc { return store.Doc{store.IDKey: sess, "turn": float64(n)} }
	submit := func(ops ...store.Op) {
		t.Helper()
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	submit(store.Put(head(0)))
	for n := 1; n <= 30; n++ {
		if n == 12 {
			// An aborted tx is logged too, and may be a base.
			tx, err := st.Submit(ctx, []store.Op{store.Match(sess, head(99)), store.Put(head(-1))})
			var committed bool
			if err != nil || st.w.GetContext(ctx, &committed, "SELECT committed FROM txs WHERE tx_id = ?", tx.ID) != nil || committed {
				t.Fatalf("a match of a document never put: %v, committed %v", err, committed)
			}
		}
		if n == 20 {
			st.Close() // a new process starts without a base
			if st, err = Open(ctx, path, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		submit(store.Match(sess, head(n-1)), store.Put(head(n)), store.Put(store.Doc{store.IDKey: fmt.Sprintf("toolu_%02d-ffb71b97", n), "n": float64(n)}))
	}
	var deltas, bases int
	if err := st.w.GetContext(ctx, &deltas, "SELECT count(*) FROM txs WHERE base IS NOT NULL AND substr(ops, 1, 1) = x'02'"); err != nil {
		t.Fatal(err)
	}
	if err := st.w.GetContext(ctx, &bases, "SELECT count(*) FROM txs t WHERE base IS NOT NULL AND NOT EXISTS (SELECT 1 FROM txs b WHERE b.tx_id = t.base AND b.base IS NULL AND substr(b.ops, 1, 1) = x'01')"); err != nil {
		t.Fatal(err)
	}
	if deltas < 20 || bases != 0 {
		t.Fatalf("%d rows stored against another, %d against a row that is not a whole packed one", deltas, bases)
	}
	reads := func() []string {
		t.Helper()
		var out []string
		for after := int64(-1); after < 32; after += 3 {
			log, err := st.TxLog(ctx, after, 0)
			if err != nil {
				t.Fatalf("from tx %d: %v", after, err)
			}
			out = append(out, fmt.Sprintf("%+v", log))
		}
		return out
	}
	before := reads()
	for i, r := range before {
		if !strings.HasSuffix(before[0], strings.TrimPrefix(r, "[")) {
			t.Fatalf("the log from tx %d is not the end of the whole log:\n%s", 3*i-1, r)
		}
	}
	texts := func(q string) []string {
		t.Helper()
		var out []string
		if err := st.w.SelectContext(ctx, &out, q); err != nil {
			t.Fatal(err)
		}
		return out
	}
	whole := texts("SELECT ctxs_log_base(ops, (SELECT b.ops FROM txs b WHERE b.tx_id = txs.base)) FROM txs ORDER BY tx_id")
	migrateDown(t, st.w.DB, 16) // a store as 00016 reads it: no row against another
	var left int
	if err := st.w.GetContext(ctx, &left, "SELECT count(*) FROM txs WHERE typeof(ops) = 'blob' AND substr(ops, 1, 1) <> x'01'"); err != nil || left != 0 {
		t.Fatalf("after Down %d rows are not compressed alone (%v)", left, err)
	}
	if down := texts("SELECT ctxs_log(ops) FROM txs ORDER BY tx_id"); !slices.Equal(down, whole) || len(whole) != 32 {
		t.Fatalf("after Down the rows read\n%s\nbefore\n%s", down, whole)
	}
	st.Close()
	if st, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if after := reads(); !slices.Equal(after, before) {
		t.Fatalf("after Up again the log reads\n%s\nbefore\n%s", after, before)
	}
}
