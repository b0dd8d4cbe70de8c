package versionlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ctxstore/ctxstore/objects"
	"github.com/ctxstore/ctxstore/store"
)

// ProgressFunc is told how far a phase ("export", "verify", "import") has
// come, in source tx ids: done = tx id - After, total = Upto - After.
type ProgressFunc func(phase string, done, total int64)

// ImportOptions configure Import.
type ImportOptions struct {
	// Progress, if set, is called after each transaction read.
	Progress ProgressFunc
	// OnTx, if set, is called after each source transaction is applied,
	// with the target transaction that applied it.
	OnTx func(src Tx, dst store.Tx)
	// Partial accepts a log that starts after some source tx into a target
	// that holds nothing from its source yet: the target then gets the
	// history from there on only (for example the entities of one client
	// on a shared server). A target that does hold a cursor must still be
	// continued without a gap.
	Partial bool
}

// ImportSummary describes a finished (or interrupted) import.
type ImportSummary struct {
	Source Source `json:"source"`
	// Applied and Skipped count source transactions: applied now, or
	// skipped because the target's cursor was already past them.
	Applied int64 `json:"applied"`
	Skipped int64 `json:"skipped"`
	// Ops counts the ops submitted, without the cursor's.
	Ops int64 `json:"ops"`
	// Evicted counts the ops left out because the log marks them evicted.
	Evicted int64 `json:"evicted_ops"`
	// KeptTxTimes counts the applied transactions that kept their source
	// tx time (targets with SubmitAt, when no later tx is in the way).
	KeptTxTimes int64 `json:"kept_tx_times"`
	// FirstTx and LastTx are the first and last source tx applied,
	// TargetFirstTx and TargetLastTx the target txs that applied them.
	FirstTx       *int64 `json:"first_tx"`
	LastTx        *int64 `json:"last_tx"`
	TargetFirstTx *int64 `json:"target_first_tx"`
	TargetLastTx  *int64 `json:"target_last_tx"`
	// Cursor is the target's cursor for the source afterwards (nil if the
	// target still holds nothing from it).
	Cursor *Cursor `json:"cursor"`
	// Trailer is the log's end line, once it has been read and checked.
	Trailer *Trailer `json:"trailer,omitempty"`
}

