package bitemporal_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/store/storetest"
)

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, storetest.Harness{
		Name: "sqlite",
		New:  func(t *testing.T) store.Store { return openTemp(t, nil) },
	})
}

// TestSearchSurvivesReopen: the index is part of the file.
func TestSearchSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{store.IDKey: "n", "type": "note", "content": "persimmon pudding"})}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, err := s.Search(ctx, store.SearchQuery{Text: "persimmon"})
	if err != nil || len(hits) != 1 || hits[0].ID != "n" {
		t.Fatalf("after reopen: %+v, %v", hits, err)
	}
}

// TestSearchEvictLeavesNoWords: an evicted object's words leave the index
// and the file (FTS5 secure-delete plus the store's secure_delete).
func TestSearchEvictLeavesNoWords(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := "xylophonesecretword"
	if _, err := store.SubmitWait(ctx, s, []store.Op{
		store.Put(store.Doc{store.IDKey: "keep", "type": "note", "content": "ordinary words"}),
		store.Put(store.Doc{store.IDKey: "gone", "type": "note", "content": "the " + secret + " is here"}),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SubmitWait(ctx, s, []store.Op{store.Evict("gone")}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, store.SearchQuery{Text: secret}); err != nil || len(hits) != 0 {
		t.Fatalf("evicted words found: %+v %v", hits, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if wal, err := os.ReadFile(path + "-wal"); err == nil {
		raw = append(raw, wal...)
	}
	if strings.Contains(string(raw), secret) {
		t.Fatalf("the evicted word is still in the file")
	}
}

// TestSearchMigrationIndexesExistingStore: a store written before the
// search migrations (schema 1), or with the first search schema (2, bodies
// stored twice), gets the current index (chats by turns) when it is opened.
func TestSearchMigrationIndexesExistingStore(t *testing.T) {
	for _, from := range []int64{1, 2} {
		t.Run(fmt.Sprintf("from schema %d", from), func(t *testing.T) { migrateAndSearch(t, from) })
	}
}

func migrateAndSearch(t *testing.T, from int64) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chat := func(turns ...string) store.Doc {
		var ts []any
		for _, u := range turns {
			ts = append(ts, map[string]any{"user": u})
		}
		return store.Doc{store.IDKey: "chat:s1", "type": "chat", "turn_count": len(turns), "turns": ts}
	}
	for _, ops := range [][]store.Op{
		{store.Put(store.Doc{store.IDKey: "n", "type": "note", "content": "quokka habitat"}), store.Put(chat("first wombat"))},
		{store.Put(chat("first wombat", "then platypus"))},
	} {
		if _, err := store.SubmitWait(ctx, s, ops); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// Back to the schema before search (the rows stay), then reopen.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, from); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'search_src'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the view after down: %d %v", n, err)
	}
	db.Close()
	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for q, want := range map[string]int{"quokka": -1, "wombat": 0, "platypus": 1} {
		hits, err := s.Search(ctx, store.SearchQuery{Text: q})
		if err != nil || len(hits) != 1 || hits[0].Turn != want {
			t.Errorf("%s after the migration: %+v %v", q, hits, err)
		}
	}
}

// TestSearchRankWindow: a query with more matches than RankWindow ranks the
// newest ones; an older match is still found by a narrower query.
func TestSearchRankWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes RankWindow documents")
	}
	ctx := context.Background()
	s := openTemp(t, nil)
	n := bitemporal.RankWindow + 100
	for i := 0; i < n; i += 1000 {
		var ops []store.Op
		for j := i; j < min(i+1000, n); j++ {
			text := "common words here"
			if j == 0 {
				text += " ancient"
			}
			ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("n%06d", j), "type": "note", "content": text}))
		}
		if _, err := store.SubmitWait(ctx, s, ops); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s.Search(ctx, store.SearchQuery{Text: "common", Limit: 1000})
	if err != nil || len(hits) != 1000 {
		t.Fatalf("broad query: %d hits, %v", len(hits), err)
	}
	for _, h := range hits {
		if h.ID < fmt.Sprintf("n%06d", n-bitemporal.RankWindow) {
			t.Fatalf("broad query ranked %s, older than the newest %d matches", h.ID, bitemporal.RankWindow)
		}
	}
	if hits, err := s.Search(ctx, store.SearchQuery{Text: "common ancient"}); err != nil || len(hits) != 1 || hits[0].ID != "n000000" {
		t.Fatalf("narrow query: %+v %v", hits, err)
	}
}
