package versionlog

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ctxstore/ctxstore/store"
)

// Writer writes a log: NewWriter writes the header, WriteTx one
// transaction (with the doc lines it needs), Close the end line. Its output
// depends only on what it is given, so the same transactions give the same
// bytes. A Writer is not safe for concurrent use.
type Writer struct {
	bw      *bufio.Writer
	sum     hash.Hash
	win     window
	buf     []byte
	t       Trailer
	last    *store.Tx
	written int64
	err     error
}

// NewWriter writes h as the header line to w and returns the writer.
// h.DocWindow <= 0 means DefaultDocWindow.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.DocWindow <= 0 {
		h.DocWindow = DefaultDocWindow
	}
	lw := &Writer{bw: bufio.NewWriterSize(w, 256<<10), sum: sha256.New(), win: newWindow(h.DocWindow)}
	b := append(lw.buf[:0], `{"t":"header","format":`...)
	b = AppendString(b, FormatName)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, FormatVersion, 10)
	b = append(b, `,"source":{"id":`...)
	b = AppendString(b, validUTF8(h.Source.ID))
	b = append(b, `,"backend":`...)
	b = AppendString(b, validUTF8(h.Source.Backend))
	b = append(b, `,"version":`...)
	b = AppendString(b, validUTF8(h.Source.Version))
	b = append(b, `,"location":`...)
	b = AppendString(b, validUTF8(h.Source.Location))
	b = append(b, `},"after":`...)
	b = strconv.AppendInt(b, h.After, 10)
	b = append(b, `,"after_tx_time":`...)
	b = appendOptTime(b, h.AfterTxTime)
	b = append(b, `,"upto":`...)
	b = strconv.AppendInt(b, h.Upto, 10)
	b = append(b, `,"doc_window":`...)
	b = strconv.AppendInt(b, int64(h.DocWindow), 10)
	b = append(b, "}\n"...)
	lw.buf = b
	if err := lw.line(b); err != nil {
		return nil, err
	}
	return lw, nil
}

func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// line writes one complete line (newline included) and adds it to the
// checksum.
func (w *Writer) line(b []byte) error {
	if w.err != nil {
		return w.err
	}
	w.sum.Write(b)
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("writing the log: %w", err)
		return w.err
	}
	w.t.Lines++
	w.written += int64(len(b))
	return nil
}

// WriteTx writes tx: first a doc line for each document it uses that is
// not in the window, then its tx line. Transactions must come in
// increasing tx id order with non-decreasing tx times; every op must be
// explicit (see Op), with Doc and DocHash set for puts and matches that
// are not evicted.
func (w *Writer) WriteTx(tx Tx) error {
	if w.last != nil && (tx.ID <= w.last.ID || tx.Time.Before(w.last.Time)) {
		return fmt.Errorf("tx %d at %s after tx %d at %s: transactions must come in id and time order",
			tx.ID, store.FormatTime(tx.Time), w.last.ID, store.FormatTime(w.last.Time))
	}
	for _, op := range tx.Ops {
		if op.DocHash == "" || w.win.has(op.DocHash) {
			continue
		}
		b := append(w.buf[:0], `{"t":"doc","hash":`...)
		b = AppendString(b, op.DocHash)
		b = append(b, `,"doc":`...)
		b = append(b, op.Doc...)
		b = append(b, "}\n"...)
		w.buf = b
		if err := w.line(b); err != nil {
			return err
		}
		w.win.add(op.DocHash, nil)
		w.t.Docs++
	}
	b := append(w.buf[:0], `{"t":"tx","tx_id":`...)
	b = strconv.AppendInt(b, tx.ID, 10)
	b = append(b, `,"tx_time":`...)
	b = appendTime(b, tx.Time)
	b = append(b, `,"ops":[`...)
	for i, op := range tx.Ops {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendOp(b, op); err != nil {
			return fmt.Errorf("tx %d op %d: %w", tx.ID, i+1, err)
		}
	}
	b = append(b, "]}\n"...)
	w.buf = b
	if err := w.line(b); err != nil {
		return err
	}
	w.win.trim()
	w.t.count(tx.ID, len(tx.Ops))
	last := tx.Tx
	w.last = &last
	return nil
}

