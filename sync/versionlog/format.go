package versionlog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ctxstore/ctxstore/store"
)

// Format identification, as written in the header line.
const (
	// FormatName is the header's "format" value.
	FormatName = "ctxstore-versionlog"
	// FormatVersion is the only version this package reads and writes. A
	// log of another version is refused (ErrVersion).
	FormatVersion = 1
)

// DefaultDocWindow is the number of recent doc lines a writer assumes
// its reader keeps (see Header.DocWindow).
const DefaultDocWindow = 1024

// ReservedPrefix starts the ids of the entities the version log keeps in
// a store for itself (the sync cursors). Export leaves them out and import
// refuses a log that writes them; the stores refuse other writers
// (store.ReservedPrefix, store.CheckReserved).
const ReservedPrefix = store.ReservedPrefix

// Errors a log or an import can fail with. Faults in a log come wrapped in
// a *LineError naming the line.
var (
	// ErrTruncated: the log ends early (a line without its newline, or no
	// end line).
	ErrTruncated = errors.New("truncated log")
	// ErrCorrupt: a line is not what the format allows at that place
	// (malformed JSON, a missing or unknown field, a document that does not
	// match its hash, a reference to a document not in the window...).
	ErrCorrupt = errors.New("corrupt log")
	// ErrChecksum: the end line's counts or checksum do not match the lines
	// before it.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrVersion: the log is not a version log, or of a version this
	// build does not read.
	ErrVersion = errors.New("unknown format version")
	// ErrNotContinuing: the log does not continue what the target already
	// holds from the same source (see Import).
	ErrNotContinuing = errors.New("log does not continue the target's cursor")
	// ErrDiverged: a source transaction aborted on the target, because one
	// of its match ops failed there or another import moved the cursor.
	ErrDiverged = errors.New("target diverged")
)

// LineError is a fault at one line of a log (1-based), in the source
// transaction TxID when there is one (-1 otherwise). It wraps one of the
// errors above or the store's error.
type LineError struct {
	Line int64
	TxID int64
	Err  error
}

