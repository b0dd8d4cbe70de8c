package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/objects/conversation"

	"github.com/ctxstore/ctxstore/context/assemble"
)

// PiMessage is one of Pi's agent messages (pi-ai's user, assistant and
// toolResult messages, and pi-coding-agent's bashExecution, custom,
// branchSummary and compactionSummary), as its context event hands them to
// an extension. Only the fields ctxstore reads are declared; others are
// ignored.
type PiMessage struct {
	Role string `json:"role"`
	// Content is a string (user, custom) or a list of blocks.
	Content json.RawMessage `json:"content,omitempty"`
	// Assistant fields.
	API        string   `json:"api,omitempty"`
	Provider   string   `json:"provider,omitempty"`
	Model      string   `json:"model,omitempty"`
	Usage      *PiUsage `json:"usage,omitempty"`
	StopReason string   `json:"stopReason,omitempty"`
	// Tool result fields.
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
	// Timestamp is in milliseconds since the epoch.
	Timestamp float64 `json:"timestamp,omitempty"`
	// bashExecution (a command the user ran with "!").
	Command            string `json:"command,omitempty"`
	Output             string `json:"output,omitempty"`
	ExitCode           *int   `json:"exitCode,omitempty"`
	Cancelled          bool   `json:"cancelled,omitempty"`
	ExcludeFromContext bool   `json:"excludeFromContext,omitempty"`
	// branchSummary, compactionSummary.
	Summary string `json:"summary,omitempty"`
}

// PiUsage is an assistant message's token usage.
type PiUsage struct {
	Input       int64   `json:"input"`
	Output      int64   `json:"output"`
	CacheRead   int64   `json:"cacheRead"`
	CacheWrite  int64   `json:"cacheWrite"`
	TotalTokens int64   `json:"totalTokens"`
	Cost        *PiCost `json:"cost,omitempty"`
}

// PiCost is the cost part of PiUsage.
type PiCost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// PiBlock is one content block: text, thinking, image or toolCall.
type PiBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text,omitempty"`
	Thinking  string         `json:"thinking,omitempty"`
	MimeType  string         `json:"mimeType,omitempty"`
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// The texts Pi's convertToLlm gives summaries (pi-coding-agent
// dist/core/messages.js), so ctxstore shows the model what Pi would.
const (
	piCompactionPrefix = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
	piCompactionSuffix = "\n</summary>"
	piBranchPrefix     = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
	piBranchSuffix     = "</summary>"
)

// piLog is a converted Pi log, with what rendering the answer needs back.
type piLog struct {
	log []conversation.Message
	// tools maps tool-call ids to their tool's name and error flag.
	tools map[string]piToolInfo
	// api, provider and model are those of the last assistant message,
	// given to assistant messages of the answer (pi-ai keeps thinking and
	// signatures only for the same model; ctxstore renders neither).
	api, provider, model string
}

type piToolInfo struct {
	name    string
	isError bool
}

func (m PiMessage) blocks() ([]PiBlock, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return nil, nil
	}
	if m.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			return nil, err
		}
		return []PiBlock{{Type: "text", Text: s}}, nil
	}
	// Numbers as written (json.Number), so tool arguments keep every digit:
	// the ingester turns those a store cannot hold exactly into strings.
	var bs []PiBlock
	dec := json.NewDecoder(bytes.NewReader(m.Content))
	dec.UseNumber()
	if err := dec.Decode(&bs); err != nil {
		return nil, err
	}
	return bs, nil
}

func (m PiMessage) time() time.Time {
	if m.Timestamp <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(m.Timestamp)).UTC()
}

// joinText joins the text blocks of bs with sep; an image becomes a
// one-line note; thinking is left out.
func joinText(bs []PiBlock, sep string) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image "+b.MimeType+" omitted]")
		}
	}
	return strings.Join(parts, sep)
}

// fromPi converts Pi's messages into ctxstore's harness-neutral log.
func fromPi(msgs []PiMessage) (piLog, error) {
	var c piConverter
	for i, m := range msgs {
		if err := c.add(i, m); err != nil {
			return piLog{}, err
		}
	}
	return c.out, nil
}

// piConverter converts Pi's messages one at a time, in order: Pi-specific
// roles become user messages marked Meta, with the text Pi's own
// convertToLlm would give them; bash executions the user excluded from the
// context (!!) are left out. Assistant messages that errored or were
// aborted are left out with their tool results, as pi-ai does before a
// provider call.
type piConverter struct {
	out     piLog
	skipped map[string]bool
}

