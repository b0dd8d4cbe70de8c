package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// numbered is n lines of text.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %05d yyy\n", strings.Repeat("x", 18), i)
	}
	return b.String()
}

func postToolUse(t *testing.T, tool string, input, resp any) Input {
	t.Helper()
	in, _ := json.Marshal(input)
	out, _ := json.Marshal(resp)
	return Input{Event: "PostToolUse", SessionID: "sess-1", TranscriptPath: "/t/sess-1.jsonl", ToolName: tool,
		ToolUseID: "toolu_01A", ToolInput: in, ToolResponse: out}
}

// keys returns an object's member names in order.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	o, err := subObject(raw, "value")
	if err != nil {
		t.Fatal(err)
	}
	var k []string
	for _, m := range o {
		k = append(k, m.key)
	}
	return k
}

// The shapes are the tool_response values Claude Code 2.1.332 gave its
// PostToolUse hooks in a real run (docs/claude-code.md, "Previews").
func TestPreviewShapes(t *testing.T) {
	root := t.TempDir()
	s := Spill{Root: root}
	big := numbered(2000) // 60,000 chars
	file := filepath.Join(root, "sess-1", "toolu_01A.txt")
	check := func(name string, in Input, field func(json.RawMessage) string, whole string) json.RawMessage {
		t.Helper()
		r, err := s.Preview(in)
		if err != nil || r.Updated == nil {
			t.Fatalf("%s: no preview: %v", name, err)
		}
		if got := keys(t, r.Updated); strings.Join(got, ",") != strings.Join(keys(t, in.ToolResponse), ",") {
			t.Errorf("%s: members %v, want the tool's own %v", name, got, keys(t, in.ToolResponse))
		}
		text := field(r.Updated)
		if !strings.Contains(text, "Read "+file+" for the output whole") || len(text) > 4000 || !strings.HasPrefix(text, big[:50]) {
			t.Errorf("%s: preview %d chars: %.200q", name, len(text), text)
		}
		if b, _ := os.ReadFile(file); string(b) != whole {
			t.Errorf("%s: the spill file holds %d bytes, want the output whole (%d)", name, len(b), len(whole))
		}
		if sp, err := ReadSpilled(filepath.Dir(file), in.SessionID, in.ToolUseID); err != nil || string(sp.Response) != string(in.ToolResponse) ||
			sp.Tool != in.ToolName || sp.Whole != whole || sp.File != file {
			t.Errorf("%s: the call and its original response are not kept beside it: %v %+v", name, err, sp)
		}
		if r.File != file || r.Whole != len(whole) {
			t.Errorf("%s: result %+v", name, r)
		}
		return r.Updated
	}
	get := func(path ...string) func(json.RawMessage) string {
		return func(raw json.RawMessage) string {
			var v any
			json.Unmarshal(raw, &v)
			for _, p := range path {
				v = v.(map[string]any)[p]
			}
			return v.(string)
		}
	}
	up := check("Bash", postToolUse(t, "Bash", map[string]any{"command": "make"},
		map[string]any{"stdout": big, "stderr": "warning\n", "interrupted": false, "isImage": false, "noOutputExpected": false}),
		get("stdout"), big+"warning\n")
	if get("stderr")(up) != "" || !strings.HasSuffix(get("stdout")(up), "warning\n") {
		t.Errorf("Bash: stderr is in the spill file and the preview's end: %s", up)
	}
	up = check("Read", postToolUse(t, "Read", map[string]any{"file_path": "/w/big.txt"},
		map[string]any{"type": "text", "file": map[string]any{"filePath": "/w/big.txt", "content": big, "numLines": 2000, "startLine": 1, "totalLines": 2000}}),
		get("file", "content"), big)
	var rd struct {
		File struct {
			Content  string `json:"content"`
			NumLines int    `json:"numLines"`
		} `json:"file"`
	}
	json.Unmarshal(up, &rd)
	if strings.Contains(rd.File.Content, "line 02000") || rd.File.NumLines != strings.Count(rd.File.Content, "\n")+1 {
		t.Errorf("Read: the preview keeps the start only, numbered from 1 (%d lines): %q", rd.File.NumLines, rd.File.Content[len(rd.File.Content)-200:])
	}
	check("Grep", postToolUse(t, "Grep", map[string]any{"pattern": "x"},
		map[string]any{"mode": "content", "numFiles": 0, "filenames": []string{}, "content": big, "numLines": 2000}), get("content"), big)
	check("WebFetch", postToolUse(t, "WebFetch", map[string]any{"url": "http://x"},
		map[string]any{"bytes": 9, "code": 200, "codeText": "OK", "result": big, "durationMs": 3, "url": "http://x"}), get("result"), big)
	names := make([]string, 3000)
	for i := range names {
		names[i] = "src/some/long/path/file" + strings.Repeat("0", 10) + ".go"
	}
	r, err := s.Preview(postToolUse(t, "Glob", map[string]any{"pattern": "**"},
		map[string]any{"filenames": names, "durationMs": 5, "numFiles": 3000, "truncated": false}))
	var g struct{ Filenames []string }
	if err != nil || json.Unmarshal(r.Updated, &g) != nil || len(g.Filenames) > 200 || !strings.Contains(g.Filenames[len(g.Filenames)-1], "for the output whole") {
		t.Errorf("Glob: %v %d names", err, len(g.Filenames))
	}
	// An MCP tool's text blocks become one text block.
	in := postToolUse(t, "mcp__srv__dump", map[string]any{}, []map[string]any{{"type": "text", "text": big}})
	r, err = s.Preview(in)
	var blocks []struct{ Type, Text string }
	if err != nil || json.Unmarshal(r.Updated, &blocks) != nil || len(blocks) != 1 || blocks[0].Type != "text" || !strings.Contains(blocks[0].Text, file) {
		t.Errorf("MCP: %v %.300s", err, r.Updated)
	}

	// One text block comes as a string; the answer is a list of blocks
	// (Claude Code ignores a string there).
	r, err = s.Preview(postToolUse(t, "mcp__srv__dump", map[string]any{}, big))
	blocks = nil
	if err != nil || json.Unmarshal(r.Updated, &blocks) != nil || len(blocks) != 1 || !strings.Contains(blocks[0].Text, file) {
		t.Errorf("MCP string: %v %.300s", err, r.Updated)
	}

	// Passed unchanged: small outputs, unknown tools and shapes, images,
	// an MCP image block, bad ids, no spill directory.
	for name, in := range map[string]Input{
		"small":      postToolUse(t, "Bash", nil, map[string]any{"stdout": "ok\n", "stderr": "", "interrupted": false, "isImage": false}),
		"unknown":    postToolUse(t, "TodoWrite", nil, map[string]any{"newTodos": big}),
		"string":     postToolUse(t, "Bash", nil, big),
		"image":      postToolUse(t, "Bash", nil, map[string]any{"stdout": big, "stderr": "", "interrupted": false, "isImage": true}),
		"mcp image":  postToolUse(t, "mcp__s__t", nil, []map[string]any{{"type": "text", "text": big}, {"type": "image", "data": "AA=="}}),
		"read image": postToolUse(t, "Read", nil, map[string]any{"type": "image", "file": map[string]any{"content": big}}),
		"bad call id": func() Input {
			i := postToolUse(t, "WebFetch", nil, map[string]any{"result": big})
			i.ToolUseID = "../x"
			return i
		}(),
		"bad session": func() Input {
			i := postToolUse(t, "WebFetch", nil, map[string]any{"result": big})
			i.SessionID = "../x"
			return i
		}(),
	} {
		if r, err := s.Preview(in); err != nil || r.Updated != nil {
			t.Errorf("%s: %v %.100s", name, err, r.Updated)
		}
	}
	// A low preview size: an output the preview would not shorten passes.
	if r, err := (Spill{Root: root, Chars: 100}).Preview(postToolUse(t, "WebFetch", nil, map[string]any{"result": numbered(20)})); err != nil || r.Updated != nil {
		t.Errorf("a preview no shorter than the output: %v %.100s", err, r.Updated)
	}
	if r, _ := (Spill{}).Preview(postToolUse(t, "WebFetch", nil, map[string]any{"result": big})); r.Updated != nil {
		t.Error("a preview with no spill directory")
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Error("a bad id named a file")
	}
}

