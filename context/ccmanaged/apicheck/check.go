// Package apicheck validates a Messages API request body against the
// rules Anthropic publishes for it (the Messages API reference, the tool
// use, extended thinking and prompt caching guides), so that a request the
// API would reject is caught before it is sent: the Claude Code proxy's
// tests run every managed request through Check, and Preserved checks that
// managed mode changed nothing but what it may change.
//
// The rules checked:
//
//   - the body is a JSON object with a model, a positive max_tokens and a
//     non-empty messages list; roles are user and assistant (and system,
//     which Claude Code 2.1 sends inside messages: text only);
//   - every message has content (a non-empty string or a non-empty list of
//     blocks; the final assistant message may be empty); text blocks hold
//     text that is not only white space;
//   - block types belong to their role: thinking, redacted_thinking,
//     tool_use and server tool blocks to assistant messages, tool_result
//     to user messages; thinking holds a signature, redacted_thinking its
//     data;
//   - tool_use/tool_result pairing: tool_use ids are unique; every
//     tool_use of an assistant message has its tool_result in the next
//     message, a user message, where the tool_result blocks come before
//     any other block; every tool_result answers a tool_use of the
//     message before it; a server tool's result follows its
//     server_tool_use in the same message;
//   - cache_control: at most 4 breakpoints in tools, system and messages;
//     type ephemeral, ttl 5m or 1h, an hour never after a shorter
//     lifetime (tools, then system, then messages); never on a thinking or
//     redacted_thinking block, nor on an empty text block.
package apicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxBreakpoints is the Messages API's limit of cache_control blocks in
// one request.
const MaxBreakpoints = 4

// serverResults are the server tools' result blocks, answered in the
// assistant message that called them (server_tool_use, mcp_tool_use).
var serverResults = map[string]bool{
	"web_search_tool_result": true, "web_fetch_tool_result": true, "code_execution_tool_result": true,
	"bash_code_execution_tool_result": true, "text_editor_code_execution_tool_result": true,
	"mcp_tool_result": true, "tool_search_tool_result": true,
}

// Known reports whether a content block type is one the checker knows
// (and the proxy may carry): the others make a request not understood.
func Known(typ string) bool {
	switch typ {
	case "text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use", "tool_result",
		"server_tool_use", "mcp_tool_use", "container_upload", "tool_reference":
		return true
	}
	return serverResults[typ]
}

