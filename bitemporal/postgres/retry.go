package postgres

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ctxstore/ctxstore/store"
)

// Connections die: PostgreSQL restarts, fails over, or the network cuts
// them. A pooled connection found dead fails the statement that meets it;
// every call is therefore tried again, up to attempts times, when it
// failed for want of a connection. Reads are idempotent; a transaction
// that failed before its COMMIT was sent rolled back and is sent again;
// one whose COMMIT went unanswered is looked for first (committedAs).

// attempts is how many times a call is tried: over about 2 s (pause), the
// time a PostgreSQL restart takes.
const attempts = 5

// retryable reports whether err is a lost or refused connection (and the
// caller's context is still live).
func retryable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-57P03: the server is shutting
		// down or starting.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) ||
		pgconn.SafeToRetry(err)
}

// retry runs fn until it succeeds, fails for another reason than a lost
// connection, or has been tried attempts times.
func retry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for i := 1; ; i++ {
		v, err := fn()
		if i == attempts || !retryable(ctx, err) {
			return v, err
		}
		if !pause(ctx, i) {
			return v, err
		}
	}
}

// pause waits before attempt i+1; false if ctx ended.
func pause(ctx context.Context, i int) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(i) * 200 * time.Millisecond):
		return true
	}
}

// committedAs reports whether the transaction whose COMMIT went
// unanswered committed: the txs row of its id holds its ops and time. It
// first waits for the clock row, so that the transaction, if its server
// process still runs it, has finished.
func (s *Store) committedAs(ctx context.Context, receipt store.Tx, logged []byte) (bool, error) {
	return retry(ctx, func() (bool, error) {
		tx, err := s.db.BeginTxx(ctx, nil)
		if err != nil {
			return false, err
		}
		defer tx.Rollback()
		var id int64
		if err := tx.GetContext(ctx, &id, "SELECT tx_id FROM tx_clock FOR UPDATE"); err != nil {
			return false, err
		}
		var rows []struct {
			Time int64  `db:"tx_time"`
			Ops  string `db:"ops"`
		}
		if err := tx.SelectContext(ctx, &rows, "SELECT tx_time, ops FROM txs WHERE tx_id = $1", receipt.ID); err != nil {
			return false, err
		}
		return len(rows) == 1 && rows[0].Time == ms(receipt.Time) && rows[0].Ops == string(logged), nil
	})
}

// AwaitTx implements store.Store: transactions are indexed when they
// commit, so it only checks that txID was submitted.
func (s *Store) AwaitTx(ctx context.Context, txID int64, timeout time.Duration) (store.Tx, error) {
	return retry(ctx, func() (store.Tx, error) { return s.awaitTx(ctx, txID, timeout) })
}

// TxCommitted implements store.Store.
func (s *Store) TxCommitted(ctx context.Context, txID int64) (bool, error) {
	return retry(ctx, func() (bool, error) { return s.txCommitted(ctx, txID) })
}

// Entity implements store.Store.
func (s *Store) Entity(ctx context.Context, id string, b store.Basis) (store.Doc, error) {
	return retry(ctx, func() (store.Doc, error) { return s.entity(ctx, id, b) })
}

// EntityTx implements store.Store.
func (s *Store) EntityTx(ctx context.Context, id string, b store.Basis) (store.EntityTx, error) {
	return retry(ctx, func() (store.EntityTx, error) { return s.entityTx(ctx, id, b) })
}

// History implements store.Store with XTDB's bounds (see store.Store).
func (s *Store) History(ctx context.Context, id string, o store.HistoryOptions) ([]store.HistoryEntry, error) {
	return retry(ctx, func() ([]store.HistoryEntry, error) { return s.history(ctx, id, o) })
}

// Query implements store.Store as one SQL statement on the jsonb copies
// of the documents (query).
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Doc, error) {
	return retry(ctx, func() ([]store.Doc, error) { return s.query(ctx, q) })
}

// Search implements store.Searcher (search).
func (s *Store) Search(ctx context.Context, q store.SearchQuery) ([]store.SearchHit, error) {
	return retry(ctx, func() ([]store.SearchHit, error) { return s.search(ctx, q) })
}

// Status implements store.Store.
func (s *Store) Status(ctx context.Context) (store.Status, error) {
	return retry(ctx, func() (store.Status, error) { return s.status(ctx) })
}

// logPage is a page of the tx log with its documents.
type logPage struct {
	txs  []store.LoggedTx
	docs [][]json.RawMessage
}

// txLog is txLogOnce, retried.
func (s *Store) txLog(ctx context.Context, after int64, limit int) ([]store.LoggedTx, [][]json.RawMessage, error) {
	p, err := retry(ctx, func() (logPage, error) {
		txs, docs, err := s.txLogOnce(ctx, after, limit)
		return logPage{txs, docs}, err
	})
	return p.txs, p.docs, err
}
