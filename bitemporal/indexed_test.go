package bitemporal

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
)

// indexedDocs are documents with every kind of top-level value the field
// index knows: short and long strings, integers and reals, booleans,
// arrays of mixed elements, objects and nulls (neither indexed).
func indexedDocs() []store.Doc {
	long := strings.Repeat("é", 1500)
	return []store.Doc{
		{store.IDKey: "a", "type": "t", "session_id": "s1", "call": 1.0, "tokens": 10.0, "ok": true, "refs": []any{"b", "c", 2.0, false, nil, map[string]any{"x": "b"}}, "meta": map[string]any{"k": "b"}},
		{store.IDKey: "b", "type": "t", "session_id": "s1", "call": 2.5, "tokens": 7.0, "ok": false, "content": long + "b", "nickname": long + "n", "gone": nil},
		{store.IDKey: "c", "type": "u", "session_id": "s2", "tokens": -3.0, "refs": "a", "name_keys": []any{"k1", "k2"}, "content": "short"},
	}
}

// indexRows lists the field table, one line a row, sorted.
func indexRows(t *testing.T, s *Store) []string {
	t.Helper()
	var rows []struct {
		Doc   int64  `db:"doc"`
		Field string `db:"field"`
		Kind  string `db:"kind"`
		Value any    `db:"value"`
	}
	if err := s.w.SelectContext(context.Background(), &rows, "SELECT doc, field, kind, value FROM fields"); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		if b, ok := r.Value.([]byte); ok {
			r.Value = string(b)
		}
		out = append(out, fmt.Sprintf("%d %s %s %T %v", r.Doc, r.Field, r.Kind, r.Value, r.Value))
	}
	sort.Strings(out)
	return out
}

// migrationQueries are queries on indexed fields, on others, and on both.
func migrationQueries() []store.Query {
	long := strings.Repeat("é", 1500)
	w := store.Where
	return []store.Query{
		{Where: []store.Pred{w("type", "t")}},
		{Where: []store.Pred{w("refs", "b")}},
		{Where: []store.Pred{w("refs", 2.0)}},
		{Where: []store.Pred{w("refs", false)}},
		{Where: []store.Pred{w("ok", true)}},
		{Where: []store.Pred{w("ok", 1.0)}},
		{Where: []store.Pred{{Field: "tokens", Op: store.Gt, Value: 0.0}}},
		{Where: []store.Pred{{Field: "tokens", Op: store.Lte, Value: 7}}},
		{Where: []store.Pred{w("type", "t"), {Field: "tokens", Op: store.Lt, Value: 8.0}}},
		{Where: []store.Pred{{Field: "refs", Op: store.In, Values: []any{"a", 2.0, "zz"}}}},
		{Where: []store.Pred{{Field: "content", Op: store.Gt, Value: "s"}}},
		{Where: []store.Pred{w("content", long+"b")}},
		{Where: []store.Pred{w("nickname", long+"n")}},
		{Where: []store.Pred{{Field: "gone", Op: store.Exists}}},
		{Where: []store.Pred{{Field: "meta", Op: store.Exists}}},
		{Where: []store.Pred{{Field: "refs", Op: store.Exists}}},
		{Where: []store.Pred{{Field: "xt/id", Op: store.Exists}}},
		{Where: []store.Pred{w("meta", "b")}},
		{Where: []store.Pred{{Field: "refs", Op: store.RefBy, Value: "a"}}},
		{Where: []store.Pred{{Field: "name_keys", Op: store.RefBy, Value: "c"}}},
		{Where: []store.Pred{w("session_id", "s1"), w("call", 2.5)}},
		{Where: []store.Pred{{Field: "call", Op: store.Gte, Value: 1}}, OrderBy: []store.Order{{Field: "tokens"}}},
	}
}

func runQueries(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	for i, q := range migrationQueries() {
		docs, err := s.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		var ids []string
		for _, d := range docs {
			ids = append(ids, d[store.IDKey].(string))
		}
		out = append(out, fmt.Sprintf("%d: %v", i, ids))
	}
	return out
}

// TestIndexedFieldsAnswerAsEveryField: a store indexing only its indexed
// fields and one indexing every field (as before migration 00007) answer
// the same queries alike, and only the first leaves out the other rows.
func TestIndexedFieldsAnswerAsEveryField(t *testing.T) {
	ctx := context.Background()
	var answers [2][]string
	var rows [2]int
	for i, every := range []bool{false, true} {
		st, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if every {
			if err := IndexEveryField(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range indexedDocs() {
			if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(d)}); err != nil {
				t.Fatal(err)
			}
		}
		answers[i] = runQueries(t, st)
		rows[i] = len(indexRows(t, st))
		for _, r := range indexRows(t, st) {
			if f := strings.Fields(r)[1]; !every && !st.indexed.has(f) {
				t.Errorf("a row for field %s, which the index does not hold: %s", f, r)
			}
		}
		st.Close()
	}
	if !reflect.DeepEqual(answers[0], answers[1]) {
		t.Fatalf("indexed fields answer\n%s\nevery field answers\n%s", strings.Join(answers[0], "\n"), strings.Join(answers[1], "\n"))
	}
	if rows[0] >= rows[1] || rows[0] == 0 {
		t.Fatalf("%d rows with the indexed fields, %d with every field", rows[0], rows[1])
	}
	for _, want := range []string{"0: [a b]", "1: [a]", "6: [a b]", "11: [b]", "14: []", "17: []", "18: [b c]", "19: []", "21: [b a]"} {
		found := false
		for _, a := range answers[0] {
			found = found || a == want
		}
		if !found {
			t.Errorf("no answer %q in\n%s", want, strings.Join(answers[0], "\n"))
		}
	}
}

