// Package store defines the contract every ctxstore backend meets: a bitemporal
// document store with XTDB 1.24.5 semantics.
//
// Documents are JSON objects whose string id sits under the "xt/id" key. Each
// entity is a set of points (valid time, tx id) naming a document or a
// tombstone. A read at a Basis (valid time V, tx id T) sees, among the points
// with valid time <= V written by transactions <= T, the one with the greatest
// valid time, the latest tx breaking ties; a tombstone reads as absent.
//
// Backends: bitemporal (embedded SQLite, the default) and xtdb (an XTDB 1.x
// server over HTTP, the reference). Both pass store/storetest.
//
// Eviction (OpEvict) removes an entity's versions and documents in all
// times, from every read and from the tx log: TxLog gives back no document
// of an op made before the evict, even when the same content is submitted
// again later (Store.TxLog has the rule every backend follows).
//
// Times have millisecond precision; every time a backend returns is UTC and
// truncated to the millisecond.
//
// Input rules (input.go; docs/security.md): a store accepts only documents
// every backend stores and gives back exactly. Numbers are held exactly or
// refused (CheckNumber), JSON text must be UTF-8 without repeated keys
// (DecodeDoc), and ids under ReservedPrefix are written only under
// WithReservedWrites. Every backend's Submit enforces them (Normalize,
// CheckReserved), so every write path does.
//
// Optional capabilities (capabilities.go) are interfaces a backend may
// implement besides Store, found by type assertion, each with a documented
// fallback for callers: TxTimeSubmitter (SubmitAt) and CanonicalTxLogger
// (TxLogCanonical). store/storetest checks every capability a backend has.
package store

import (
	"context"
	"fmt"
	"time"
)

// IDKey is the document key holding the entity id.
const IDKey = "xt/id"

// Doc is one JSON document. It always holds a string under IDKey. Values are
// what encoding/json produces when decoding with UseNumber: nil, bool, string,
// json.Number, []any and map[string]any.
type Doc = map[string]any

// Store is a bitemporal document store.
//
// Writes are asynchronous in the XTDB sense: Submit returns once the
// transaction is durably logged; its effects are visible once AwaitTx has
// returned for its tx id (embedded backends index synchronously, so their
// AwaitTx returns at once). Implementations are safe for concurrent use.
type Store interface {
	// Submit logs one transaction: its ops are applied in order, atomically,
	// each seeing the effects of the ones before it. A failing Match aborts the
	// whole transaction, which still uses up its tx id and is reported by
	// TxCommitted as not committed; Submit itself does not report the abort
	// (use SubmitWait for that). Ops are validated before anything is written:
	// an invalid op returns an error wrapping ErrInvalid that names the op's
	// index, kind, id and field, and nothing is logged.
	Submit(ctx context.Context, ops []Op) (Tx, error)

	// AwaitTx blocks until the transaction txID has been indexed, so that
	// reads at the latest basis see it, or until timeout passes (then an
	// error wrapping ErrUnavailable). A timeout <= 0 means a backend default.
	AwaitTx(ctx context.Context, txID int64, timeout time.Duration) (Tx, error)

	// TxCommitted reports whether an indexed transaction committed (true) or
	// aborted (false). A tx id not yet indexed gives ErrNotFound.
	TxCommitted(ctx context.Context, txID int64) (bool, error)

	// Entity returns the document of id visible at basis b. An absent,
	// deleted or evicted entity gives an error wrapping ErrNotFound that names
	// the id. A basis beyond the latest indexed transaction gives ErrInvalid.
	Entity(ctx context.Context, id string, b Basis) (Doc, error)

	// EntityTx describes the point that makes id's state at basis b: its valid
	// time (which may be a continuation or restore point, not the version's
	// first start), tx id and time, and content hash. A tombstone gives an
	// EntityTx with Deleted set. An id with no point visible at b gives
	// ErrNotFound.
	EntityTx(ctx context.Context, id string, b Basis) (EntityTx, error)

	// History lists the points of one entity, bounded by opts (start bounds
	// inclusive, end bounds exclusive) and by opts.Basis: descending history
	// stops at the basis valid time and tx; ascending history ends before
	// basis valid time + 1ms and basis tx + 1. Without corrections, one row
	// per valid time (the winning point); with corrections, every point,
	// ordered by valid time then tx id in the requested direction. Tombstones
	// are rows with Deleted set. An evicted or unknown entity has no rows.
	History(ctx context.Context, id string, opts HistoryOptions) ([]HistoryEntry, error)

	// Query runs a portable query at its basis. Results are a set: no
	// duplicates, in the query's order when it has one.
	Query(ctx context.Context, q Query) ([]Doc, error)

	// TxLog returns up to limit committed transactions with tx id > after,
	// ascending (after = -1 for all; limit <= 0 for no limit). Aborted
	// transactions are left out. Ops are as submitted, except that evicted
	// documents are not returned: a put or a match with a document whose
	// entity was evicted after it (by a later transaction, or later in its
	// own) carries a nil Doc and Evicted. The same content submitted again
	// after the evict (a put, or a match expecting it, committed or not)
	// does not bring the earlier ops' documents back: eviction belongs to
	// the entity's history up to the evict, not to the content. A backend
	// tells it by the points left: an op's document is returned only while
	// its entity keeps a point of the op's tx or earlier (only an evict
	// removes points). So a put whose valid time range is empty, which
	// writes no point, on an entity with no earlier point, is logged
	// without its document and Evicted too.
	TxLog(ctx context.Context, after int64, limit int) ([]LoggedTx, error)

	// Status describes the backend and its latest transactions.
	Status(ctx context.Context) (Status, error)

	// Close releases the store. Calls after Close fail with ErrUnavailable.
	Close() error
}

