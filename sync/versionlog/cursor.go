package versionlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// CursorPrefix starts the id of a cursor document: CursorPrefix + the
// source's id.
const CursorPrefix = ReservedPrefix + "cursor:"

// CursorValidTime is the valid time every cursor version is written at,
// so each import's version supersedes the last at every valid time and
// the cursor's history with corrections lists one row per imported tx.
var CursorValidTime = time.Unix(0, 0).UTC()

// CursorID is the id of the cursor of source sourceID in a target.
func CursorID(sourceID string) string { return CursorPrefix + sourceID }

// Cursor is what a target holds from one source: the last source
// transaction applied. It lives in the target as the document CursorID,
// written in the same transaction as that source transaction's ops.
type Cursor struct {
	Source string    `json:"source"`
	TxID   int64     `json:"source_tx_id"`
	TxTime time.Time `json:"source_tx_time"`
}

// Document fields of a cursor.
const (
	cursorType      = "ctxstore.sync-cursor"
	fieldType       = "type"
	fieldSource     = "source"
	fieldSourceTx   = "source_tx_id"
	fieldSourceTime = "source_tx_time"
)

// doc returns the cursor as its document.
func (c Cursor) doc() store.Doc {
	return store.Doc{
		store.IDKey:     CursorID(c.Source),
		fieldType:       cursorType,
		fieldSource:     c.Source,
		fieldSourceTx:   json.Number(strconv.FormatInt(c.TxID, 10)),
		fieldSourceTime: store.FormatTime(c.TxTime),
	}
}

// cursorFromDoc reads a cursor document.
func cursorFromDoc(doc store.Doc) (Cursor, error) {
	var c Cursor
	src, ok := doc[fieldSource].(string)
	if !ok || doc[fieldType] != cursorType {
		return c, fmt.Errorf("cursor document %v is not a %s", doc[store.IDKey], cursorType)
	}
	n, ok := store.Num(doc[fieldSourceTx])
	if !ok || n < 0 || n != float64(int64(n)) {
		return c, fmt.Errorf("cursor document %v: %s is not a tx id", doc[store.IDKey], fieldSourceTx)
	}
	ts, _ := doc[fieldSourceTime].(string)
	t, err := store.ParseTime(ts)
	if err != nil {
		return c, fmt.Errorf("cursor document %v: %s: %w", doc[store.IDKey], fieldSourceTime, err)
	}
	return Cursor{Source: src, TxID: int64(n), TxTime: t}, nil
}

// ReadCursor returns the cursor of source sourceID in target, nil if the
// target holds nothing from it. It first waits until the target has
// indexed everything it has logged.
func ReadCursor(ctx context.Context, target store.Store, sourceID string) (*Cursor, error) {
	if _, _, err := store.Settle(ctx, target); err != nil {
		return nil, err
	}
	c, _, err := readCursor(ctx, target, sourceID)
	return c, err
}

// readCursor reads the cursor and its document as stored (the match
// guard of the next import compares against it).
func readCursor(ctx context.Context, target store.Store, sourceID string) (*Cursor, store.Doc, error) {
	doc, err := target.Entity(ctx, CursorID(sourceID), store.Basis{ValidTime: CursorValidTime})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the sync cursor of %q: %w", sourceID, err)
	}
	c, err := cursorFromDoc(doc)
	if err != nil {
		return nil, nil, err
	}
	if c.Source != sourceID {
		return nil, nil, fmt.Errorf("cursor document %s names source %q", CursorID(sourceID), c.Source)
	}
	return &c, doc, nil
}

// Mapping pairs a source transaction with the target transaction that
// applied it.
type Mapping struct {
	Source store.Tx `json:"source"`
	Target store.Tx `json:"target"`
}

// Mappings lists, in order, every source transaction of sourceID applied
// to target and the target transaction that applied it, read from the
// cursor's history with corrections (one version per applied tx). This is
// where the original tx ids and times are kept when the target cannot
// keep them itself (XTDB assigns its own). Memory grows with the number
// of transactions listed.
func Mappings(ctx context.Context, target store.Store, sourceID string) ([]Mapping, error) {
	if _, _, err := store.Settle(ctx, target); err != nil {
		return nil, err
	}
	rows, err := target.History(ctx, CursorID(sourceID), store.HistoryOptions{
		Order: store.Asc, WithCorrections: true, WithDocs: true,
		Basis: store.Basis{ValidTime: CursorValidTime},
	})
	if err != nil {
		return nil, fmt.Errorf("reading the history of the sync cursor of %q: %w", sourceID, err)
	}
	out := make([]Mapping, 0, len(rows))
	for _, r := range rows {
		if r.Deleted || r.Doc == nil {
			continue
		}
		c, err := cursorFromDoc(r.Doc)
		if err != nil {
			return nil, err
		}
		out = append(out, Mapping{Source: store.Tx{ID: c.TxID, Time: c.TxTime}, Target: store.Tx{ID: r.TxID, Time: r.TxTime}})
	}
	return out, nil
}
