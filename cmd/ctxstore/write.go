package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode"

	"golang.org/x/term"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/objects"

	"github.com/ctxstore/ctxstore/store"
)

// maxLineErrors caps how many bad lines put --lines reports.
const maxLineErrors = 10

type putCmd struct {
	File  string `arg:"" optional:"" default:"-" placeholder:"FILE" help:"JSON file to read; - or nothing reads stdin."`
	Lines bool   `name:"lines" help:"Read JSON Lines: one document per line, all written in one transaction."`
	// IfMatch makes put a compare-and-swap.
	IfMatch string `name:"if-match" placeholder:"HASH|absent" help:"Write only if the document's current version (at --valid-from, default now) has this content hash (history --json shows it), or, with absent, if there is none; otherwise nothing is written and the exit status is 3."`
	validRange
}

type deleteCmd struct {
	ID string `arg:"" help:"The document id (xt/id)."`
	validRange
}

type evictCmd struct {
	ID string `arg:"" help:"The document id (xt/id)."`
}

// writeJSON is the --json output of put, delete and evict.
type writeJSON struct {
	TxID   int64    `json:"tx_id"`
	TxTime string   `json:"tx_time"`
	IDs    []string `json:"ids"`
}

// Run implements put.
func (c *putCmd) Run(a *app) error {
	if err := c.check(); err != nil {
		return err
	}
	if c.IfMatch != "" && c.Lines {
		return usagef("--if-match takes one document, not --lines")
	}
	name, data, err := a.readInput(c.File)
	if err != nil {
		return err
	}
	var docs []store.Doc
	if c.Lines {
		docs, err = decodeLines(name, data)
	} else {
		var doc store.Doc
		doc, err = decodeOne(name, data)
		docs = []store.Doc{doc}
	}
	if err != nil {
		return err
	}
	ops := make([]store.Op, len(docs))
	for i, d := range docs {
		ops[i] = store.Op{Kind: store.OpPut, Doc: d, ValidFrom: c.ValidFrom.ptr(), ValidTo: c.ValidTo.ptr()}
	}
	if c.IfMatch != "" {
		return a.putIfMatch(ops[0], c.IfMatch)
	}
	return a.submit(ops)
}

// ifMatchAbsent is the --if-match value that expects no document.
const ifMatchAbsent = "absent"

// putIfMatch writes put only if the version of its entity visible at its
// valid time (now by default) has content hash want ("absent": none). It
// reads that version, then submits a match on it before the put, so a
// write that lands in between aborts the transaction: no lost update.
func (a *app) putIfMatch(put store.Op, want string) error {
	ops, err := store.Normalize([]store.Op{put})
	if err != nil {
		return err
	}
	put = ops[0]
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	var at time.Time // zero: now
	if put.ValidFrom != nil {
		at = *put.ValidFrom
	}
	b := store.Basis{ValidTime: at}
	var cur store.Doc
	have := ifMatchAbsent
	etx, err := s.EntityTx(a.ctx, put.ID, b)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case !etx.Deleted:
		tx := etx.TxID
		if cur, err = s.Entity(a.ctx, put.ID, store.Basis{ValidTime: at, TxID: &tx}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if cur != nil {
			have = etx.ContentHash
		}
	}
	if have != want {
		return fmt.Errorf("put --if-match %s of %q: %w: the current version is %s; nothing was written", want, put.ID, store.ErrConflict, have)
	}
	match := store.Op{Kind: store.OpMatch, ID: put.ID, Doc: cur, ValidFrom: put.ValidFrom}
	if err := a.submitOn(s, []store.Op{match, put}); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("put --if-match %s of %q: another write changed it since it was read; nothing was written: %w", want, put.ID, err)
		}
		return err
	}
	return nil
}

// Run implements delete.
func (c *deleteCmd) Run(a *app) error {
	if err := c.check(); err != nil {
		return err
	}
	return a.submit([]store.Op{{Kind: store.OpDelete, ID: c.ID, ValidFrom: c.ValidFrom.ptr(), ValidTo: c.ValidTo.ptr()}})
}

// Run implements evict.
func (c *evictCmd) Run(a *app) error {
	return a.submit([]store.Op{store.Evict(c.ID)})
}