// Tx identifies a transaction: its id (0, 1, 2... in submission order) and
// its transaction time (non-decreasing with the id; several transactions may
// share a millisecond).
type Tx struct {
	ID   int64     `json:"tx_id"`
	Time time.Time `json:"tx_time"`
}

// Basis is the point in both times that a read sees.
type Basis struct {
	// ValidTime is the valid time read at; the zero time means now.
	ValidTime time.Time
	// TxID bounds the transactions seen; nil means the latest indexed.
	TxID *int64
	// TxTime, if set and TxID is nil, bounds the transactions seen to those
	// with a tx time at or before it. A TxTime after the latest indexed
	// transaction gives ErrInvalid.
	TxTime *time.Time
}

// AtTx returns a basis at tx id tx and valid time vt (zero: now).
func AtTx(tx int64, vt time.Time) Basis { return Basis{ValidTime: vt, TxID: &tx} }

// EntityTx is the point that makes an entity's state at a basis.
type EntityTx struct {
	ID          string    `json:"id"`
	ValidTime   time.Time `json:"valid_time"`
	TxID        int64     `json:"tx_id"`
	TxTime      time.Time `json:"tx_time"`
	ContentHash string    `json:"content_hash"`
	Deleted     bool      `json:"deleted,omitempty"`
}

// SortOrder orders history.
type SortOrder string

// Sort orders.
const (
	Asc  SortOrder = "asc"
	Desc SortOrder = "desc"
)

// HistoryOptions bound a history read. Start bounds are inclusive, end
// bounds exclusive; nil means unbounded.
type HistoryOptions struct {
	Order           SortOrder
	WithCorrections bool
	WithDocs        bool
	StartValidTime  *time.Time
	EndValidTime    *time.Time
	StartTxID       *int64
	EndTxID         *int64
	Basis           Basis
	// Limit is the most entries returned, 0 for no limit: the first Limit
	// entries of the history the other options give (after the order, the
	// bounds and, without corrections, one row per valid time). A backend
	// reads no more of the history than it needs for them. Negative is
	// ErrInvalid.
	Limit int
}

// Validate checks the options of a history read of id (an id CheckReadID
// passed) and returns an error wrapping ErrInvalid naming the field at
// fault.
func (o HistoryOptions) Validate(id string) error {
	if o.Limit < 0 {
		return &Error{Op: "history", Kind: ErrInvalid, ID: id, Field: "limit", Msg: fmt.Sprintf("limit %d is negative (0 is no limit)", o.Limit)}
	}
	return nil
}

// Full reports whether a history read that has n entries has all that
// Limit allows.
func (o HistoryOptions) Full(n int) bool { return o.Limit > 0 && n >= o.Limit }

// HistoryEntry is one point of an entity's history.
type HistoryEntry struct {
	ValidTime time.Time `json:"valid_time"`
	TxID      int64     `json:"tx_id"`
	TxTime    time.Time `json:"tx_time"`
	// ContentHash is the backend's hash of the document (see docs: the
	// algorithm differs between backends); empty for a tombstone.
	ContentHash string `json:"content_hash,omitempty"`
	Deleted     bool   `json:"deleted,omitempty"`
	// Doc is set only when WithDocs was asked and the point is not a tombstone.
	Doc Doc `json:"doc,omitempty"`
}

// LoggedTx is one committed transaction in the log.
type LoggedTx struct {
	Tx
	Ops []Op `json:"ops"`
}

// Status describes a store.
type Status struct {
	Backend string `json:"backend"`
	Version string `json:"version"`
	// LatestCompleted is the latest indexed transaction, nil if none.
	LatestCompleted *Tx `json:"latest_completed,omitempty"`
	// LatestSubmitted is the latest logged transaction, nil if none.
	LatestSubmitted *Tx    `json:"latest_submitted,omitempty"`
	Detail          any    `json:"detail,omitempty"`
	Location        string `json:"location,omitempty"`
}
