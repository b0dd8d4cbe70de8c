package httpapi

import (
	"fmt"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/harness/pi"
)

// Pi's messages come in through the one Pi converter (harness/pi),
// the transcript reader's too; what goes back out to Pi (the assembled
// context in Pi's message shape) is written here.

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

// toPiFrom renders the messages ms, the end of a context, in Pi's shape.
// Every block becomes a text block except tool calls; a content block is
// framed as in the assembled bytes ("<<content id=… version=…>>" …
// "<</content>>"), so the model reads which object and version it is.
// Timestamps are 0: the context must be a function of the assembled
// messages only, so that consecutive calls extend each other byte for
// byte. A tool name the converter does not know is looked up in ms, else
// in all of the context's messages (all, called only then).
func toPiFrom(ms []assemble.Message, lg *pi.Converter, all func() []assemble.Message) []PiOutMessage {
	out := make([]PiOutMessage, 0, len(ms))
	var whole []assemble.Message
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
			pm.API, pm.Provider, pm.Model = lg.API, lg.Provider, lg.Model
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
			info, ok := lg.Tool(m.ToolCallID)
			pm.ToolName = info.Name
			if !ok {
				pm.ToolName = toolNameIn(ms, m.ToolCallID)
				if pm.ToolName == "" {
					if whole == nil {
						whole = all()
					}
					pm.ToolName = toolNameIn(whole, m.ToolCallID)
				}
			}
			isErr := info.IsError
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