// Import applies the log in r to target, in one pass, each source
// transaction as one target transaction that also moves the target's
// cursor for the log's source (CursorID) to it, guarded by a match on the
// cursor's previous state. So an import killed at any point leaves the
// target consistent, and running it again applies exactly what is missing.
//
// The log must continue the cursor (else ErrNotContinuing, before
// anything is written): a log starting after source tx A needs a cursor at
// tx A or later (a log from the start, A = -1, needs none), and where the
// log overlaps the cursor its tx must have the tx time the cursor
// recorded. Transactions up to the cursor are skipped. A log exported from
// the target itself is refused.
//
// A target with store.TxTimeSubmitter (bitemporal.Store) gets each transaction with its
// source tx time, unless a later transaction is already in the target; then,
// as on XTDB, the target's clock gives the time and the source tx id and
// time are recorded in the cursor (see Mappings). Ops marked evicted are
// left out. A source match op that fails on the target aborts that
// transaction: Import stops with ErrDiverged naming the source tx.
//
// Faults of the log found as it is read stop the import with a *LineError;
// what was applied before stays applied (and is skipped by the next run).
// Use ImportFile to check a whole file before applying any of it (the CLI
// spools stdin to a file for that).
//
// r is read by a goroutine of Import's own, a few transactions ahead of the
// one being applied. When Import returns early, that goroutine ends at r's
// next Read; Import does not wait for a Read that blocks.
func Import(ctx context.Context, target store.Store, r io.Reader, o ImportOptions) (ImportSummary, error) {
	rd, err := NewReader(r)
	if err != nil {
		return ImportSummary{}, err
	}
	h := rd.Header()
	// The cursor's id is reserved: only an import may write it.
	im := &importer{ctx: store.WithReservedWrites(ctx), dst: target, o: o, h: h, sum: ImportSummary{Source: h.Source}}
	im.at, _ = target.(store.TxTimeSubmitter)
	latest, tst, err := store.Settle(ctx, target)
	if err != nil {
		return im.sum, fmt.Errorf("import: %w", err)
	}
	if store.SameStore(h.Source.Backend, h.Source.Location, tst) {
		return im.sum, &LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: the log was exported from the target itself (%s)", ErrNotContinuing, h.Source.ID)}
	}
	if latest != nil {
		im.lastTime = latest.Time
	}
	if im.cur, im.curDoc, err = readCursor(ctx, target, h.Source.ID); err != nil {
		return im.sum, fmt.Errorf("import: %w", err)
	}
	im.sum.Cursor = im.cur
	if err := im.checkStart(); err != nil {
		return im.sum, &LineError{Line: 1, TxID: -1, Err: err}
	}
	start := im.cur
	sawStart := start == nil || h.After >= start.TxID
	// A goroutine reads and decodes the next transactions while the
	// target applies this one.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	txs := make(chan decoded, 4)
	go readAhead(ctx, rd, start, txs)
	for d := range txs {
		if d.err != nil {
			return im.sum, d.err
		}
		if d.end != nil {
			im.sum.Trailer = d.end
			return im.sum, nil
		}
		tx := d.tx
		if !d.apply {
			if tx.ID == start.TxID {
				if !tx.Time.Equal(start.TxTime) {
					return im.sum, &LineError{Line: tx.Line, TxID: tx.ID, Err: fmt.Errorf("%w: the target applied source tx %d of %q made at %s, this log's tx %d was made at %s: not the same source history",
						ErrNotContinuing, start.TxID, h.Source.ID, store.FormatTime(start.TxTime), tx.ID, store.FormatTime(tx.Time))}
				}
				sawStart = true
			}
			im.sum.Skipped++
			im.progress(tx.ID)
			continue
		}
		if !sawStart {
			return im.sum, &LineError{Line: tx.Line, TxID: tx.ID, Err: fmt.Errorf("%w: the target's cursor for %q is at source tx %d, which this log (from tx %d) does not hold: not the same source history",
				ErrNotContinuing, h.Source.ID, start.TxID, h.After)}
		}
		if err := im.apply(tx, d.ops, d.evicted); err != nil {
			return im.sum, &LineError{Line: tx.Line, TxID: tx.ID, Err: err}
		}
		im.progress(tx.ID)
	}
	return im.sum, ctx.Err()
}

// decoded is one step of readAhead: a transaction (with its store ops if
// it is to be applied), the end of the log, or an error.
type decoded struct {
	tx      Tx
	apply   bool
	ops     []store.Op
	evicted int64
	end     *Trailer
	err     error
}

// readAhead sends the log's transactions to out, decoding the documents
// of those after start, until the end line, an error, or ctx's end. It
// does not wait for a Read that blocks: that ends when the reader does.
func readAhead(ctx context.Context, rd *Reader, start *Cursor, out chan<- decoded) {
	defer close(out)
	for {
		var d decoded
		tx, err := rd.Next()
		switch {
		case err == io.EOF:
			t, _ := rd.Trailer()
			d.end = &t
		case err != nil:
			d.err = err
		default:
			d.tx = tx
			d.apply = start == nil || tx.ID > start.TxID
			if d.apply {
				if d.ops, d.evicted, err = storeOps(tx); err != nil {
					d.err = &LineError{Line: tx.Line, TxID: tx.ID, Err: err}
				}
			}
		}
		select {
		case out <- d:
		case <-ctx.Done():
			return
		}
		if d.end != nil || d.err != nil {
			return
		}
	}
}

// storeOps decodes tx's ops, leaving out the evicted ones (counted).
func storeOps(tx Tx) ([]store.Op, int64, error) {
	ops := make([]store.Op, 0, len(tx.Ops))
	var evicted int64
	for i, op := range tx.Ops {
		so, ok, err := op.StoreOp()
		if err != nil {
			return nil, 0, fmt.Errorf("%w: op %d: %v", ErrCorrupt, i+1, err)
		}
		if !ok {
			evicted++
			continue
		}
		ops = append(ops, so)
	}
	return ops, evicted, nil
}

