package pi

import (
	"bytes"
	"encoding/json"
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
