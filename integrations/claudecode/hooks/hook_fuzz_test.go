package hooks

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseInput drives the hook's stdin decoding and Plan with arbitrary
// bytes: no panic; an input that parses is valid JSON; a plan that passes
// names an id and absolute, clean paths (they become file names and
// arguments of the import).
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{
		`{"hook_event_name":"Stop","session_id":"abc-1","transcript_path":"/t/s.jsonl","last_assistant_message":"done \"x\""}`,
		`{"hook_event_name":"PostToolUse","session_id":"s","transcript_path":"/t/s.jsonl","tool_use_id":"toolu_01","agent_id":"a1"}`,
		`{"hook_event_name":"PreCompact","session_id":"s","transcript_path":"/t/../s.jsonl","trigger":"manual"}`,
		`{"hook_event_name":"SubagentStop","session_id":"s","transcript_path":"/t/s.jsonl","agent_id":"a","agent_transcript_path":"rel"}`,
		`{"hook_event_name":"Stop","session_id":"../x","transcript_path":"/t"}`,
		`[[[[[[[[`, ``, `null`, `{"session_id":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInput(bytes.NewReader(b))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hook input") {
				t.Fatalf("error does not say it is the hook input: %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("invalid JSON parsed: %q", b)
		}
		c, err := Plan(in)
		if err != nil {
			return
		}
		if !isID(c.Session) || c.Agent != "" && !isID(c.Agent) {
			t.Fatalf("plan with a bad id: %+v", c)
		}
		for _, p := range []string{c.Transcript, c.AgentTranscript, c.AwaitIn} {
			if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p) {
				t.Fatalf("plan with path %q not absolute and clean", p)
			}
		}
	})
}

// FuzzCut drives the preview's cut with arbitrary tool names and
// responses: no panic; a cut answer is valid JSON of the response's own
// kind (an object stays an object, with the same members; content blocks
// stay an array), and the whole text it returns is longer than the limit.
func FuzzCut(f *testing.F) {
	long := strings.Repeat("line of output\n", 40)
	for _, c := range [][2]string{
		{"Bash", `{"stdout":` + strconvQuote(long) + `,"stderr":"e","interrupted":false,"isImage":false}`},
		{"Read", `{"type":"text","file":{"filePath":"/a","content":` + strconvQuote(long) + `,"numLines":40,"startLine":1,"totalLines":40}}`},
		{"Grep", `{"mode":"files_with_matches","filenames":["a","b"],"numFiles":2}`},
		{"Glob", `{"filenames":` + strings.Repeat(`["x"]`, 1) + `}`},
		{"WebFetch", `{"result":` + strconvQuote(long) + `}`},
		{"mcp__s__t", `[{"type":"text","text":` + strconvQuote(long) + `}]`},
		{"Bash", `"plain"`}, {"Read", `{"file":null}`}, {"Grep", `{"content":7}`},
	} {
		f.Add(c[0], []byte(c[1]))
	}
	f.Fuzz(func(t *testing.T, tool string, resp []byte) {
		if !json.Valid(resp) {
			return
		}
		up, whole, _, ok := cut(tool, resp, 100, "Read /s/x.txt for the output whole")
		if !ok {
			return
		}
		if !json.Valid(up) || len([]rune(whole)) <= 100 {
			t.Fatalf("cut %s: valid %v, whole %d chars", tool, json.Valid(up), len([]rune(whole)))
		}
		if (bytes.TrimSpace(resp)[0] == '{') != (bytes.TrimSpace(up)[0] == '{') {
			t.Fatalf("cut %s changed the response's kind: %s", tool, up)
		}
	})
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
