package store

import (
	"fmt"
	"unicode/utf8"
)

// MaxIDBytes is the longest entity id any backend takes, in bytes of
// UTF-8. XTDB's HTTP API carries an id in the URL of every read (eid=...),
// and its Jetty refuses a request line over 8 KiB (414/431): an id
// URL-encoded (up to three bytes per byte) with the other parameters must
// fit, so a longer id could be written but never read back. Every backend
// refuses it at the door instead.
const MaxIDBytes = 2048

// FnKey is the document key XTDB reserves for transaction functions:
// XTDB's HTTP module reads its value as Clojure code when a document comes
// as JSON, so no backend stores a document with it.
const FnKey = "xt/fn"

// ValidateID checks an entity id against the limits every backend shares.
func ValidateID(id string) error {
	if len(id) > MaxIDBytes {
		return fmt.Errorf("id is %d bytes long, over the limit of %d bytes (store.MaxIDBytes)", len(id), MaxIDBytes)
	}
	return nil
}

// CheckReadID is ValidateID for a read of op (entity, history, ...): an
// error wrapping ErrInvalid that names the id (cut short).
func CheckReadID(op, id string) error {
	if err := ValidateID(id); err != nil {
		return &Error{Op: op, Kind: ErrInvalid, ID: shortID(id), Field: "id", Msg: err.Error()}
	}
	return nil
}

// validateReserved refuses the top-level document keys XTDB gives a
// meaning of its own.
func validateReserved(doc Doc) error {
	if _, ok := doc[FnKey]; ok {
		return fmt.Errorf("key %q is reserved by XTDB for transaction functions (its HTTP API reads the value as code)", FnKey)
	}
	return nil
}

// shortID cuts an over-long id for messages, on a character boundary.
func shortID(id string) string {
	n := 64
	for n > 0 && !utf8.RuneStart(id[n]) {
		n--
	}
	return id[:n] + "..."
}
