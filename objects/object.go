package objects

import "unicode/utf8"

// Status is a toolcall outcome, stored under "status".
type Status string

// The toolcall statuses.
const (
	StatusOK   Status = "ok"
	StatusFail Status = "fail"
)

// Payload is an object's mutable zone: every change makes a new
// version. Only the kind-specific struct matching the object's kind may be
// non-zero. Optional strings are absent when empty; optional slices and maps
// are absent when nil and present (possibly empty) otherwise.
type Payload struct {
	// Content is the default content field, what activation loads: a
	// string, or nil for JSON null (deleted, orphaned or non-text).
	Content *string
	// SourceHash is the SHA-256 of the raw external source (HashBytes), or
	// "" when absent. Sourced objects only.
	SourceHash string
	// ContentHash is the SHA-256 of the canonical payload; set by Seal.
	ContentHash string
	// MetadataViewHash is the SHA-256 of the canonical metadata view; set
	// by Seal.
	MetadataViewHash string
	// Nickname is an optional human-readable alias ("nickname"), any kind.
	Nickname string

	// File holds the fields of file objects.
	File FileFields
	// Toolcall holds the fields of toolcall objects.
	Toolcall ToolcallFields
	// Chat holds the fields of chat objects.
	Chat ChatFields
	// Note holds the fields of note objects.
	Note NoteFields

	// Extra holds every document field this package does not model for the
	// object's kind, such as a session's fields or a future field, as plain
	// JSON values. Its keys may not shadow modeled fields. Extra fields are
	// part of the content hash.
	Extra map[string]any
}

// FileFields are the mutable fields of a file.
type FileFields struct {
	// FileType is "file_type": the path's extension without the dot,
	// lowercased, "" when there is none (see FileTypeOf). Always present.
	FileType string
	// CharCount is "char_count": the number of Unicode code points in the
	// content, 0 when it is null (see CharCount). Always present.
	CharCount int64
}

// ToolcallFields are the mutable fields of a toolcall.
type ToolcallFields struct {
	// Tool is "tool", the tool name. Required.
	Tool string
	// Args is "args", the structured arguments exactly as the provider
	// emitted them. Always present; nil is written as {}.
	Args map[string]any
	// ArgsDisplay is the optional "args_display", a short human-readable
	// rendering of Args for metadata.
	ArgsDisplay string
	// Status is "status": StatusOK or StatusFail. Required.
	Status Status
	// ChatRef is the optional "chat_ref", the id of the chat this call
	// belongs to.
	ChatRef string
	// FileRefs is the optional "file_refs", ids of files the call touched.
	FileRefs []string
	// ProviderID is the optional "provider_id": the provider's tool-call
	// id, kept when the adapter minted a UUIDv7 id because the provider's
	// ids were not unique.
	ProviderID string
}

// ChatFields are the mutable fields of a chat.
type ChatFields struct {
	// Turns is "turns", the structured conversation. Always present; nil
	// is written as [].
	Turns []Turn
	// SessionRef is "session_ref", the id of the owning session object.
	// Required.
	SessionRef string
	// TurnCount is "turn_count", the number of turns. Always present.
	TurnCount int64
	// ToolcallRefs is "toolcall_refs", every toolcall id across all turns
	// in order. Always present; nil is written as [].
	ToolcallRefs []string
}

// NoteFields are the mutable fields of a note, parsed from its Markdown
// (frontmatter, wikilinks, tags). All are optional.
type NoteFields struct {
	// Title is "title".
	Title string
	// Tags is "tags", without the leading '#'.
	Tags []string
	// Links is "links": wikilink targets as written, in order.
	Links []string
	// Aliases is "aliases".
	Aliases []string
	// Frontmatter is "frontmatter", the parsed frontmatter as JSON values.
	Frontmatter map[string]any
}

// Object is one version of an object: its immutable envelope plus its
// mutable payload. The envelope is reachable only through methods; the
// payload is exported and may be edited, after which Seal must be called
// before the object is written.
type Object struct {
	env Envelope
	Payload
}

// New makes a sealed object: it deep-copies p, validates it against env's
// kind and computes ContentHash and MetadataViewHash (overwriting any given).
// env must come from NewEnvelope or NewSourcedEnvelope.
func New(env Envelope, p Payload) (*Object, error) {
	if env.IsZero() {
		return nil, fieldErr("", nil, "zero envelope: use NewEnvelope or NewSourcedEnvelope")
	}
	o := &Object{env: env, Payload: clonePayload(p)}
	if err := o.Seal(); err != nil {
		return nil, err
	}
	return o, nil
}

// Envelope returns the immutable envelope.
func (o *Object) Envelope() Envelope { return o.env }

// ID returns the object id ("xt/id").
func (o *Object) ID() string { return o.env.id }

// Kind returns the object kind ("type").
func (o *Object) Kind() Kind { return o.env.kind }

// Source returns the source binding, nil when unsourced.
func (o *Object) Source() Source { return o.env.source }

// IdentityHash returns the identity hash ("identity_hash").
func (o *Object) IdentityHash() string { return o.env.identityHash }

// Clone returns a deep copy of o.
func (o *Object) Clone() *Object {
	return &Object{env: o.env, Payload: clonePayload(o.Payload)}
}

// Validate checks o: the envelope's id rules, every payload field against
// o's kind, and that the stored hashes are well-formed (64 lowercase hex
// digits). It does not recompute hashes; see VerifyHashes.
func (o *Object) Validate() error { return o.validate(true) }

// validate checks o; sealed requires the content and metadata view hashes.
func (o *Object) validate(sealed bool) error {
	if o.env.IsZero() {
		return fieldErr("", nil, "zero envelope")
	}
	if err := o.env.validate(); err != nil {
		return err
	}
	p := &o.Payload
	if p.Content != nil && !utf8.ValidString(*p.Content) {
		return fieldErr("content", ErrInvalidUTF8, "string is not valid UTF-8")
	}
	if p.SourceHash != "" {
		if o.env.source == nil {
			return fieldErr("source_hash", nil, "only sourced objects carry a source hash")
		}
		if !isHash(p.SourceHash) {
			return fieldErr("source_hash", nil, "must be 64 lowercase hex digits")
		}
	}
	if sealed {
		for _, h := range []struct{ field, v string }{
			{"content_hash", p.ContentHash}, {"metadata_view_hash", p.MetadataViewHash},
		} {
			if !isHash(h.v) {
				return fieldErr(h.field, nil, "must be 64 lowercase hex digits (is the object sealed?)")
			}
		}
	}
	if p.Nickname != "" {
		if err := checkText("nickname", p.Nickname); err != nil {
			return err
		}
	}
	if err := validateKindFields(o.env.kind, p); err != nil {
		return err
	}
	return validateExtra(o.env.kind, p.Extra)
}