// Check returns every rule the request body breaks (nil: none).
func Check(body []byte) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return []error{fmt.Errorf("the body is not a JSON object: %v", err)}
	}
	var model string
	if json.Unmarshal(top["model"], &model) != nil || model == "" {
		bad("model: missing or not a string")
	}
	var maxTokens int
	if json.Unmarshal(top["max_tokens"], &maxTokens) != nil || maxTokens < 1 {
		bad("max_tokens: missing or not a positive integer")
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(top["messages"], &msgs); err != nil || len(msgs) == 0 {
		bad("messages: missing or empty")
	}
	cc := &caches{}
	var tools []map[string]json.RawMessage
	if raw, ok := top["tools"]; ok {
		if err := json.Unmarshal(raw, &tools); err != nil {
			bad("tools: %v", err)
		}
	}
	for i, t := range tools {
		cc.add(fmt.Sprintf("tools[%d]", i), t["cache_control"], &errs)
	}
	if raw, ok := top["system"]; ok && len(raw) > 0 && raw[0] == '[' {
		var sys []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &sys); err != nil {
			bad("system: %v", err)
		}
		for i, b := range sys {
			if typeOf(b) != "text" {
				bad("system[%d]: a %q block (the system prompt holds text blocks)", i, typeOf(b))
			}
			cc.add(fmt.Sprintf("system[%d]", i), b["cache_control"], &errs)
		}
	}
	seen := map[string]bool{}
	var pending map[string]bool // tool_use ids of the previous message, awaiting their results
	for i, m := range msgs {
		var role string
		json.Unmarshal(m["role"], &role)
		where := fmt.Sprintf("messages[%d]", i)
		blocks, err := contentOf(m["content"])
		if err != nil {
			bad("%s: content: %v", where, err)
			pending = nil
			continue
		}
		if len(blocks) == 0 && !(role == "assistant" && i == len(msgs)-1) {
			bad("%s: empty content (only the final assistant message may be empty)", where)
		}
		switch role {
		case "user", "assistant", "system":
		default:
			bad("%s: role %q", where, role)
		}
		if pending != nil && role != "user" {
			bad("%s: tool_use ids %v of the message before have no tool_result blocks immediately after", where, keys(pending))
			pending = nil
		}
		answered := map[string]bool{}
		servers := map[string]bool{}
		others := false
		var uses map[string]bool
		for j, b := range blocks {
			at := fmt.Sprintf("%s.content[%d]", where, j)
			typ := typeOf(b)
			if !Known(typ) {
				bad("%s: unknown block type %q", at, typ)
				continue
			}
			cc.add(at, b["cache_control"], &errs)
			if _, has := b["cache_control"]; has && !isNull(b["cache_control"]) {
				if typ == "thinking" || typ == "redacted_thinking" {
					bad("%s: cache_control on a %s block", at, typ)
				}
			}
			switch typ {
			case "text":
				var s string
				json.Unmarshal(b["text"], &s)
				if strings.TrimSpace(s) == "" {
					bad("%s: a text block without text", at)
				}
			case "thinking", "redacted_thinking", "tool_use", "server_tool_use", "mcp_tool_use":
				if role != "assistant" {
					bad("%s: a %s block in a %s message", at, typ, role)
				}
			case "tool_result":
				if role != "user" {
					bad("%s: a tool_result block in a %s message", at, role)
				}
			}
			if serverResults[typ] && role != "assistant" {
				bad("%s: a %s block in a %s message", at, typ, role)
			}
			switch typ {
			case "thinking":
				var sig string
				if json.Unmarshal(b["signature"], &sig) != nil || sig == "" {
					bad("%s: a thinking block without its signature", at)
				}
			case "redacted_thinking":
				var data string
				if json.Unmarshal(b["data"], &data) != nil || data == "" {
					bad("%s: a redacted_thinking block without its data", at)
				}
			case "tool_use", "server_tool_use", "mcp_tool_use":
				var id string
				json.Unmarshal(b["id"], &id)
				if id == "" {
					bad("%s: a %s block without an id", at, typ)
				} else if seen[id] {
					bad("%s: tool_use id %s used twice", at, id)
				}
				seen[id] = true
				var in map[string]json.RawMessage
				if json.Unmarshal(b["input"], &in) != nil || in == nil {
					bad("%s: a %s block whose input is not an object", at, typ)
				}
				if typ == "tool_use" {
					if uses == nil {
						uses = map[string]bool{}
					}
					uses[id] = true
				} else {
					servers[id] = true
				}
			case "tool_result":
				var id string
				json.Unmarshal(b["tool_use_id"], &id)
				if others {
					bad("%s: a tool_result block after other content (tool_result blocks come first)", at)
				}
				if !pending[id] {
					bad("%s: tool_result %s answers no tool_use of the message before", at, id)
				}
				answered[id] = true
				if err := resultContent(b["content"]); err != nil {
					bad("%s: %v", at, err)
				}
			default:
				if serverResults[typ] {
					var id string
					json.Unmarshal(b["tool_use_id"], &id)
					if !servers[id] {
						bad("%s: %s %s follows no server tool use of its message", at, typ, id)
					}
				}
			}
			if typ != "tool_result" {
				others = true
			}
		}
		for id := range pending {
			if !answered[id] {
				bad("%s: tool_use %s has no tool_result in the message after it", where, id)
			}
		}
		pending = uses
	}
	if pending != nil {
		// The last message asked for tools and nothing answers: a request
		// can end with an assistant message (a prefill) only without them.
		bad("messages: the last message holds tool_use blocks %v that nothing answers", keys(pending))
	}
	if cc.n > MaxBreakpoints {
		bad("cache_control: %d breakpoints, the API allows %d", cc.n, MaxBreakpoints)
	}
	return errs
}

// caches counts breakpoints and checks their lifetimes' order.
type caches struct {
	n     int
	short string // where the first breakpoint of five minutes was
}

func (c *caches) add(where string, raw json.RawMessage, errs *[]error) {
	if isNull(raw) {
		return
	}
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil {
		*errs = append(*errs, fmt.Errorf("%s: cache_control: %v", where, err))
		return
	}
	c.n++
	if cc.Type != "ephemeral" {
		*errs = append(*errs, fmt.Errorf("%s: cache_control type %q", where, cc.Type))
	}
	switch cc.TTL {
	case "", "5m":
		if c.short == "" {
			c.short = where
		}
	case "1h":
		if c.short != "" {
			*errs = append(*errs, fmt.Errorf("%s: a 1h breakpoint after the 5m one at %s", where, c.short))
		}
	default:
		*errs = append(*errs, fmt.Errorf("%s: cache_control ttl %q", where, cc.TTL))
	}
}

