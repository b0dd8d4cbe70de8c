package versionlog

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ctxstore/ctxstore/store"
)

// SyncOptions configure Sync.
type SyncOptions struct {
	// SourceID names the source for the cursor; empty means
	// "<backend>:<location>" from the source's status.
	SourceID string
	// PageSize and DocWindow are passed to Export.
	PageSize  int
	DocWindow int
	// Progress and OnTx are passed to Import.
	Progress ProgressFunc
	OnTx     func(src Tx, dst store.Tx)
}

// SyncSummary describes a finished sync.
type SyncSummary struct {
	Export ExportSummary `json:"export"`
	Import ImportSummary `json:"import"`
}

// Sync brings target up to date with src: it reads the target's cursor for
// src, exports src after it and imports that log into target, streaming
// through a pipe in constant memory. Running it again applies only what
// src committed since; running it twice in a row changes nothing. It
// stops at the first error, leaving the target consistent and the sync
// resumable.
func Sync(ctx context.Context, src, target store.Store, o SyncOptions) (SyncSummary, error) {
	var sum SyncSummary
	_, st, err := store.Settle(ctx, src)
	if err != nil {
		return sum, fmt.Errorf("sync: source: %w", err)
	}
	source := SourceOf(st, o.SourceID)
	tst, err := target.Status(ctx)
	if err != nil {
		return sum, fmt.Errorf("sync: target: %w", err)
	}
	if store.SameStore(source.Backend, source.Location, tst) {
		return sum, fmt.Errorf("sync: the source and the target are the same store (%s)", source.ID)
	}
	cur, err := ReadCursor(ctx, target, source.ID)
	if err != nil {
		return sum, fmt.Errorf("sync: target: %w", err)
	}
	after := int64(-1)
	if cur != nil {
		after = cur.TxID
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		var err error
		sum.Export, err = Export(ctx, src, pw, ExportOptions{After: after, SourceID: source.ID, PageSize: o.PageSize, DocWindow: o.DocWindow})
		pw.CloseWithError(err) // nil: the reader sees EOF
		done <- err
	}()
	isum, ierr := Import(ctx, target, pr, ImportOptions{Progress: o.Progress, OnTx: o.OnTx})
	sum.Import = isum
	if ierr != nil {
		pr.CloseWithError(ierr)
		cancel()
	}
	eerr := <-done
	switch {
	case ierr != nil && eerr != nil && !errors.Is(eerr, ierr):
		// The export failed first; the import only saw the pipe break.
		return sum, fmt.Errorf("sync: %w", eerr)
	case ierr != nil:
		return sum, fmt.Errorf("sync: %w", ierr)
	case eerr != nil:
		return sum, fmt.Errorf("sync: %w", eerr)
	}
	return sum, nil
}
