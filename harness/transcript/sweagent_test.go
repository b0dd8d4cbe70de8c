package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSWEAgentDispatch: .traj files are told from JSON Lines logs and read
// by the SWE-agent reader, whether indented (as SWE-agent writes them) or
// on one line.
func TestSWEAgentDispatch(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(datasets(t), "swe-agent", "*.traj"))
	if len(files) == 0 {
		t.Fatal("no .traj files in the datasets")
	}
	for _, path := range files {
		s, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, s)
		base := strings.TrimSuffix(filepath.Base(path), ".traj")
		if s.Format != FormatSWEAgent || s.ID != base || len(s.Messages) < 8 || s.SystemPrompt == "" {
			t.Fatalf("%s: format %q id %q, %d messages", path, s.Format, s.ID, len(s.Messages))
		}
		// The same document compacted onto one line reads the same.
		data, _ := os.ReadFile(path)
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			t.Fatal(err)
		}
		one, err := Read(&buf, FormatAuto)
		if err != nil {
			t.Fatal(err)
		}
		if one.Format != FormatSWEAgent || len(one.Messages) != len(s.Messages) || one.Report.Lines != 1 {
			t.Fatalf("%s on one line: format %q, %d messages (want %d), %d lines", path, one.Format, len(one.Messages), len(s.Messages), one.Report.Lines)
		}
	}
	// JSON Lines logs are not taken for trajectories.
	for _, in := range []string{
		`{"type":"session","version":3,"id":"s"}` + "\n" + `{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"hi"}}`,
		ccUser("u1", "", `"hi"`),
	} {
		s, err := Read(strings.NewReader(in), FormatAuto)
		if err != nil || s.Format == FormatSWEAgent {
			t.Fatalf("%.40q read as %q (%v)", in, s.Format, err)
		}
	}
	// Given the format, a JSON Lines log is a damaged trajectory, reported.
	s, err := Read(strings.NewReader(ccUser("u1", "", `"hi"`)+ccUser("u2", "u1", `"again"`)), FormatSWEAgent)
	if err != nil || len(s.Messages) != 0 || len(s.Report.Problems) != 1 || !strings.Contains(s.Report.Problems[0].Msg, "not JSON Lines") {
		t.Fatalf("JSON Lines read as a trajectory: %v %+v", err, s.Report.Problems)
	}
}

func FuzzSWEAgent(f *testing.F) {
	f.Add([]byte("{\n \"history\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", \"action\": \"ls\"}, {\"role\": \"user\", \"content\": \"out\"}]\n}\n"))
	f.Add([]byte("{\n \"trajectory\": [{\"action\": \"ls\", \"observation\": \"o\"}], \"history\": [{\"role\": \"tool\", \"tool_call_ids\": [\"c\"]}"))
	f.Add([]byte(`{"history": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "bash", "arguments": "{}"}}]}, {"role": "tool", "tool_call_ids": ["c"]}]}` + "\n{}"))
	f.Fuzz(func(t *testing.T, in []byte) { fuzzCheck(t, in, FormatSWEAgent) })
}
