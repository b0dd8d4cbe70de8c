package claudecode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Record is one Claude Code record, decoded: the one reading of a line's
// JSON object in this package. The replay's thread ([Read]), the commit
// codec's events ([Decode]) and the importer's heads ([ReadHead]) are all
// made from Records, so they cannot read a record two ways.
type Record struct {
	envelope
	// AgentID names a sub-agent's records (sidechains).
	AgentID harness.Str `json:"agentId"`
	// LeafUUID and Summary: a "summary" record (a title for a leaf).
	LeafUUID harness.Str `json:"leafUuid"`
	Summary  harness.Str `json:"summary"`
	// Content and CompactMetadata: a "system" record's text and a
	// compaction boundary's details.
	Content         harness.Str     `json:"content"`
	CompactMetadata json.RawMessage `json:"compactMetadata"`
	// A "result" record (`claude -p --output-format stream-json`): the
	// outcome, its duration, turns, cost and usage.
	Result       harness.Str     `json:"result"`
	DurationMS   harness.Num     `json:"duration_ms"`
	NumTurns     harness.Num     `json:"num_turns"`
	TotalCostUSD json.RawMessage `json:"total_cost_usd"`
	Usage        json.RawMessage `json:"usage"`
	// ToolUseResult is what a user record says of its tool result beyond
	// the content (only a sub-agent's id is read).
	ToolUseResult toolUseResult `json:"toolUseResult"`
	// Message is the record's message as written (Msg decoded).
	Message json.RawMessage `json:"message"`

	// Line is the record's line in its file or artifact; Data its JSON.
	Line int             `json:"-"`
	Data json.RawMessage `json:"-"`

	// Msg is the decoded message (nil when the record has none, or
	// MsgErr when it does not decode); Text a string content, Blocks a
	// list content and Raws the list's items as written.
	Msg    *Message          `json:"-"`
	MsgErr error             `json:"-"`
	Text   string            `json:"-"`
	Blocks []Block           `json:"-"`
	Raws   []json.RawMessage `json:"-"`
	// Problems are the content's damage (blocks that are not objects),
	// for the reader that reports them.
	Problems []string `json:"-"`
}

// envelope is what every Claude Code record says about itself, whatever
// its message.
type envelope struct {
	Type              harness.Str    `json:"type"`
	Subtype           harness.Str    `json:"subtype"`
	UUID              harness.Str    `json:"uuid"`
	ParentUUID        harness.OptStr `json:"parentUuid"`
	LogicalParentUUID harness.Str    `json:"logicalParentUuid"`
	IsSidechain       harness.Flag   `json:"isSidechain"`
	IsMeta            harness.Flag   `json:"isMeta"`
	IsCompactSummary  harness.Flag   `json:"isCompactSummary"`
	SessionID         harness.Str    `json:"sessionId"`
	Timestamp         harness.Str    `json:"timestamp"`
	Cwd               harness.Str    `json:"cwd"`
	Version           harness.Str    `json:"version"`
}