// submit writes ops as one transaction, waits for it and prints the
// receipt. An aborted transaction is an error.
func (a *app) submit(ops []store.Op) error {
	ops, err := store.Normalize(ops)
	if err != nil {
		return err
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	return a.submitOn(s, ops)
}

// submitOn is submit on an open store, which it closes.
func (a *app) submitOn(s store.Store, ops []store.Op) error {
	tx, err := store.SubmitWait(a.ctx, s, ops)
	if err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("closing the store after tx %d: %w", tx.ID, err)
	}
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = op.ID
	}
	if a.cli.JSON {
		return a.printJSON(writeJSON{TxID: tx.ID, TxTime: timeText(tx.Time), IDs: ids})
	}
	_, err = fmt.Fprintf(a.stdout, "tx %d at %s\n", tx.ID, timeText(tx.Time))
	return err
}

// readInput reads a file, or stdin for "-". It returns the name to use in
// error messages.
func (a *app) readInput(file string) (string, []byte, error) {
	if file == "-" || file == "" {
		if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintln(a.stderr, "ctxstore: reading JSON from the terminal; end with Ctrl-D")
		}
		data, err := io.ReadAll(a.stdin)
		if err != nil {
			return "", nil, fmt.Errorf("reading stdin: %w", err)
		}
		return "stdin", data, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, err // *PathError names the file
	}
	return file, data, nil
}

// decodeOne decodes the one document of a file. Syntax errors name the
// line they are on.
func decodeOne(name string, data []byte) (store.Doc, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: no document (the input is empty)", name)
	}
	if err := jsonlimit.Depth(data, jsonlimit.MaxDepth); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if off := jsonlimit.LoneSurrogate(data); off >= 0 {
		return nil, fmt.Errorf("%s:%d: %w", name, lineOf(data, int64(off)+1), loneSurrogate(data, off))
	}
	doc, err := store.DecodeDoc(data)
	if err == nil {
		err = checkPutID(doc)
	}
	if err == nil {
		return doc, nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("%s:%d: %w", name, lineOf(data, se.Offset), err)
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "data after the document"):
		msg += " (use --lines for one document per line)"
	case strings.Contains(msg, "got an array"):
		msg += " (use --lines for many documents, one per line)"
	}
	return nil, fmt.Errorf("%s: %s", name, msg)
}

// loneSurrogate is the error for a lone surrogate escape at byte off of
// data (jsonlimit.LoneSurrogate).
func loneSurrogate(data []byte, off int) error {
	return fmt.Errorf("byte %d: the escape %s is half of a UTF-16 surrogate pair, no Unicode character (encoding/json would turn it into U+FFFD, so two such ids would be one)", off, data[off:off+6])
}

// checkPutID applies the documented id limits (docs/security.md) to a
// document put: at most objects.MaxIDLen bytes, no control characters
// (NUL, ESC, DEL, C1).
func checkPutID(doc store.Doc) error {
	id, _ := doc[store.IDKey].(string)
	if len(id) > objects.MaxIDLen {
		return fmt.Errorf("field %q: the id is %d bytes, longer than %d", store.IDKey, len(id), objects.MaxIDLen)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("field %q: the id holds the control character %U at byte %d", store.IDKey, r, i)
		}
	}
	return nil
}

// lineOf returns the 1-based line holding byte offset off (the offset
// just after the bad byte, as json.SyntaxError gives it).
func lineOf(data []byte, off int64) int {
	if off > 0 {
		off--
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// decodeLines decodes JSON Lines: one document per non-blank line. Every
// bad line (up to maxLineErrors) is reported as "name:line: problem".
func decodeLines(name string, data []byte) ([]store.Doc, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var docs []store.Doc
	var errs []string
	bad := 0
	r := bufio.NewReader(bytes.NewReader(data))
	for n := 1; ; n++ {
		line, readErr := r.ReadBytes('\n')
		line = bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(line)) > 0 {
			err := jsonlimit.Depth(line, jsonlimit.MaxDepth)
			var doc store.Doc
			if off := jsonlimit.LoneSurrogate(line); err == nil && off >= 0 {
				err = loneSurrogate(line, off)
			}
			if err == nil {
				doc, err = store.DecodeDoc(line)
			}
			if err == nil {
				err = checkPutID(doc)
			}
			if err != nil {
				bad++
				if len(errs) < maxLineErrors {
					errs = append(errs, fmt.Sprintf("%s:%d: %v", name, n, err))
				}
			} else {
				docs = append(docs, doc)
			}
		}
		if readErr != nil { // io.EOF: reading from memory fails no other way
			break
		}
	}
	if bad > 0 {
		if bad > len(errs) {
			errs = append(errs, fmt.Sprintf("... and %d more bad lines", bad-len(errs)))
		}
		errs = append(errs, fmt.Sprintf("%s: %d bad line(s); nothing was written", name, bad))
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: no documents (the input is empty)", name)
	}
	return docs, nil
}
