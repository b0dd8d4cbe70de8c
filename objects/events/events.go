// Package events is the harness-neutral event stream of an agent session:
// the canonical delta content of context commits (format "events-v1",
// docs/formats/events-v1.md). Every harness's messages are stored rich
// (capture everything, adapt on output): what a harness
// records and the neutral fields do not name goes to Metadata or Raw, never
// away. Pure data, no I/O: it sits on the object model's floor.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Type is the kind of an event.
type Type string

// The event types of events-v1 (docs/formats/events-v1.md).
const (
	// Prompt is input to the agent: a person's prompt (Source "user") or
	// content the harness injected as a user message (Source "system",
	// "meta", "command", ...).
	Prompt Type = "prompt"
	// Response is the agent's text answer.
	Response Type = "response"
	// Thinking is the model's reasoning, with its signature if any.
	Thinking Type = "thinking"
	// ToolCall is a tool invocation by the agent.
	ToolCall Type = "tool_call"
	// ToolResult is what a tool returned.
	ToolResult Type = "tool_result"
	// System is a harness event: session start (Subtype "init"), a
	// compaction boundary ("compact_boundary"), a compaction summary
	// ("compaction_summary"), a system prompt ("system_prompt"), ...
	System Type = "system"
	// Metric is accounting: token usage, cost, duration, outcome.
	Metric Type = "metric"
	// Error is a failure the harness reported (API error, aborted turn).
	Error Type = "error"
	// Output is anything else, with the harness's record kept in Raw.
	Output Type = "output"
)

// Types lists the event types in documentation order.
var Types = []Type{Prompt, Response, Thinking, ToolCall, ToolResult, System, Metric, Error, Output}

// Subtypes of System events that context commits give a meaning.
const (
	// SubtypeCompactionSummary is the summary a compaction commit holds:
	// the conversation prefix it replaces.
	SubtypeCompactionSummary = "compaction_summary"
	// SubtypeCompactBoundary marks where a harness compacted.
	SubtypeCompactBoundary = "compact_boundary"
	// SubtypeSystemPrompt carries a system prompt.
	SubtypeSystemPrompt = "system_prompt"
	// SubtypeNarrative carries a rendering of an earlier conversation
	// (translation tier 3, docs/commits.md).
	SubtypeNarrative = "narrative"
)

// Event is one event of a session. Which fields are set depends on Type;
// every field is optional except Type.
type Event struct {
	Type Type `json:"type"`
	// Subtype refines Type (System: "init", "compact_boundary"; Metric:
	// "result"; Prompt: the kind of injected content).
	Subtype string `json:"subtype,omitempty"`
	// ID is the harness's id of the record or message the event came from
	// (Claude Code's uuid or message id, Pi's entry id).
	ID string `json:"id,omitempty"`
	// ParentID is the harness's parent record, when it keeps a tree.
	ParentID string `json:"parent_id,omitempty"`
	// Time is when the harness recorded the event; zero when unknown.
	Time time.Time `json:"time,omitzero"`
	// Source is who produced a Prompt ("user" for a person, otherwise what
	// injected it) or a Response/Thinking/ToolCall ("assistant").
	Source string `json:"source,omitempty"`
	// Text is the text of a prompt, response, thinking block, system event
	// or error.
	Text string `json:"text,omitempty"`
	// Signature is a thinking block's cryptographic signature.
	Signature string `json:"signature,omitempty"`
	// Model is the model that produced a response, thinking or tool call.
	Model string `json:"model,omitempty"`
	// MessageID groups the events of one model message (a response, its
	// thinking and its tool calls share it).
	MessageID string `json:"message_id,omitempty"`
	// Tool describes a ToolCall; ToolResult names the call it answers.
	Tool *Tool `json:"tool,omitempty"`
	// Result is a ToolResult's content.
	Result *Result `json:"result,omitempty"`
	// Usage is a model call's token usage (on the response that closes it,
	// or on a Metric).
	Usage *conversation.Usage `json:"usage,omitempty"`
	// Metric holds a Metric event's figures.
	Metric *MetricData `json:"metric,omitempty"`
	// Meta marks content the harness made rather than the person.
	Meta bool `json:"meta,omitempty"`
	// Metadata is everything else the harness recorded, as JSON values.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Raw is the harness's original record when the event cannot say all
	// of it (unknown record types; Output events).
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Tool is a tool call's identity and input.
type Tool struct {
	// ID is the provider's tool-call id.
	ID string `json:"id"`
	// Name is the tool's name as the harness calls it.
	Name string `json:"name,omitempty"`
	// Input is the structured input as the provider emitted it.
	Input map[string]any `json:"input,omitempty"`
	// Server marks a server-side tool (web search run by the provider).
	Server bool `json:"server,omitempty"`
}

// Result is a tool result's content.
type Result struct {
	// Content is the result's text (text blocks joined with a newline).
	Content string `json:"content"`
	// IsError marks a failed tool.
	IsError bool `json:"is_error,omitempty"`
	// Blocks are the result's content blocks when they are more than text
	// (images), as the harness recorded them.
	Blocks []any `json:"blocks,omitempty"`
}

// MetricData is what a Metric event measured.
type MetricData struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	DurationMS   int64   `json:"duration_ms,omitempty"`
	Turns        int64   `json:"turns,omitempty"`
	// Status is the outcome: "success" or an error subtype
	// ("error_max_turns", "error_during_execution", ...).
	Status string `json:"status,omitempty"`
}

