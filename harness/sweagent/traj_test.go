package sweagent

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	datasetdir "github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

func read(t testing.TB, data []byte) (*harness.Session, Info) {
	t.Helper()
	s := &harness.Session{}
	info := Read(s, data)
	harness.CheckToolResults(s)
	checkInvariants(t, s)
	return s, info
}

// checkInvariants checks what the reader promises whatever the input.
func checkInvariants(t testing.TB, s *harness.Session) {
	t.Helper()
	if s.Format != harness.FormatSWEAgent {
		t.Fatalf("format %q", s.Format)
	}
	if len(s.Messages) != len(s.MessageLines) {
		t.Fatalf("%d messages, %d lines", len(s.Messages), len(s.MessageLines))
	}
	called := map[string]bool{}
	answered := map[string]bool{}
	for i, m := range s.Messages {
		if l := s.MessageLines[i]; l < 1 || l > s.Report.Lines {
			t.Fatalf("message %d: line %d out of 1..%d", i, l, s.Report.Lines)
		}
		switch m.Role {
		case conversation.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == "" || called[c.ID] {
					t.Fatalf("message %d: tool call id %q empty or used twice", i, c.ID)
				}
				called[c.ID] = true
			}
		case conversation.RoleToolResult:
			if !called[m.ToolCallID] || answered[m.ToolCallID] {
				t.Fatalf("message %d: tool result %q not after its call, or twice", i, m.ToolCallID)
			}
			answered[m.ToolCallID] = true
		case conversation.RoleUser:
		default:
			t.Fatalf("message %d: role %q", i, m.Role)
		}
	}
	for _, p := range s.Report.Problems {
		if p.Line < 1 || p.Line > max(s.Report.Lines, 1) {
			t.Fatalf("problem %q: line out of 1..%d", p, s.Report.Lines)
		}
	}
}

