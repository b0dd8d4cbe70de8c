// Package conversation is the harness-neutral conversation model: the
// messages of an agent's log (user, assistant, tool result) as every harness
// converter produces them and every consumer (ingestion, context commits,
// replay) reads them. Pure data, no I/O: it sits on the object model's
// floor so that file parsers need nothing above it.
package conversation

import "time"

// Role is the author of a harness message.
type Role string

// The roles, one-to-one with Pi's user/assistant/toolResult messages and
// Claude Code's user/assistant records (whose tool results are user records
// holding tool_result blocks; readers split them into RoleToolResult
// messages).
const (
	RoleUser       Role = "user"
	RoleAssistant  Role = "assistant"
	RoleToolResult Role = "tool_result"
)

// Message is one message of a harness's log, harness-neutral.
type Message struct {
	// Role is who wrote it.
	Role Role `json:"role"`
	// ID is the harness's id for the message when it has one (Claude Code's
	// message.id or uuid, Pi's entry id); informational.
	ID string `json:"id,omitempty"`
	// Text is the text of a user or assistant message (text blocks joined
	// with a blank line; thinking blocks are left out).
	Text string `json:"text,omitempty"`
	// ToolCalls are an assistant message's tool calls, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID, ToolName, Output and IsError describe a tool result.
	// Output is the result's text (text blocks joined with a newline;
	// images are replaced by a one-line note).
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Output     string `json:"output,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	// Time is when the harness wrote the message; zero when unknown.
	Time time.Time `json:"time,omitzero"`
	// Model and Usage are what the harness recorded for an assistant
	// message's model call (nil when it recorded nothing, or for a locally
	// made message such as Claude Code's "<synthetic>" errors).
	Model string `json:"model,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
	// Meta marks a user message the harness made rather than the person
	// (Claude Code's isMeta, command expansions, compaction summaries);
	// it is ingested like any user message.
	Meta bool `json:"meta,omitempty"`
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	// ID is the provider's tool-call id.
	ID string `json:"id"`
	// Name is the tool's name as the harness calls it (Read, bash, ...).
	Name string `json:"name"`
	// Args are the structured arguments as the provider emitted them.
	Args map[string]any `json:"args,omitempty"`
}

// Usage is a model call's token usage as the harness recorded it. Input is
// the uncached input; the tokens sent are Input + CacheRead + CacheWrite.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	// CacheWrite1h is the part of CacheWrite written for an hour (priced
	// higher than a 5-minute write), when the provider says so.
	CacheWrite1h int64 `json:"cache_write_1h,omitempty"`
}

// Sent returns the input tokens the call sent: uncached, read from the
// cache and written to it.
func (u Usage) Sent() int64 { return u.Input + u.CacheRead + u.CacheWrite }
