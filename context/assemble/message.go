package assemble

import (
	"strconv"
	"strings"

	"github.com/ctxstore/ctxstore/objects"
)

// Role is the author of a message, mapping one-to-one onto Pi's message
// roles (user, assistant, toolResult).
type Role string

// The roles.
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "tool_result"
)

// BlockType is the kind of a content block.
type BlockType string

// The block types.
const (
	// BlockText is plain text: a user message, an assistant's text, a note.
	BlockText BlockType = "text"
	// BlockToolCall is an assistant's tool call (ID, Name, Args).
	BlockToolCall BlockType = "tool_call"
	// BlockMetadata is one object's metadata line (objects.RenderMetadata),
	// or a "collapsed:" reference left by a rebase.
	BlockMetadata BlockType = "metadata"
	// BlockContent is an active object's full content; ID and Version (the
	// transaction of the version shown) name it.
	BlockContent BlockType = "content"
)

// Block is one content block of a message.
type Block struct {
	Type BlockType `json:"type"`
	// Text is the block's text (for content: the object's content, or the
	// null-content note).
	Text string `json:"text,omitempty"`
	// ID is the object id (metadata, content) or the tool-call id.
	ID string `json:"id,omitempty"`
	// Version is the transaction that wrote the version shown (content).
	Version int64 `json:"version,omitempty"`
	// Name and Args describe a tool call.
	Name string         `json:"name,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Message is one message of a context. ToolCallID is set for tool results.
type Message struct {
	Role       Role    `json:"role"`
	ToolCallID string  `json:"tool_call_id,omitempty"`
	Blocks     []Block `json:"blocks"`
}

// ToolSpec describes one tool offered to the model; the list is fixed for
// the session.
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// frag is the rendering of one item: blocks for a message of the given
// role. Consecutive user fragments share one message; every assistant and
// tool-result fragment starts its own.
type frag struct {
	role   Role
	callID string
	blocks []Block
	// silent: the fragment renders nothing (no blocks) and belongs to the
	// message before it, whose role it takes (follow), so that what comes
	// after it joins or starts a message as if it were not there.
	silent bool
	// alone: the fragment is a user message of its own, which joins no
	// message before it and which nothing joins (rendering 6's user
	// messages, userfirst.go).
	alone bool
	// opens: the fragment starts a message although it would join the
	// one before (item.opens).
	opens bool
}

// joins reports whether f continues the message prev started.
func (f frag) joins(prev *frag) bool {
	return prev != nil && (f.silent || prev.role == RoleUser && f.role == RoleUser && !f.alone && !prev.alone && !f.opens)
}

// follow gives a silent fragment the role of the fragment before it (a
// user message when there is none, which cannot happen: a silent patch
// follows the content block of its file).
func (f *frag) follow(prev *frag) {
	if f.silent && prev != nil {
		f.role, f.callID, f.alone = prev.role, prev.callID, prev.alone
	}
}

// renderHead renders the fixed part: system prompt and tool list.
func renderHead(system string, tools []ToolSpec) ([]byte, error) {
	var b strings.Builder
	b.WriteString("<<system>>\n")
	b.WriteString(system)
	b.WriteString("\n<<tools>>\n")
	for _, t := range tools {
		c, err := objects.Canonical(toolDoc(t))
		if err != nil {
			return nil, err
		}
		b.Write(c)
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}

func toolDoc(t ToolSpec) map[string]any {
	d := map[string]any{"name": t.Name}
	if t.Description != "" {
		d["description"] = t.Description
	}
	if t.Parameters != nil {
		d["parameters"] = t.Parameters
	}
	return d
}

// appendFrag appends f's bytes to buf: a message header when f does not
// join prev, then its blocks. The text form has no closing markers, so
// adding a block to the last message only appends bytes.
func appendFrag(buf []byte, prev *frag, f *frag) []byte {
	if !f.joins(prev) {
		buf = append(buf, "<<"...)
		buf = append(buf, f.role...)
		if f.callID != "" {
			buf = append(buf, " id="...)
			buf = append(buf, f.callID...)
		}
		buf = append(buf, ">>\n"...)
	}
	for _, bl := range f.blocks {
		switch bl.Type {
		case BlockContent:
			buf = append(buf, "<<content id="...)
			buf = append(buf, bl.ID...)
			buf = append(buf, " version="...)
			buf = strconv.AppendInt(buf, bl.Version, 10)
			buf = append(buf, ">>\n"...)
			buf = append(buf, bl.Text...)
			buf = append(buf, "\n<</content>>\n"...)
		case BlockToolCall:
			args, _ := objects.Canonical(argsOrEmpty(bl.Args))
			buf = append(buf, "<<tool_call id="...)
			buf = append(buf, bl.ID...)
			buf = append(buf, " name="...)
			buf = append(buf, bl.Name...)
			buf = append(buf, " args="...)
			buf = append(buf, args...)
			buf = append(buf, ">>\n"...)
		default:
			buf = append(buf, bl.Text...)
			buf = append(buf, '\n')
		}
	}
	return buf
}

func argsOrEmpty(a map[string]any) map[string]any {
	if a == nil {
		return map[string]any{}
	}
	return a
}

// appendMessage adds fragment f (after prev) to out, the messages from
// message k on of the n built so far, and returns them and the new n.
func appendMessage(out []Message, n, k int, prev, f *frag) ([]Message, int) {
	if f.joins(prev) {
		if n-1 >= k {
			last := &out[len(out)-1]
			last.Blocks = append(last.Blocks, f.blocks...)
		}
		return out, n
	}
	if n >= k {
		out = append(out, Message{Role: f.role, ToolCallID: f.callID, Blocks: append([]Block(nil), f.blocks...)})
	}
	return out, n + 1
}