// TestMigrationIndexedFields opens a store written before migration 00007
// (made with today's code indexing every field, then the table and the
// schema version taken back) and checks the migration deletes the rows of
// fields the index does not hold, every query answers as before, and the
// migration's Down puts every row back as the write path makes them.
func TestMigrationIndexedFields(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := IndexEveryField(ctx, st); err != nil {
		t.Fatal(err)
	}
	for _, d := range indexedDocs() {
		if _, err := store.SubmitWait(ctx, st, []store.Op{store.Put(d)}); err != nil {
			t.Fatal(err)
		}
	}
	before, every := runQueries(t, st), indexRows(t, st)
	migrateDown(t, st.w.DB, 10,
		"ALTER TABLE points ADD COLUMN hash TEXT", // before 00008
		"UPDATE points SET hash = (SELECT d.hash FROM docs d WHERE d.id = points.doc)",
		"DROP TABLE indexed_fields", "DELETE FROM goose_db_version WHERE version_id >= 7",
	)
	st.Close()

	st, err = Open(ctx, path, Options{}) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	after := indexRows(t, st)
	if len(after) == 0 || len(after) >= len(every) {
		t.Fatalf("%d rows after the migration, %d before", len(after), len(every))
	}
	for _, r := range after {
		if f := strings.Fields(r)[1]; !st.indexed.has(f) {
			t.Errorf("row left for field %s: %s", f, r)
		}
	}
	if got := runQueries(t, st); !reflect.DeepEqual(got, before) {
		t.Fatalf("after the migration\n%s\nbefore\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}

	mig, err := fs.Sub(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, st.w.DB, mig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 6); err != nil { // 00008's Down, then 00007's
		t.Fatal(err)
	}
	if down := indexRows(t, st); !reflect.DeepEqual(down, every) {
		t.Fatalf("after Down\n%s\nwritten with every field indexed\n%s", strings.Join(down, "\n"), strings.Join(every, "\n"))
	}
}

// TestMigrationPointsWithoutHash opens a store whose points carry their
// content hash, as before migration 00008 (made with today's code, then
// the column put back and filled and the schema version taken back), and
// checks every history, entity-tx and tx-log read answers as before the
// migration, and that its Down puts each point's hash back.
func TestMigrationPointsWithoutHash(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := func(m int64) time.Time { return time.UnixMilli(m).UTC() }
	doc := func(id string, n float64) store.Doc { return store.Doc{store.IDKey: id, "n": n} }
	for _, ops := range [][]store.Op{
		{store.PutAt(doc("a", 1), ms(0)), store.PutAt(doc("b", 1), ms(0))},
		{store.PutAt(doc("a", 2), ms(1000))},
		{store.PutRange(doc("a", 3), ms(500), ms(1500)), store.DeleteRange("b", ms(2000), nil)},
		{store.Put(doc("c", 1)), store.Match("a", doc("a", 2))},
		{store.PutAt(doc("a", 2), ms(1000))},
		{store.Evict("c")},
	} {
		if _, err := store.SubmitWait(ctx, st, ops); err != nil {
			t.Fatal(err)
		}
	}
	reads := func(s *Store) string {
		t.Helper()
		var b strings.Builder
		for _, id := range []string{"a", "b", "c"} {
			for _, o := range []store.HistoryOptions{{Order: store.Asc, WithCorrections: true, WithDocs: true}, {Order: store.Desc}} {
				h, err := s.History(ctx, id, o)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&b, "history %s %v: %+v\n", id, o.Order, h)
			}
			for _, vt := range []int64{0, 700, 1200, 2500} {
				e, err := s.EntityTx(ctx, id, store.Basis{ValidTime: ms(vt)})
				fmt.Fprintf(&b, "entity-tx %s %d: %+v %v\n", id, vt, e, err)
			}
		}
		log, err := s.TxLog(ctx, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "log: %+v\n", log)
		return b.String()
	}
	before := reads(st)
	if !strings.Contains(before, "ContentHash:") || !strings.Contains(before, "Deleted:true") {
		t.Fatalf("the reads hold no hash or no tombstone:\n%s", before)
	}
	migrateDown(t, st.w.DB, 10,
		"ALTER TABLE points ADD COLUMN hash TEXT",
		"UPDATE points SET hash = (SELECT d.hash FROM docs d WHERE d.id = points.doc)",
		"DELETE FROM goose_db_version WHERE version_id >= 8",
	)
	st.Close()
	st, err = Open(ctx, path, Options{}) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var cols int
	if err := st.w.GetContext(ctx, &cols, "SELECT count(*) FROM pragma_table_info('points') WHERE name = 'hash'"); err != nil || cols != 0 {
		t.Fatalf("points still has a hash column (%d, %v)", cols, err)
	}
	if after := reads(st); after != before {
		t.Fatalf("after the migration\n%s\nbefore\n%s", after, before)
	}
	migrateDown(t, st.w.DB, 7)
	var wrong, hashed int
	if err := st.w.GetContext(ctx, &wrong, `SELECT count(*) FROM points p LEFT JOIN docs d ON d.id = p.doc
		WHERE p.hash IS NOT d.hash`); err != nil || wrong != 0 {
		t.Fatalf("after Down: %d points whose hash is not their document's (%v)", wrong, err)
	}
	if err := st.w.GetContext(ctx, &hashed, "SELECT count(*) FROM points WHERE hash IS NOT NULL"); err != nil || hashed == 0 {
		t.Fatalf("after Down: %d points with a hash (%v)", hashed, err)
	}
}
