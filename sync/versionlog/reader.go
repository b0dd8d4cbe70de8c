package versionlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/ctxstore/ctxstore/internal/jsonlimit"
	"github.com/ctxstore/ctxstore/store"
)

// MaxLineBytes bounds one line of a log (a document or a transaction), so
// that reading a damaged or hostile log takes bounded memory.
const MaxLineBytes = 128 << 20

// Reader reads and checks a log line by line, in memory bounded by the
// document window and the largest transaction. A gzip-compressed log is
// recognized by its magic bytes. Every fault is a *LineError naming the
// line; Next returns io.EOF only after the end line has been checked
// against everything before it, so a caller that must not act on a
// damaged log reads it through once (Verify) before acting.
type Reader struct {
	br     *bufio.Reader
	sum    hash.Hash
	line   int64
	header Header
	win    window
	counts Trailer
	last   *store.Tx
	end    *Trailer
}

// NewReader reads the header line of the log in r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)}
		}
		br = bufio.NewReaderSize(zr, 256<<10)
	}
	rd := &Reader{br: br, sum: sha256.New()}
	b, err := rd.readLine()
	if err == io.EOF {
		return nil, &LineError{Line: 1, TxID: -1, Err: fmt.Errorf("%w: the log is empty", ErrTruncated)}
	}
	if err != nil {
		return nil, err
	}
	if err := rd.parseHeader(b); err != nil {
		return nil, &LineError{Line: 1, TxID: -1, Err: err}
	}
	rd.sum.Write(b)
	rd.counts.Lines = 1
	rd.win = newWindow(rd.header.DocWindow)
	return rd, nil
}

// Header returns the log's header.
func (r *Reader) Header() Header { return r.header }

// Trailer returns the end line once Next has returned io.EOF.
func (r *Reader) Trailer() (Trailer, bool) {
	if r.end == nil {
		return Trailer{}, false
	}
	return *r.end, true
}

