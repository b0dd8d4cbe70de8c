package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/ctxstore/ctxstore/bitemporal/postgres"
	"github.com/ctxstore/ctxstore/store"
)

// TestOpenRefuses checks what Open refuses: a schema with no store when
// it must exist (nothing is created), a schema of another application, a
// store of a newer schema version, a search path naming no schema, and an
// unreachable server.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	u := newSchema(t)
	_, err := postgres.Open(ctx, u, postgres.Options{MustExist: true})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "no store at") {
		t.Fatalf("MustExist on an empty schema: %v, want ErrNotFound", err)
	}
	db, err := sqlx.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.Get(&n, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"); err != nil || n != 0 {
		t.Fatalf("MustExist created %d tables (%v)", n, err)
	}

	if _, err := db.Exec("CREATE TABLE theirs (x int)"); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, u, postgres.Options{})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "no ctxstore mark") {
		t.Fatalf("foreign schema: %v, want ErrInvalid naming the mark", err)
	}

	u2 := newSchema(t)
	s := openURL(t, u2, nil)
	s.Close()
	db2, err := sqlx.Open("pgx", u2)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if _, err := db2.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (99999, true)"); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, u2, postgres.Options{})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "newer than this ctxstore") {
		t.Fatalf("newer schema: %v, want ErrInvalid", err)
	}

	_, err = postgres.Open(ctx, withParam(t, u, "search_path", "no_such_schema"), postgres.Options{})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "CREATE SCHEMA") {
		t.Fatalf("a search path naming no schema: %v, want ErrInvalid", err)
	}

	_, err = postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", postgres.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("unreachable server: %v, want ErrUnavailable", err)
	}
}

// TestStatusHidesPassword checks the location a status reports.
func TestStatusHidesPassword(t *testing.T) {
	u := withParam(t, newSchema(t), "application_name", "ctxstore-test")
	s := openURL(t, u, nil)
	st, err := s.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend != "postgres" || st.Location != u {
		t.Fatalf("status: backend %q location %q, want postgres and %q", st.Backend, st.Location, u)
	}
	withPassword := strings.Replace(u, "postgres@", "postgres:secret@", 1)
	s2 := openURL(t, withPassword, nil)
	st, err = s2.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.Location, "secret") {
		t.Fatalf("status location %q shows the password", st.Location)
	}
}