// appendOp appends one op object, its fields in the order of the spec.
func appendOp(b []byte, op Op) ([]byte, error) {
	if !utf8.ValidString(op.ID) || op.ID == "" {
		return b, fmt.Errorf("%s: id %q is empty or not valid UTF-8", op.Kind, op.ID)
	}
	b = append(b, `{"op":`...)
	b = AppendString(b, string(op.Kind))
	b = append(b, `,"id":`...)
	b = AppendString(b, op.ID)
	docRef := func(b []byte) []byte {
		b = append(b, `,"doc":`...)
		if op.DocHash == "" {
			b = append(b, "null"...)
		} else {
			b = AppendString(b, op.DocHash)
		}
		if op.Evicted {
			b = append(b, `,"evicted":true`...)
		}
		return b
	}
	switch op.Kind {
	case store.OpPut, store.OpDelete:
		if op.Kind == store.OpPut {
			if op.DocHash == "" && !op.Evicted {
				return b, fmt.Errorf("put %q has no document and is not marked evicted", op.ID)
			}
			b = docRef(b)
		}
		b = append(b, `,"valid_from":`...)
		b = appendTime(b, op.ValidFrom)
		b = append(b, `,"valid_to":`...)
		b = appendOptTime(b, op.ValidTo)
	case store.OpMatch:
		b = docRef(b)
		b = append(b, `,"valid_from":`...)
		b = appendTime(b, op.ValidFrom)
	case store.OpEvict:
	default:
		return b, fmt.Errorf("unknown op %q", op.Kind)
	}
	return append(b, '}'), nil
}

// Close writes the end line, flushes and returns the trailer. It does not
// close the underlying writer.
func (w *Writer) Close() (Trailer, error) {
	if w.err != nil {
		return w.t, w.err
	}
	w.t.SHA256 = hex.EncodeToString(w.sum.Sum(nil))
	b := append(w.buf[:0], `{"t":"end","lines":`...)
	b = strconv.AppendInt(b, w.t.Lines, 10)
	b = append(b, `,"txs":`...)
	b = strconv.AppendInt(b, w.t.Txs, 10)
	b = append(b, `,"ops":`...)
	b = strconv.AppendInt(b, w.t.Ops, 10)
	b = append(b, `,"docs":`...)
	b = strconv.AppendInt(b, w.t.Docs, 10)
	b = append(b, `,"first_tx":`...)
	b = appendOptInt(b, w.t.FirstTx)
	b = append(b, `,"last_tx":`...)
	b = appendOptInt(b, w.t.LastTx)
	b = append(b, `,"sha256":`...)
	b = AppendString(b, w.t.SHA256)
	b = append(b, "}\n"...)
	if _, err := w.bw.Write(b); err != nil {
		return w.t, fmt.Errorf("writing the log: %w", err)
	}
	w.written += int64(len(b))
	if err := w.bw.Flush(); err != nil {
		return w.t, fmt.Errorf("writing the log: %w", err)
	}
	return w.t, nil
}

// Bytes is the number of bytes written so far (uncompressed, after Close
// including the end line).
func (w *Writer) Bytes() int64 { return w.written }

// window is the set of documents a reader holds: every doc line since the
// last tx line, plus the size most recent before it. Writer and Reader keep
// the same window, so the writer knows which documents the reader has.
type window struct {
	size  int
	docs  map[string][]byte // hash -> canonical JSON (nil on the writer side)
	order []string          // hashes, oldest first
}

func newWindow(size int) window {
	return window{size: size, docs: make(map[string][]byte, size)}
}

func (w *window) has(h string) bool { _, ok := w.docs[h]; return ok }

func (w *window) get(h string) ([]byte, bool) { d, ok := w.docs[h]; return d, ok }

func (w *window) add(h string, doc []byte) {
	w.docs[h] = doc
	w.order = append(w.order, h)
}

// trim keeps the size most recent documents (after a tx line).
func (w *window) trim() {
	n := len(w.order) - w.size
	if n <= 0 {
		return
	}
	for _, h := range w.order[:n] {
		delete(w.docs, h)
	}
	// Reuse the array: copy the kept tail to the front.
	k := copy(w.order, w.order[n:])
	clear(w.order[k:])
	w.order = w.order[:k]
}
