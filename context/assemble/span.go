package assemble

import "github.com/ctxstore/ctxstore/objects"

// Span is one labelled piece of a rebuilt context's bytes: the system
// prompt, the tool list, or one item of the stream (a chat message, a
// tool-result line, a metadata line, a content block, a collapsed
// reference, a context note). Bytes[Start:End] is its rendering, message
// header included when it starts a message.
type Span struct {
	// Kind is "system", "tools", or the item kind ("user", "assistant",
	// "toolref", "meta", "content", "stub", "note").
	Kind ItemKind `json:"kind"`
	// Role is the message role the span belongs to ("" for the head).
	Role Role `json:"role,omitempty"`
	// Ref is the static reference of an object item (text form); ObjectID,
	// ObjectKind and Version (the transaction of the version shown) name
	// the object.
	Ref        string `json:"ref,omitempty"`
	ObjectID   string `json:"object_id,omitempty"`
	ObjectKind string `json:"object_kind,omitempty"`
	Version    int64  `json:"version,omitempty"`
	// Nickname is the object's nickname, or a file's path when it has none.
	Nickname string `json:"nickname,omitempty"`
	// Start and End are byte offsets in the context's bytes.
	Start int `json:"start"`
	End   int `json:"end"`
}

// The head span kinds.
const (
	SpanSystem ItemKind = "system"
	SpanTools  ItemKind = "tools"
)

// Spans returns the labelled pieces of a context rebuilt by Rebuild, in
// byte order, covering all its bytes; nil for a live Assembled value. A
// rebuilt stream labels its items at the first call, not at the rebuild
// (a Rebuilder's pass over every call reads few of them).
func (c *Assembled) Spans() []Span {
	if c.spanEnds != nil {
		start := c.spans[len(c.spans)-1].End // the head's
		for i, it := range c.items {
			if !it.f.silent { // nothing to label
				c.spans = append(c.spans, it.span(start, c.spanEnds[i]))
			}
			start = c.spanEnds[i]
		}
		c.spanEnds = nil
	}
	return c.spans
}

// headSpans labels the head renderHead writes: "<<system>>\n" + system +
// "\n", then "<<tools>>\n" and the tool lines.
func headSpans(system string, headLen int) []Span {
	sysEnd := len("<<system>>\n") + len(system) + 1
	return []Span{{Kind: SpanSystem, Start: 0, End: sysEnd}, {Kind: SpanTools, Start: sysEnd, End: headLen}}
}

// span labels an item rendered at bytes [start, end).
func (it *item) span(start, end int) Span {
	s := Span{Kind: it.kind, Start: start, End: end}
	if it.f != nil {
		s.Role = it.f.role
	}
	if it.kind.hasRef() {
		s.Ref, s.ObjectID, s.Version = it.ref.String(), it.ref.ID, it.ref.Tx
		if it.obj != nil {
			s.ObjectKind = string(it.obj.Kind())
			s.Nickname = it.obj.Nickname
			if fs, ok := it.obj.Source().(objects.FilesystemSource); ok && s.Nickname == "" {
				s.Nickname = fs.Path
			}
		}
	}
	return s
}
