package store

import (
	"context"
	"fmt"
	"time"
)

// FarFuture is a valid time after any a store holds: reads at it see every
// entity's latest version, and history bounded by it covers all valid time.
// XTDB's own end of time is 9999-12-31T23:59:59.999Z; both backends accept it.
var FarFuture = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

// DefaultAwait is how long SubmitWait waits for a transaction to be indexed.
const DefaultAwait = 30 * time.Second

// SubmitWait submits ops, waits until the transaction is indexed and
// returns an error wrapping ErrConflict if it aborted.
func SubmitWait(ctx context.Context, s Store, ops []Op) (Tx, error) {
	tx, err := s.Submit(ctx, ops)
	if err != nil {
		return tx, err
	}
	return tx, awaitCommitted(ctx, s, tx)
}

// awaitCommitted waits until tx is indexed and returns an error wrapping
// ErrConflict if it aborted.
func awaitCommitted(ctx context.Context, s Store, tx Tx) error {
	if _, err := s.AwaitTx(ctx, tx.ID, DefaultAwait); err != nil {
		return err
	}
	ok, err := s.TxCommitted(ctx, tx.ID)
	if err != nil {
		return err
	}
	if !ok {
		return &Error{Op: "submit", Kind: ErrConflict, Msg: "a match op failed; tx " + itoa64(tx.ID) + " aborted"}
	}
	return nil
}

// Settle waits until s has indexed every transaction it has logged and
// returns the latest one (nil if none) and s's status: the point from
// which an exporter or importer reads a consistent store.
func Settle(ctx context.Context, s Store) (*Tx, Status, error) {
	status, err := s.Status(ctx)
	if err != nil {
		return nil, status, fmt.Errorf("reading the store's status: %w", err)
	}
	if status.LatestSubmitted == nil {
		return status.LatestCompleted, status, nil
	}
	tx, err := s.AwaitTx(ctx, status.LatestSubmitted.ID, 0)
	if err != nil {
		return nil, status, fmt.Errorf("waiting for tx %d to be indexed: %w", status.LatestSubmitted.ID, err)
	}
	return &tx, status, nil
}
