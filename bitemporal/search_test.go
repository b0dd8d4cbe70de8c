package bitemporal_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
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
