package store

import (
	"context"
	"fmt"
	"time"
)

// DefaultAwait is how long SubmitWait waits for a transaction to be indexed.
const DefaultAwait = 30 * time.Second

// SubmitWait submits ops, waits until the transaction is indexed and
// returns an error wrapping ErrConflict if it aborted.
func SubmitWait(ctx context.Context, s Store, ops []Op) (Tx, error) {
	tx, err := s.Submit(ctx, ops)
	if err != nil {
		return tx, err
	}
	if _, err := s.AwaitTx(ctx, tx.ID, DefaultAwait); err != nil {
		return tx, err
	}
	ok, err := s.TxCommitted(ctx, tx.ID)
	if err != nil {
		return tx, err
	}
	if !ok {
		return tx, &Error{Op: "submit", Kind: ErrConflict, Msg: "a match op failed; tx " + itoa64(tx.ID) + " aborted"}
	}
	return tx, nil
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
