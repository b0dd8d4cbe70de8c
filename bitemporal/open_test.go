package bitemporal_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/store"
)

// TestOpenRefuses checks that files that are not ctxstore stores are
// refused with ErrInvalid and left byte for byte as they were.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"not sqlite", func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("not a database "), 100), 0o644)
		}, "not a SQLite database"},
		{"truncated header", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("SQLite format"), 0o644)
		}, "not a SQLite database"},
		{"foreign sqlite", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO accounts VALUES (1, 'a')"); err != nil {
				t.Fatal(err)
			}
		}, "another application"},
		{"other application id", func(t *testing.T, path string) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("PRAGMA application_id = 42; CREATE TABLE t (x)"); err != nil {
				t.Fatal(err)
			}
		}, "another application"},
		{"newer schema", func(t *testing.T, path string) {
			s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)"); err != nil {
				t.Fatal(err)
			}
		}, "newer than this ctxstore"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			c.make(t, path)
			before, _ := os.ReadFile(path)
			s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v, want ErrInvalid saying %q", err, c.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the refused file was modified")
			}
		})
	}
}

// TestReopenKeepsData checks a store reopened from its file sees what was
// written, and that the tx ids go on.
func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx0, err := store.SubmitWait(ctx, s, []store.Op{store.Put(store.Doc{"xt/id": "a", "v": "1"})})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = bitemporal.Open(ctx, path, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc, err := s.Entity(ctx, "a", store.Basis{})
	if err != nil || doc["v"] != "1" {
		t.Fatalf("after reopen: %v %v", doc, err)
	}
	tx1, err := s.Submit(ctx, []store.Op{store.Put(store.Doc{"xt/id": "b"})})
	if err != nil || tx1.ID != tx0.ID+1 || tx1.Time.Before(tx0.Time) {
		t.Fatalf("next tx %+v after %+v: %v", tx1, tx0, err)
	}
}
