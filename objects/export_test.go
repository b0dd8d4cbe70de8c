package objects

import (
	"bytes"
	"encoding/json"
	"github.com/google/uuid"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// CanonicalJSON canonicalises JSON text under the same rules as Canonical.
// It also rejects what a decoder would silently repair: invalid UTF-8,
// unpaired surrogate escapes and duplicate object keys.
func CanonicalJSON(data []byte) ([]byte, error) {
	if !utf8.Valid(data) {
		return nil, fieldErr("", ErrInvalidUTF8, "JSON text is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fieldErr("", ErrInvalid, "decoding JSON: %v", err)
	}
	if _, err := normalize(v, "", 0); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(data)
	if err != nil {
		return nil, fieldErr("", ErrInvalid, "canonicalising JSON: %v", err)
	}
	return out, nil
}

// NewNote makes a sealed unsourced note with the given UUIDv7 id (see
// NewUUIDv7).
func NewNote(id string, f NoteFields, content *string) (*Object, error) {
	env, err := NewEnvelope(KindNote, id)
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Content: content, Note: f})
}

// NewUser makes a sealed user object with the given UUIDv7 id.
func NewUser(id string, content *string) (*Object, error) {
	env, err := NewEnvelope(KindUser, id)
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Content: content})
}

// Str returns a pointer to s, for Payload.Content.
func Str(s string) *string { return &s }

// ModeledKeys returns the document keys this package models for kind k, in
// a fixed order; every other key of a document lands in Payload.Extra.
func ModeledKeys(k Kind) []string {
	out := append([]string(nil), commonKeys...)
	return append(out, kindKeys[k]...)
}

// UUIDv7Time returns the millisecond timestamp embedded in a UUIDv7.
func UUIDv7Time(s string) (time.Time, bool) {
	if !IsUUIDv7(s) {
		return time.Time{}, false
	}
	u := uuid.MustParse(s)
	var ms int64
	for i := 0; i < 6; i++ {
		ms = ms<<8 | int64(u[i])
	}
	return time.UnixMilli(ms).UTC(), true
}

// Kinds lists every known kind in a fixed order.
func Kinds() []Kind {
	return []Kind{KindFile, KindToolcall, KindChat, KindSystemPrompt, KindSession, KindNote, KindUser}
}

// ViewKeys returns the keys the default metadata view of kind k may hold, in
// rendering order.
func ViewKeys(k Kind) []string { return append([]string(nil), viewKeys[k]...) }