// Message is a record's message: a user's (text or tool results) or a
// model's response.
type Message struct {
	Role    harness.Str     `json:"role"`
	ID      harness.Str     `json:"id"`
	Model   harness.Str     `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
}

// Block is one content block of a message.
type Block struct {
	Type      harness.Str     `json:"type"`
	Text      harness.Str     `json:"text"`
	ID        harness.Str     `json:"id"`
	Name      harness.Str     `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID harness.Str     `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   harness.Flag    `json:"is_error"`
	Source    struct {
		MediaType harness.Str `json:"media_type"`
		Data      harness.Str `json:"data"`
	} `json:"source"`
	// Thinking blocks.
	Thinking  harness.Str `json:"thinking"`
	Signature harness.Str `json:"signature"`
	Data      harness.Str `json:"data"`
}

type usage struct {
	Input      harness.Num `json:"input_tokens"`
	Output     harness.Num `json:"output_tokens"`
	CacheRead  harness.Num `json:"cache_read_input_tokens"`
	CacheWrite harness.Num `json:"cache_creation_input_tokens"`
}

// toolUseResult is the part of a record's toolUseResult the importer
// reads: a sub-agent's result names the agent, whose transcript Claude
// Code writes to <session>/subagents/agent-<id>.jsonl.
type toolUseResult struct{ AgentID string }

func (t *toolUseResult) UnmarshalJSON(b []byte) error {
	*t = toolUseResult{}
	if len(b) > 0 && b[0] == '{' {
		var x struct {
			AgentID harness.Str `json:"agentId"`
		}
		if json.Unmarshal(b, &x) == nil {
			t.AgentID = string(x.AgentID)
		}
	}
	return nil
}

// DecodeRecord decodes one record. It fails only when rc is not a JSON
// object; a message that does not decode is left out (MsgErr says why),
// content blocks that are not objects are left out (Problems says so).
func DecodeRecord(rc harness.Record) (*Record, error) {
	r := &Record{Line: rc.Line, Data: rc.Data}
	if err := json.Unmarshal(rc.Data, r); err != nil {
		return nil, err
	}
	raw := bytes.TrimSpace(r.Message)
	if len(raw) == 0 || string(raw) == "null" {
		return r, nil
	}
	m := &Message{}
	if err := json.Unmarshal(raw, m); err != nil {
		r.MsgErr = err
		return r, nil
	}
	r.Msg = m
	r.Text, r.Blocks, r.Raws, r.Problems = decodeContent(m.Content)
	return r, nil
}

// decodeContent reads a content field: a string, a list of blocks, or
// nothing. Blocks that are not objects are left out, each with a problem.
func decodeContent(raw json.RawMessage) (text string, blocks []Block, raws []json.RawMessage, problems []string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil, nil
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, nil, nil, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return "", nil, nil, []string{"message content is neither a string nor a list of blocks; left out"}
	}
	for _, it := range items {
		var b Block
		if json.Unmarshal(it, &b) != nil {
			problems = append(problems, "a content block that is not an object; left out")
			continue
		}
		blocks = append(blocks, b)
		raws = append(raws, it)
	}
	return "", blocks, raws, problems
}

// report puts the record's content problems in rep.
func (r *Record) report(rep *harness.Report) {
	for _, p := range r.Problems {
		rep.Problem(r.Line, "%s", p)
	}
}

// blockTexts are the texts of blocks as the model is shown them: text
// blocks as they are, an image as a note, any other block but a
// tool_result as "[type block]". images counts the images.
func blockTexts(bs []Block, images *int) []string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "image":
			*images++
			parts = append(parts, harness.ImageNote(string(b.Source.MediaType), len(b.Source.Data)))
		case "tool_result":
		default:
			parts = append(parts, "["+string(b.Type)+" block]")
		}
	}
	return parts
}

// toolResultText flattens a tool_result's content: a string, or blocks
// (text joined with newlines, images as a note, other blocks named).
func toolResultText(b Block, images *int) (string, []string) {
	text, blocks, _, problems := decodeContent(b.Content)
	if blocks == nil {
		return text, problems
	}
	var parts []string
	for _, c := range blocks {
		if c.Type == "tool_result" {
			parts = append(parts, "[tool_result block]")
			continue
		}
		parts = append(parts, blockTexts([]Block{c}, images)...)
	}
	return strings.Join(parts, "\n"), problems
}

// isCompaction reports whether the record opens a compacted continuation.
func (r *Record) isCompaction() bool {
	return bool(r.IsCompactSummary) || r.Subtype == "compact_boundary" ||
		(r.Type == "user" && strings.HasPrefix(strings.TrimSpace(r.firstText()), ContinuedPrefix))
}

func (r *Record) firstText() string {
	if r.Text != "" {
		return r.Text
	}
	for _, b := range r.Blocks {
		if b.Type == "text" {
			return string(b.Text)
		}
	}
	return ""
}

// UserClass returns a user record's class (Class* or an injected subtype)
// and its text (the string content or its text blocks, joined by a blank
// line).
func (r *Record) UserClass() (class, text string) {
	if r.Msg == nil {
		return ClassEmpty, ""
	}
	var parts []string
	results := 0
	if r.Text != "" {
		parts = append(parts, r.Text)
	}
	for _, b := range r.Blocks {
		switch b.Type {
		case "tool_result":
			results++
		case "text":
			parts = append(parts, string(b.Text))
		}
	}
	text = harness.JoinNonEmpty(parts, "\n\n")
	return classifyText(text, results, len(r.Blocks), bool(r.IsMeta), bool(r.IsCompactSummary)), text
}

// usage is the message's usage (nil when it has none).
func (r *Record) usage() *conversation.Usage {
	if r.Msg == nil || len(r.Msg.Usage) == 0 || r.Msg.Usage[0] != '{' {
		return nil
	}
	var u usage
	if json.Unmarshal(r.Msg.Usage, &u) != nil {
		return nil
	}
	return &conversation.Usage{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead), CacheWrite: int64(u.CacheWrite)}
}

// known tells the record types of the format (Types, and the "result"
// record of `claude -p --output-format stream-json`), for reading past
// damage.
func known(t string) bool { _, ok := Types[t]; return ok || t == "result" }
