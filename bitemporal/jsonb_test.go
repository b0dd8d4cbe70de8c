package bitemporal_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
)

// jsonbDocs are documents whose canonical JSON exercises what a JSONB round
// trip could change: escapes, non-ASCII text, numbers in every canonical
// form, empty and nested containers, a large string before a small field.
func jsonbDocs() []store.Doc {
	return []store.Doc{
		{store.IDKey: "file:a", "type": "file", "content": strings.Repeat("func f() { return \"x\\ty\" } // <é>\n", 400),
			"source": map[string]any{"kind": "filesystem", "path": "/src/a.go", "fs_id": "fs-1"}, "source_hash": "abc"},
		{store.IDKey: "n", "type": "note", "content": "quokka \u2028 \u00e9\U0001F600 \x00 \x1f \x7f \"q\" \\ / <>&",
			"nums":  []any{0.0, -0.5, 1.5, 1e-7, 1e21, 123456.789, 9007199254740991.0, -42.0},
			"empty": map[string]any{}, "none": []any{}, "nested": map[string]any{"a": []any{map[string]any{"b": nil, "c": true}}},
			"ключ": "значение", "flag": false},
		{store.IDKey: "chat:s1", "type": "chat", "turn_count": 1.0, "turns": []any{map[string]any{"user": "first wombat"}}},
	}
}

// TestJSONBRoundTrip: documents are stored as JSONB, and what the store
// reads back (json(doc)) is the canonical JSON it hashed, byte for byte.
func TestJSONBRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ops []store.Op
	for _, d := range jsonbDocs() {
		ops = append(ops, store.Put(d))
	}
	if _, err := store.SubmitWait(ctx, s, ops); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	checkDocsForm(t, db, "blob", "json(ctxs_doc(doc))", len(ops))
	for _, d := range jsonbDocs() {
		id := d[store.IDKey].(string)
		got, err := s.Entity(ctx, id, store.Basis{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := store.Canonical(d)
		if c, _ := store.Canonical(got); string(c) != string(want) {
			t.Errorf("%s reads back as %s, want %s", id, c, want)
		}
	}
}

// TestMigrationJSONB opens a store whose documents are JSON text, as every
// release before migration 00006 wrote them (made here by writing with
// today's code and migrating down to schema 5, which checks the text is the
// canonical JSON of each hash), and checks that after the migration every
// read gives the same answer as before: documents, history, the canonical
// tx log byte for byte, queries with projections, order and long strings,
// and search.
func TestMigrationJSONB(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := jsonbDocs()
	for _, ops := range [][]store.Op{
		{store.Put(docs[0]), store.Put(docs[1])},
		{store.Match("n", docs[1]), store.Put(docs[2])},
		{store.Put(store.Doc{store.IDKey: "n", "type": "note", "content": "second version", "flag": true})},
		{store.Put(store.Doc{store.IDKey: "gone", "type": "note", "content": "secret"})},
		{store.Evict("gone")},
	} {
		if _, err := store.SubmitWait(ctx, s, ops); err != nil {
			t.Fatal(err)
		}
	}
	type reads struct {
		Entities map[string]store.Doc
		History  map[string][]store.HistoryEntry
		Log      []string
		Queries  [][]store.Doc
		Search   []store.SearchHit
	}
	queries := []store.Query{
		{Where: []store.Pred{store.Where(store.IDKey, "file:a")}, Find: []string{"type", "source", "source_hash"}},
		{Where: []store.Pred{{Field: store.IDKey, Op: store.In, Values: []any{"file:a", "n", 1.0}}}, Find: []string{"type", "nums", "empty"}},
		{Where: []store.Pred{store.Where("content", docs[0]["content"])}, Find: []string{"source"}},
		{Where: []store.Pred{{Field: "type", Op: store.Exists}}, OrderBy: []store.Order{{Field: "type", Desc: true}}},
	}
	read := func(s *bitemporal.Store) reads {
		r := reads{Entities: map[string]store.Doc{}, History: map[string][]store.HistoryEntry{}}
		for _, id := range []string{"file:a", "n", "chat:s1"} {
			var err error
			if r.Entities[id], err = s.Entity(ctx, id, store.Basis{}); err != nil {
				t.Fatal(err)
			}
			if r.History[id], err = s.History(ctx, id, store.HistoryOptions{WithDocs: true, WithCorrections: true}); err != nil {
				t.Fatal(err)
			}
		}
		txs, logged, err := s.TxLogCanonical(ctx, -1, 0)
		if err != nil || len(txs) != 5 {
			t.Fatalf("tx log: %d txs, %v", len(txs), err)
		}
		for _, ops := range logged {
			for _, d := range ops {
				r.Log = append(r.Log, string(d))
			}
		}
		for _, q := range queries {
			got, err := s.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			r.Queries = append(r.Queries, got)
		}
		for _, q := range []string{"wombat", "second", "func", "quokka"} {
			hits, err := s.Search(ctx, store.SearchQuery{Text: q})
			if err != nil {
				t.Fatal(err)
			}
			r.Search = append(r.Search, hits...)
		}
		return r
	}
	before := read(s)
	if len(before.Queries[0]) != 1 || len(before.Queries[1]) != 2 || len(before.Queries[2]) != 1 || len(before.Search) != 3 {
		t.Fatalf("reads before the migration: %d, %d, %d query results, %d search hits", len(before.Queries[0]), len(before.Queries[1]), len(before.Queries[2]), len(before.Search))
	}
	s.Close()

	db := rawDB(t, path)
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	checkDocsForm(t, db, "text", "doc", 4)
	db.Close()

	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkDocsForm(t, rawDB(t, path), "blob", "json(ctxs_doc(doc))", 4)
	if after := read(s); !reflect.DeepEqual(after, before) {
		t.Fatalf("reads after the migration differ:\nbefore %+v\nafter  %+v", before, after)
	}
}

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkDocsForm checks every docs row is of SQLite type typ and that expr
// (its text) is the canonical JSON whose SHA-256 is the row's hash.
func checkDocsForm(t *testing.T, db *sql.DB, typ, expr string, n int) {
	t.Helper()
	rows, err := db.Query("SELECT CASE WHEN typeof(hash) = 'blob' THEN lower(hex(hash)) ELSE hash END, typeof(doc), " + expr + " FROM docs")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var hash, got, text string
		if err := rows.Scan(&hash, &got, &text); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		if got != typ || hex.EncodeToString(sum[:]) != hash {
			t.Errorf("docs row %s: stored as %s (want %s), text hashes to %x: %s", hash, got, typ, sum, text)
		}
		seen++
	}
	if err := rows.Err(); err != nil || seen != n {
		t.Fatalf("%d docs rows, want %d (%v)", seen, n, err)
	}
}
