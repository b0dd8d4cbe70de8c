package replay

import (
	"encoding/json"
	"strings"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/ingest"
	"github.com/ctxstore/ctxstore/objects"
)

// The deterministic text form of a message list for the strategies that
// do not run ctxstore (naive, clear_tool_uses): the same markers as
// assemble's rendering (docs/context-manager.md, Assembly), so that sizes
// compare, one message after another with no closing markers:
//
//	<<system>>\n\n<<tools>>\n                                the empty head
//	<<user>>\nTEXT\n                                          a user message
//	<<assistant>>\nTEXT\n<<tool_call id=… name=… args=…>>\n   an assistant message and its calls
//	<<tool_result id=…>>\nOUTPUT\n                            a tool result

// Placeholder replaces a cleared tool result (and, with ClearToolInputs,
// a cleared tool call's arguments become {}).
const Placeholder = "[cleared]"

// renderer renders message lists, reusing the previous rendering's buffer
// for the messages that render the same as last time.
type renderer struct {
	buf    []byte
	pieces []piece // what buf holds after the head, in order
	argsOf map[string]string
}

// piece identifies one message's rendering: its index and variant.
type piece struct {
	index   int
	cleared bool // tool result cleared / tool call inputs cleared
	end     int  // end offset in buf
}

func newRenderer() *renderer {
	return &renderer{buf: []byte(EmptyHead), argsOf: map[string]string{}}
}

// render returns the rendering of msgs, each message cleared or not as
// clear says (nil: none). The returned slice stays valid: later renderings
// only append past its end or copy.
func (r *renderer) render(msgs []conversation.Message, clear func(i int) bool) []byte {
	keep := 0
	for keep < len(r.pieces) && keep < len(msgs) {
		p := r.pieces[keep]
		if p.index != keep || p.cleared != (clear != nil && clear(keep)) {
			break
		}
		keep++
	}
	end := len(EmptyHead)
	if keep > 0 {
		end = r.pieces[keep-1].end
	}
	if keep < len(r.pieces) {
		// Something before the end changed: copy, so that earlier returned
		// slices keep their bytes.
		r.buf = append(make([]byte, 0, len(r.buf)+4096), r.buf[:end]...)
		r.pieces = r.pieces[:keep]
	} else {
		r.buf = r.buf[:end]
	}
	for i := keep; i < len(msgs); i++ {
		c := clear != nil && clear(i)
		r.buf = r.appendMessage(r.buf, msgs[i], c)
		r.pieces = append(r.pieces, piece{index: i, cleared: c, end: len(r.buf)})
	}
	return r.buf[:len(r.buf):len(r.buf)]
}

func (r *renderer) appendMessage(b []byte, m conversation.Message, cleared bool) []byte {
	switch m.Role {
	case conversation.RoleUser:
		b = append(b, "<<user>>\n"...)
		b = append(b, m.Text...)
		b = append(b, '\n')
	case conversation.RoleAssistant:
		b = append(b, "<<assistant>>\n"...)
		if m.Text != "" {
			b = append(b, m.Text...)
			b = append(b, '\n')
		}
		for _, c := range m.ToolCalls {
			b = append(b, "<<tool_call id="...)
			b = append(b, c.ID...)
			b = append(b, " name="...)
			b = append(b, c.Name...)
			b = append(b, " args="...)
			if cleared {
				b = append(b, "{}"...)
			} else {
				b = append(b, r.args(c)...)
			}
			b = append(b, ">>\n"...)
		}
	case conversation.RoleToolResult:
		b = append(b, "<<tool_result id="...)
		b = append(b, m.ToolCallID...)
		b = append(b, ">>\n"...)
		if cleared {
			b = append(b, Placeholder...)
		} else {
			b = append(b, m.Output...)
		}
		b = append(b, '\n')
	}
	return b
}

// args renders a call's arguments as canonical JSON (RFC 8785), memoized.
func (r *renderer) args(c conversation.ToolCall) string {
	if s, ok := r.argsOf[c.ID]; ok && c.ID != "" {
		return s
	}
	s := canonicalArgs(c.Args)
	r.argsOf[c.ID] = s
	return s
}

func canonicalArgs(a map[string]any) string {
	if a == nil {
		return "{}"
	}
	if b, err := objects.Canonical(a); err == nil {
		return string(b)
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// needKey says what an earlier tool call provided, for telling when a
// later call needs the same output again: a read by its path, a bash call
// by its command, other calls by tool name and arguments. Writes and edits
// provide nothing to need again ("").
func needKey(c conversation.ToolCall) string {
	name := strings.ToLower(c.Name)
	switch ingest.DefaultTools[name] {
	case ingest.KindWrite, ingest.KindEdit:
		return ""
	case ingest.KindRead:
		for _, k := range []string{"path", "file_path", "filePath", "notebook_path", "file"} {
			if s, ok := c.Args[k].(string); ok && s != "" {
				return "read:" + s
			}
		}
	case ingest.KindBash:
		if s, ok := c.Args["command"].(string); ok {
			return "bash:" + strings.TrimSpace(s)
		}
	}
	if name == "todowrite" || name == "exitplanmode" {
		return ""
	}
	return name + ":" + canonicalArgs(c.Args)
}
