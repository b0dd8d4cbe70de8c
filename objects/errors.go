package objects

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test for them with errors.Is; the concrete errors
// returned by this package carry the field, hash and id involved.
var (
	// ErrInvalid is wrapped by every validation error: a malformed document,
	// field, id, source binding, reference or JSON value.
	ErrInvalid = errors.New("objects: invalid")
	// ErrUnknownKind marks a "type" that is not one of the known kinds.
	ErrUnknownKind = errors.New("objects: unknown kind")
	// ErrUnknownSourceType marks a source binding whose "type" is not a
	// supported source type.
	ErrUnknownSourceType = errors.New("objects: unknown source type")
	// ErrInvalidUTF8 marks a string or object key that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("objects: invalid UTF-8")
	// ErrNonFinite marks a NaN or infinite number.
	ErrNonFinite = errors.New("objects: non-finite number")
	// ErrUnsafeNumber marks a number whose value canonical JSON would
	// change, because it carries more precision than an IEEE-754 double:
	// integers above 2^53 such as 2^53+1 or 2^60, and texts such as
	// 0.10000000000000001. Carry such values as strings.
	ErrUnsafeNumber = errors.New("objects: number would change as a double")
	// ErrHashMismatch is wrapped by every failed hash verification.
	ErrHashMismatch = errors.New("objects: hash mismatch")
	// ErrIDMismatch marks a reference verified against an object with a
	// different id.
	ErrIDMismatch = errors.New("objects: id mismatch")
)

// FieldError reports a problem with one field. Field is a JSON path into the
// document, such as "xt/id", "source.path", "args.cmd" or
// "turns[2].toolcall_ids[0]"; it is empty for the document as a whole.
// It unwraps to ErrInvalid and, when set, to the more specific Err.
type FieldError struct {
	Field string
	Msg   string
	Err   error
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return "objects: " + e.Msg
	}
	return fmt.Sprintf("objects: field %q: %s", e.Field, e.Msg)
}

// Unwrap returns ErrInvalid and the specific cause, if any.
func (e *FieldError) Unwrap() []error {
	if e.Err == nil || e.Err == ErrInvalid {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}

// fieldErr builds a FieldError with a formatted message.
func fieldErr(field string, cause error, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// HashMismatchError reports that a hash recorded for object ID does not match
// the hash recomputed (or stored) for it. Hash names which one:
// "identity_hash", "content_hash", "metadata_view_hash" or "source_hash".
// It unwraps to ErrHashMismatch.
type HashMismatchError struct {
	ID   string
	Hash string
	Want string
	Got  string
}

// Error implements error.
func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("objects: %s mismatch for %q: want %s, got %s", e.Hash, e.ID, e.Want, e.Got)
}

// Unwrap returns ErrHashMismatch.
func (e *HashMismatchError) Unwrap() error { return ErrHashMismatch }

// joinPath appends a key to a JSON path.
func joinPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// indexPath appends an array index to a JSON path.
func indexPath(base string, i int) string {
	return fmt.Sprintf("%s[%d]", base, i)
}
