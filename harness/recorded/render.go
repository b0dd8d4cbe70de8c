package recorded

import (
	"bytes"
	"crypto/sha256"

	"github.com/ctxstore/ctxstore/internal/jsontext"
	"github.com/ctxstore/ctxstore/objects/events"
)

// A rebuilt request is an Anthropic Messages body: {"model": ...,
// "system": ..., "messages": [...]}, each message {"role": ..., "content":
// [blocks]}, consecutive blocks of one role in one message, as Claude Code
// and Pi send them. What the transcript does not hold (the system prompt
// and tool list of Claude Code and Pi, the request's parameters) is left
// out; an api-request record's request is used whole instead (exact).

// block is one content block of a rebuilt request.
type block struct {
	role string // "user", "assistant" or "system"
	kind string // the inspector's block kind: user, assistant, toolref, system
	json []byte
	sum  [12]byte
}

// renderer renders events to blocks once each, and digests each message
// (a run of events) once.
type renderer struct {
	evs    []events.Event
	blocks map[int]*block
	digs   map[[3]int]string
}

func newRenderer(evs []events.Event) *renderer {
	return &renderer{evs: evs, blocks: map[int]*block{}, digs: map[[3]int]string{}}
}

// block renders event i (nil: the event is not sent to the model).
func (r *renderer) block(i int) *block {
	if b, ok := r.blocks[i]; ok {
		return b
	}
	b := renderBlock(r.evs[i])
	r.blocks[i] = b
	return b
}

// renderBlock renders event e as a content block (nil: the event is not
// sent to the model).
func renderBlock(e events.Event) *block {
	var role, kind string
	var v any
	switch e.Type {
	case events.Prompt:
		role, kind, v = "user", "user", textBlock{"text", e.Text}
	case events.System:
		switch e.Subtype {
		case events.SubtypeCompactionSummary:
			role, kind, v = "user", "user", textBlock{"text", e.Text}
		case events.SubtypeSystemPrompt:
			role, kind, v = "system", "system", textBlock{"text", e.Text}
		}
	case events.ToolResult:
		if e.Tool != nil && e.Result != nil {
			rb := resultBlock{Type: "tool_result", ToolUseID: e.Tool.ID, Content: e.Result.Content, IsError: e.Result.IsError}
			if len(e.Result.Blocks) > 0 {
				rb.Content = e.Result.Blocks
			}
			role, kind, v = "user", "toolref", rb
		}
	case events.Response:
		if e.Text != "" {
			role, kind, v = "assistant", "assistant", textBlock{"text", e.Text}
		}
	case events.Thinking:
		role, kind, v = "assistant", "assistant", thinkingBlock{"thinking", e.Text, e.Signature}
	case events.ToolCall:
		if e.Tool != nil {
			in := e.Tool.Input
			if in == nil {
				in = map[string]any{}
			}
			role, kind, v = "assistant", "assistant", toolUseBlock{"tool_use", e.Tool.ID, e.Tool.Name, in}
		}
	}
	var b *block
	if v != nil {
		j, err := jsontext.Marshal(v)
		if err == nil {
			b = &block{role: role, kind: kind, json: j}
			h := sha256.Sum256(j)
			copy(b.sum[:], h[:12])
		}
	}
	return b
}

// The content blocks of a rebuilt request, their fields in the order the
// Messages API writes them.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature,omitempty"`
}

type toolUseBlock struct {
	Type  string         `json:"type"`
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type resultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// message is one message of a rebuilt request: its blocks, from the
// events first to last.
type message struct {
	role        string
	blocks      []*block
	first, last int
}

// messages groups the blocks of the events idx into the system prompt's
// blocks and messages.
func (r *renderer) messages(idx []int) (system []*block, msgs []message) {
	for _, i := range idx {
		b := r.block(i)
		if b == nil {
			continue
		}
		if b.role == "system" {
			system = append(system, b)
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].role == b.role {
			msgs[n-1].blocks = append(msgs[n-1].blocks, b)
			msgs[n-1].last = i
			continue
		}
		msgs = append(msgs, message{role: b.role, blocks: []*block{b}, first: i, last: i})
	}
	return system, msgs
}

// digest returns the digests of the request's messages (the system
// prompt's first), where each ends in the body Request writes, and the
// body's size: the positions write gives, computed without writing.
func (r *renderer) digest(idx []int) ([]string, []int, int) {
	system, msgs := r.messages(idx)
	var out []string
	var ends []int
	pos := len(`{`)
	if len(system) > 0 {
		h := sha256.New()
		pos += len(`"system":[`)
		for k, b := range system {
			h.Write(b.sum[:])
			if k > 0 {
				pos++
			}
			pos += len(b.json)
		}
		out = append(out, "s"+string(h.Sum(nil)[:12]))
		ends = append(ends, pos)
		pos += len(`],`)
	}
	pos += len(`"messages":[`)
	for k, m := range msgs {
		if k > 0 {
			pos++
		}
		pos += len(`{"role":"","content":[`) + len(m.role)
		for j, b := range m.blocks {
			if j > 0 {
				pos++
			}
			pos += len(b.json)
		}
		pos += len(`]}`)
		// The same run of events is the same message in every request
		// that holds it: digested once.
		key := [3]int{m.first, m.last, len(m.blocks)}
		d, ok := r.digs[key]
		if !ok {
			h := sha256.New()
			h.Write([]byte(m.role))
			for _, b := range m.blocks {
				h.Write(b.sum[:])
			}
			d = string(h.Sum(nil)[:12])
			r.digs[key] = d
		}
		out = append(out, d)
		ends = append(ends, pos)
	}
	pos += len(`]}`)
	return out, ends, pos
}

// Span is one labelled part of a request's bytes: the system prompt, the
// tool list or a message (Kind: system, tools, user, assistant, toolref
// for a message of tool results).
type Span struct {
	Kind  string
	Role  string
	Start int
	End   int
}

// write renders the request body of the events idx, with the spans of
// its parts. model, when set, is written first.
func (r *renderer) write(idx []int) ([]byte, []Span) {
	return writeBody(r.messages(idx))
}

// writeBody renders a request body of a system prompt's blocks and
// messages, with the spans of its parts.
func writeBody(system []*block, msgs []message) ([]byte, []Span) {
	var buf bytes.Buffer
	var spans []Span
	buf.WriteString(`{`)
	if len(system) > 0 {
		buf.WriteString(`"system":[`)
		start := buf.Len()
		for k, b := range system {
			if k > 0 {
				buf.WriteByte(',')
			}
			buf.Write(b.json)
		}
		spans = append(spans, Span{Kind: "system", Role: "system", Start: start, End: buf.Len()})
		buf.WriteString(`],`)
	}
	buf.WriteString(`"messages":[`)
	for k, m := range msgs {
		if k > 0 {
			buf.WriteByte(',')
		}
		start := buf.Len()
		buf.WriteString(`{"role":"` + m.role + `","content":[`)
		kind := m.role
		for j, b := range m.blocks {
			if j > 0 {
				buf.WriteByte(',')
			}
			buf.Write(b.json)
			if b.kind == "toolref" && kind == "user" {
				kind = "toolref"
			}
		}
		buf.WriteString(`]}`)
		spans = append(spans, Span{Kind: kind, Role: m.role, Start: start, End: buf.Len()})
	}
	buf.WriteString(`]}`)
	return buf.Bytes(), spans
}
