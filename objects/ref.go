package objects

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Ref is a reference to an object.
//
// A dynamic reference holds only an id and resolves to the latest version;
// it is what agents write ([[id]]). A static reference also pins a
// transaction id, and normally the hashes of the version it saw, so that the
// version can be found again (as of Tx) and checked (Verify); it is what the
// system records. Resolution needs a store and happens elsewhere; this
// package only verifies a resolved object against the reference.
type Ref struct {
	// ID is the object id.
	ID string
	// Static is true for a static reference; Tx and the hashes are
	// meaningful only then.
	Static bool
	// Tx is the transaction id of the pinned version (>= 0).
	Tx int64
	// ContentHash, IdentityHash and MetadataViewHash are the hashes of the
	// pinned version; each is optional ("" = not recorded).
	ContentHash      string
	IdentityHash     string
	MetadataViewHash string
}

// DynamicRef returns a reference to the latest version of id.
func DynamicRef(id string) Ref { return Ref{ID: id} }

// StaticRef returns a reference pinning o as written in transaction tx, with
// o's stored content, identity and metadata view hashes.
func StaticRef(o *Object, tx int64) Ref {
	return Ref{
		ID: o.ID(), Static: true, Tx: tx,
		ContentHash: o.ContentHash, IdentityHash: o.IdentityHash(), MetadataViewHash: o.MetadataViewHash,
	}
}

// Validate checks the id syntax, that Tx is not negative, that hashes are 64
// lowercase hex digits, and that a dynamic reference carries no pin.
func (r Ref) Validate() error {
	if err := checkID("ref.id", r.ID); err != nil {
		return err
	}
	if !r.Static {
		if r.Tx != 0 || r.ContentHash != "" || r.IdentityHash != "" || r.MetadataViewHash != "" {
			return fieldErr("ref", nil, "a dynamic reference carries no tx or hashes")
		}
		return nil
	}
	if r.Tx < 0 {
		return fieldErr("ref.tx", nil, "must not be negative, got %d", r.Tx)
	}
	for _, h := range r.hashes() {
		if h.v != "" && !isHash(h.v) {
			return fieldErr("ref."+h.field, nil, "must be 64 lowercase hex digits")
		}
	}
	return nil
}

type refHash struct{ label, field, v string }

// hashes lists r's hashes with their text labels, in text order.
func (r Ref) hashes() []refHash {
	return []refHash{
		{"c", "content_hash", r.ContentHash},
		{"i", "identity_hash", r.IdentityHash},
		{"m", "metadata_view_hash", r.MetadataViewHash},
	}
}

// String returns the text form of r:
//
//	id                                  dynamic
//	id@tx                               static, no hashes
//	id@tx#c=<hex>,i=<hex>,m=<hex>       static with the hashes it has
//
// Hashes appear in the order c (content), i (identity), m (metadata view),
// each only when set. Ids never contain "@" or "#" (see ValidateID).
func (r Ref) String() string {
	if !r.Static {
		return r.ID
	}
	s := r.ID + "@" + strconv.FormatInt(r.Tx, 10)
	sep := "#"
	for _, h := range r.hashes() {
		if h.v != "" {
			s += sep + h.label + "=" + h.v
			sep = ","
		}
	}
	return s
}

// ParseRef reads the text form written by Ref.String. Hash labels may come
// in any order but at most once; tx is a decimal without sign or leading
// zeros. Errors wrap ErrInvalid.
func ParseRef(s string) (Ref, error) {
	idPart, rest, static := strings.Cut(s, "@")
	r := Ref{ID: idPart, Static: static}
	if strings.Contains(idPart, "#") {
		return Ref{}, fieldErr("ref", nil, "hashes need a tx: %q", s)
	}
	if static {
		txPart, hashPart, hasHashes := strings.Cut(rest, "#")
		tx, err := parseTx(txPart)
		if err != nil {
			return Ref{}, err
		}
		r.Tx = tx
		if hasHashes {
			if err := r.parseHashes(hashPart); err != nil {
				return Ref{}, err
			}
		}
	}
	if err := r.Validate(); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// parseTx reads a canonical non-negative decimal transaction id.
func parseTx(s string) (int64, error) {
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.IndexFunc(s, func(c rune) bool { return c < '0' || c > '9' }) >= 0 {
		return 0, fieldErr("ref.tx", nil, "must be a decimal transaction id, got %q", s)
	}
	tx, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fieldErr("ref.tx", nil, "transaction id %q out of range", s)
	}
	return tx, nil
}

// parseHashes reads "c=<hex>,i=<hex>,m=<hex>" into r.
func (r *Ref) parseHashes(s string) error {
	for _, part := range strings.Split(s, ",") {
		label, v, ok := strings.Cut(part, "=")
		var dst *string
		switch label {
		case "c":
			dst = &r.ContentHash
		case "i":
			dst = &r.IdentityHash
		case "m":
			dst = &r.MetadataViewHash
		}
		if !ok || dst == nil {
			return fieldErr("ref", nil, "bad hash %q: want c=, i= or m= followed by 64 hex digits", part)
		}
		if *dst != "" {
			return fieldErr("ref", nil, "hash %q given twice", label)
		}
		if v == "" {
			return fieldErr("ref", nil, "hash %q is empty", label)
		}
		*dst = v
	}
	return nil
}

// MarshalText implements encoding.TextMarshaler with the String form, so a
// Ref is a plain string in JSON.
func (r Ref) MarshalText() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseRef.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// Verify checks that o, the object r resolved to, is the one r refers to.
// The ids must match (else an error wrapping ErrIDMismatch). For a static
// reference, o's stored hashes must also match what o's fields give now
// (VerifyHashes) and every hash r records must equal o's; a difference is a
// *HashMismatchError wrapping ErrHashMismatch and naming the hash and the
// id. A static reference without hashes checks only the id and o's own
// hashes; a dynamic reference checks only the id.
func (r Ref) Verify(o *Object) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if o == nil {
		return fieldErr("ref", nil, "verifying %q against a nil object", r.ID)
	}
	if o.ID() != r.ID {
		return fmt.Errorf("%w: reference %q resolved to object %q", ErrIDMismatch, r.ID, o.ID())
	}
	if !r.Static {
		return nil
	}
	if err := o.VerifyHashes(); err != nil {
		var hm *HashMismatchError
		if errors.As(err, &hm) {
			return err
		}
		return fmt.Errorf("objects: verifying %q: %w", r.ID, err)
	}
	have := map[string]string{
		"content_hash": o.ContentHash, "identity_hash": o.IdentityHash(), "metadata_view_hash": o.MetadataViewHash,
	}
	for _, h := range r.hashes() {
		if h.v != "" && h.v != have[h.field] {
			return &HashMismatchError{ID: r.ID, Hash: h.field, Want: h.v, Got: have[h.field]}
		}
	}
	return nil
}
