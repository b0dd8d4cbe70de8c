package store

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// OpKind names a transaction operation.
type OpKind string

// The operations of a transaction.
const (
	// OpPut writes Doc from ValidFrom (default: the tx time) to ValidTo. With
	// no ValidTo it runs until the next different version; with one, the
	// version visible at ValidTo before the write is restored there.
	OpPut OpKind = "put"
	// OpDelete writes a tombstone with the same range rules as OpPut.
	OpDelete OpKind = "delete"
	// OpMatch aborts the transaction unless the document of ID visible at
	// ValidFrom (default: the tx time) as of this transaction equals Doc; a
	// nil Doc asserts that the entity is absent.
	OpMatch OpKind = "match"
	// OpEvict removes every version and document of ID, in all times.
	OpEvict OpKind = "evict"
)

// Op is one operation of a transaction.
type Op struct {
	Kind OpKind `json:"op"`
	// ID is the entity. For OpPut it must equal Doc's "xt/id" (an empty ID is
	// taken from the document).
	ID string `json:"id"`
	// Doc is the document to put, or the document a match expects.
	Doc Doc `json:"doc,omitempty"`
	// ValidFrom is the start of the valid time range of a put or delete, or
	// the valid time a match reads at. Nil means the transaction time.
	ValidFrom *time.Time `json:"valid_from,omitempty"`
	// ValidTo is the exclusive end of a put or delete; nil means open-ended.
	// It requires ValidFrom.
	ValidTo *time.Time `json:"valid_to,omitempty"`
	// Evicted is set only by Store.TxLog, on a put or match whose document
	// was evicted since: Doc is then nil (for a match, it does not assert
	// absence). Submit refuses an op with Evicted set.
	Evicted bool `json:"evicted,omitempty"`
}

// Put returns a put of doc from the transaction time on.
func Put(doc Doc) Op { return Op{Kind: OpPut, Doc: doc} }

// PutAt returns a put of doc valid from `from` until the next version.
func PutAt(doc Doc, from time.Time) Op { return Op{Kind: OpPut, Doc: doc, ValidFrom: &from} }

// PutRange returns a put of doc valid in [from, to).
func PutRange(doc Doc, from, to time.Time) Op {
	return Op{Kind: OpPut, Doc: doc, ValidFrom: &from, ValidTo: &to}
}

// Delete returns a delete of id from the transaction time on.
func Delete(id string) Op { return Op{Kind: OpDelete, ID: id} }

// DeleteRange returns a delete of id in [from, to); a nil to is open-ended.
func DeleteRange(id string, from time.Time, to *time.Time) Op {
	return Op{Kind: OpDelete, ID: id, ValidFrom: &from, ValidTo: to}
}

// Match returns a match of id against doc (nil: absent) at the tx time.
func Match(id string, doc Doc) Op { return Op{Kind: OpMatch, ID: id, Doc: doc} }

// Evict returns an evict of id.
func Evict(id string) Op { return Op{Kind: OpEvict, ID: id} }

// Normalize validates ops and returns copies with ids filled in from put
// documents and times truncated to the millisecond, in UTC. The error wraps
// ErrInvalid and names the op (1-based), its id and the field at fault.
func Normalize(ops []Op) ([]Op, error) {
	if len(ops) == 0 {
		return nil, &Error{Op: "submit", Kind: ErrInvalid, Msg: "a transaction needs at least one op"}
	}
	out := make([]Op, len(ops))
	evicted := map[string]int{}
	for i, op := range ops {
		n, err := normalizeOp(op)
		if err != nil {
			err.OpIndex = i + 1
			return nil, err
		}
		if at, ok := evicted[n.ID]; ok {
			// XTDB 1.x loses such ops (docs/xtdb-semantics.md, "evict + put in one tx"); refuse them on
			// every backend rather than diverge.
			return nil, &Error{Op: "submit", Kind: ErrInvalid, OpIndex: i + 1, ID: n.ID, Field: "op",
				Msg: fmt.Sprintf("%s after evict (op %d) of the same entity in one transaction; submit it in a later transaction", n.Kind, at)}
		}
		if n.Kind == OpEvict {
			evicted[n.ID] = i + 1
		}
		out[i] = n
	}
	return out, nil
}