// TestDatasets reads every SWE-agent trajectory of the datasets and checks
// the messages against counts derived here from the raw JSON.
func TestDatasets(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(datasetdir.Dir(t), "swe-agent", "*.traj"))
	if len(files) != 13 {
		t.Fatalf("%d .traj files in the datasets, want 13", len(files))
	}
	tokensSent := map[string]int64{ // SOURCES.md
		"test__pydicom__pydicom-1458__1ff4b19d.traj":           122612,
		"test__swe-agent__test-repo-i1__4da99171.traj":         52861,
		"test__6e44b9__sweagenttestrepo-1c2844__7c6fa329.traj": 7141,
		"test__6e44b9__sweagenttestrepo-1c2844__f4e379a9.traj": 87712,
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var raw struct {
				Trajectory []map[string]any `json:"trajectory"`
				History    []map[string]any `json:"history"`
				Info       struct {
					ExitStatus string         `json:"exit_status"`
					Submission string         `json:"submission"`
					Stats      map[string]any `json:"model_stats"`
				} `json:"info"`
				ReplayConfig any `json:"replay_config"`
			}
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			s, info := read(t, data)
			// Derived from the raw history: one assistant message per
			// assistant entry; one call per action; demonstrations and the
			// task as user messages; every call answered (the last one of
			// an older trajectory by its last step).
			var wantAsst, wantCalls, wantUser, wantDemo int
			var names, thoughts []string
			fc := false
			for _, h := range raw.History {
				switch h["role"] {
				case "assistant":
					wantAsst++
					th, _ := h["thought"].(string)
					thoughts = append(thoughts, th)
					if tc, ok := h["tool_calls"].([]any); ok && len(tc) > 0 {
						fc = true
						for _, c := range tc {
							names = append(names, c.(map[string]any)["function"].(map[string]any)["name"].(string))
						}
						wantCalls += len(tc)
					} else {
						wantCalls++
						names = append(names, "")
					}
				case "user":
					if !fc && wantAsst > 0 {
						continue // an observation
					}
					wantUser++
					if h["is_demo"] != nil {
						wantDemo++
					}
				}
			}
			// Steps after the one of history's last action are not in
			// history (the model's submit, in one file): each is one more
			// assistant message and call.
			lastAction := ""
			for _, h := range raw.History {
				if a, ok := h["action"].(string); ok && h["role"] == "assistant" {
					lastAction = strings.TrimSpace(a)
				}
			}
			extra := 0
			for j := len(raw.Trajectory) - 1; j >= 0; j-- {
				if a, _ := raw.Trajectory[j]["action"].(string); strings.TrimSpace(a) == lastAction {
					break
				}
				extra++
			}
			for range extra {
				wantAsst, wantCalls, names, thoughts = wantAsst+1, wantCalls+1, append(names, ""), append(thoughts, "")
			}
			var asst, calls, results, users, metas int
			for i, m := range s.Messages {
				switch m.Role {
				case conversation.RoleAssistant:
					asst++
					for _, c := range m.ToolCalls {
						if want := names[calls]; want != "" && c.Name != want {
							t.Errorf("call %d named %q, the file says %q", calls, c.Name, want)
						}
						calls++
					}
					if m.Text == "" && asst <= len(thoughts) && strings.TrimSpace(thoughts[asst-1]) != "" {
						t.Errorf("message %d: assistant without its thought", i)
					}
				case conversation.RoleToolResult:
					results++
				case conversation.RoleUser:
					users++
					if m.Meta {
						metas++
					}
				}
			}
			if asst != wantAsst || calls != wantCalls || results != calls || users != wantUser || metas != wantDemo {
				t.Fatalf("assistant %d/%d, calls %d/%d, results %d, users %d/%d, meta %d/%d",
					asst, wantAsst, calls, wantCalls, results, users, wantUser, metas, wantDemo)
			}
			if s.Report.Unanswered != 0 || s.Report.Orphans != 0 || s.Report.Duplicates != 0 {
				t.Fatalf("report %+v", s.Report)
			}
			if want := raw.History[0]["content"]; s.SystemPrompt != want || s.SystemPrompt == "" {
				t.Fatalf("system prompt %.80q, want the first history message", s.SystemPrompt)
			}
			if info.ExitStatus != raw.Info.ExitStatus || info.ExitStatus != "submitted" || info.Submission != raw.Info.Submission {
				t.Fatalf("info %+v", info)
			}
			if info.Steps != len(raw.Trajectory) || s.Report.Records != len(raw.Trajectory)+len(raw.History) {
				t.Fatalf("steps %d, records %d", info.Steps, s.Report.Records)
			}
			if want, ok := tokensSent[name]; ok && info.TokensSent != want {
				t.Fatalf("tokens_sent %d, want %d", info.TokensSent, want)
			}
			if want := int64(raw.Info.Stats["api_calls"].(float64)); info.APICalls != want {
				t.Fatalf("api_calls %d, want %d", info.APICalls, want)
			}
			if s.Report.Lines != bytes.Count(data, []byte("\n"))+1 && s.Report.Lines != bytes.Count(data, []byte("\n")) {
				t.Fatalf("%d lines", s.Report.Lines)
			}
			if s.Cwd == "" || !strings.HasPrefix(s.Cwd, "/") {
				t.Fatalf("cwd %q", s.Cwd)
			}
			if fc {
				if info.Model == "" || s.Messages[len(s.Messages)-2].Model != info.Model {
					t.Fatalf("model %q not on the assistant messages", info.Model)
				}
			}
			if !fc && s.Report.Attached != 1 || fc && s.Report.Attached != extra {
				t.Fatalf("the last observation was not taken from the last step (attached %d)", s.Report.Attached)
			}
			// The last tool result is the last step's observation.
			last := s.Messages[len(s.Messages)-1]
			if obs, _ := raw.Trajectory[len(raw.Trajectory)-1]["observation"].(string); last.Role != conversation.RoleToolResult ||
				!strings.Contains(last.Output, strings.TrimSpace(obs)) {
				t.Fatalf("last message %s %.80q, want the last observation %.80q", last.Role, last.Output, obs)
			}
			// Damage: the demonstration replayed with function calls reuses
			// call ids (4 times); nothing else is reported.
			wantProblems := 0
			if strings.HasPrefix(name, "demo__marshmallow-1867__function_calling") {
				wantProblems = 4
			}
			if len(s.Report.Problems) != wantProblems {
				t.Fatalf("problems %v", s.Report.Problems)
			}
		})
	}
}

