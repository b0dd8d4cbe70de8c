package versionlog

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctxstore/ctxstore/store"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// After is the tx id the export starts after; -1 exports everything.
	// (The zero value exports from tx 1 on: set -1 for a full export.)
	After int64
	// SourceID names the source in the header and so in the target's
	// cursor; empty means "<backend>:<location>" from the store's status.
	SourceID string
	// PageSize is how many transactions are read from the store at a time
	// (default 100); it bounds the export's memory with the largest tx.
	PageSize int
	// DocWindow is the header's doc_window (default DefaultDocWindow).
	DocWindow int
	// Progress, if set, is called after each transaction with the tx ids
	// covered so far and in all: (tx id - After, Upto - After).
	Progress func(done, total int64)
}

// ExportSummary describes a finished export.
type ExportSummary struct {
	Source Source `json:"source"`
	After  int64  `json:"after"`
	Upto   int64  `json:"upto"`
	Trailer
	// Bytes is the size of the log, uncompressed.
	Bytes int64 `json:"bytes"`
	// Evicted counts the put and match ops written without their document
	// because it was evicted from the source.
	Evicted int64 `json:"evicted_ops"`
	// Reserved counts the ops on the version log's own entities left out.
	Reserved int64 `json:"reserved_ops"`
}

// Export writes the committed transactions of src after o.After, up to the
// latest one when the export starts, to w as a version log. It reads the
// tx log in pages of o.PageSize, so memory does not grow with the store.
//
// Ops on reserved entities (ReservedPrefix: sync cursors) are left out;
// a transaction left with no op is still written, with an empty op list,
// so transactions keep their one-to-one order. Evicted content is never
// written: a put whose document was evicted is written without it, marked
// evicted, and so is a match whose expected document was (store.Op.Evicted
// in the store's tx log). The same store exported twice gives the same
// bytes.
func Export(ctx context.Context, src store.Store, w io.Writer, o ExportOptions) (ExportSummary, error) {
	if o.After < -1 {
		return ExportSummary{}, fmt.Errorf("export: after %d: want a tx id or -1", o.After)
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	latest, st, err := store.Settle(ctx, src)
	if err != nil {
		return ExportSummary{}, fmt.Errorf("export: %w", err)
	}
	sum := ExportSummary{Source: SourceOf(st, o.SourceID), After: o.After, Upto: -1}
	if latest != nil {
		sum.Upto = latest.ID
	}
	h := Header{Source: sum.Source, After: o.After, Upto: sum.Upto, DocWindow: o.DocWindow}
	if o.After >= 0 {
		first, err := src.TxLog(ctx, o.After-1, 1)
		if err != nil {
			return sum, fmt.Errorf("export: reading tx %d: %w", o.After, err)
		}
		if len(first) == 1 && first[0].ID == o.After {
			t := store.MS(first[0].Time)
			h.AfterTxTime = &t
		}
	}
	lw, err := NewWriter(w, h)
	if err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	canonSrc, canonical := src.(store.CanonicalTxLogger)
	for cur := o.After; cur < sum.Upto; {
		var page []store.LoggedTx
		var canon [][]json.RawMessage
		if canonical {
			page, canon, err = canonSrc.TxLogCanonical(ctx, cur, o.PageSize)
		} else {
			page, err = src.TxLog(ctx, cur, o.PageSize)
		}
		if err != nil {
			return sum, fmt.Errorf("export: reading the tx log after tx %d: %w", cur, err)
		}
		if len(page) == 0 {
			break
		}
		for i, lt := range page {
			if lt.ID > sum.Upto {
				cur = sum.Upto
				break
			}
			var docs []json.RawMessage
			if canonical {
				docs = canon[i]
				if len(docs) != len(lt.Ops) {
					return sum, fmt.Errorf("export: tx %d: %d ops but %d documents from the store", lt.ID, len(lt.Ops), len(docs))
				}
			}
			tx, err := sum.explicit(lt, docs)
			if err != nil {
				return sum, fmt.Errorf("export: %w", err)
			}
			if err := lw.WriteTx(tx); err != nil {
				return sum, fmt.Errorf("export: %w", err)
			}
			cur = lt.ID
			if o.Progress != nil {
				o.Progress(lt.ID-o.After, sum.Upto-o.After)
			}
		}
	}
	t, err := lw.Close()
	sum.Trailer, sum.Bytes = t, lw.Bytes()
	if err != nil {
		return sum, fmt.Errorf("export: %w", err)
	}
	return sum, nil
}

// explicit makes lt explicit, without reserved ops and evicted content;
// docs, if not nil, holds the ops' documents in canonical JSON.
func (sum *ExportSummary) explicit(lt store.LoggedTx, docs []json.RawMessage) (Tx, error) {
	kept := lt
	kept.Ops = make([]store.Op, 0, len(lt.Ops))
	var keptDocs []json.RawMessage
	if docs != nil {
		keptDocs = make([]json.RawMessage, 0, len(docs))
	}
	for i, op := range lt.Ops {
		if Reserved(op.ID) {
			sum.Reserved++
			continue
		}
		kept.Ops = append(kept.Ops, op)
		if docs != nil {
			keptDocs = append(keptDocs, docs[i])
		}
	}
	tx, err := fromLogged(kept, keptDocs)
	if err != nil {
		return tx, err
	}
	for _, op := range tx.Ops {
		if op.Evicted {
			sum.Evicted++
		}
	}
	return tx, nil
}
