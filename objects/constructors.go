package objects

// NewFile makes a sealed file object bound to src. content is the file's
// text, or nil when it is not text or is gone; raw is the bytes read from the
// source for source_hash, or nil when there are none (a deleted file).
// file_type and char_count are derived from src.Path and content.
func NewFile(src FilesystemSource, content *string, raw []byte) (*Object, error) {
	env, err := NewSourcedEnvelope(KindFile, src)
	if err != nil {
		return nil, err
	}
	p := Payload{
		Content: content,
		File:    FileFields{FileType: FileTypeOf(src.Path), CharCount: CharCount(content)},
	}
	if raw != nil {
		p.SourceHash = HashBytes(raw)
	}
	return New(env, p)
}

// NewToolcall makes a sealed toolcall object whose id is the provider's
// tool-call id.
func NewToolcall(providerID string, f ToolcallFields, content *string) (*Object, error) {
	env, err := NewEnvelope(KindToolcall, providerID)
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Content: content, Toolcall: f})
}

// NewChat makes a sealed chat object "chat:{sessionID}" from its turns (see
// ChatFieldsFromTurns); content is the optional display rendering.
func NewChat(sessionID string, turns []Turn, content *string) (*Object, error) {
	env, err := NewEnvelope(KindChat, ChatObjectID(sessionID))
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Content: content, Chat: ChatFieldsFromTurns(sessionID, turns)})
}

// NewSystemPrompt makes a sealed system prompt object
// "system_prompt:{sessionID}".
func NewSystemPrompt(sessionID, prompt string) (*Object, error) {
	env, err := NewEnvelope(KindSystemPrompt, SystemPromptObjectID(sessionID))
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Content: &prompt})
}

// NewSession makes a sealed session object "session:{sessionID}" whose
// fields (defined by the session package) are kept in Extra. Its content is
// null.
func NewSession(sessionID string, fields map[string]any) (*Object, error) {
	env, err := NewEnvelope(KindSession, SessionObjectID(sessionID))
	if err != nil {
		return nil, err
	}
	return New(env, Payload{Extra: fields})
}