func normalizeOp(op Op) (Op, *Error) {
	bad := func(field, format string, args ...any) (Op, *Error) {
		return Op{}, &Error{Op: "submit", Kind: ErrInvalid, ID: op.ID, Field: field, Msg: fmt.Sprintf("%s: ", op.Kind) + fmt.Sprintf(format, args...)}
	}
	op.ValidFrom = msPtr(op.ValidFrom)
	op.ValidTo = msPtr(op.ValidTo)
	if op.Evicted {
		return bad("evicted", "an op read from the tx log without its evicted document cannot be submitted")
	}
	switch op.Kind {
	case OpPut:
		if op.Doc == nil {
			return bad("doc", "a put needs a document")
		}
		id, err := DocID(op.Doc)
		if err != nil {
			return bad(IDKey, "%v", err)
		}
		if op.ID != "" && op.ID != id {
			return bad(IDKey, "op id %q differs from the document's id %q", op.ID, id)
		}
		op.ID = id
		if err := ValidateDoc(op.Doc); err != nil {
			return bad("doc", "%v", err)
		}
	case OpDelete, OpEvict, OpMatch:
		if op.ID == "" {
			return bad("id", "an id is required")
		}
		if op.Kind != OpMatch && op.Doc != nil {
			return bad("doc", "takes no document")
		}
		if op.Kind == OpMatch && op.Doc != nil {
			id, err := DocID(op.Doc)
			if err != nil {
				return bad(IDKey, "expected document: %v", err)
			}
			if id != op.ID {
				return bad(IDKey, "expected document's id %q differs from the op id", id)
			}
			if err := ValidateDoc(op.Doc); err != nil {
				return bad("doc", "%v", err)
			}
		}
	default:
		return bad("op", "unknown op %q (want put, delete, match or evict)", string(op.Kind))
	}
	if !utf8.ValidString(op.ID) {
		return bad("id", "id is not valid UTF-8")
	}
	if err := ValidateID(op.ID); err != nil {
		op.ID = shortID(op.ID)
		field := "id"
		if op.Kind == OpPut {
			field = IDKey
		}
		return bad(field, "%v", err)
	}
	switch op.Kind {
	case OpEvict:
		if op.ValidFrom != nil || op.ValidTo != nil {
			return bad("valid_from", "evict takes no valid times")
		}
	case OpMatch:
		if op.ValidTo != nil {
			return bad("valid_to", "match takes one valid time (valid_from)")
		}
	default:
		if op.ValidTo != nil && op.ValidFrom == nil {
			return bad("valid_from", "an end of valid time needs a start")
		}
		if op.ValidTo != nil && op.ValidTo.Before(*op.ValidFrom) {
			return bad("valid_to", "end %s is before start %s", FormatTime(*op.ValidTo), FormatTime(*op.ValidFrom))
		}
	}
	return op, nil
}

// DocID returns doc's id, or an error if it has none or it is not a
// non-empty string.
func DocID(doc Doc) (string, error) {
	v, ok := doc[IDKey]
	if !ok {
		return "", fmt.Errorf("document has no %q", IDKey)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%q must be a string, got %s", IDKey, jsonType(v))
	}
	if s == "" {
		return "", fmt.Errorf("%q must not be empty", IDKey)
	}
	return s, nil
}

// ValidateDoc checks that doc is a JSON object both backends store and
// give back exactly (the input rules, see CheckNumber): non-empty UTF-8
// keys, UTF-8 strings, and numbers held exactly. The error is a
// *ValueError naming the path of the field at fault.
func ValidateDoc(doc Doc) error {
	if err := validateReserved(doc); err != nil {
		return err
	}
	if err := validateValue(map[string]any(doc)); err != nil {
		return err
	}
	return nil
}

// validateValue checks v; the error's path is relative to v (parents
// prefix theirs on the way out, so no path is built unless one is bad).
func validateValue(v any) *ValueError {
	bad := func(format string, args ...any) *ValueError {
		return &ValueError{Msg: fmt.Sprintf(format, args...)}
	}
	switch x := v.(type) {
	case nil, bool:
	case string:
		if !utf8.ValidString(x) {
			return bad("string is not valid UTF-8")
		}
	case json.Number:
		if err := CheckNumber(string(x)); err != nil {
			return bad("%v", err)
		}
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return bad("number is not finite")
		}
		if err := CheckNumber(strconv.FormatFloat(x, 'g', -1, 64)); err != nil {
			return bad("%v", err)
		}
	case float32:
		return validateValue(float64(x))
	case int:
		return validateValue(int64(x))
	case int64:
		if x > maxSafeInt || x < -maxSafeInt {
			return bad("integer %d is beyond ±2^53 and would lose precision; store it as a string", x)
		}
	case uint64:
		if x > maxSafeInt {
			return bad("integer %d is beyond ±2^53 and would lose precision; store it as a string", x)
		}
	case uint:
		return validateValue(uint64(x))
	case int32, uint32, int16, uint16, int8, uint8:
	case []any:
		for i, e := range x {
			if err := validateValue(e); err != nil {
				return err.under("[" + strconv.Itoa(i) + "]")
			}
		}
	case []string:
		for i, e := range x {
			if err := validateValue(e); err != nil {
				return err.under("[" + strconv.Itoa(i) + "]")
			}
		}
	case map[string]any:
		for k, e := range x {
			if k == "" || !utf8.ValidString(k) {
				return bad("key %q is empty or not valid UTF-8", k)
			}
			if err := validateValue(e); err != nil {
				return err.under(k)
			}
		}
	default:
		if _, err := json.Marshal(v); err != nil {
			return bad("%T is not JSON: %v", v, err)
		}
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// MS truncates t to the millisecond, in UTC.
func MS(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func msPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	m := MS(*t)
	return &m
}

// TimeFormat is the text form of times: RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime formats t in TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime parses an RFC 3339 time and truncates it to the millisecond.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not RFC 3339 (e.g. 2024-05-01T12:00:00.000Z): %w", s, err)
	}
	return MS(t), nil
}