// TestToolNames: an older trajectory's action is named after the SWE-agent
// command the system prompt documents, "bash" otherwise.
func TestToolNames(t *testing.T) {
	path := filepath.Join(datasetdir.Dir(t), "swe-agent", "test__pydicom__pydicom-1458__1ff4b19d.traj")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, info := read(t, data)
	var got []string
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			got = append(got, c.Name+":"+strings.Fields(c.Args["command"].(string))[0])
		}
	}
	want := "create:create edit:edit bash:python find_file:find_file open:open edit:edit edit:edit edit:edit edit:edit bash:python bash:rm submit:submit"
	if strings.Join(got, " ") != want {
		t.Fatalf("tools\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if info.Cost != 1.26719 || info.TokensReceived != 1369 || s.Cwd != "/pydicom__pydicom" {
		t.Fatalf("info %+v cwd %q", info, s.Cwd)
	}
	// The demonstration (is_demo) is Meta; the issue is the one prompt.
	if !s.Messages[0].Meta || s.Messages[1].Meta || !strings.HasPrefix(s.Messages[1].Text, "We're currently solving the following issue") {
		t.Fatalf("first messages %+v", s.Messages[:2])
	}
}

const small = `{
  "environment": "swe_main",
  "trajectory": [
    {"action": "ls\n", "observation": "a.py\n", "thought": "look", "state": "{\"working_dir\": \"/repo\"}"},
    {"action": "submit\n", "observation": "diff", "thought": "done", "state": {"working_dir": "/repo/sub"}}
  ],
  "history": [
    {"role": "system", "content": "SYS\nCOMMANDS:\nsubmit:\n  docstring: submits\n", "agent": "primary"},
    {"role": "user", "content": "fix it", "agent": "primary"},
    {"role": "assistant", "content": "look\n` + "```" + `\nls\n` + "```" + `", "thought": "look", "action": "ls\n", "agent": "primary"},
    {"role": "user", "content": "a.py\n", "agent": "primary"},
    {"role": "assistant", "content": "done", "thought": "done", "action": "submit\n", "agent": "primary"}
  ],
  "info": {"exit_status": "submitted", "submission": "diff", "model_stats": {"tokens_sent": 10, "api_calls": 2}, "swe_agent_version": "1.0.1"},
  "replay_config": "{\"agent\": {\"model\": {\"name\": \"gpt-4o\"}}}"
}
`

