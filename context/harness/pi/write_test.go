package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestSessionFile: neutral events written as a Pi v3 session file, named
// for a session, read back by the package's own converter as the same
// messages; pi-v3 in the commit registry has the codec.
func TestSessionFile(t *testing.T) {
	msgs := []conversation.Message{
		{Role: conversation.RoleUser, Text: "hello"},
		{Role: conversation.RoleAssistant, Text: "Reading.", ToolCalls: []conversation.ToolCall{{ID: "t1", Name: "read", Args: map[string]any{"path": "a.txt"}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "t1", ToolName: "read", Output: "alpha"},
		{Role: conversation.RoleAssistant, Text: "It says alpha."},
	}
	f, ok := commits.DefaultRegistry.Lookup(commits.FormatPi)
	if !ok || f.Encode == nil || f.ForSession == nil {
		t.Fatal("pi-v3 has no codec")
	}
	file, err := f.Encode(events.FromMessages(msgs))
	if err != nil {
		t.Fatal(err)
	}
	file, err = f.ForSession(file, "s-new")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(lines[0], &h); err != nil || h["type"] != "session" || h["id"] != "s-new" || h["version"] != float64(3) {
		t.Fatalf("header %s", lines[0])
	}
	if _, has := h["cwd"]; has {
		t.Fatal("the header names a cwd")
	}
	var c Converter
	parent := ""
	for i, l := range lines[1:] {
		var e struct {
			Type     string          `json:"type"`
			ID       string          `json:"id"`
			ParentID *string         `json:"parentId"`
			Message  json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(l, &e); err != nil || e.Type != "message" {
			t.Fatalf("line %d: %s", i+2, l)
		}
		if (parent == "") != (e.ParentID == nil) || (e.ParentID != nil && *e.ParentID != parent) {
			t.Fatalf("line %d: parent %v, want %q", i+2, e.ParentID, parent)
		}
		parent = e.ID
		if !c.AddJSON(e.Message, i+2) {
			t.Fatalf("line %d: the converter refused %s", i+2, e.Message)
		}
	}
	var got []string
	for _, m := range c.Log {
		got = append(got, string(m.Role)+":"+m.Text+m.Output)
	}
	if want := "user:hello|assistant:Reading.|tool_result:alpha|assistant:It says alpha."; strings.Join(got, "|") != want {
		t.Fatalf("read back %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestSessionFileKeepsThinkingAndImages: a model message's thinking (with
// its signature), text and tool calls stay one Pi assistant message in the
// recorded order, and a tool result's image (recorded in the Messages
// API's base64 shape) becomes a Pi image block after its text.
func TestSessionFileKeepsThinkingAndImages(t *testing.T) {
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "look at it"},
		{Type: events.Thinking, MessageID: "m1", Text: "a screenshot helps", Signature: "sig1", Model: "claude-x"},
		{Type: events.Response, MessageID: "m1", Text: "Taking one.", Model: "claude-x"},
		{Type: events.ToolCall, MessageID: "m1", Tool: &events.Tool{ID: "t1", Name: "shot", Input: map[string]any{"w": 2}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t1", Name: "shot"}, Result: &events.Result{Content: "ok",
			Blocks: []any{map[string]any{"type": "text", "text": "ok"},
				map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}}},
		{Type: events.Thinking, Text: "done"},
		{Type: events.Response, Text: "It is blue."},
		{Type: events.Metric, Metric: &events.MetricData{Turns: 1}},
	}
	file, err := SessionFile(evs)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	var got []string
	for _, l := range lines[1:] {
		var e struct {
			Message struct {
				Role       string           `json:"role"`
				Content    []map[string]any `json:"content"`
				StopReason string           `json:"stopReason"`
				Model      string           `json:"model"`
			} `json:"message"`
		}
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, b := range e.Message.Content {
			switch b["type"] {
			case "thinking":
				parts = append(parts, "thinking:"+b["thinking"].(string)+"/"+fmt.Sprint(b["thinkingSignature"]))
			case "text":
				parts = append(parts, "text:"+b["text"].(string))
			case "toolCall":
				parts = append(parts, "call:"+b["id"].(string))
			case "image":
				parts = append(parts, "image:"+b["mimeType"].(string)+"/"+b["data"].(string))
			}
		}
		got = append(got, e.Message.Role+"("+e.Message.StopReason+e.Message.Model+")["+strings.Join(parts, ",")+"]")
	}
	want := []string{
		"user()[text:look at it]",
		"assistant(toolUseclaude-x)[thinking:a screenshot helps/sig1,text:Taking one.,call:t1]",
		"toolResult()[text:ok,image:image/png/iVBORw0KGgo=]",
		"assistant(stopunknown)[thinking:done/<nil>,text:It is blue.]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Pi's own converter reads the file back: the image as its note, the
	// thinking left out of the text.
	var c Converter
	for i, l := range lines[1:] {
		var e struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(l, &e)
		if !c.AddJSON(e.Message, i+2) {
			t.Fatalf("line %d refused", i+2)
		}
	}
	if len(c.Log) != 4 || c.Log[1].Text != "Taking one." || !strings.Contains(c.Log[2].Output, "image") {
		t.Fatalf("read back %+v", c.Log)
	}
}
