package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

func readBack(t *testing.T, file []byte) *harness.Session {
	t.Helper()
	s := &harness.Session{Report: harness.Report{Types: map[string]int{}}}
	recs, err := harness.ReadRecords(bytes.NewReader(file), &s.Report, nil)
	if err != nil {
		t.Fatal(err)
	}
	Read(s, recs)
	harness.CheckToolResults(s)
	if len(s.Report.Problems) > 0 {
		t.Fatalf("the reader reported problems: %v", s.Report.Problems)
	}
	return s
}

func records(t *testing.T, file []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, l := range bytes.Split(bytes.TrimSpace(file), []byte("\n")) {
		var r map[string]any
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		out = append(out, r)
	}
	return out
}

// TestSessionFile: neutral events written as a Claude Code session file:
// the uuid/parentUuid chain, one session id, the record shapes Claude Code
// loads; the package's own reader reads back the same messages; the codec
// is in the commit registry.
func TestSessionFile(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	evs := []events.Event{
		{Type: events.System, Subtype: "init", Metadata: map[string]any{"cwd": "/w", "version": "2.1.330"}},
		{Type: events.Prompt, Source: "user", Text: "list the files", Time: t0},
		{Type: events.Thinking, MessageID: "msg_1", Text: "unsigned", Model: "claude-x"},
		{Type: events.Thinking, MessageID: "msg_1", Text: "signed", Signature: "sig", Model: "claude-x"},
		{Type: events.Response, MessageID: "msg_1", Text: "Listing.", Model: "claude-x", Usage: &conversation.Usage{Input: 7, Output: 3}},
		{Type: events.ToolCall, MessageID: "msg_1", Tool: &events.Tool{ID: "t1", Name: "Bash", Input: map[string]any{"command": "ls"}}},
		{Type: events.ToolCall, MessageID: "msg_1", Tool: &events.Tool{ID: "t2", Name: "read", Input: map[string]any{"path": "a"}}},
		{Type: events.ToolCall, MessageID: "msg_1", Tool: &events.Tool{ID: "t3", Name: "Read", Input: map[string]any{"file_path": "b.png"}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t1"}, Result: &events.Result{Content: "a.txt"}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t2"}, Result: &events.Result{Content: "shot", IsError: true,
			Blocks: []any{map[string]any{"type": "image", "data": "iVBO", "mimeType": "image/png"}, map[string]any{"type": "audio"}}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t3"}, Result: &events.Result{Content: "b.png\n[image: image/png, 3 bytes]",
			Blocks: []any{map[string]any{"type": "text", "text": "b.png"}, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBO"}}}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "nope"}, Result: &events.Result{Content: "orphan"}},
		{Type: events.Metric, Metric: &events.MetricData{Status: "success"}},
		{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: "summary so far"},
		{Type: events.Prompt, Source: "command", Text: "<command-name>/x</command-name>", Meta: true},
		{Type: events.Prompt, Source: "agent", Text: "a sub-agent's task", Metadata: map[string]any{"sidechain": true}},
		{Type: events.Prompt, Source: "bash", Text: "!ls", Meta: true, Metadata: map[string]any{"exclude_from_context": true}},
		{Type: events.Response, Text: "Done.", Time: t0.Add(time.Minute)},
	}
	f, ok := harness.NewRegistry(Codec{}).Commits().Lookup(commits.FormatClaudeCode)
	if !ok || f.Encode == nil || f.ForSession == nil {
		t.Fatal("claude-code-v1 has no codec")
	}
	file, lost, err := Encode(evs)
	if err != nil {
		t.Fatal(err)
	}
	if lost != (Lost{Thinking: 1, Events: 2, Orphans: 1, Blocks: 1, Excluded: 2}) {
		t.Errorf("lost %+v", lost)
	}
	again, _ := f.Encode(evs)
	if !bytes.Equal(again, file) {
		t.Fatal("the encoding is not deterministic")
	}
	recs := records(t, file)
	if len(recs) != 6 {
		t.Fatalf("%d records, want 6:\n%s", len(recs), file)
	}
	sid := recs[0]["sessionId"].(string)
	var parent any
	for i, r := range recs {
		if r["parentUuid"] != parent || r["sessionId"] != sid || r["cwd"] != "/w" || r["version"] != "2.1.330" ||
			r["isSidechain"] != false || r["userType"] != "external" {
			t.Errorf("record %d: %v", i, r)
		}
		parent = r["uuid"]
		if ts, _ := r["timestamp"].(string); ts != "2026-11-24T08:00:00.000Z" && !(i == 5 && ts == "2026-11-24T08:01:00.000Z") {
			t.Errorf("record %d time %v", i, r["timestamp"])
		}
	}
	asst := recs[1]["message"].(map[string]any)
	blocks := asst["content"].([]any)
	if recs[1]["type"] != "assistant" || asst["id"] != "msg_1" || asst["stop_reason"] != "tool_use" || len(blocks) != 5 ||
		blocks[0].(map[string]any)["signature"] != "sig" || asst["usage"].(map[string]any)["input_tokens"] != float64(7) {
		t.Errorf("assistant record: %v", recs[1])
	}
	res := recs[2]["message"].(map[string]any)["content"].([]any)
	if len(res) != 3 {
		t.Fatalf("tool results: %v", res)
	}
	img := res[1].(map[string]any)["content"].([]any)[1].(map[string]any)
	if img["source"].(map[string]any)["media_type"] != "image/png" || res[1].(map[string]any)["is_error"] != true {
		t.Errorf("image result: %v", res[1])
	}
	if b, _ := json.Marshal(res[2]); string(b) != `{"content":[{"text":"b.png","type":"text"},{"source":{"data":"iVBO","media_type":"image/png","type":"base64"},"type":"image"}],"is_error":false,"tool_use_id":"t3","type":"tool_result"}` {
		t.Errorf("Claude Code's own result blocks: %s", b)
	}
	if recs[3]["isCompactSummary"] != true || recs[4]["isMeta"] != true || recs[5]["message"].(map[string]any)["stop_reason"] != "end_turn" {
		t.Errorf("summary, meta, last: %v | %v | %v", recs[3], recs[4], recs[5])
	}

	s := readBack(t, file)
	var got []string
	for _, m := range s.Messages {
		got = append(got, string(m.Role)+":"+m.Text+m.Output)
	}
	want := "user:list the files|assistant:Listing.|tool_result:a.txt|tool_result:shot\n[image: image/png, 3 bytes]|tool_result:b.png\n[image: image/png, 3 bytes]|user:summary so far|user:<command-name>/x</command-name>|assistant:Done."
	if strings.Join(got, "|") != want {
		t.Errorf("read back\n%q\nwant\n%q", strings.Join(got, "|"), want)
	}
	if s.ID != sid || s.Cwd != "/w" {
		t.Errorf("session %q cwd %q", s.ID, s.Cwd)
	}

	// ForSession: every record names the session; uuids are new and the
	// chain still links.
	const next = "0b6c7e0e-2f4a-4b7c-9d1e-5a6b7c8d9e0f"
	named, err := f.ForSession(file, next)
	if err != nil {
		t.Fatal(err)
	}
	nrecs := records(t, named)
	parent = nil
	for i, r := range nrecs {
		if r["sessionId"] != next || r["parentUuid"] != parent || r["uuid"] == recs[i]["uuid"] {
			t.Errorf("named record %d: %v", i, r)
		}
		parent = r["uuid"]
	}
	if _, err := f.ForSession(file, "not-a-uuid"); err == nil || !strings.Contains(err.Error(), "not a UUID") {
		t.Errorf("a session id that is no UUID: %v", err)
	}
	moved, err := SetCwd(named, "/elsewhere")
	if err != nil || !strings.Contains(string(moved), `"cwd":"/elsewhere"`) || strings.Contains(string(moved), `"cwd":"/w"`) {
		t.Errorf("SetCwd: %v", err)
	}
}

// TestEmptyAndUnknownTimes: no events give an empty file; records without
// times take the epoch, and a time earlier than the one before is raised.
func TestEmptyAndUnknownTimes(t *testing.T) {
	file, err := SessionFile(nil)
	if err != nil || len(file) != 0 {
		t.Fatalf("%q %v", file, err)
	}
	file, err = SessionFile(events.FromMessages([]conversation.Message{{Role: conversation.RoleUser, Text: "a"}, {Role: conversation.RoleAssistant, Text: "b"}}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records(t, file) {
		if r["timestamp"] != "1970-01-01T00:00:00.000Z" || r["cwd"] != nil {
			t.Errorf("%v", r)
		}
	}
}

// TestProjectDir: the folder names Claude Code 2.1.330 made for these
// working directories (seen by running it).
func TestProjectDir(t *testing.T) {
	long := "/tmp/ccmat/" + strings.Repeat("abcdefghij", 25)
	for in, want := range map[string]string{
		"/tmp/ccmat/work":       "-tmp-ccmat-work",
		"/tmp/ccmat/w_x.y z":    "-tmp-ccmat-w-x-y-z",
		long:                    "-tmp-ccmat-" + strings.Repeat("abcdefghij", 25)[:189] + "-86ztir",
		"/home/é/𝄞":             "-home---" + "--",
		"C:\\Users\\me\\proj-1": "C--Users-me-proj-1",
	} {
		if got := ProjectDir(in); got != want {
			t.Errorf("ProjectDir(%q) = %q, want %q", in, got, want)
		}
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "/cfg")
	if p, err := SessionPath("/a/b", "id"); err != nil || p != "/cfg/projects/-a-b/id.jsonl" {
		t.Errorf("SessionPath: %q %v", p, err)
	}
}

// TestSetSessionIDOnRealFiles: naming a new session in a real Claude Code
// file (a native materialization) renames every record uuid and every
// reference to one, and the reader follows the same thread to the same
// messages.
func TestSetSessionIDOnRealFiles(t *testing.T) {
	dir := filepath.Join(datasets.Dir(t), "claude-code")
	files, _ := filepath.Glob(filepath.Join(dir, "raw", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	files = append(files, more...)
	if len(files) < 6 {
		t.Fatalf("datasets: %d Claude Code files", len(files))
	}
	const session = "7d0c6a0e-1111-4a2b-8c3d-9e8f7a6b5c4d"
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Whole records only: the reader's view of damaged lines is not
		// what this test is about.
		var clean []byte
		for _, l := range bytes.Split(raw, []byte("\n")) {
			var v map[string]any
			if json.Unmarshal(l, &v) == nil && v != nil {
				clean = append(append(clean, l...), '\n')
			}
		}
		named, err := SetSessionID(clean, session)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		old, renamed := map[string]bool{}, map[string]bool{}
		for _, r := range records(t, clean) {
			if u, _ := r["uuid"].(string); u != "" {
				old[u] = true
			}
		}
		nrecs := records(t, named)
		for i, r := range nrecs {
			if sid, ok := r["sessionId"]; ok && sid != session {
				t.Fatalf("%s record %d: sessionId %v", path, i, sid)
			}
			if u, _ := r["uuid"].(string); u != "" {
				renamed[u] = true
			}
		}
		for i, r := range nrecs {
			for _, k := range []string{"uuid", "parentUuid", "logicalParentUuid", "leafUuid"} {
				if s, _ := r[k].(string); old[s] {
					t.Fatalf("%s record %d: %s %s kept its old uuid", path, i, k, s)
				}
			}
			if p, _ := r["parentUuid"].(string); p != "" && !renamed[p] && old[p] {
				t.Fatalf("%s record %d: parent %s does not resolve", path, i, p)
			}
		}
		a, b := readBackLenient(t, clean), readBackLenient(t, named)
		if len(a.Messages) == 0 || len(a.Messages) != len(b.Messages) {
			t.Fatalf("%s: %d messages, %d after renaming", path, len(a.Messages), len(b.Messages))
		}
		for i := range a.Messages {
			if a.Messages[i].Text != b.Messages[i].Text || a.Messages[i].Output != b.Messages[i].Output {
				t.Fatalf("%s message %d differs after renaming", path, i)
			}
		}
	}
}

func readBackLenient(t *testing.T, file []byte) *harness.Session {
	t.Helper()
	s := &harness.Session{Report: harness.Report{Types: map[string]int{}}}
	recs, err := harness.ReadRecords(bytes.NewReader(file), &s.Report, nil)
	if err != nil {
		t.Fatal(err)
	}
	Read(s, recs)
	harness.CheckToolResults(s)
	return s
}

// TestFieldRoundTripDatasets: every Claude Code dataset file, decoded to
// neutral events and encoded again (the field tier, as a translation from
// another format sees it), reads back as the same main thread: the same
// messages, in order, with the same texts, tool calls and results. The
// only difference: Claude Code's synthetic assistant messages (model
// "<synthetic>", made by Claude Code, never by a model) decode as errors
// and are left out.
func TestFieldRoundTripDatasets(t *testing.T) {
	dir := filepath.Join(datasets.Dir(t), "claude-code")
	files, _ := filepath.Glob(filepath.Join(dir, "raw", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	files = append(files, more...)
	if len(files) < 6 {
		t.Fatalf("datasets: %d Claude Code files", len(files))
	}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := Decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		enc, _, err := Encode(evs)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		orig, back := readBackLenient(t, raw), readBackLenient(t, enc)
		var want []conversation.Message
		for _, m := range orig.Messages {
			if m.Role != conversation.RoleAssistant || m.Model != "<synthetic>" {
				want = append(want, m)
			}
		}
		if len(back.Messages) != len(want) || back.Report.OffBranch != 0 || len(back.Report.Problems) != 0 {
			t.Errorf("%s: %d messages back, want %d; off branch %d; problems %v", path, len(back.Messages), len(want), back.Report.OffBranch, back.Report.Problems)
			continue
		}
		for i, m := range want {
			b := back.Messages[i]
			same := m.Role == b.Role && m.Text == b.Text && m.Output == b.Output && m.IsError == b.IsError &&
				m.ToolCallID == b.ToolCallID && len(m.ToolCalls) == len(b.ToolCalls)
			for j := 0; same && j < len(m.ToolCalls); j++ {
				x, _ := json.Marshal(m.ToolCalls[j])
				y, _ := json.Marshal(b.ToolCalls[j])
				same = string(x) == string(y)
			}
			if !same {
				t.Errorf("%s message %d:\n got %+v\nwant %+v", path, i, b, m)
				break
			}
		}
	}
}

// TestBranches: events that recorded the harness's tree (a rewind: a
// second prompt on the first answer) keep it, so the resumed thread is the
// branch the conversation ended on; a parent that has no record (an
// attachment) stands for its own parent; events without a tree are
// chained in order.
func TestBranches(t *testing.T) {
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "first", ID: "u1"},
		{Type: events.Response, Text: "answer one", ID: "u2", ParentID: "u1", MessageID: "msg_1"},
		{Type: events.Prompt, Source: "user", Text: "abandoned question", ID: "u3", ParentID: "u2"},
		{Type: events.Response, Text: "abandoned answer", ID: "u4", ParentID: "u3", MessageID: "msg_2"},
		{Type: events.Output, Subtype: "attachment", ID: "u7", ParentID: "u2"},
		{Type: events.Prompt, Source: "user", Text: "second try", ID: "u5", ParentID: "u7"},
		{Type: events.Response, Text: "answer two", ID: "u6", ParentID: "u5", MessageID: "msg_3"},
		{Type: events.Prompt, Source: "user", Text: "live, no tree"},
		{Type: events.Response, Text: "live answer"},
	}
	file, _, err := Encode(evs)
	if err != nil {
		t.Fatal(err)
	}
	s := readBack(t, file)
	var got []string
	for _, m := range s.Messages {
		got = append(got, m.Text)
	}
	if want := "first|answer one|second try|answer two|live, no tree|live answer"; strings.Join(got, "|") != want {
		t.Errorf("thread %q, want %q", strings.Join(got, "|"), want)
	}
	if s.Report.OffBranch != 2 {
		t.Errorf("off branch: %d records, want the abandoned 2", s.Report.OffBranch)
	}
}

// TestUnansweredCalls: a tool call the conversation went on from without a
// result (an interrupted tool, a parallel call whose result is missing)
// gets an error result saying so, right after it, so the Messages API's
// pairing rule holds and Claude Code keeps the call; the record that
// followed the call in the harness's tree follows that result; a result
// arriving later is an orphan.
func TestUnansweredCalls(t *testing.T) {
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "do two things", ID: "u1"},
		{Type: events.ToolCall, MessageID: "msg_1", ID: "u2", ParentID: "u1", Tool: &events.Tool{ID: "t1", Name: "Bash"}},
		{Type: events.ToolCall, MessageID: "msg_1", ID: "u2", ParentID: "u1", Tool: &events.Tool{ID: "t2", Name: "Bash"}},
		{Type: events.ToolResult, ID: "u3", ParentID: "u2", Tool: &events.Tool{ID: "t1"}, Result: &events.Result{Content: "one"}},
		{Type: events.Prompt, Source: "user", Text: "stop, say hi", ID: "u4", ParentID: "u3"},
		{Type: events.ToolCall, MessageID: "msg_2", ID: "u5", ParentID: "u4", Tool: &events.Tool{ID: "t3", Name: "Bash"}},
		{Type: events.Prompt, Source: "user", Text: "interrupted", ID: "u6", ParentID: "u5"},
		{Type: events.ToolResult, ID: "u7", ParentID: "u6", Tool: &events.Tool{ID: "t3"}, Result: &events.Result{Content: "late"}},
		{Type: events.ToolCall, MessageID: "msg_3", ID: "u8", ParentID: "u6", Tool: &events.Tool{ID: "t4", Name: "Read"}},
	}
	file, lost, err := Encode(evs)
	if err != nil {
		t.Fatal(err)
	}
	if lost.Unanswered != 3 || lost.Orphans != 1 {
		t.Errorf("lost %+v", lost)
	}
	s := readBack(t, file)
	var got []string
	for _, m := range s.Messages {
		got = append(got, string(m.Role)+":"+m.Text+m.Output)
	}
	want := "user:do two things|assistant:|tool_result:one|tool_result:" + NoResult + "|user:stop, say hi|assistant:|tool_result:" + NoResult +
		"|user:interrupted|assistant:|tool_result:" + NoResult
	if strings.Join(got, "|") != want || s.Report.OffBranch != 0 {
		t.Errorf("read back\n%q\nwant\n%q (off branch %d)", strings.Join(got, "|"), want, s.Report.OffBranch)
	}
}
