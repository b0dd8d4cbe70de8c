package store

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error a Store returns wraps exactly one of them, so
// callers (and store/storetest) tell failures apart with errors.Is.
var (
	// ErrNotFound: the entity, transaction or row asked for does not exist at
	// the basis.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a transaction aborted because one of its match ops failed.
	ErrConflict = errors.New("conflict: transaction aborted")
	// ErrInvalid: the caller's input is wrong (a malformed document or op, a
	// bad time range, a basis beyond the latest transaction, a corrupt or
	// foreign database). Retrying the same call fails the same way.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable: the backend cannot serve the call now (closed, server
	// unreachable, timed out). The same call may succeed later.
	ErrUnavailable = errors.New("unavailable")
)

// Error is the error type backends return. It names what was being done and
// the entity, op and field involved, and wraps a sentinel (Kind) and the
// underlying cause, if any.
type Error struct {
	// Op is what was being done, e.g. "submit", "entity", "history".
	Op string
	// Kind is one of the sentinel errors above.
	Kind error
	// ID is the entity id involved, if any.
	ID string
	// OpIndex is the 1-based index of the transaction op involved, 0 if none.
	OpIndex int
	// Field is the document or option field involved, if any.
	Field string
	// Msg says what is wrong, in words.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// Error formats the error as "op: kind: where: msg: cause".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	var where []string
	if e.OpIndex > 0 {
		where = append(where, "op "+strconv.Itoa(e.OpIndex))
	}
	if e.ID != "" {
		where = append(where, "id "+quote(e.ID))
	}
	if e.Field != "" {
		where = append(where, "field "+quote(e.Field))
	}
	if len(where) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(where, ", "))
		b.WriteString(")")
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Errorf builds an *Error of the given kind for op with a message.
func Errorf(op string, kind error, id, msg string) *Error {
	return &Error{Op: op, Kind: kind, ID: id, Msg: msg}
}

// KindOf returns the sentinel err wraps, or nil if it wraps none.
func KindOf(err error) error {
	for _, k := range []error{ErrNotFound, ErrConflict, ErrInvalid, ErrUnavailable} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

func itoa64(i int64) string { return strconv.FormatInt(i, 10) }
