package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctxstore/ctxstore/bitemporal/postgres/pgtest"
	"github.com/ctxstore/ctxstore/store"
)

func TestRetryable(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want bool
	}{
		{ctx, &store.Error{Op: "entity", Kind: store.ErrUnavailable, Err: &pgconn.PgError{Code: "57P01"}}, true},
		{ctx, &store.Error{Op: "entity", Kind: store.ErrUnavailable, Err: fmt.Errorf("read: %w", io.ErrUnexpectedEOF)}, true},
		{ctx, &store.Error{Op: "entity", Kind: store.ErrInvalid, Err: &pgconn.PgError{Code: "22P02"}}, false},
		{ctx, &store.Error{Op: "submit", Kind: store.ErrUnavailable, Err: &pgconn.PgError{Code: "40001"}}, false},
		{ctx, store.Errorf("await", store.ErrUnavailable, "", "transaction 3 has not been submitted"), false},
		{ctx, errors.New("store is closed"), false},
		{ctx, &store.Error{Op: "entity", Kind: store.ErrUnavailable, Err: fmt.Errorf("query: %w", pgconn.ErrConnClosed)}, true},
		{cancelled, io.EOF, false},
	} {
		if got := retryable(c.ctx, c.err); got != c.want {
			t.Errorf("retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestCommittedAs: a transaction whose COMMIT answer was lost is found by
// its id, time and ops, and only then.
func TestCommittedAs(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Shared(t)
	s, err := Open(ctx, pg.Schema(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops, err := store.Normalize([]store.Op{store.Put(store.Doc{store.IDKey: "a", "n": 1})})
	if err != nil {
		t.Fatal(err)
	}
	_, logged, err := prepare(ops)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := s.Submit(ctx, ops)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		receipt store.Tx
		logged  []byte
		want    bool
	}{
		{tx, logged, true},
		{store.Tx{ID: tx.ID + 1, Time: tx.Time}, logged, false},
		{store.Tx{ID: tx.ID, Time: tx.Time.Add(1e6)}, logged, false},
		{tx, json.RawMessage(`[]`), false},
	} {
		got, err := s.committedAs(ctx, c.receipt, c.logged)
		if err != nil || got != c.want {
			t.Errorf("committedAs(%+v, %s) = %v, %v; want %v", c.receipt, c.logged, got, err, c.want)
		}
	}
}
