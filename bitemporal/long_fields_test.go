package bitemporal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/store"
)

// A long string is indexed by its prefix only (and not at all
// in a field the index does not hold, migration 00007), and a match is
// logged by its document's hash, so neither copies a document's large text
// a second (or third) time.
func TestLongStringsAndMatchesAreNotCopied(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	long := strings.Repeat("ü", 5000) + "end"
	doc := store.Doc{store.IDKey: "f", "content": long, "nickname": long, "path": "/a"}
	for _, ops := range [][]store.Op{{store.Put(doc)}, {store.Match("f", doc), store.Put(store.Doc{store.IDKey: "g", "n": 1.0})}} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	var maxField, maxOps int
	if err := st.w.GetContext(ctx, &maxField, "SELECT max(length(CAST(value AS BLOB))) FROM fields WHERE kind IN ('s', 'S')"); err != nil {
		t.Fatal(err)
	}
	if err := st.w.GetContext(ctx, &maxOps, "SELECT max(length(ops)) FROM txs"); err != nil {
		t.Fatal(err)
	}
	if maxField > longStringBytes || maxOps > 1000 {
		t.Fatalf("largest field value %d bytes, largest logged ops %d bytes: the long string was copied", maxField, maxOps)
	}
	var prefix string
	if err := st.w.GetContext(ctx, &prefix, "SELECT value FROM fields WHERE field = 'nickname' AND kind = 'S'"); err != nil {
		t.Fatal(err)
	}
	if prefix != strings.Repeat("ü", longPrefixChars) {
		t.Fatalf("indexed prefix %q", prefix)
	}
	var contentRows int
	if err := st.w.GetContext(ctx, &contentRows, "SELECT count(*) FROM fields WHERE field IN ('content', 'path')"); err != nil || contentRows != 0 {
		t.Fatalf("%d field-index rows for fields the index does not hold (%v)", contentRows, err)
	}
	for _, field := range []string{"content", "nickname"} {
		got, err := st.Query(ctx, store.Query{Where: []store.Pred{store.Where(field, long)}})
		if err != nil || len(got) != 1 {
			t.Fatalf("query on the long value of %s: %v, %v", field, got, err)
		}
	}
	log, err := st.TxLog(ctx, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m := log[1].Ops[0]; m.Kind != store.OpMatch || m.Evicted || m.Doc["content"] != long {
		t.Fatalf("logged match: %+v", m)
	}
}

// TestMigrationLongFields opens a store whose field index holds long
// strings whole, as every release before migration 00004 wrote it (made
// here by writing with today's code, then putting the index rows back in
// the old form and the schema version back to 3, before 00004 and 00005), and checks the migration
// shrinks them and every query still answers. The fields are ones the
// index holds since 00007 (nickname, name_keys), which deletes the others'.
func TestMigrationLongFields(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("日本", 1500)
	docs := []store.Doc{
		{store.IDKey: "a", "nickname": long + "a", "name_keys": []any{"x", long + "p"}},
		{store.IDKey: "b", "nickname": long + "b"},
	}
	for _, d := range docs {
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(d)}); err != nil {
			t.Fatal(err)
		}
	}
	// Back to the old form: every string whole, kind 's'; version 3.
	migrateDown(t, st.w.DB, 10,
		"DELETE FROM fields WHERE kind = 'S'",
		`INSERT INTO fields (doc, field, kind, value)
		 SELECT d.id, t.key, 's', coalesce(e.value, t.value) FROM docs d, json_each(ctxs_doc(d.doc)) t
		 LEFT JOIN json_each(CASE WHEN t.type = 'array' THEN t.value END) e
		 WHERE (t.type = 'text' OR e.type = 'text') AND length(CAST(coalesce(e.value, t.value) AS BLOB)) > 2048`,
		"ALTER TABLE points ADD COLUMN hash TEXT", // before 00008
		"UPDATE points SET hash = (SELECT d.hash FROM docs d WHERE d.id = points.doc)",
		"DELETE FROM goose_db_version WHERE version_id >= 4",
		"DROP TRIGGER search_docs_turn_ai",
		"DROP TABLE indexed_fields",
	)
	var whole int
	if err := st.w.GetContext(ctx, &whole, "SELECT count(*) FROM fields WHERE kind = 's' AND length(value) > 2000"); err != nil || whole != 3 {
		t.Fatalf("old-form rows: %d, %v", whole, err)
	}
	st.Close()
	st, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var left, short int
	if err := st.w.GetContext(ctx, &left, "SELECT count(*) FROM fields WHERE length(CAST(value AS BLOB)) > 2048"); err != nil {
		t.Fatal(err)
	}
	if err := st.w.GetContext(ctx, &short, "SELECT count(*) FROM fields WHERE kind = 'S' AND value = ?", strings.Repeat("日本", 32)); err != nil {
		t.Fatal(err)
	}
	if left != 0 || short != 3 {
		t.Fatalf("after the migration: %d long values left, %d prefix rows (want 0, 3)", left, short)
	}
	for _, c := range []struct {
		p    store.Pred
		want string
	}{
		{store.Where("nickname", long+"b"), "b"},
		{store.Where("name_keys", long+"p"), "a"},
		{store.Pred{Field: "nickname", Op: store.Lt, Value: long + "b"}, "a"},
	} {
		got, err := st.Query(ctx, store.Query{Where: []store.Pred{c.p}})
		if err != nil || len(got) != 1 || got[0][store.IDKey] != c.want {
			t.Errorf("query %s %s after the migration: %v, %v", c.p.Field, c.p.Op, got, err)
		}
	}
}

// TestMatchByHashAfterEvict: a match logged by hash whose entity was
// evicted since reads as evicted in the tx log, even when the same content
// is put again later (its hash then resolves, but the points the match saw
// are gone): a version log replays the match's tx without it.
func TestMatchByHashAfterEvict(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc := store.Doc{store.IDKey: "f", "n": 1.0}
	for _, ops := range [][]store.Op{{store.Put(doc)}, {store.Match("f", doc)}, {store.Evict("f")}, {store.Put(doc)}} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	log, err := st.TxLog(ctx, -1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 4 {
		t.Fatalf("%d txs logged", len(log))
	}
	if m := log[1].Ops[0]; m.Kind != store.OpMatch || !m.Evicted || m.Doc != nil {
		t.Fatalf("the match after the evict: %+v", m)
	}
	if p := log[3].Ops[0]; p.Kind != store.OpPut || p.Evicted || p.Doc == nil {
		t.Fatalf("the put after the evict: %+v", p)
	}
}
