package objects

import "strings"

// Envelope is an object's immutable zone: id, kind, source
// binding and identity hash. It is set at creation and never changes across
// versions. Its fields are reachable only through methods, and an Envelope
// is only made by NewEnvelope, NewSourcedEnvelope or FromDoc, so a non-zero
// Envelope always obeys the id rules.
type Envelope struct {
	id           string
	kind         Kind
	source       Source
	identityHash string
}

// ID returns the object id, stored under "xt/id".
func (e Envelope) ID() string { return e.id }

// Kind returns the object kind, stored under "type".
func (e Envelope) Kind() Kind { return e.kind }

// Source returns the source binding, or nil for an unsourced object.
func (e Envelope) Source() Source { return e.source }

// IdentityHash returns the identity hash, stored under "identity_hash".
func (e Envelope) IdentityHash() string { return e.identityHash }

// IsZero reports whether e is the zero Envelope.
func (e Envelope) IsZero() bool { return e.id == "" && e.kind == "" }

// NewSourcedEnvelope makes the envelope of a sourced object: its id is its
// identity hash, SHA-256 of the canonical JSON of {"source":…,"type":…}.
// Only files and notes may be sourced.
func NewSourcedEnvelope(kind Kind, src Source) (Envelope, error) {
	if src == nil {
		return Envelope{}, fieldErr("source", nil, "a sourced envelope needs a source binding")
	}
	h, err := IdentityHash(kind, "", src)
	if err != nil {
		return Envelope{}, err
	}
	e := Envelope{id: h, kind: kind, source: src, identityHash: h}
	return e, e.validate()
}

// NewEnvelope makes the envelope of an unsourced object with the given id,
// which must follow the id rule of kind: a provider tool-call id for
// toolcalls, ChatObjectID, SessionObjectID or SystemPromptObjectID for the
// per-session kinds, and a canonical UUIDv7 (see NewUUIDv7) for notes and
// user objects. Files are always sourced; use NewSourcedEnvelope.
func NewEnvelope(kind Kind, id string) (Envelope, error) {
	h, err := IdentityHash(kind, id, nil)
	if err != nil {
		return Envelope{}, err
	}
	e := Envelope{id: id, kind: kind, identityHash: h}
	return e, e.validate()
}

// IdentityHash computes the identity hash of an envelope: the SHA-256 of
// IdentityHashInput(kind, id, src).
func IdentityHash(kind Kind, id string, src Source) (string, error) {
	in, err := IdentityHashInput(kind, id, src)
	if err != nil {
		return "", err
	}
	return HashBytes(in), nil
}

// IdentityHashInput returns the canonical JSON an identity hash is taken
// over. For a sourced object (src != nil) it is {"source":src.Doc(),
// "type":kind}, and id is ignored (it is derived
// from the hash). For an unsourced object it is
// {"id":id,"source":null,"type":kind}: the id is the only immutable field
// that tells two such objects apart.
func IdentityHashInput(kind Kind, id string, src Source) ([]byte, error) {
	if !kind.Valid() {
		return nil, fieldErr("type", ErrUnknownKind, "unknown object type %q", string(kind))
	}
	in := map[string]any{"type": string(kind)}
	if src != nil {
		if err := src.Validate(); err != nil {
			return nil, err
		}
		in["source"] = src.Doc()
	} else {
		if err := checkID("xt/id", id); err != nil {
			return nil, err
		}
		in["id"] = id
		in["source"] = nil
	}
	return Canonical(in)
}

// validate checks the id rules of e's kind and that its identity hash is the
// one its fields give.
func (e Envelope) validate() error {
	if !e.kind.Valid() {
		return fieldErr("type", ErrUnknownKind, "unknown object type %q", string(e.kind))
	}
	switch rule := e.kind.sourcing(); {
	case rule == sourceRequired && e.source == nil:
		return fieldErr("source", nil, "required for %s objects", e.kind)
	case rule == sourceForbidden && e.source != nil:
		return fieldErr("source", nil, "must be null for %s objects", e.kind)
	}
	if err := checkID("xt/id", e.id); err != nil {
		return err
	}
	want, err := IdentityHash(e.kind, e.id, e.source)
	if err != nil {
		return err
	}
	if e.source != nil && e.id != want {
		return fieldErr("xt/id", nil, "a sourced object's id must be its identity hash %s, got %q", want, e.id)
	}
	if e.source == nil {
		if err := checkUnsourcedID(e.kind, e.id); err != nil {
			return err
		}
	}
	if !isHash(e.identityHash) {
		return fieldErr("identity_hash", nil, "must be 64 lowercase hex digits")
	}
	if e.identityHash != want {
		return &HashMismatchError{ID: e.id, Hash: "identity_hash", Want: want, Got: e.identityHash}
	}
	return nil
}

// checkUnsourcedID applies the per-kind id rule of an unsourced object.
func checkUnsourcedID(kind Kind, id string) error {
	switch kind {
	case KindToolcall:
		if strings.HasPrefix(id, chatPrefix) || strings.HasPrefix(id, sessionPrefix) ||
			strings.HasPrefix(id, systemPromptPrefix) {
			return fieldErr("xt/id", nil, "toolcall id %q uses a reserved per-session prefix", id)
		}
	case KindChat, KindSession, KindSystemPrompt:
		if k, _, ok := SessionIDOf(id); !ok || k != kind {
			return fieldErr("xt/id", nil, "%s id must be %q followed by the session id, got %q",
				kind, string(kind)+":", id)
		}
	case KindNote, KindUser:
		if !IsUUIDv7(id) {
			return fieldErr("xt/id", nil, "an unsourced %s id must be a canonical UUIDv7, got %q", kind, id)
		}
	}
	return nil
}
