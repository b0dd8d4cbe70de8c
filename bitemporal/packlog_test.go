package bitemporal

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
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
			got, err := unpackLog(b)
			if err != nil || !bytes.Equal(got, c.in) {
				t.Fatalf("unpacked to %s (%v)", got, err)
			}
		})
	}
	b := packLog(long).([]byte)
	for name, bad := range map[string][]byte{"cut short": b[:len(b)/2], "unknown form": append([]byte{0x02}, b[1:]...), "empty": nil} {
		if got, err := unpackLog(bad); err == nil {
			t.Errorf("%s: unpacked without error to %q", name, got)
		}
	}
}

// TestMigrationPackedTxLog opens a store whose tx log is text, as every
// release before migration 00010 wrote it (made with today's code, its
// rows unpacked and one match's document put back inline as releases
// before issue 18 logged it, the schema version taken back), and checks
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
		{"UPDATE txs SET ops = ctxs_log(ops)", nil},
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
