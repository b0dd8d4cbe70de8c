package claudecode

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/events"
)

// resultLine is a transcript's tool_result record of session for call id
// holding content (a string, or blocks).
func resultLine(t *testing.T, session, id string, content any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": "user", "uuid": "u-" + id, "parentUuid": "a-" + id, "sessionId": session,
		"timestamp": "2026-12-06T09:00:00Z", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}}})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestDecodePreview: a tool result that is the hook's preview of its own
// call's output names the spill file in Metadata "preview", whatever the
// tool's shape put around the note (Bash's head and tail, Read's numbered
// lines, an MCP tool's text block); the event's text stays the
// transcript's. A note naming another call's or another session's file,
// a relative or unclean path, or a malformed count is not a preview.
func TestDecodePreview(t *testing.T) {
	const session, id = "0b6a1f2e-5c1d-4c59-9f0a-3d2e1b7c8a90", "toolu_01ABC"
	file := "/home/u/p/.ctxstore/spill/" + session + "/" + id + ".txt"
	note := func(f string) string {
		return "[ctxstore] 20000 of 23600 chars (400 lines) left out here; Read " + f + " for the output whole"
	}
	want := map[string]any{"file": file, "whole_chars": 23600, "left_out_chars": 20000, "object": id}
	cases := []struct {
		name    string
		id      string
		content any
		preview bool
	}{
		{"bash", id, "head line\n" + note(file) + "\ntail line\n", true},
		{"read numbered", id, "     1→package x\n     2→" + note(file), true},
		{"read tab numbered", id, "1\tpackage x\n2\t" + note(file), true},
		{"mcp blocks", id, []any{map[string]any{"type": "text", "text": "a\n" + note(file) + "\nz"}}, true},
		{"another call's note", "toolu_01XYZ", "x\n" + note(file) + "\n", false},
		{"another session's note", id, note("/home/u/p/.ctxstore/spill/other-session/" + id + ".txt"), false},
		{"relative path", id, note(".ctxstore/spill/" + session + "/" + id + ".txt"), false},
		{"unclean path", id, note("/home/u/../u/p/.ctxstore/spill/" + session + "/" + id + ".txt"), false},
		{"bad count", id, strings.Replace(note(file), "20000", "2x000", 1), false},
		{"more left out than whole", id, strings.Replace(note(file), "20000", "90000", 1), false},
		{"quoted mid-line", id, "echo '" + note(file) + "'", false},
		{"plain output", id, "just an output\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := resultLine(t, session, c.id, c.content)
			evs, err := Decode(line)
			if err != nil {
				t.Fatal(err)
			}
			var got *events.Event
			for i := range evs {
				if evs[i].Type == events.ToolResult {
					got = &evs[i]
				}
			}
			if got == nil || got.Result == nil {
				t.Fatalf("no tool result in %+v", evs)
			}
			p, ok := got.Metadata["preview"]
			if ok != c.preview {
				t.Fatalf("preview recognized %v, want %v (metadata %v)", ok, c.preview, got.Metadata)
			}
			if ok && !reflect.DeepEqual(p, want) {
				t.Errorf("preview %v, want %v", p, want)
			}
			if s, isStr := c.content.(string); isStr && got.Result.Content != s {
				t.Errorf("the result's text changed: %q", got.Result.Content)
			}
		})
	}
}
