package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/objects/events"
)

// TestPreviewImportLinks: the preview the hook answers, as Claude Code's
// transcript then records it (Bash's stdout, Read's numbered lines, Glob's
// names one a line, an MCP tool's text blocks), decodes as a tool result
// whose Metadata "preview" names the spill file the hook wrote, which
// holds the output whole; the result's text stays the preview.
func TestPreviewImportLinks(t *testing.T) {
	root := t.TempDir()
	s := Spill{Root: root}
	big := numbered(2000)
	names := strings.Split(strings.TrimSuffix(big, "\n"), "\n")
	cases := []struct {
		tool string
		resp any
		// transcript is the tool_result content Claude Code records for
		// the updated output.
		transcript func(up json.RawMessage) any
	}{
		{"Bash", map[string]any{"stdout": big, "stderr": "", "interrupted": false, "isImage": false},
			func(up json.RawMessage) any {
				var o struct{ Stdout string }
				json.Unmarshal(up, &o)
				return o.Stdout
			}},
		{"Read", map[string]any{"type": "text", "file": map[string]any{"filePath": "/p/big.txt", "content": big, "numLines": 2000, "startLine": 1, "totalLines": 2000}},
			func(up json.RawMessage) any {
				var o struct{ File struct{ Content string } }
				json.Unmarshal(up, &o)
				var b strings.Builder
				for i, l := range strings.Split(o.File.Content, "\n") {
					fmt.Fprintf(&b, "%6d→%s\n", i+1, l)
				}
				return b.String()
			}},
		{"Glob", map[string]any{"filenames": names, "durationMs": 3, "numFiles": len(names), "truncated": false},
			func(up json.RawMessage) any {
				var o struct{ Filenames []string }
				json.Unmarshal(up, &o)
				return strings.Join(o.Filenames, "\n")
			}},
		{"mcp__x__get", big, func(up json.RawMessage) any {
			var blocks []any
			json.Unmarshal(up, &blocks)
			return blocks
		}},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			in := postToolUse(t, c.tool, map[string]any{}, c.resp)
			r, err := s.Preview(in)
			if err != nil || r.Updated == nil {
				t.Fatalf("no preview: %v", err)
			}
			line, _ := json.Marshal(map[string]any{"type": "user", "uuid": "u1", "parentUuid": "a1", "sessionId": in.SessionID,
				"timestamp": "2026-12-06T09:00:00Z", "message": map[string]any{"role": "user",
					"content": []any{map[string]any{"type": "tool_result", "tool_use_id": in.ToolUseID, "content": c.transcript(r.Updated)}}}})
			evs, err := claudecode.Decode(append(line, '\n'))
			if err != nil {
				t.Fatal(err)
			}
			var res *events.Event
			for i := range evs {
				if evs[i].Type == events.ToolResult {
					res = &evs[i]
				}
			}
			if res == nil {
				t.Fatalf("no tool result: %+v", evs)
			}
			p, ok := res.Metadata["preview"].(map[string]any)
			if !ok {
				t.Fatalf("the preview is not linked: metadata %v", res.Metadata)
			}
			if p["file"] != r.File || p["whole_chars"] != r.Whole {
				t.Errorf("preview %v, want file %s of %d chars", p, r.File, r.Whole)
			}
			whole, err := os.ReadFile(r.File)
			if err != nil || len([]rune(string(whole))) != r.Whole {
				t.Errorf("the named spill file does not hold the output whole: %v", err)
			}
			if strings.Contains(res.Result.Content, "line 01500") {
				t.Error("the result's text is not the preview the transcript holds")
			}
		})
	}
}
