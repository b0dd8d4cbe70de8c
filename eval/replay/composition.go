package replay

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// composition sums the tokens of contexts by what they hold, over all
// calls, to show where a strategy's history tokens go.
type composition map[string]int64

// The categories.
const (
	catChat     = "chat text"
	catOutputs  = "tool outputs"
	catInputs   = "tool calls (inputs)"
	catFiles    = "file contents"
	catMetadata = "metadata and notes"
)

// note renders the shares, largest first.
func (c composition) note() string {
	var total int64
	type kv struct {
		k string
		v int64
	}
	var kvs []kv
	for k, v := range c {
		total += v
		kvs = append(kvs, kv{k, v})
	}
	if total == 0 {
		return ""
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v || kvs[i].v == kvs[j].v && kvs[i].k < kvs[j].k })
	var parts []string
	for _, e := range kvs {
		parts = append(parts, fmt.Sprintf("%s %.1f%%", e.k, 100*float64(e.v)/float64(total)))
	}
	return "history composition over all calls (counted tokens): " + strings.Join(parts, ", ")
}

// messageComposition returns the counted tokens of one transcript message
// by category, as the naive rendering holds it.
func messageComposition(c *Counter, m conversation.Message) (chat, outputs, inputs int) {
	switch m.Role {
	case conversation.RoleUser:
		chat = c.segment([]byte(m.Text))
	case conversation.RoleAssistant:
		chat = c.segment([]byte(m.Text))
		for _, tc := range m.ToolCalls {
			inputs += c.segment([]byte(tc.Name + canonicalArgs(tc.Args)))
		}
	case conversation.RoleToolResult:
		outputs = c.segment([]byte(m.Output))
	}
	return chat, outputs, inputs
}

// addAssembled adds an assembled context's blocks by category: content
// blocks of tool calls the transcript made are tool outputs, other content
// blocks file contents.
func (c composition) addAssembled(cn *Counter, a *assemble.Assembled, calls map[string]bool) {
	for _, m := range a.Messages() {
		for _, b := range m.Blocks {
			switch b.Type {
			case assemble.BlockContent:
				if calls[b.ID] {
					c[catOutputs] += int64(cn.segment([]byte(b.Text)))
				} else {
					c[catFiles] += int64(cn.segment([]byte(b.Text)))
				}
			case assemble.BlockToolCall:
				c[catInputs] += int64(cn.segment([]byte(b.Name + canonicalArgs(b.Args))))
			case assemble.BlockText:
				if m.Role == assemble.RoleToolResult { // a live output in its tool result (rendering 3)
					c[catOutputs] += int64(cn.segment([]byte(b.Text)))
				} else if strings.HasPrefix(b.Text, "[context]") || strings.HasPrefix(b.Text, "[ctxstore]") {
					c[catMetadata] += int64(cn.segment([]byte(b.Text)))
				} else {
					c[catChat] += int64(cn.segment([]byte(b.Text)))
				}
			case assemble.BlockMetadata:
				c[catMetadata] += int64(cn.segment([]byte(b.Text)))
			default:
				if m.Role == assemble.RoleToolResult || strings.HasPrefix(b.Text, "[context]") {
					c[catMetadata] += int64(cn.segment([]byte(b.Text)))
				} else {
					c[catChat] += int64(cn.segment([]byte(b.Text)))
				}
			}
		}
	}
}