// checkOps checks that every op of tx is one a store accepts (its
// document decodes under the store's input rules, store.Normalize passes),
// so that a log that verifies is not refused half-way through an import,
// and that every object a put writes describes itself truly
// (objects.VerifyDoc: its identity, content and metadata view hashes),
// which no store checks again and readers trust.
func checkOps(tx Tx) error {
	ops, _, err := storeOps(tx)
	if err == nil && len(ops) > 0 {
		_, err = store.Normalize(ops)
	}
	if err != nil {
		return &LineError{Line: tx.Line, TxID: tx.ID, Err: fmt.Errorf("a store would refuse this transaction: %w", err)}
	}
	for i, op := range ops {
		if op.Kind != store.OpPut {
			continue
		}
		if err := objects.VerifyDoc(op.Doc); err != nil {
			return &LineError{Line: tx.Line, TxID: tx.ID, Err: fmt.Errorf("%w: op %d puts %v object %s whose %s does not hold: %v",
				ErrCorrupt, i+1, op.Doc["type"], op.ID, objects.ErrorField(err), err)}
		}
	}
	return nil
}

// ImportFile checks the whole log at path (Verify: format, checksums, and
// every op against the store's input rules) and only then applies it
// (Import), so a damaged or unacceptable file changes nothing in the
// target. What the check cannot know is the target's state: a source match
// op that fails on the target stops the import with ErrDiverged after the
// transactions before it (each applied with its cursor move, so the target
// stays consistent and a re-run continues from there).
func ImportFile(ctx context.Context, target store.Store, path string, o ImportOptions) (ImportSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportSummary{}, fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	return ImportChecked(ctx, target, f, path, o)
}

