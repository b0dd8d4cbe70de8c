package store

import (
	"context"
	"encoding/json"
	"time"
)

// Optional capabilities. A backend may implement any of these interfaces
// besides Store; callers find them with a type assertion (as with
// database/sql/driver's optional interfaces) and, when a store lacks one,
// fall back as each interface's comment says. store/storetest checks every
// capability a backend claims (storetest.Run detects them the same way).
//
// The capabilities: TxTimeSubmitter and CanonicalTxLogger (below), and
// Searcher (search.go: full-text search; fallback when absent: none, the
// caller reports search as unavailable, as context/recall does with
// ErrUnavailable), and ValueLister (values.go: a field's distinct values a
// page at a time; fallback: ValuesByQuery).

// TxTimeSubmitter is a store that can log a transaction with a given
// transaction time: importers use it to keep a source's tx times.
//
// SubmitAt is Submit with txTime (truncated to the millisecond) as the
// transaction's time. A txTime before the latest logged transaction's time
// gives an error wrapping ErrInvalid and logs nothing (tx times never go
// back).
//
// Fallback when absent (XTDB, whose node gives every tx time): Submit; the
// target's clock gives the time, and the importer records the source's tx
// time itself (the version log's cursor does).
type TxTimeSubmitter interface {
	SubmitAt(ctx context.Context, ops []Op, txTime time.Time) (Tx, error)
}

// CanonicalTxLogger is a store that keeps its documents as RFC 8785
// canonical JSON (Canonical) and can hand them out as they are, so an
// exporter need not decode and encode each document again.
//
// TxLogCanonical is TxLog with the ops' documents left out of the ops:
// docs[i][j] is the document of op j of txs[i] in canonical JSON, nil if
// the op has none or it was evicted (the op is then marked Evicted, as in
// TxLog). len(docs) == len(txs) and len(docs[i]) == len(txs[i].Ops).
//
// Fallback when absent: TxLog, and Canonical of each op's Doc. The bytes
// are the same; only the cost differs.
type CanonicalTxLogger interface {
	TxLogCanonical(ctx context.Context, after int64, limit int) (txs []LoggedTx, docs [][]json.RawMessage, err error)
}

// SubmitAtWait is SubmitWait with a given tx time: it submits ops at txTime
// through s's TxTimeSubmitter, waits until the transaction is indexed and
// returns an error wrapping ErrConflict if it aborted. kept reports whether
// the tx time was kept. A store without the capability gets a plain
// SubmitWait (kept false); so does a store with it when a later transaction
// is already logged (SubmitAt's ErrInvalid), if fallback is true.
func SubmitAtWait(ctx context.Context, s Store, ops []Op, txTime time.Time, fallback bool) (tx Tx, kept bool, err error) {
	at, ok := s.(TxTimeSubmitter)
	if !ok {
		tx, err = SubmitWait(ctx, s, ops)
		return tx, false, err
	}
	tx, err = at.SubmitAt(ctx, ops, txTime)
	if err != nil {
		if fallback && KindOf(err) == ErrInvalid && laterTx(ctx, s, txTime) {
			tx, err = SubmitWait(ctx, s, ops)
		}
		return tx, false, err
	}
	return tx, true, awaitCommitted(ctx, s, tx)
}

// laterTx reports whether s has logged a transaction after t.
func laterTx(ctx context.Context, s Store, t time.Time) bool {
	st, err := s.Status(ctx)
	return err == nil && st.LatestSubmitted != nil && st.LatestSubmitted.Time.After(MS(t))
}

// SameStore reports whether a store described by backend and location is
// the store whose status is st: the check an importer makes to refuse a
// log or bundle exported from its own target. Stores without a location,
// and in-memory SQLite stores, are never the same as anything.
func SameStore(backend, location string, st Status) bool {
	return backend == st.Backend && location == st.Location && st.Location != "" && st.Location != ":memory:"
}
