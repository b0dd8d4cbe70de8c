package bitemporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/migrations"
	"github.com/ctxstore/ctxstore/store"
)

// TestMigrationReclaimsSpace: migrations that rewrite tables (here from
// schema 13: interned ids, the field index by document then by value, the
// tx log as deltas) leave the old tables' pages free; opening the store
// upgrades it and gives them back, so the file holds no free page after,
// and the data reads as before.
func TestMigrationReclaimsSpace(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		var ops []store.Op
		for j := range 25 {
			ops = append(ops, store.Put(store.Doc{store.IDKey: fmt.Sprintf("doc-%d-%d", i, j), "kind": "note",
				"n": i*25 + j, "body": strings.Repeat(fmt.Sprintf("text %d %d ", i, j), 40)}))
		}
		if _, err := s.Submit(ctx, ops); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s store.Store) int {
		t.Helper()
		docs, err := s.Query(ctx, store.Query{Where: []store.Pred{store.Where("kind", "note"), {Field: "n", Op: store.Gte, Value: 500}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(docs)
	}
	if n := count(s); n != 500 {
		t.Fatalf("%d documents before, want 500", n)
	}
	s.Close()

	db := rawDB(t, path)
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 13); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("VACUUM"); err != nil { // only the upgrade's own free pages count
		t.Fatal(err)
	}
	db.Close()
	before := fileSize(t, path)

	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := count(s); n != 500 {
		t.Fatalf("%d documents after the upgrade, want 500", n)
	}
	var free, pages int
	raw := rawDB(t, path)
	if err := raw.QueryRow("PRAGMA freelist_count").Scan(&free); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if free != 0 {
		t.Errorf("after the upgrade %d of %d pages are free, want none", free, pages)
	}
	t.Logf("file %d bytes at schema 13, %d after the upgrade (%d pages)", before, fileSize(t, path), pages)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