func TestSmall(t *testing.T) {
	s, info := read(t, []byte(small))
	var got []string
	for i, m := range s.Messages {
		r := string(m.Role) + "|" + m.Text + m.Output + "|" + m.ToolCallID
		for _, c := range m.ToolCalls {
			r += "|" + c.ID + " " + c.Name + " " + c.Args["command"].(string)
		}
		got = append(got, r+"|"+m.Model+"|"+itoa(s.MessageLines[i]))
	}
	want := []string{
		"user|fix it|||9",
		"assistant|look||action-1 bash ls\n|gpt-4o|10",
		"tool_result|a.py\n|action-1||11",
		"assistant|done||action-2 submit submit\n|gpt-4o|12",
		"tool_result|diff|action-2||5", // the last step's observation
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if info.ExitStatus != "submitted" || info.Submission != "diff" {
		t.Fatalf("outcome %+v", info)
	}
	if s.SystemPrompt == "" || s.Cwd != "/repo/sub" || s.Version != "1.0.1" || info.Model != "gpt-4o" || info.TokensSent != 10 ||
		info.APICalls != 2 || info.Environment != "swe_main" || s.Report.Lines != 16 || len(s.Report.Problems) != 0 {
		t.Fatalf("session %+v info %+v", s.Report, info)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestDamage: a trajectory is one JSON document; damage is reported with
// its line and column and what came before it is kept.
func TestDamage(t *testing.T) {
	cut := small[:strings.Index(small, `{"role": "assistant", "content": "done"`)+20]
	for _, c := range []struct {
		name, in    string
		msgs        int
		problem     string
		problemLine int
	}{
		// The trajectory comes first in the file: its steps make up for
		// the history lost (the last action and its observation).
		{"truncated in history", cut, 5, "the document ends early, in \"history\" element 4", 12},
		{"syntax error in history", strings.Replace(small, `"content": "a.py\n",`, `"content": "a.py\n" x`, 1), 5,
			"invalid JSON at line 11 column 42", 11},
		{"JSON Lines: two documents", small + small, 5, "more data after the trajectory's object, at line 17 column 1", 17},
		{"not an object", `[1, 2]`, 0, "not a SWE-agent trajectory", 1},
		{"a history element not an object", strings.Replace(small, `{"role": "user", "content": "a.py\n", "agent": "primary"}`, `7`, 1), 4,
			"history message does not decode", 11},
		{"unknown role", strings.Replace(small, `"role": "user", "content": "a.py`, `"role": "robot", "content": "a.py`, 1), 4,
			`history message with role "robot"`, 11},
		{"wrong field types", strings.Replace(small, `"thought": "look", "action": "ls\n"`, `"thought": 5, "action": ["ls"]`, 1), 5,
			"", 0},
		{"history not an array", `{"history": {"a": [1]}, "trajectory": []}`, 0, `"history" is not an array`, 1},
		{"empty", ``, 0, "", 0},
		{"only braces", "{\n}\n", 0, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := read(t, []byte(c.in))
			if len(s.Messages) != c.msgs {
				t.Fatalf("%d messages, want %d: %+v", len(s.Messages), c.msgs, s.Messages)
			}
			if c.problem == "" {
				if len(s.Report.Problems) != 0 {
					t.Fatalf("problems %v", s.Report.Problems)
				}
				return
			}
			if len(s.Report.Problems) == 0 || !strings.Contains(s.Report.Problems[0].Msg, c.problem) || s.Report.Problems[0].Line != c.problemLine {
				t.Fatalf("problems %v, want %q at line %d", s.Report.Problems, c.problem, c.problemLine)
			}
		})
	}
}

// TestShapes: newer and older shapes of the same things.
func TestShapes(t *testing.T) {
	// Content as blocks, is_demo as a bool, a function call answered by a
	// tool message, a second agent set aside.
	in := `{"history": [
 {"role": "system", "content": [{"type": "text", "text": "SYS"}], "agent": "main"},
 {"role": "user", "content": "demo", "is_demo": true, "agent": "main"},
 {"role": "user", "content": [{"type": "text", "text": "task"}, {"type": "image_url", "image_url": {"url": "data:AAAA"}}], "agent": "main"},
 {"role": "assistant", "content": "t", "thought": "t", "action": "ls", "agent": "main",
  "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
 {"role": "tool", "content": [{"type": "text", "text": "out"}], "tool_call_ids": ["c1"], "agent": "main"},
 {"role": "assistant", "content": "review", "agent": "reviewer"},
 {"role": "tool", "content": "stray", "agent": "main"},
 {"role": "user", "content": "format error", "agent": "main"}
]}`
	s, _ := read(t, []byte(in))
	if s.SystemPrompt != "SYS" || len(s.Messages) != 6 {
		t.Fatalf("%q %+v", s.SystemPrompt, s.Messages)
	}
	m := s.Messages
	if !m[0].Meta || m[1].Meta || m[1].Text != "task\n\n[image: unknown type, 6 bytes]" || s.Report.Images != 1 {
		t.Fatalf("user messages %+v", m[:2])
	}
	if c := m[2].ToolCalls; len(c) != 1 || c[0].ID != "c1" || c[0].Name != "bash" || c[0].Args["command"] != "ls" {
		t.Fatalf("call %+v", m[2])
	}
	if m[3].Role != conversation.RoleToolResult || m[3].Output != "out" || m[3].ToolName != "bash" {
		t.Fatalf("result %+v", m[3])
	}
	if m[4].Role != conversation.RoleUser || !m[4].Meta || m[4].Text != "stray" || !m[5].Meta {
		t.Fatalf("stray tool message and later user message should be Meta: %+v", m[4:])
	}
	if s.Report.Sidechain != 1 || len(s.Report.Problems) != 2 {
		t.Fatalf("report %+v", s.Report)
	}

	// No history: the messages come from the steps.
	s, _ = read(t, []byte(`{"trajectory": [{"thought": "a", "action": "ls", "observation": "x"}, {"thought": "b", "action": "", "observation": ""}]}`))
	if len(s.Messages) != 3 || s.Messages[1].Output != "x" || s.Messages[2].Text != "b" || len(s.Report.Problems) != 1 {
		t.Fatalf("from steps: %+v %v", s.Messages, s.Report.Problems)
	}
}

// TestLooks: trajectories are told from JSON Lines logs by their first
// bytes.
func TestLooks(t *testing.T) {
	for in, want := range map[string]bool{
		"{\n  \"environment\": 1":           true,
		"\xef\xbb\xbf  {\r\n":               true,
		`{"trajectory": []}`:                true,
		`{"history": [], "info": {}}`:       true,
		`{"type":"session","version":3}`:    false,
		`{"parentUuid":null,"type":"user"}`: false,
		`[1]`:                               false,
		``:                                  false,
		`{`:                                 false,
	} {
		if Looks([]byte(in)) != want {
			t.Errorf("Looks(%q) = %v", in, !want)
		}
	}
}