// readLine returns the next line, newline included; io.EOF at a clean end
// of input.
func (r *Reader) readLine() ([]byte, error) {
	var b []byte
	var err error
	for {
		var frag []byte
		frag, err = r.br.ReadSlice('\n')
		if len(b)+len(frag) > MaxLineBytes {
			return nil, &LineError{Line: r.line + 1, TxID: -1, Err: fmt.Errorf("%w: line %d is longer than %d bytes", ErrCorrupt, r.line+1, MaxLineBytes)}
		}
		b = append(b, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	switch {
	case err == io.EOF && len(b) == 0:
		return nil, io.EOF
	case err == io.EOF:
		r.line++
		return nil, &LineError{Line: r.line, TxID: -1, Err: fmt.Errorf("%w: line %d has no newline (the log was cut short)", ErrTruncated, r.line)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &LineError{Line: r.line + 1, TxID: -1, Err: fmt.Errorf("%w: compressed stream ends early: %v", ErrTruncated, err)}
	case err != nil:
		return nil, &LineError{Line: r.line + 1, TxID: -1, Err: fmt.Errorf("reading the log: %w", err)}
	}
	r.line++
	if err := jsonlimit.Depth(b, jsonlimit.MaxDepth); err != nil {
		return nil, &LineError{Line: r.line, TxID: -1, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	// encoding/json would decode a lone surrogate escape as U+FFFD, so
	// "k\ud800" and "k\udfff" would be one id, one document.
	if off := jsonlimit.LoneSurrogate(b); off >= 0 {
		return nil, &LineError{Line: r.line, TxID: -1, Err: fmt.Errorf("%w: byte %d of line %d: the escape %s is half of a UTF-16 surrogate pair, no Unicode character", ErrCorrupt, off, r.line, b[off:off+6])}
	}
	return b, nil
}

// lineType returns t of a line that starts with {"t":"<t>", as the
// writer writes every line.
func lineType(b []byte) (string, bool) {
	const prefix = `{"t":"`
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return "", false
	}
	rest := b[len(prefix):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return "", false
	}
	return string(rest[:i]), true
}

// decodeStrict decodes one line into v, refusing unknown fields.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object", ErrCorrupt)
	}
	return nil
}

type headerLine struct {
	T           string  `json:"t"`
	Format      string  `json:"format"`
	Version     int     `json:"version"`
	Source      Source  `json:"source"`
	After       *int64  `json:"after"`
	AfterTxTime *string `json:"after_tx_time"`
	Upto        *int64  `json:"upto"`
	DocWindow   int     `json:"doc_window"`
}

func (r *Reader) parseHeader(b []byte) error {
	// Look at format and version before anything else, so a log of a
	// later version is named as such rather than as corrupt.
	var id struct {
		Format  string `json:"format"`
		Version any    `json:"version"`
	}
	if t, ok := lineType(b); !ok || t != "header" || json.Unmarshal(b, &id) != nil || id.Format != FormatName {
		return fmt.Errorf("%w: not a ctxstore version log (the first line must be a %q header)", ErrVersion, FormatName)
	}
	if v, ok := id.Version.(float64); !ok || v != FormatVersion {
		return fmt.Errorf("%w: version %v (this ctxstore reads version %d)", ErrVersion, id.Version, FormatVersion)
	}
	var h headerLine
	if err := decodeStrict(b, &h); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	switch {
	case h.Source.ID == "":
		return fmt.Errorf("%w: header: source.id is empty", ErrCorrupt)
	case h.After == nil || *h.After < -1:
		return fmt.Errorf("%w: header: after must be a tx id or -1", ErrCorrupt)
	case h.Upto == nil || *h.Upto < -1:
		return fmt.Errorf("%w: header: upto must be a tx id or -1", ErrCorrupt)
	case h.DocWindow <= 0:
		return fmt.Errorf("%w: header: doc_window must be positive", ErrCorrupt)
	}
	r.header = Header{Source: h.Source, After: *h.After, Upto: *h.Upto, DocWindow: h.DocWindow}
	if h.AfterTxTime != nil {
		t, err := parseTime("after_tx_time", *h.AfterTxTime)
		if err != nil {
			return fmt.Errorf("header: %w", err)
		}
		r.header.AfterTxTime = &t
	}
	return nil
}

type opLine struct {
	Op        string          `json:"op"`
	ID        string          `json:"id"`
	Doc       json.RawMessage `json:"doc"`
	Evicted   bool            `json:"evicted"`
	ValidFrom json.RawMessage `json:"valid_from"`
	ValidTo   json.RawMessage `json:"valid_to"`
}

type txLine struct {
	T      string   `json:"t"`
	TxID   *int64   `json:"tx_id"`
	TxTime string   `json:"tx_time"`
	Ops    []opLine `json:"ops"`
}

type endLine struct {
	T string `json:"t"`
	Trailer
}

// Next returns the next transaction, its documents resolved from the
// window (still canonical JSON). At the end line it checks the counts and
// the checksum and returns io.EOF.
func (r *Reader) Next() (Tx, error) {
	if r.end != nil {
		return Tx{}, io.EOF
	}
	for {
		b, err := r.readLine()
		if err == io.EOF {
			return Tx{}, &LineError{Line: r.line + 1, TxID: -1,
				Err: fmt.Errorf("%w: the log ends after line %d without its end line", ErrTruncated, r.line)}
		}
		if err != nil {
			return Tx{}, err
		}
		t, _ := lineType(b)
		switch t {
		case "doc":
			if err := r.doc(b); err != nil {
				return Tx{}, &LineError{Line: r.line, TxID: -1, Err: err}
			}
		case "tx":
			tx, err := r.tx(b)
			if err != nil {
				return Tx{}, &LineError{Line: r.line, TxID: tx.ID, Err: err}
			}
			return tx, nil
		case "end":
			if err := r.finish(b); err != nil {
				return Tx{}, &LineError{Line: r.line, TxID: -1, Err: err}
			}
			return Tx{}, io.EOF
		default:
			return Tx{}, &LineError{Line: r.line, TxID: -1, Err: fmt.Errorf("%w: not a doc, tx or end line", ErrCorrupt)}
		}
	}
}

// doc reads a doc line. Its byte form is fixed,
// {"t":"doc","hash":"<64 hex>","doc":<canonical JSON>}, so it is cut
// apart rather than decoded: the hash is over the document's bytes anyway.
func (r *Reader) doc(b []byte) error {
	r.sum.Write(b)
	r.counts.Lines++
	const head, mid = `{"t":"doc","hash":"`, `","doc":`
	rest, ok := bytes.CutPrefix(b, []byte(head))
	if ok && len(rest) > 64 {
		var hash []byte
		hash, rest = rest[:64], rest[64:]
		if rest, ok = bytes.CutPrefix(rest, []byte(mid)); ok {
			var doc []byte
			if doc, ok = bytes.CutSuffix(rest, []byte("}\n")); ok {
				return r.addDoc(string(hash), doc)
			}
		}
	}
	return fmt.Errorf("%w: doc line is not of the form {\"t\":\"doc\",\"hash\":\"<sha256>\",\"doc\":{...}}", ErrCorrupt)
}

func (r *Reader) addDoc(hash string, doc []byte) error {
	if len(doc) == 0 || doc[0] != '{' || !json.Valid(doc) {
		return fmt.Errorf("%w: doc line: doc is not a JSON object", ErrCorrupt)
	}
	if h := contentHash(doc); h != hash {
		return fmt.Errorf("%w: doc line: the document's SHA-256 is %s, the line says %q", ErrCorrupt, h, hash)
	}
	if r.win.has(hash) {
		return fmt.Errorf("%w: doc line: document %s is already in the window", ErrCorrupt, hash)
	}
	// readLine's slices are not reused, so doc can be kept as it is.
	r.win.add(hash, doc)
	r.counts.Docs++
	return nil
}

func (r *Reader) tx(b []byte) (Tx, error) {
	r.sum.Write(b)
	r.counts.Lines++
	var l txLine
	if err := decodeStrict(b, &l); err != nil {
		return Tx{Tx: store.Tx{ID: -1}}, fmt.Errorf("tx line: %w", err)
	}
	if l.TxID == nil || *l.TxID < 0 {
		return Tx{Tx: store.Tx{ID: -1}}, fmt.Errorf("%w: tx line: tx_id must be a non-negative integer", ErrCorrupt)
	}
	tx := Tx{Tx: store.Tx{ID: *l.TxID}, Line: r.line, Ops: make([]Op, 0, len(l.Ops))}
	var err error
	if tx.Time, err = parseTime("tx_time", l.TxTime); err != nil {
		return tx, err
	}
	if tx.ID <= r.header.After || (r.header.Upto >= 0 && tx.ID > r.header.Upto) || r.header.Upto < 0 {
		return tx, fmt.Errorf("%w: tx %d is outside the header's range (%d, %d]", ErrCorrupt, tx.ID, r.header.After, r.header.Upto)
	}
	if r.last != nil && (tx.ID <= r.last.ID || tx.Time.Before(r.last.Time)) {
		return tx, fmt.Errorf("%w: tx %d at %s does not follow tx %d at %s", ErrCorrupt, tx.ID, store.FormatTime(tx.Time), r.last.ID, store.FormatTime(r.last.Time))
	}
	if l.Ops == nil {
		return tx, fmt.Errorf("%w: tx line has no ops array", ErrCorrupt)
	}
	for i, ol := range l.Ops {
		op, err := r.op(ol)
		if err != nil {
			return tx, fmt.Errorf("op %d: %w", i+1, err)
		}
		tx.Ops = append(tx.Ops, op)
	}
	r.win.trim()
	r.counts.count(tx.ID, len(tx.Ops))
	last := tx.Tx
	r.last = &last
	return tx, nil
}

func (r *Reader) op(l opLine) (Op, error) {
	op := Op{Kind: store.OpKind(l.Op), ID: l.ID, Evicted: l.Evicted}
	if l.ID == "" {
		return op, fmt.Errorf("%w: %s without id", ErrCorrupt, l.Op)
	}
	if Reserved(l.ID) {
		return op, fmt.Errorf("%w: %s of %q: ids starting with %q are reserved for the version log", ErrCorrupt, l.Op, l.ID, ReservedPrefix)
	}
	hasDoc, hasFrom, hasTo := l.Doc != nil, l.ValidFrom != nil, l.ValidTo != nil
	want := map[store.OpKind][3]bool{
		store.OpPut:    {true, true, true},
		store.OpDelete: {false, true, true},
		store.OpMatch:  {true, true, false},
		store.OpEvict:  {false, false, false},
	}
	w, known := want[op.Kind]
	if !known {
		return op, fmt.Errorf("%w: unknown op %q", ErrCorrupt, l.Op)
	}
	if w != [3]bool{hasDoc, hasFrom, hasTo} {
		return op, fmt.Errorf("%w: %s %q must have exactly the fields of its kind (doc: %v, valid_from: %v, valid_to: %v)",
			ErrCorrupt, l.Op, l.ID, w[0], w[1], w[2])
	}
	if l.Evicted && op.Kind != store.OpPut && op.Kind != store.OpMatch {
		return op, fmt.Errorf("%w: %s %q cannot be evicted", ErrCorrupt, l.Op, l.ID)
	}
	if hasDoc && string(l.Doc) != "null" {
		var h string
		if err := json.Unmarshal(l.Doc, &h); err != nil {
			return op, fmt.Errorf("%w: %s %q: doc must be a content hash or null", ErrCorrupt, l.Op, l.ID)
		}
		doc, ok := r.win.get(h)
		if !ok {
			return op, fmt.Errorf("%w: %s %q: document %s is not among the documents in the window", ErrCorrupt, l.Op, l.ID, h)
		}
		if l.Evicted {
			return op, fmt.Errorf("%w: %s %q is marked evicted but names a document", ErrCorrupt, l.Op, l.ID)
		}
		op.DocHash, op.Doc = h, doc
	} else if op.Kind == store.OpPut && !l.Evicted {
		return op, fmt.Errorf("%w: put %q has no document and is not marked evicted", ErrCorrupt, l.ID)
	}
	var err error
	if hasFrom {
		if op.ValidFrom, err = rawTime("valid_from", l.ValidFrom); err != nil {
			return op, err
		}
	}
	if hasTo && string(l.ValidTo) != "null" {
		to, err := rawTime("valid_to", l.ValidTo)
		if err != nil {
			return op, err
		}
		if to.Before(op.ValidFrom) {
			return op, fmt.Errorf("%w: %s %q: valid_to is before valid_from", ErrCorrupt, l.Op, l.ID)
		}
		op.ValidTo = &to
	}
	return op, nil
}

func rawTime(field string, raw json.RawMessage) (time.Time, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("%w: %s must be a time", ErrCorrupt, field)
	}
	return parseTime(field, s)
}

func (r *Reader) finish(b []byte) error {
	var e endLine
	if err := decodeStrict(b, &e); err != nil {
		return fmt.Errorf("end line: %w", err)
	}
	got := hex.EncodeToString(r.sum.Sum(nil))
	c := r.counts
	if e.Lines != c.Lines || e.Txs != c.Txs || e.Ops != c.Ops || e.Docs != c.Docs ||
		!sameOptInt(e.FirstTx, c.FirstTx) || !sameOptInt(e.LastTx, c.LastTx) {
		return fmt.Errorf("%w: the end line counts %d lines, %d txs, %d ops, %d docs; the log has %d, %d, %d, %d",
			ErrChecksum, e.Lines, e.Txs, e.Ops, e.Docs, c.Lines, c.Txs, c.Ops, c.Docs)
	}
	if e.SHA256 != got {
		return fmt.Errorf("%w: the end line says sha256 %s, lines 1-%d hash to %s", ErrChecksum, e.SHA256, c.Lines, got)
	}
	// Nothing may follow the end line.
	if _, err := r.br.ReadByte(); err == nil {
		return fmt.Errorf("%w: data after the end line", ErrCorrupt)
	} else if err != io.EOF {
		return fmt.Errorf("reading after the end line: %w", err)
	}
	c.SHA256 = got
	r.end = &c
	return nil
}

func sameOptInt(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