// contentOf returns a message's content as blocks (a string is one text
// block).
func contentOf(raw json.RawMessage) ([]map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if strings.TrimSpace(s) == "" {
			return nil, errors.New("an empty string")
		}
		b, _ := json.Marshal(s)
		return []map[string]json.RawMessage{{"type": json.RawMessage(`"text"`), "text": b}}, nil
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("neither a string nor a list of blocks")
	}
	return blocks, nil
}

// resultContent checks a tool_result's content: absent, a string, or
// text, image, document and search_result blocks.
func resultContent(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	if bytes.TrimSpace(raw)[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s)
	}
	var blocks []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return fmt.Errorf("tool_result content: %v", err)
	}
	for i, b := range blocks {
		switch typeOf(b) {
		case "text":
			var s string
			json.Unmarshal(b["text"], &s)
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("tool_result content[%d]: a text block without text", i)
			}
		case "image", "document", "search_result", "tool_reference":
		default:
			return fmt.Errorf("tool_result content[%d]: a %q block", i, typeOf(b))
		}
	}
	return nil
}

func typeOf(b map[string]json.RawMessage) string {
	var t string
	json.Unmarshal(b["type"], &t)
	return t
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Preserved returns an error when managed, the request sent for
// original, changed anything but what the proxy may change: the content
// of tool_result blocks, the cache_control of message blocks (a string
// content may become one text block to carry a breakpoint) and the
// lifetime of the system prompt's breakpoints (the head's hour).
// Every other field is compared as JSON values: the system prompt, the
// tools, the parameters, and every block (thinking and its signature,
// redacted thinking, images, documents, tool uses, server tools) in its
// message, in its order.
func Preserved(original, managed []byte) error {
	var a, b map[string]any
	if err := json.Unmarshal(original, &a); err != nil {
		return fmt.Errorf("original: %v", err)
	}
	if err := json.Unmarshal(managed, &b); err != nil {
		return fmt.Errorf("managed: %v", err)
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return fmt.Errorf("field %s was left out", k)
		}
	}
	for k, v := range b {
		w, ok := a[k]
		if !ok {
			return fmt.Errorf("field %s was added", k)
		}
		if k == "messages" {
			continue
		}
		if k == "system" {
			v, w = noTTL(v), noTTL(w)
		}
		if !equal(v, w) {
			return fmt.Errorf("field %s changed", k)
		}
	}
	am, _ := a["messages"].([]any)
	bm, _ := b["messages"].([]any)
	if len(am) != len(bm) {
		return fmt.Errorf("%d messages became %d", len(am), len(bm))
	}
	for i := range am {
		x, y := normal(am[i]), normal(bm[i])
		if !equal(x, y) {
			return fmt.Errorf("messages[%d] changed beyond tool_result content and cache_control", i)
		}
	}
	return nil
}

// normal is a message with its string content as a text block, its
// blocks' cache_control removed and its tool_result blocks' content
// replaced by a mark.
func normal(m any) any {
	msg, ok := m.(map[string]any)
	if !ok {
		return m
	}
	out := map[string]any{}
	for k, v := range msg {
		out[k] = v
	}
	if s, ok := msg["content"].(string); ok {
		out["content"] = []any{map[string]any{"type": "text", "text": s}}
		return out
	}
	blocks, ok := msg["content"].([]any)
	if !ok {
		return out
	}
	var nb []any
	for _, b := range blocks {
		bm, ok := b.(map[string]any)
		if !ok {
			nb = append(nb, b)
			continue
		}
		c := map[string]any{}
		for k, v := range bm {
			if k != "cache_control" {
				c[k] = v
			}
		}
		if c["type"] == "tool_result" {
			c["content"] = "(content)"
		}
		nb = append(nb, c)
	}
	out["content"] = nb
	return out
}

// noTTL is a system prompt with its breakpoints' lifetimes left out.
func noTTL(v any) any {
	blocks, ok := v.([]any)
	if !ok {
		return v
	}
	var out []any
	for _, b := range blocks {
		bm, ok := b.(map[string]any)
		if !ok {
			out = append(out, b)
			continue
		}
		c := map[string]any{}
		for k, x := range bm {
			c[k] = x
		}
		if cc, ok := bm["cache_control"].(map[string]any); ok {
			n := map[string]any{}
			for k, x := range cc {
				if k != "ttl" {
					n[k] = x
				}
			}
			c["cache_control"] = n
		}
		out = append(out, c)
	}
	return out
}

// equal compares two decoded JSON values.
func equal(x, y any) bool {
	a, _ := json.Marshal(x)
	b, _ := json.Marshal(y)
	return bytes.Equal(a, b)
}
