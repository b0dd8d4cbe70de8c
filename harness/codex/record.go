// Package codex is the Codex CLI's rollout format: the JSON Lines file
// Codex writes for each session under
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl and continues
// with `codex resume`. Each line is {timestamp, type, payload}: the type
// session_meta (the session's id, cwd and Codex version), response_item
// (what the model was sent and answered, in OpenAI's Responses API item
// shapes: message, reasoning, function_call, function_call_output,
// custom_tool_call, ...), event_msg (what the interface showed: mostly
// copies of response items, token counts, turn starts and ends),
// turn_context (a turn's model, cwd and policies), compacted (a
// compaction's summary) and others Codex adds (world_state,
// token_usage_record).
//
// One decoder, [DecodeLine], reads a line into a [Line]; from it the
// package makes the replay's messages ([Read]) and the import's neutral
// events ([Decode]). [Encode] writes neutral events as a rollout the real
// Codex resumes (docs/crossharness.md, "Codex").
package codex

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
)

// Types are the rollout line types and what they mean to the replay.
var Types = map[string]harness.Kind{
	"session_meta":       harness.KindSpecial,
	"response_item":      harness.KindMessage,
	"compacted":          harness.KindSpecial,
	"event_msg":          harness.KindSkip,
	"turn_context":       harness.KindSkip,
	"world_state":        harness.KindSkip,
	"token_usage_record": harness.KindSkip,
}

func known(t string) bool { _, ok := Types[t]; return ok }

// Line is one rollout line, read once.
type Line struct {
	Timestamp harness.Str     `json:"timestamp"`
	Type      harness.Str     `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	// P is the payload decoded (zero when it is not an object).
	P Payload `json:"-"`
	// Data is the line's JSON as read.
	Data json.RawMessage `json:"-"`
}

// Payload holds the fields of every payload type the package reads; a
// field of an unexpected JSON type reads as its zero value.
type Payload struct {
	// Type is a response item's or event message's type.
	Type harness.Str `json:"type"`
	ID   harness.Str `json:"id"`
	// session_meta.
	SessionID     harness.Str `json:"session_id"`
	Cwd           harness.Str `json:"cwd"`
	CLIVersion    harness.Str `json:"cli_version"`
	Originator    harness.Str `json:"originator"`
	ModelProvider harness.Str `json:"model_provider"`
	// A sub-agent's session_meta: its parent thread (Codex 0.171.0 writes
	// it at the top and in source.subagent.thread_spawn).
	ParentThreadID harness.Str     `json:"parent_thread_id"`
	Source         json.RawMessage `json:"source"`
	// turn_context.
	Model harness.Str `json:"model"`
	// response_item message.
	Role    harness.Str     `json:"role"`
	Content json.RawMessage `json:"content"`
	// function_call, custom_tool_call and their outputs.
	Name      harness.Str     `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     harness.Str     `json:"input"`
	CallID    harness.Str     `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
	// reasoning.
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent harness.Str     `json:"encrypted_content"`
	// compacted; event_msg error.
	Message harness.Str `json:"message"`
	// compacted: the items Codex resumes with after a local compaction
	// (read leniently: anything but a list of objects is no history).
	ReplacementHistory json.RawMessage `json:"replacement_history"`
	// token_usage_record.
	Usage *TokenUsage `json:"usage"`
}

// TokenUsage is a response's token counts (token_usage_record).
type TokenUsage struct {
	Input      harness.Num `json:"input_tokens"`
	Cached     harness.Num `json:"cached_input_tokens"`
	CacheWrite harness.Num `json:"cache_write_input_tokens"`
	Output     harness.Num `json:"output_tokens"`
	Reasoning  harness.Num `json:"reasoning_output_tokens"`
}

// DecodeLine reads a record as a rollout line. It fails only when the
// record is not a JSON object; fields of unexpected types read as zero.
func DecodeLine(rc harness.Record) (*Line, error) {
	var l Line
	if err := json.Unmarshal(rc.Data, &l); err != nil {
		return nil, err
	}
	if len(l.Payload) > 0 && l.Payload[0] == '{' {
		if err := json.Unmarshal(l.Payload, &l.P); err != nil {
			return nil, err
		}
	} else if string(l.Type) != "" && len(l.Payload) == 0 {
		return &l, errors.New("line without a payload")
	}
	l.Data = rc.Data
	return &l, nil
}

// Replacement returns a compacted line's replacement history: its items
// as payloads (an item that is not an object is left out).
func (p *Payload) Replacement() []Payload {
	var raw []json.RawMessage
	if json.Unmarshal(p.ReplacementHistory, &raw) != nil {
		return nil
	}
	var out []Payload
	for _, r := range raw {
		var it Payload
		if len(r) > 0 && r[0] == '{' && json.Unmarshal(r, &it) == nil {
			out = append(out, it)
		}
	}
	return out
}

// contentPart is an item of a message's content (input_text,
// output_text, input_image, ...) or of a tool output's content list.
type contentPart struct {
	Type     harness.Str `json:"type"`
	Text     harness.Str `json:"text"`
	ImageURL harness.Str `json:"image_url"`
}

// text joins the text of a content value (a string or a list of parts);
// images become a one-line note. images counts them.
func text(raw json.RawMessage, images *int) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "input_image", "image":
			if images != nil {
				*images++
			}
			media, n := "", len(p.ImageURL)
			if rest, ok := strings.CutPrefix(string(p.ImageURL), "data:"); ok {
				if i := strings.Index(rest, ";base64,"); i >= 0 {
					media, n = rest[:i], len(rest)-i-len(";base64,")
				}
			}
			out = append(out, harness.ImageNote(media, n))
		default:
			if p.Text != "" {
				out = append(out, string(p.Text))
			}
		}
	}
	return strings.Join(out, "\n")
}

// arguments reads a function call's arguments: a JSON string holding a
// JSON object (as the Responses API sends them), or an object.
func arguments(raw json.RawMessage) map[string]any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if a := harness.Args(json.RawMessage(s)); a != nil {
			return a
		}
		if s == "" {
			return nil
		}
		return map[string]any{"input": s}
	}
	return harness.Args(raw)
}

// injectedPrefixes start the user messages Codex writes itself (its
// environment, AGENTS.md instructions, notes on aborted turns and shell
// commands run by the person): context, not a person's prompt.
var injectedPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>",
	"<user_shell_command>", "<skills_instructions>", "<permissions instructions>", "<collaboration_mode>"}

// Injected reports whether a user message's text is one Codex wrote.
func Injected(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// assistantSide reports whether a response item is the model's (a turn's
// output) rather than input.
func assistantSide(p *Payload) bool {
	switch p.Type {
	case "message":
		return p.Role == "assistant"
	case "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call":
		return true
	}
	return false
}