// Validate checks e and names the field at fault.
func (e Event) Validate() error {
	switch e.Type {
	case Prompt, Response, Thinking, System, Metric, Error, Output:
	case ToolCall:
		if e.Tool == nil || e.Tool.ID == "" {
			return fmt.Errorf("field \"tool.id\": a tool_call event needs its tool-call id")
		}
	case ToolResult:
		if e.Tool == nil || e.Tool.ID == "" {
			return fmt.Errorf("field \"tool.id\": a tool_result event names the tool call it answers")
		}
	case "":
		return fmt.Errorf("field \"type\": missing")
	default:
		return fmt.Errorf("field \"type\": unknown event type %q (known: %s)", e.Type, typeList())
	}
	if len(e.Raw) > 0 && !json.Valid(e.Raw) {
		return fmt.Errorf("field \"raw\": not valid JSON")
	}
	return nil
}

func typeList() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Encode returns the events-v1 bytes of evs: a JSON array, one event per
// element, fields in the order of the Event struct. The encoding is
// deterministic: the same events give the same bytes.
func Encode(evs []Event) ([]byte, error) {
	if evs == nil {
		evs = []Event{}
	}
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
	}
	// Each event is encoded on its own and the array is joined once at
	// its final size: encoding the slice whole grew one buffer by
	// doubling and copied it out, holding the events' bytes (a log's tool
	// outputs) up to four times at once. The bytes are the same.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	parts := make([][]byte, len(evs))
	n := 2 // [ ]
	for i := range evs {
		b.Reset()
		if err := enc.Encode(&evs[i]); err != nil {
			return nil, err
		}
		parts[i] = bytes.Clone(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		n += len(parts[i]) + 1
	}
	out := make([]byte, 1, n)
	out[0] = '['
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
		parts[i] = nil
	}
	return append(out, ']'), nil
}

// Decode parses events-v1 bytes. An element that is not an event, or an
// event that does not validate, is an error naming its index.
func Decode(data []byte) ([]Event, error) {
	// One decoder reads the array an event at a time: it holds one event
	// at once, not a copy of the whole (nor one copy per event).
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	notArray := func(err error) error { return fmt.Errorf("events-v1: not a JSON array of events: %w", err) }
	tok, err := dec.Token()
	if err != nil {
		return nil, notArray(err)
	}
	if tok == nil { // null: no events
		return []Event{}, rest(dec, notArray)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, notArray(fmt.Errorf("got %v", tok))
	}
	var out []Event
	for i := 0; dec.More(); i++ {
		var e Event
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("events-v1: event %d: %w", i, err)
		}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("events-v1: event %d: %w", i, err)
		}
		out = append(out, e)
	}
	if _, err := dec.Token(); err != nil { // the closing bracket
		return nil, notArray(err)
	}
	if out == nil {
		out = []Event{}
	}
	return out, rest(dec, notArray)
}

// rest says whether anything but white space follows the value dec read.
func rest(dec *json.Decoder, wrap func(error) error) error {
	if _, err := dec.Token(); err != io.EOF {
		return wrap(errors.New("data after the array"))
	}
	return nil
}

