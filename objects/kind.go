package objects

// Kind is an object's type, stored under the document's "type" key. It is
// part of the immutable envelope.
type Kind string

// The known kinds.
const (
	// KindFile is a file on a filesystem; always sourced.
	KindFile Kind = "file"
	// KindToolcall is the result of one tool execution; its id is the
	// provider's tool-call id.
	KindToolcall Kind = "toolcall"
	// KindChat is a session's conversation, one per session, locked.
	KindChat Kind = "chat"
	// KindSystemPrompt is a session's system prompt, one per session, locked.
	KindSystemPrompt Kind = "system_prompt"
	// KindSession is a session's bookkeeping object.
	KindSession Kind = "session"
	// KindNote is a durable Markdown note written by an agent or a human.
	KindNote Kind = "note"
	// KindUser is a user-provided object, such as a large paste.
	KindUser Kind = "user"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	switch k {
	case KindFile, KindToolcall, KindChat, KindSystemPrompt, KindSession, KindNote, KindUser:
		return true
	}
	return false
}

// ParseKind returns the kind named s, or a FieldError for field "type"
// wrapping ErrUnknownKind.
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if !k.Valid() {
		return "", fieldErr("type", ErrUnknownKind, "unknown object type %q", s)
	}
	return k, nil
}

// Locked reports whether objects of kind k are always active: the agent can
// never deactivate a chat or a system prompt.
func (k Kind) Locked() bool {
	return k == KindChat || k == KindSystemPrompt
}

// sourcing says whether a kind must, may or must not carry a source binding.
type sourcing int

const (
	sourceForbidden sourcing = iota
	sourceOptional
	sourceRequired
)

// sourcing returns the source rule of k: files are always sourced, notes may
// be (a note kept as a file), every other kind never is.
func (k Kind) sourcing() sourcing {
	switch k {
	case KindFile:
		return sourceRequired
	case KindNote:
		return sourceOptional
	}
	return sourceForbidden
}
