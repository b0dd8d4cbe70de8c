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