// Error formats the error as "line N (source tx T): cause".
func (e *LineError) Error() string {
	if e.TxID >= 0 {
		return fmt.Sprintf("line %d (source tx %d): %v", e.Line, e.TxID, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Source describes the store a log was exported from. ID names it for
// cursors: by default "<backend>:<location>" from the store's Status.
type Source struct {
	ID       string `json:"id"`
	Backend  string `json:"backend"`
	Version  string `json:"version"`
	Location string `json:"location"`
}

// SourceOf describes st from its status; id overrides the default ID when
// not empty.
func SourceOf(st store.Status, id string) Source {
	if id == "" {
		id = st.Backend + ":" + st.Location
	}
	return Source{ID: id, Backend: st.Backend, Version: st.Version, Location: st.Location}
}

// Header is a log's first line.
type Header struct {
	Source Source
	// After is the tx id the log starts after (-1: from the first).
	After int64
	// AfterTxTime is the source's tx time of tx After, when After is a
	// committed transaction of the source; nil otherwise.
	AfterTxTime *time.Time
	// Upto is the latest source tx when the export started (-1: none); the
	// log holds the committed transactions in (After, Upto].
	Upto int64
	// DocWindow is how many doc lines, besides those of the transaction
	// being read, a reader keeps (see docs/formats/versionlog.md).
	DocWindow int
}

// Trailer is a log's end line: counts of the lines before it and the
// SHA-256 (hex) of their bytes, newlines included.
type Trailer struct {
	Lines   int64  `json:"lines"`
	Txs     int64  `json:"txs"`
	Ops     int64  `json:"ops"`
	Docs    int64  `json:"docs"`
	FirstTx *int64 `json:"first_tx"`
	LastTx  *int64 `json:"last_tx"`
	SHA256  string `json:"sha256"`
}

// count adds one transaction of ops ops with id to the counts.
func (t *Trailer) count(id int64, ops int) {
	t.Txs++
	t.Ops += int64(ops)
	if t.FirstTx == nil {
		first := id
		t.FirstTx = &first
	}
	t.LastTx = &id
}

// Op is one operation as the log holds it: every time explicit.
type Op struct {
	Kind store.OpKind
	ID   string
	// DocHash is the SHA-256 (hex) of Doc; empty for a delete, an evict, a
	// match asserting absence, and an evicted put or match.
	DocHash string
	// Doc is the document in canonical JSON (put, match), nil if none.
	Doc json.RawMessage
	// ValidFrom is the start of a put or delete, or the valid time of a
	// match; zero for an evict.
	ValidFrom time.Time
	// ValidTo is the exclusive end of a put or delete; nil is open-ended.
	ValidTo *time.Time
	// Evicted marks a put or match whose document was evicted from the
	// source: the log does not carry it and import skips the op.
	Evicted bool
}

// StoreOp returns op as a store op, its document decoded; an evicted op
// has no store form (ok false).
func (op Op) StoreOp() (store.Op, bool, error) {
	if op.Evicted {
		return store.Op{}, false, nil
	}
	out := store.Op{Kind: op.Kind, ID: op.ID, ValidTo: op.ValidTo}
	if op.Kind != store.OpEvict {
		vf := op.ValidFrom
		out.ValidFrom = &vf
	}
	if op.Doc != nil {
		doc, err := store.DecodeDoc(op.Doc)
		if err != nil {
			return store.Op{}, false, fmt.Errorf("%s %q: document: %w", op.Kind, op.ID, err)
		}
		out.Doc = doc
	}
	return out, true, nil
}

// Tx is one source transaction of a log.
type Tx struct {
	store.Tx
	Ops []Op
	// Line is the tx line's number in the log (set by Reader).
	Line int64
}

// FromLogged makes a logged transaction explicit: valid_from defaults to
// the tx time, documents are canonicalized and hashed, and a put or match
// whose document was evicted (store.Op.Evicted; a put without document) is
// marked Evicted.
func FromLogged(lt store.LoggedTx) (Tx, error) {
	return fromLogged(lt, nil)
}

// fromLogged is FromLogged; canon, if not nil, holds the document of each
// op as canonical JSON already (see store.CanonicalTxLogger), and the ops' Doc is
// not used.
func fromLogged(lt store.LoggedTx, canon []json.RawMessage) (Tx, error) {
	tx := Tx{Tx: store.Tx{ID: lt.ID, Time: store.MS(lt.Time)}, Ops: make([]Op, 0, len(lt.Ops))}
	for i, o := range lt.Ops {
		op := Op{Kind: o.Kind, ID: o.ID}
		if op.ID == "" && o.Doc != nil {
			op.ID, _ = store.DocID(o.Doc)
		}
		if o.Kind != store.OpEvict {
			op.ValidFrom = tx.Time
			if o.ValidFrom != nil {
				op.ValidFrom = store.MS(*o.ValidFrom)
			}
			if o.ValidTo != nil && o.Kind != store.OpMatch {
				vt := store.MS(*o.ValidTo)
				op.ValidTo = &vt
			}
		}
		switch hasDoc := o.Kind == store.OpPut || o.Kind == store.OpMatch; {
		case o.Evicted && hasDoc:
			op.Evicted = true
		case canon != nil && canon[i] != nil && hasDoc:
			op.Doc, op.DocHash = canon[i], contentHash(canon[i])
		case canon == nil && o.Doc != nil && hasDoc:
			c, err := store.Canonical(o.Doc)
			if err != nil {
				return Tx{}, fmt.Errorf("tx %d op %d (%s %q): canonical JSON: %w", lt.ID, i+1, o.Kind, o.ID, err)
			}
			op.Doc, op.DocHash = c, contentHash(c)
		case o.Kind == store.OpPut:
			op.Evicted = true
		}
		tx.Ops = append(tx.Ops, op)
	}
	return tx, nil
}

// contentHash is the SHA-256 of canonical JSON, in hex.
func contentHash(canon []byte) string {
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// Reserved reports whether id is one of the version log's own entities.
func Reserved(id string) bool { return store.Reserved(id) }

// AppendString appends s as a JSON string, escaped as RFC 8785 does: only
// quote, backslash and control characters. s must be valid UTF-8. Formats
// built on the version log (session bundles) write their strings with it.
func AppendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, store.TimeFormat)
	return append(b, '"')
}

func appendOptTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendOptInt(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// parseTime reads a time the way the writer writes it, and only that way:
// RFC 3339 in UTC with exactly three fraction digits.
func parseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(store.TimeFormat, s)
	if err != nil || store.FormatTime(t) != s {
		return time.Time{}, fmt.Errorf("%w: %s %q is not a time of the form 2006-01-02T15:04:05.000Z", ErrCorrupt, field, s)
	}
	return t.UTC(), nil
}
