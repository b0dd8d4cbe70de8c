package events

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

// Encode gives the bytes encoding the slice whole gives (one event at a
// time, joined once): the same content hash for the same events.
func TestEncodeAsWhole(t *testing.T) {
	whole := func(evs []Event) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(evs); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimRight(b.Bytes(), "\n")
	}
	msgs := []conversation.Message{
		{Role: conversation.RoleUser, Text: "<b>list</b> & \"quote\" \u2028 é"},
		{Role: conversation.RoleAssistant, ID: "m1", Text: "Listing.", Model: "m", Usage: &conversation.Usage{Input: 3, Output: 2},
			ToolCalls: []conversation.ToolCall{{ID: "t1", Name: "bash", Args: map[string]any{"command": "ls", "n": 1.5}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Output: "a.go\nb.go\t<x>"},
	}
	for _, evs := range [][]Event{FromMessages(msgs), FromMessages(msgs[:1]), {}} {
		got, err := Encode(evs)
		if err != nil {
			t.Fatal(err)
		}
		if want := whole(evs); !bytes.Equal(got, want) {
			t.Errorf("Encode:\n%s\nencoding the slice whole:\n%s", got, want)
		}
	}
	if got, err := Encode(nil); err != nil || string(got) != "[]" {
		t.Errorf("Encode(nil) = %s, %v", got, err)
	}
}
