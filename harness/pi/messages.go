// Package pi is the Pi coding agent's format: its agent messages, as its
// context event hands them to an extension (the live service), and its
// session files, versions 1 to 3.
//
// [Entry] is the one decoding of a session file line's JSON object. From
// Entries the package makes the replay view ([Read]: the thread Pi loads,
// as harness-neutral messages), the import view ([Decode]: every entry as
// neutral events, the pi-v3 commit codec) and the importer's heads
// ([ReadHead]). [SessionFile] writes events as a session file Pi resumes;
// [Codec] gives all of it to a harness.Registry. Agent messages, from the
// live service or from entries, go through one converter, [Converter], so
// the service and the reader give the assembler the same messages for the
// same Pi messages.
//
// The converter agrees with Pi's own convertToLlm (pi-coding-agent
// src/core/messages.ts, 0.73.1): bash executions, custom messages and
// branch and compaction summaries become user messages (marked Meta) with
// the texts Pi gives them, and "!!" bash executions are left out. Where
// ctxstore departs from what Pi sends the provider it says so: thinking
// blocks are left out, an image becomes a one-line note
// ([harness.ImageNote]), and a response that errored or was aborted keeps
// its usage but not its text and tool calls (pi-ai leaves it out of later
// contexts; the request was still made and paid). Unknown roles and
// content blocks are skipped and counted in the report, never an error: a
// Pi release that adds a role must not switch ctxstore off.
package pi

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Message is one of Pi's agent messages: pi-ai's user, assistant and
// toolResult messages, and pi-coding-agent's bashExecution, custom,
// branchSummary and compactionSummary (and "hookMessage", the name older
// Pi versions gave custom messages). Only the fields ctxstore reads are
// declared. Fields are lenient: a value of an unexpected type reads as its
// zero value.
type Message struct {
	Role harness.Str `json:"role"`
	// Content is a string (user, custom) or a list of blocks.
	Content json.RawMessage `json:"content,omitempty"`
	// Assistant fields.
	API        harness.Str     `json:"api,omitempty"`
	Provider   harness.Str     `json:"provider,omitempty"`
	Model      harness.Str     `json:"model,omitempty"`
	Usage      json.RawMessage `json:"usage,omitempty"`
	StopReason harness.Str     `json:"stopReason,omitempty"`
	// ErrorMessage says why an aborted or errored response ended.
	ErrorMessage harness.Str `json:"errorMessage,omitempty"`
	// Tool result fields.
	ToolCallID harness.Str  `json:"toolCallId,omitempty"`
	ToolName   harness.Str  `json:"toolName,omitempty"`
	IsError    harness.Flag `json:"isError,omitempty"`
	// Timestamp is in milliseconds since the epoch.
	Timestamp harness.Num `json:"timestamp,omitempty"`
	// bashExecution (a command the user ran with "!").
	Command            harness.Str     `json:"command,omitempty"`
	Output             harness.Str     `json:"output,omitempty"`
	ExitCode           json.RawMessage `json:"exitCode,omitempty"`
	Cancelled          harness.Flag    `json:"cancelled,omitempty"`
	Truncated          harness.Flag    `json:"truncated,omitempty"`
	FullOutputPath     harness.Str     `json:"fullOutputPath,omitempty"`
	ExcludeFromContext harness.Flag    `json:"excludeFromContext,omitempty"`
	// branchSummary, compactionSummary.
	Summary harness.Str `json:"summary,omitempty"`
}

