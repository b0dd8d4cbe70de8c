package store

import (
	"context"
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