// The model's Read of its session's spill file passes whole and is the
// output's activation; a Read of another session's is refused.
func TestPreviewSpillReads(t *testing.T) {
	root := t.TempDir()
	s := Spill{Root: root}
	big := numbered(2000)
	own := filepath.Join(root, "sess-1", "toolu_01A.txt")
	resp := func(p string) map[string]any {
		return map[string]any{"type": "text", "file": map[string]any{"filePath": p, "content": big, "numLines": 2000, "startLine": 1, "totalLines": 2000}}
	}
	in := postToolUse(t, "Read", map[string]any{"file_path": own}, resp(own))
	in.ToolUseID = "toolu_02B"
	r, err := s.Preview(in)
	if err != nil || r.Updated != nil || r.Activated != "toolu_01A" {
		t.Errorf("the session's own spill file: %+v %v", r, err)
	}
	// A part of it (offset, limit) passes too, but is no activation.
	in = postToolUse(t, "Read", map[string]any{"file_path": own, "offset": 10, "limit": 20}, resp(own))
	if r, err := s.Preview(in); err != nil || r.Updated != nil || r.Activated != "" {
		t.Errorf("a part of the session's own spill file: %+v %v", r, err)
	}
	other := filepath.Join(root, "sess-2", "toolu_09Z.txt")
	r, err = s.Preview(postToolUse(t, "Read", map[string]any{"file_path": other}, resp(other)))
	if err != nil || r.Refused != other || strings.Contains(string(r.Updated), "line yyy") || !strings.Contains(string(r.Updated), "refused") {
		t.Errorf("another session's spill file: %+v %v", r, err)
	}
	// Through the runner: the answer Claude Code reads.
	var out strings.Builder
	o := Runner{Importer: stuck{}, Spill: s}.Run(context.Background(), strings.NewReader(mustJSON(t, map[string]any{
		"session_id": "sess-1", "transcript_path": "/t/sess-1.jsonl", "hook_event_name": "PostToolUse", "tool_name": "WebFetch",
		"tool_use_id": "toolu_03C", "tool_response": map[string]any{"result": big, "url": "u"}})))
	if err := o.Output.Write(&out); err != nil || !strings.Contains(out.String(), `{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":{"result":"xxxx`) {
		t.Errorf("the hook's answer: %v %.300s", err, out.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A spill directory that cannot be written: the output passes whole, the
// user is told once per session, the failure is logged each time.
func TestPreviewFailureToldOnce(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "file")
	os.WriteFile(blocked, nil, 0o644) // a file where the spill root's directory would be
	state := filepath.Join(dir, "state")
	r := Runner{Importer: stuck{}, StateDir: state, Spill: Spill{Root: filepath.Join(blocked, "spill")}}
	in := mustJSON(t, map[string]any{"session_id": "sess-9", "transcript_path": "/t/sess-9.jsonl", "hook_event_name": "PostToolUse",
		"tool_name": "WebFetch", "tool_use_id": "toolu_9", "tool_response": map[string]any{"result": numbered(2000)}})
	var told int
	for i := 0; i < 3; i++ {
		o := r.Run(context.Background(), strings.NewReader(in))
		if o.Output.HookSpecificOutput != nil || o.PreviewErr == nil {
			t.Fatalf("run %d: a preview without its spill file: %+v", i, o.Output)
		}
		if strings.Contains(o.Output.SystemMessage, "could not make a preview") {
			told++
		}
	}
	b, _ := os.ReadFile(filepath.Join(state, "sess-9.log"))
	if told != 1 || strings.Count(string(b), "no preview") != 3 {
		t.Errorf("told %d times (want 1); log:\n%s", told, b)
	}
}