// ImportChecked is ImportFile for a log in r, named name in errors: it
// reads r whole to check it, seeks back to its start and applies it. A
// caller with a stream (stdin) spools it to a file first.
func ImportChecked(ctx context.Context, target store.Store, r io.ReadSeeker, name string, o ImportOptions) (ImportSummary, error) {
	if _, _, err := verify(r, o.Progress); err != nil {
		return ImportSummary{}, fmt.Errorf("%s: %w", name, err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return ImportSummary{}, fmt.Errorf("import: %w", err)
	}
	sum, err := Import(ctx, target, r, o)
	if err != nil {
		return sum, fmt.Errorf("%s: %w", name, err)
	}
	return sum, nil
}

// verify is Verify with progress.
func verify(r io.Reader, progress ProgressFunc) (Header, Trailer, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	h := rd.Header()
	for {
		tx, err := rd.Next()
		if err == io.EOF {
			t, _ := rd.Trailer()
			return h, t, nil
		}
		if err != nil {
			return h, Trailer{}, err
		}
		if err := checkOps(tx); err != nil {
			return h, Trailer{}, err
		}
		if progress != nil {
			progress("verify", tx.ID-h.After, h.Upto-h.After)
		}
	}
}

type importer struct {
	ctx      context.Context
	dst      store.Store
	at       store.TxTimeSubmitter
	o        ImportOptions
	h        Header
	sum      ImportSummary
	cur      *Cursor
	curDoc   store.Doc
	lastTime time.Time
}

func (im *importer) progress(id int64) {
	if im.o.Progress != nil {
		im.o.Progress("import", id-im.h.After, im.h.Upto-im.h.After)
	}
}

// checkStart checks that the log continues the target's cursor.
func (im *importer) checkStart() error {
	h, c := im.h, im.cur
	switch {
	case c == nil && h.After >= 0 && !im.o.Partial:
		return fmt.Errorf("%w: the log starts after source tx %d, but the target holds nothing from %q: import a log from its start first (or accept a partial history)",
			ErrNotContinuing, h.After, h.Source.ID)
	case c == nil:
		return nil
	case h.After > c.TxID:
		return fmt.Errorf("%w: the log starts after source tx %d, but the target's cursor for %q is at tx %d: the source txs after %d up to %d are missing (export with --after %d)",
			ErrNotContinuing, h.After, h.Source.ID, c.TxID, c.TxID, h.After, c.TxID)
	case h.After == c.TxID && (h.AfterTxTime == nil || !h.AfterTxTime.Equal(c.TxTime)):
		got := "no committed tx " + fmt.Sprint(h.After)
		if h.AfterTxTime != nil {
			got = "tx " + fmt.Sprint(h.After) + " at " + store.FormatTime(*h.AfterTxTime)
		}
		return fmt.Errorf("%w: the target applied source tx %d of %q made at %s, but the log's source has %s: not the same source history",
			ErrNotContinuing, c.TxID, h.Source.ID, store.FormatTime(c.TxTime), got)
	}
	return nil
}

// apply submits one source transaction (its decoded ops) with the
// cursor's move.
func (im *importer) apply(tx Tx, txOps []store.Op, evicted int64) error {
	// The cursor's guard comes first (a backend can check leading matches
	// before writing anything), its move last.
	from := CursorValidTime
	n := len(txOps)
	ops := make([]store.Op, 0, n+2)
	ops = append(ops, store.Op{Kind: store.OpMatch, ID: CursorID(im.h.Source.ID), Doc: im.curDoc, ValidFrom: &from})
	ops = append(ops, txOps...)
	im.sum.Evicted += evicted
	next := Cursor{Source: im.h.Source.ID, TxID: tx.ID, TxTime: tx.Time}
	nextDoc := next.doc()
	ops = append(ops, store.PutAt(nextDoc, CursorValidTime))
	receipt, kept, err := im.submit(ops, tx.Time)
	if err != nil {
		return fmt.Errorf("applying: %w", err)
	}
	if _, err := im.dst.AwaitTx(im.ctx, receipt.ID, 0); err != nil {
		return fmt.Errorf("waiting for target tx %d: %w", receipt.ID, err)
	}
	ok, err := im.dst.TxCommitted(im.ctx, receipt.ID)
	if err != nil {
		return fmt.Errorf("target tx %d: %w", receipt.ID, err)
	}
	if !ok {
		return im.diverged(receipt)
	}
	im.lastTime = receipt.Time
	im.cur, im.curDoc = &next, nextDoc
	s := &im.sum
	s.Cursor = im.cur
	s.Applied++
	s.Ops += int64(n)
	if kept {
		s.KeptTxTimes++
	}
	id, tid := tx.ID, receipt.ID
	if s.FirstTx == nil {
		s.FirstTx, s.TargetFirstTx = &id, &tid
	}
	s.LastTx, s.TargetLastTx = &id, &tid
	if im.o.OnTx != nil {
		im.o.OnTx(tx, receipt)
	}
	return nil
}

// submit submits ops with the source tx time t when the target can keep
// it, else with the target's clock; kept says which.
func (im *importer) submit(ops []store.Op, t time.Time) (store.Tx, bool, error) {
	if im.at != nil && !t.Before(im.lastTime) {
		rc, err := im.at.SubmitAt(im.ctx, ops, t)
		if err == nil {
			return rc, true, nil
		}
		if !errors.Is(err, store.ErrInvalid) {
			return rc, false, err
		}
		// Another writer may have put a later transaction in the way. If
		// it is another import of this source, stop: submitting with the
		// clock would only abort, and leave a later tx time behind.
		latest, _, serr := store.Settle(im.ctx, im.dst)
		if serr != nil || latest == nil || !latest.Time.After(t) {
			return rc, false, err
		}
		now, _, cerr := readCursor(im.ctx, im.dst, im.h.Source.ID)
		if cerr != nil {
			return rc, false, cerr
		}
		if !sameCursor(now, im.cur) {
			return rc, false, im.moved(now)
		}
	}
	rc, err := im.dst.Submit(im.ctx, ops)
	return rc, false, err
}

// diverged explains an aborted transaction: the cursor moved under us, or
// one of the source's match ops failed on the target.
func (im *importer) diverged(receipt store.Tx) error {
	now, _, err := readCursor(im.ctx, im.dst, im.h.Source.ID)
	switch {
	case err != nil:
		return fmt.Errorf("%w: target tx %d aborted (and reading the cursor failed: %v)", ErrDiverged, receipt.ID, err)
	case !sameCursor(now, im.cur):
		return fmt.Errorf("target tx %d aborted: %w", receipt.ID, im.moved(now))
	}
	return fmt.Errorf("%w: target tx %d aborted: a match op of this source transaction failed on the target, so the target no longer holds what the source held; nothing of this transaction was applied", ErrDiverged, receipt.ID)
}

// moved is the error for a cursor another import moved to now.
func (im *importer) moved(now *Cursor) error {
	at := "removed"
	if now != nil {
		at = fmt.Sprintf("at source tx %d", now.TxID)
	}
	return fmt.Errorf("%w: another import moved the cursor for %q (now %s); run the import again", ErrDiverged, im.h.Source.ID, at)
}

func sameCursor(a, b *Cursor) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.TxID == b.TxID && a.TxTime.Equal(b.TxTime) && a.Source == b.Source
}