func (c *piConverter) add(i int, m PiMessage) error {
	if c.out.tools == nil {
		c.out.tools = map[string]piToolInfo{}
		c.skipped = map[string]bool{}
	}
	bs, err := m.blocks()
	if err != nil {
		return badRequest("messages[%d] (%s): content: %v", i, m.Role, err)
	}
	meta := func(text string) {
		c.out.log = append(c.out.log, conversation.Message{Role: conversation.RoleUser, Text: text, Time: m.time(), Meta: true})
	}
	switch m.Role {
	case "user":
		c.out.log = append(c.out.log, conversation.Message{Role: conversation.RoleUser, Text: joinText(bs, "\n\n"), Time: m.time()})
	case "assistant":
		if m.StopReason == "error" || m.StopReason == "aborted" {
			for _, b := range bs {
				if b.Type == "toolCall" {
					c.skipped[b.ID] = true
				}
			}
			return nil
		}
		am := conversation.Message{Role: conversation.RoleAssistant, Text: joinText(bs, "\n\n"), Time: m.time(), Model: m.Model}
		for _, b := range bs {
			if b.Type == "toolCall" {
				if b.ID == "" || b.Name == "" {
					return badRequest("messages[%d]: a toolCall block needs an id and a name", i)
				}
				am.ToolCalls = append(am.ToolCalls, conversation.ToolCall{ID: b.ID, Name: b.Name, Args: b.Arguments})
			}
		}
		if u := m.Usage; u != nil {
			am.Usage = &conversation.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
		}
		c.out.api, c.out.provider, c.out.model = m.API, m.Provider, m.Model
		c.out.log = append(c.out.log, am)
	case "toolResult":
		if m.ToolCallID == "" {
			return badRequest("messages[%d]: a toolResult needs a toolCallId", i)
		}
		if c.skipped[m.ToolCallID] {
			return nil
		}
		c.out.tools[m.ToolCallID] = piToolInfo{name: m.ToolName, isError: m.IsError}
		c.out.log = append(c.out.log, conversation.Message{Role: conversation.RoleToolResult, ToolCallID: m.ToolCallID,
			ToolName: m.ToolName, Output: joinText(bs, "\n"), IsError: m.IsError, Time: m.time()})
	case "custom":
		meta(joinText(bs, "\n\n"))
	case "bashExecution":
		if !m.ExcludeFromContext {
			meta(bashText(m))
		}
	case "compactionSummary":
		meta(piCompactionPrefix + m.Summary + piCompactionSuffix)
	case "branchSummary":
		meta(piBranchPrefix + m.Summary + piBranchSuffix)
	default:
		return badRequest("messages[%d]: unknown role %q", i, m.Role)
	}
	return nil
}

// bashText is Pi's bashExecutionToText (truncation notes aside).
func bashText(m PiMessage) string {
	t := "Ran `" + m.Command + "`\n"
	if m.Output != "" {
		t += "```\n" + m.Output + "\n```"
	} else {
		t += "(no output)"
	}
	if m.Cancelled {
		t += "\n\n(command cancelled)"
	} else if m.ExitCode != nil && *m.ExitCode != 0 {
		t += "\n\nCommand exited with code " + strconv.Itoa(*m.ExitCode)
	}
	return t
}

// PiOutMessage is a message of the assembled context in Pi's shape
// (pi-ai's Message): what the extension returns from the context event.
type PiOutMessage struct {
	Role       string    `json:"role"`
	Content    []PiBlock `json:"content"`
	ToolCallID string    `json:"toolCallId,omitempty"`
	ToolName   string    `json:"toolName,omitempty"`
	IsError    *bool     `json:"isError,omitempty"`
	API        string    `json:"api,omitempty"`
	Provider   string    `json:"provider,omitempty"`
	Model      string    `json:"model,omitempty"`
	Usage      *PiUsage  `json:"usage,omitempty"`
	StopReason string    `json:"stopReason,omitempty"`
	Timestamp  int64     `json:"timestamp"`
}

// toPi renders assembled messages in Pi's shape. Every block becomes a text
// block except tool calls; a content block is framed as in the assembled
// bytes ("<<content id=… version=…>>" … "<</content>>"), so the model reads
// which object and version it is. Timestamps are 0: the context must be a
// function of the assembled messages only, so that consecutive calls
// extend each other byte for byte.
func toPi(ms []assemble.Message, lg piLog) []PiOutMessage {
	out := make([]PiOutMessage, 0, len(ms))
	for _, m := range ms {
		var pm PiOutMessage
		for _, b := range m.Blocks {
			pm.Content = append(pm.Content, piBlockOf(b))
		}
		switch m.Role {
		case assemble.RoleUser:
			pm.Role = "user"
		case assemble.RoleAssistant:
			pm.Role = "assistant"
			pm.API, pm.Provider, pm.Model = lg.api, lg.provider, lg.model
			pm.Usage = &PiUsage{Cost: &PiCost{}}
			pm.StopReason = "stop"
			for _, b := range m.Blocks {
				if b.Type == assemble.BlockToolCall {
					pm.StopReason = "toolUse"
				}
			}
		case assemble.RoleToolResult:
			pm.Role = "toolResult"
			pm.ToolCallID = m.ToolCallID
			info, ok := lg.tools[m.ToolCallID]
			pm.ToolName = info.name
			if !ok {
				pm.ToolName = toolNameIn(ms, m.ToolCallID)
			}
			isErr := info.isError
			pm.IsError = &isErr
		default:
			pm.Role = string(m.Role)
		}
		if pm.Content == nil {
			pm.Content = []PiBlock{}
		}
		out = append(out, pm)
	}
	return out
}

func piBlockOf(b assemble.Block) PiBlock {
	switch b.Type {
	case assemble.BlockToolCall:
		args := b.Args
		if args == nil {
			args = map[string]any{}
		}
		return PiBlock{Type: "toolCall", ID: b.ID, Name: b.Name, Arguments: args}
	case assemble.BlockContent:
		return PiBlock{Type: "text", Text: fmt.Sprintf("<<content id=%s version=%d>>\n%s\n<</content>>", b.ID, b.Version, b.Text)}
	}
	return PiBlock{Type: "text", Text: b.Text}
}

// toolNameIn finds the name of tool call id in the assistant messages of ms.
func toolNameIn(ms []assemble.Message, id string) string {
	for _, m := range ms {
		for _, b := range m.Blocks {
			if b.Type == assemble.BlockToolCall && b.ID == id {
				return b.Name
			}
		}
	}
	return ""
}
