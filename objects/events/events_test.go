package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

func TestMessagesRoundTrip(t *testing.T) {
	msgs := []conversation.Message{
		{Role: conversation.RoleUser, Text: "list the files"},
		{Role: conversation.RoleAssistant, ID: "m1", Text: "Listing.", Model: "m", Usage: &conversation.Usage{Input: 3, Output: 2},
			ToolCalls: []conversation.ToolCall{{ID: "t1", Name: "bash", Args: map[string]any{"command": "ls"}}, {ID: "t2", Name: "read", Args: map[string]any{"path": "a"}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "t1", ToolName: "bash", Output: "a.go"},
		{Role: conversation.RoleToolResult, ToolCallID: "t2", ToolName: "read", Output: "no such file", IsError: true},
		{Role: conversation.RoleAssistant, ID: "m2", ToolCalls: []conversation.ToolCall{{ID: "t3", Name: "ls"}}},
		{Role: conversation.RoleUser, Text: "summary of earlier work", Meta: true},
		{Role: conversation.RoleAssistant, ID: "m3", Text: "Done."},
	}
	evs := FromMessages(msgs)
	b, err := Encode(evs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	got := ToMessages(back)
	if !reflect.DeepEqual(normalize(got), normalize(msgs)) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, msgs)
	}
	b2, _ := Encode(back)
	if string(b2) != string(b) {
		t.Fatalf("encoding is not stable:\n%s\n%s", b, b2)
	}
}

// normalize makes numbers comparable after a JSON round trip.
func normalize(ms []conversation.Message) string {
	var s strings.Builder
	for _, m := range ms {
		b, _ := Encode(FromMessages([]conversation.Message{m}))
		s.Write(b)
	}
	return s.String()
}

func TestDecodeRefusesBadEvents(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "not a JSON array"},
		{`[{"type":"nope"}]`, `event 0: field "type": unknown event type "nope"`},
		{`[{"type":"prompt"},{"type":"tool_call"}]`, `event 1: field "tool.id"`},
		{`[{"text":"x"}]`, `field "type": missing`},
	} {
		if _, err := Decode([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}