// Block is one content block: text, thinking, image or toolCall.
type Block struct {
	Type      harness.Str     `json:"type"`
	Text      harness.Str     `json:"text"`
	ID        harness.Str     `json:"id"`
	Name      harness.Str     `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Data      harness.Str     `json:"data"`
	MimeType  harness.Str     `json:"mimeType"`
	// Thinking blocks.
	Thinking          harness.Str `json:"thinking"`
	ThinkingSignature harness.Str `json:"thinkingSignature"`
}

type usage struct {
	Input      harness.Num `json:"input"`
	Output     harness.Num `json:"output"`
	CacheRead  harness.Num `json:"cacheRead"`
	CacheWrite harness.Num `json:"cacheWrite"`
}

// The texts Pi's convertToLlm gives summaries (pi-coding-agent
// src/core/messages.ts), so ctxstore shows the model what Pi would.
const (
	CompactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	CompactionSuffix = "\n</summary>"
	BranchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	BranchSuffix     = "</summary>"
)

// ToolInfo is what a tool result said of its call.
type ToolInfo struct {
	Name    string
	IsError bool
}

// Converter converts Pi's agent messages one at a time, in order, into
// Log. What it sets aside or finds damaged goes to Report (Problem lines
// are the line numbers Add is given).
type Converter struct {
	// Log is the conversation so far.
	Log []conversation.Message
	// Report counts what was skipped (Unknown["message/<role>"] for an
	// unknown role, Unknown["block/<type>"] for an unknown content block),
	// images, thinking blocks, aborted responses and compactions; nil
	// means a new Report.
	Report *harness.Report
	// API, Provider and Model are those of the last assistant message that
	// was not aborted.
	API, Provider, Model string

	tools   map[string]ToolInfo
	dropped map[string]bool // tool calls of aborted responses
}

// Tool returns what the result of tool call id said of it.
func (c *Converter) Tool(id string) (ToolInfo, bool) {
	ti, ok := c.tools[id]
	return ti, ok
}

// AddJSON decodes one agent message and adds it. A value that is not a JSON
// object is reported and skipped.
func (c *Converter) AddJSON(raw json.RawMessage, line int) bool {
	c.init()
	raw = bytes.TrimSpace(raw)
	var m Message
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		c.Report.Problem(line, "message is not a JSON object; skipped")
		count(&c.Report.Skipped, "damaged")
		return false
	}
	return c.Add(m, line)
}

// Add converts m and appends what the model sees of it to Log (nothing, or
// one message); it reports whether a message was appended.
func (c *Converter) Add(m Message, line int) bool {
	c.init()
	rep := c.Report
	t := time.Time{}
	if m.Timestamp > 0 {
		t = time.UnixMilli(int64(m.Timestamp)).UTC()
	}
	meta := func(text string) bool {
		if strings.TrimSpace(text) == "" {
			count(&rep.Skipped, "blank "+string(m.Role))
			return false
		}
		c.Log = append(c.Log, conversation.Message{Role: conversation.RoleUser, Text: text, Time: t, Meta: true})
		return true
	}
	switch m.Role {
	case "user":
		text := c.content(m.Content, line, "\n\n")
		if strings.TrimSpace(text) == "" {
			count(&rep.Skipped, "blank user")
			return false
		}
		c.Log = append(c.Log, conversation.Message{Role: conversation.RoleUser, Text: text, Time: t})
		return true
	case "assistant":
		c.assistant(m, t, line)
		return true
	case "toolResult":
		id := string(m.ToolCallID)
		switch {
		case id == "":
			rep.Problem(line, "a toolResult without a toolCallId; skipped")
			count(&rep.Skipped, "toolResult without toolCallId")
			return false
		case c.dropped[id]:
			count(&rep.Skipped, "toolResult of an aborted response")
			return false
		}
		c.tools[id] = ToolInfo{Name: string(m.ToolName), IsError: bool(m.IsError)}
		c.Log = append(c.Log, conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id,
			ToolName: string(m.ToolName), Output: c.content(m.Content, line, "\n"), IsError: bool(m.IsError), Time: t})
		return true
	case "bashExecution":
		if m.ExcludeFromContext {
			count(&rep.Skipped, "bashExecution excluded from context")
			return false
		}
		return meta(BashText(m))
	case "custom", "hookMessage":
		return meta(c.content(m.Content, line, "\n\n"))
	case "compactionSummary":
		rep.Compactions++
		return meta(CompactionPrefix + string(m.Summary) + CompactionSuffix)
	case "branchSummary":
		return meta(BranchPrefix + string(m.Summary) + BranchSuffix)
	case "system":
		// Pi 1.x records its system prompt and tool loadout as system
		// messages (the prompt it sends, not a turn of the conversation).
		count(&rep.Skipped, "system")
		return false
	default:
		count(&rep.Unknown, "message/"+string(m.Role))
		rep.Problem(line, "message role %q unknown; skipped", m.Role)
		return false
	}
}

func (c *Converter) init() {
	if c.Report == nil {
		c.Report = &harness.Report{}
	}
	if c.tools == nil {
		c.tools = map[string]ToolInfo{}
		c.dropped = map[string]bool{}
	}
}

// assistant appends an assistant message. An aborted or errored response
// keeps its usage (the call was made) without its text and tool calls,
// and the results of its tool calls are dropped, as pi-ai does before a
// provider call.
func (c *Converter) assistant(m Message, t time.Time, line int) {
	rep := c.Report
	out := conversation.Message{Role: conversation.RoleAssistant, Time: t, Model: string(m.Model)}
	var parts []string
	blocks, _ := c.blocks(m.Content, line)
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "thinking":
			rep.Thinking++
		case "toolCall":
			if b.ID == "" || b.Name == "" {
				rep.Problem(line, "a toolCall block without an id or a name; left out")
				count(&rep.Skipped, "toolCall without id or name")
				continue
			}
			out.ToolCalls = append(out.ToolCalls, conversation.ToolCall{ID: string(b.ID), Name: string(b.Name), Args: harness.Args(b.Arguments)})
		default:
			parts = append(parts, c.other(b))
		}
	}
	out.Text = harness.JoinNonEmpty(parts, "\n\n")
	if m.StopReason == "aborted" || m.StopReason == "error" {
		rep.Aborted++
		for _, tc := range out.ToolCalls {
			c.dropped[tc.ID] = true
		}
		out.Text, out.ToolCalls = "", nil
	} else {
		c.API, c.Provider, c.Model = string(m.API), string(m.Provider), string(m.Model)
	}
	if len(m.Usage) > 0 && m.Usage[0] == '{' {
		var u usage
		if json.Unmarshal(m.Usage, &u) == nil {
			out.Usage = &conversation.Usage{Input: int64(u.Input), Output: int64(u.Output), CacheRead: int64(u.CacheRead), CacheWrite: int64(u.CacheWrite)}
		}
	}
	c.Log = append(c.Log, out)
}

// blocks decodes a content value: a string is one text block.
func (c *Converter) blocks(raw json.RawMessage, line int) ([]Block, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []Block{{Type: "text", Text: harness.Str(text)}}, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		c.Report.Problem(line, "message content is neither a string nor a list of blocks; left out")
		return nil, false
	}
	out := make([]Block, 0, len(items))
	for _, it := range items {
		var b Block
		if json.Unmarshal(it, &b) != nil {
			c.Report.Problem(line, "a content block that is not an object; left out")
			continue
		}
		out = append(out, b)
	}
	return out, true
}

// content flattens the text and image blocks of a content value (or a
// string), joined with sep.
func (c *Converter) content(raw json.RawMessage, line int, sep string) string {
	blocks, _ := c.blocks(raw, line)
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, string(b.Text))
		case "thinking":
			c.Report.Thinking++
		default:
			parts = append(parts, c.other(b))
		}
	}
	return harness.JoinNonEmpty(parts, sep)
}

// other is the text of a block that is not text, thinking or a tool call:
// an image's note, or a placeholder naming an unknown block's type.
func (c *Converter) other(b Block) string {
	if b.Type == "image" {
		c.Report.Images++
		return harness.ImageNote(string(b.MimeType), len(b.Data))
	}
	count(&c.Report.Unknown, "block/"+string(b.Type))
	return "[" + string(b.Type) + " block]"
}

// ContentText is the text the converter gives a list of Pi content blocks
// (a tool's result, as Pi's tool_result event hands it to an extension).
func ContentText(raw json.RawMessage) string {
	c := Converter{Report: &harness.Report{}}
	return c.content(raw, 0, "\n")
}

// BashText is Pi's bashExecutionToText: the command, its output in a
// fence, how it ended, and where the full output is when it was truncated.
func BashText(m Message) string {
	var b strings.Builder
	b.WriteString("Ran `" + string(m.Command) + "`\n")
	if m.Output != "" {
		b.WriteString("```\n" + string(m.Output) + "\n```")
	} else {
		b.WriteString("(no output)")
	}
	if m.Cancelled {
		b.WriteString("\n\n(command cancelled)")
	} else if code := strings.TrimSpace(string(m.ExitCode)); code != "" && code != "0" && code != "null" {
		b.WriteString("\n\nCommand exited with code " + code)
	}
	if m.Truncated && m.FullOutputPath != "" {
		b.WriteString("\n\n[Output truncated. Full output: " + string(m.FullOutputPath) + "]")
	}
	return b.String()
}

func count(m *map[string]int, k string) { harness.Count(m, k) }
