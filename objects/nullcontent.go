package objects

// NullContent reports whether activating o would load nothing because its
// content is null, and if so returns the note to show the agent instead, so
// that activation is never a silent no-op. An empty string is
// content, not null. The note names the object by its metadata line and the
// likely reason:
//
//	Content unavailable (deleted, unreadable or non-text file): file id=… path=/a.png file_type=png char_count=0
func NullContent(o *Object) (note string, null bool) {
	if o.Content != nil {
		return "", false
	}
	var reason string
	switch {
	case o.Source() != nil:
		reason = "deleted, unreadable or non-text " + string(o.Kind())
	case o.Kind() == KindToolcall:
		reason = "the tool call stored no output"
	default:
		reason = "this " + string(o.Kind()) + " has no content"
	}
	return "Content unavailable (" + reason + "): " + RenderMetadata(o), true
}