// IsMessage tells whether e counts as a conversation message (the
// message_count of a commit): prompts, responses, tool calls, tool results
// and compaction summaries.
func (e Event) IsMessage() bool {
	switch e.Type {
	case Prompt, Response, ToolCall, ToolResult:
		return true
	case System:
		return e.Subtype == SubtypeCompactionSummary || e.Subtype == SubtypeNarrative
	}
	return false
}

// FromMessages turns harness-neutral messages into events: a user message
// becomes a Prompt (Source "user", or "meta" for Meta messages), an
// assistant message a Response (if it has text) followed by one ToolCall per
// tool call, a tool result a ToolResult.
func FromMessages(msgs []conversation.Message) []Event {
	var out []Event
	for _, m := range msgs {
		switch m.Role {
		case conversation.RoleUser:
			src := "user"
			if m.Meta {
				src = "meta"
			}
			out = append(out, Event{Type: Prompt, ID: m.ID, Time: m.Time, Source: src, Text: m.Text, Meta: m.Meta})
		case conversation.RoleAssistant:
			if m.Text != "" || len(m.ToolCalls) == 0 {
				out = append(out, Event{Type: Response, ID: m.ID, MessageID: m.ID, Time: m.Time, Source: "assistant",
					Text: m.Text, Model: m.Model, Usage: m.Usage})
			}
			for i, tc := range m.ToolCalls {
				e := Event{Type: ToolCall, MessageID: m.ID, Time: m.Time, Source: "assistant", Model: m.Model,
					Tool: &Tool{ID: tc.ID, Name: tc.Name, Input: tc.Args}}
				if m.Text == "" && i == 0 {
					e.Usage = m.Usage
				}
				out = append(out, e)
			}
		case conversation.RoleToolResult:
			out = append(out, Event{Type: ToolResult, ID: m.ID, Time: m.Time,
				Tool: &Tool{ID: m.ToolCallID, Name: m.ToolName}, Result: &Result{Content: m.Output, IsError: m.IsError}})
		}
	}
	return out
}

// ToMessages turns events back into harness-neutral messages: the inverse
// of FromMessages for the events it makes (a Response and the ToolCalls of
// the same MessageID, or ToolCalls directly after their Response, form one
// assistant message). Compaction summaries and narratives become user
// messages marked Meta; thinking, metrics, errors and other system events
// have no message and are left out.
func ToMessages(evs []Event) []conversation.Message {
	var out []conversation.Message
	var cur *conversation.Message // the open assistant message
	curID := ""
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur, curID = nil, ""
		}
	}
	for _, e := range evs {
		switch e.Type {
		case Prompt:
			flush()
			out = append(out, conversation.Message{Role: conversation.RoleUser, ID: e.ID, Text: e.Text, Time: e.Time,
				Meta: e.Meta || (e.Source != "" && e.Source != "user")})
		case Response:
			flush()
			cur = &conversation.Message{Role: conversation.RoleAssistant, ID: e.ID, Text: e.Text, Time: e.Time, Model: e.Model, Usage: e.Usage}
			curID = e.MessageID
		case ToolCall:
			if cur == nil || (e.MessageID != "" && curID != "" && e.MessageID != curID) {
				flush()
				cur = &conversation.Message{Role: conversation.RoleAssistant, ID: e.MessageID, Time: e.Time, Model: e.Model, Usage: e.Usage}
				curID = e.MessageID
			}
			cur.ToolCalls = append(cur.ToolCalls, conversation.ToolCall{ID: e.Tool.ID, Name: e.Tool.Name, Args: e.Tool.Input})
		case ToolResult:
			flush()
			m := conversation.Message{Role: conversation.RoleToolResult, ID: e.ID, ToolCallID: e.Tool.ID, ToolName: e.Tool.Name, Time: e.Time}
			if e.Result != nil {
				m.Output, m.IsError = e.Result.Content, e.Result.IsError
			}
			out = append(out, m)
		case System:
			if e.Subtype == SubtypeCompactionSummary || e.Subtype == SubtypeNarrative {
				flush()
				out = append(out, conversation.Message{Role: conversation.RoleUser, ID: e.ID, Text: e.Text, Time: e.Time, Meta: true})
			}
		}
	}
	flush()
	return out
}
