package codex_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/harness/codex"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
)

func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/rollout.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func records(t *testing.T, b []byte) ([]harness.Record, harness.Report) {
	t.Helper()
	var rep harness.Report
	recs, err := harness.ReadRecords(bytes.NewReader(b), &rep, codex.Codec{}.Known)
	if err != nil {
		t.Fatal(err)
	}
	return recs, rep
}

// TestRead: the replay view of the fixture, message by message, and the
// report of what was skipped, left out and damaged.
func TestRead(t *testing.T) {
	recs, rep := records(t, fixture(t))
	s := &harness.Session{Report: rep}
	codex.Read(s, recs)
	type msg struct {
		role  conversation.Role
		text  string
		meta  bool
		calls string
		line  int
	}
	want := []msg{
		{conversation.RoleUser, "<environment_context>", true, "", 3},
		{conversation.RoleUser, "Q1: what is in notes.txt?", false, "", 5},
		{conversation.RoleAssistant, "", false, "call_1 exec_command", 8},
		{conversation.RoleToolResult, "alpha-note", false, "", 9},
		{conversation.RoleAssistant, "A1: the notes say alpha-note.", false, "", 11},
		{conversation.RoleUser, "Q2: patch it", false, "", 12},
		{conversation.RoleAssistant, "", false, "call_2 apply_patch", 13},
		{conversation.RoleToolResult, "Done!", false, "", 14},
		{conversation.RoleUser, "S1: the person asked", true, "", 15},
		{conversation.RoleAssistant, "A2: patched.", false, "", 19},
	}
	if len(s.Messages) != len(want) {
		for _, m := range s.Messages {
			t.Logf("%s %q %v", m.Role, m.Text+m.Output, m.ToolCalls)
		}
		t.Fatalf("%d messages, want %d", len(s.Messages), len(want))
	}
	for i, w := range want {
		m := s.Messages[i]
		var calls []string
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Name)
		}
		if m.Role != w.role || !strings.HasPrefix(m.Text+m.Output, w.text) || m.Meta != w.meta || strings.Join(calls, ",") != w.calls || s.MessageLines[i] != w.line {
			t.Errorf("message %d: %s %q meta %v calls %v line %d; want %+v", i, m.Role, m.Text+m.Output, m.Meta, calls, s.MessageLines[i], w)
		}
	}
	if s.ID != "0badc0de-0000-4000-8000-000000000001" || s.Cwd != "/work/demo" || s.Version != "0.171.0" || s.Format != harness.FormatCodex {
		t.Errorf("session %q cwd %q version %q format %q", s.ID, s.Cwd, s.Version, s.Format)
	}
	if got := s.Messages[2].ToolCalls[0].Args["cmd"]; got != "cat notes.txt" {
		t.Errorf("exec_command args: %v", s.Messages[2].ToolCalls[0].Args)
	}
	r := s.Report
	if r.Thinking != 1 || r.Compactions != 1 || len(s.CompactionAt) != 1 || s.CompactionAt[0] != 8 || r.Unknown["hologram"] != 1 ||
		r.Skipped["message/developer"] != 1 || r.Skipped["event_msg"] != 2 || r.Skipped["token_usage_record"] != 1 {
		t.Errorf("report %+v, compaction at %v", r, s.CompactionAt)
	}
	damaged := false
	for _, p := range r.Problems {
		damaged = damaged || p.Line == 18
	}
	if !damaged {
		t.Errorf("the cut line 18 is not reported: %v", r.Problems)
	}
}

// TestDecode: the neutral events of the fixture, line by line.
func TestDecode(t *testing.T) {
	evs, err := codex.Decode(fixture(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		s := string(e.Type) + "/" + e.Subtype
		switch {
		case e.Tool != nil:
			s += " " + e.Tool.ID + " " + e.Tool.Name
		case e.Text != "":
			s += " " + strings.SplitN(e.Text, "\n", 2)[0]
		}
		got = append(got, s)
	}
	want := []string{
		"system/init",
		"system/developer You are Codex, the test's instructions.",
		"prompt/ <environment_context>",
		"system/turn_context",
		"prompt/ Q1: what is in notes.txt?",
		"output/event_msg/user_message",
		"thinking/ Look at the file.",
		"tool_call/ call_1 exec_command",
		"tool_result/ call_1 exec_command",
		"metric/usage",
		"response/ A1: the notes say alpha-note.",
		"prompt/ Q2: patch it",
		"tool_call/ call_2 apply_patch",
		"tool_result/ call_2 apply_patch",
		"system/compaction_summary S1: the person asked about notes; they say alpha-note.",
		"error/error stream disconnected",
		"output/unknown/hologram",
		`output/damaged line 18: invalid JSON at byte 1: invalid character '\n' in string literal; 104 bytes skipped to the end of the line`,
		"response/ A2: patched.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	th, call, usage := evs[6], evs[7], evs[9]
	if th.Metadata["codex_encrypted_content"] != "gAAAA-opaque" || th.MessageID != "rs_1" || call.MessageID != "rs_1" || call.Model != "demo-model" {
		t.Errorf("thinking %+v, call %+v: one model message, its reasoning kept", th, call)
	}
	if u := usage.Usage; u == nil || u.Input != 20 || u.CacheRead != 100 || u.Output != 7 {
		t.Errorf("usage %+v", usage.Usage)
	}
	if evs[12].Metadata["codex_item"] != "custom_tool_call" || evs[12].Tool.Input["input"] != "*** Begin Patch\n*** End Patch" {
		t.Errorf("custom tool call %+v", evs[12])
	}
	if !evs[2].Meta || evs[2].Source != "system" || evs[4].Source != "user" || len(evs[16].Raw) == 0 {
		t.Errorf("injected %+v, prompt %+v, unknown raw %q", evs[2], evs[4], evs[16].Raw)
	}
}

// TestMapTool: which calls become Codex's own tools, and how.
func TestMapTool(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		want string // the mapped tool and its arguments, "" when text
	}{
		{"Bash", `{"command":"ls -la","description":"list"}`, `exec_command {"cmd":"ls -la"}`},
		{"bash", `{"command":"echo hi"}`, `exec_command {"cmd":"echo hi"}`},
		{"Read", `{"file_path":"/w/notes.txt"}`, `exec_command {"cmd":"cat /w/notes.txt"}`},
		{"Read", `{"file_path":"/w/my notes.txt","offset":10,"limit":5}`, `exec_command {"cmd":"sed -n '10,14p' '/w/my notes.txt'"}`},
		{"read", `{"path":"it's.txt","offset":3}`, `exec_command {"cmd":"sed -n '3,$p' 'it'\\''s.txt'"}`},
		{"read", `{"filePath":"/w/notes.txt","limit":2}`, `exec_command {"cmd":"sed -n '1,2p' /w/notes.txt"}`},
		{"exec_command", `{"cmd":"pwd","workdir":"/w"}`, `exec_command {"cmd":"pwd","workdir":"/w"}`},
		{"shell", `{"command":["bash","-lc","ls"]}`, `shell {"command":["bash","-lc","ls"]}`},
		{"Bash", `{}`, ""},
		{"Edit", `{"file_path":"a","old_string":"x","new_string":"y"}`, ""},
		{"Grep", `{"pattern":"x"}`, ""},
		{"Task", `{"prompt":"go"}`, ""},
	} {
		name, args, ok := codex.MapTool(c.name, harness.Args(json.RawMessage(c.in)))
		got := ""
		if ok {
			a, _ := json.Marshal(args)
			got = name + " " + string(a)
		}
		if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// TestEncode: events of other harnesses as a rollout: mapped tools as
// function calls with their outputs, the others as text, an unanswered
// call answered, foreign thinking and Codex's own injected context left
// out, Codex's reasoning kept; the rollout reads back.
func TestEncode(t *testing.T) {
	evs := []events.Event{
		{Type: events.System, Subtype: "init"},
		{Type: events.Prompt, Source: "system", Meta: true, Text: "<environment_context>old</environment_context>"},
		{Type: events.Prompt, Source: "user", Text: "Q1"},
		{Type: events.Thinking, Text: "claude thinks", Signature: "sig", MessageID: "m1"},
		{Type: events.Response, Text: "let me look", MessageID: "m1"},
		{Type: events.ToolCall, MessageID: "m1", Tool: &events.Tool{ID: "t1", Name: "Bash", Input: map[string]any{"command": "echo hi"}}},
		{Type: events.ToolCall, MessageID: "m1", Tool: &events.Tool{ID: "t2", Name: "Edit", Input: map[string]any{"file_path": "a.go"}}},
		{Type: events.ToolCall, MessageID: "m1", Tool: &events.Tool{ID: "t3", Name: "Read", Input: map[string]any{"file_path": "n.txt"}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t1"}, Result: &events.Result{Content: "hi"}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t2"}, Result: &events.Result{Content: "edited", IsError: true}},
		{Type: events.Thinking, Text: "codex thinks", Metadata: map[string]any{"codex_encrypted_content": "enc"}},
		{Type: events.System, Subtype: events.SubtypeCompactionSummary, Text: "SUM"},
		{Type: events.Metric, Usage: &conversation.Usage{Input: 1}},
		{Type: events.Prompt, Source: "agent", Text: "a sub-agent's task", Metadata: map[string]any{"sidechain": true}},
		{Type: events.Response, Text: "done"},
	}
	b, lost, err := codex.EncodeLost(evs)
	if err != nil {
		t.Fatal(err)
	}
	if want := (codex.Lost{Thinking: 1, Events: 2, Excluded: 1, AsText: 1, Unanswered: 1}); lost != want {
		t.Errorf("lost %+v, want %+v", lost, want)
	}
	var got []string
	for _, l := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		var rec struct {
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(l, &rec); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		p := rec.Payload
		s := rec.Type + " " + str(p["type"])
		switch str(p["type"]) {
		case "message":
			c, _ := p["content"].([]any)
			part, _ := c[0].(map[string]any)
			s += " " + str(p["role"]) + " " + str(part["type"]) + " " + str(part["text"])
		case "function_call":
			s += " " + str(p["call_id"]) + " " + str(p["name"]) + " " + str(p["arguments"])
		case "function_call_output":
			s += " " + str(p["call_id"]) + " " + str(p["output"])
		case "reasoning":
			s += " " + str(p["encrypted_content"])
		}
		got = append(got, s)
	}
	want := []string{
		"session_meta ",
		"response_item message user input_text Q1",
		"response_item message assistant output_text let me look",
		`response_item function_call t1 exec_command {"cmd":"echo hi"}`,
		`response_item message assistant output_text [I called the tool Edit (call t2), which this Codex session does not have, with input: {"file_path":"a.go"}]`,
		`response_item function_call t3 exec_command {"cmd":"cat n.txt"}`,
		"response_item function_call_output t3 [no result was recorded for this call]",
		"response_item function_call_output t1 hi",
		"response_item message user input_text [Result of the tool call Edit (call t2), an error:]\nedited",
		"response_item reasoning enc",
		"response_item message user input_text Summary of the earlier conversation:\n\nSUM",
		"response_item message assistant output_text done",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rollout:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// It reads back as the conversation, every result after its call.
	recs, rep := records(t, b)
	s := &harness.Session{Report: rep}
	codex.Read(s, recs)
	if s.Report.Orphans != 0 || s.Report.Unanswered != 0 || len(s.Report.Problems) != 0 || len(s.Messages) != 7 {
		t.Fatalf("read back: %d messages, report %+v", len(s.Messages), s.Report)
	}
	// The same events give the same file (its session id is its content's).
	again, _ := codex.Encode(evs)
	if !bytes.Equal(b, again) {
		t.Error("Encode is not deterministic")
	}
}

func str(v any) string { s, _ := v.(string); return s }

// TestSetSession: ForSession and SetCwd change the session_meta line
// only; every other line keeps its bytes.
func TestSetSession(t *testing.T) {
	in := fixture(t)
	out, err := codex.SetSessionID(in, "11111111-2222-4333-8444-555555555555")
	if err == nil {
		out, err = codex.SetCwd(out, "/else")
	}
	if err != nil {
		t.Fatal(err)
	}
	a, b := bytes.SplitAfter(in, []byte("\n")), bytes.SplitAfter(out, []byte("\n"))
	if len(a) != len(b) {
		t.Fatalf("%d lines, want %d", len(b), len(a))
	}
	for i := 1; i < len(a); i++ {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("line %d changed: %s", i+1, b[i])
		}
	}
	recs, rep := records(t, out)
	s := &harness.Session{Report: rep}
	codex.Read(s, recs)
	if s.ID != "11111111-2222-4333-8444-555555555555" || s.Cwd != "/work/demo" {
		t.Errorf("session %q cwd %q (turn_context's cwd is the last)", s.ID, s.Cwd)
	}
	if !bytes.Contains(b[0], []byte(`"cwd":"/else"`)) || !bytes.Contains(b[0], []byte(`"cli_version":"0.171.0"`)) {
		t.Errorf("session_meta: %s", b[0])
	}
}

// TestSetSessionWithoutMeta: a rollout cut after its session_meta (a
// chain materialized from a compaction on) gets one when it is named.
func TestSetSessionWithoutMeta(t *testing.T) {
	in := []byte(`{"timestamp":"2026-01-02T03:04:10.000Z","type":"compacted","payload":{"message":"S"}}` + "\n")
	out, err := codex.SetSessionID(in, "11111111-2222-4333-8444-555555555555")
	if err != nil {
		t.Fatal(err)
	}
	recs, rep := records(t, out)
	s := &harness.Session{Report: rep}
	codex.Read(s, recs)
	if s.ID != "11111111-2222-4333-8444-555555555555" || !bytes.HasSuffix(out, in) || len(s.Messages) != 1 ||
		!bytes.Contains(out, []byte(`"timestamp":"2026-01-02T03:04:10.000Z","type":"session_meta"`)) {
		t.Fatalf("%s", out)
	}
}

// TestClaim: only rollout lines are claimed.
func TestClaim(t *testing.T) {
	for _, c := range []struct {
		line string
		want harness.Claim
	}{
		{`{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}`, harness.ClaimSure},
		{`{"type":"response_item","payload":{"type":"message"}}`, harness.ClaimSure},
		{`{"type":"event_msg","payload":"x"}`, harness.ClaimMaybe},
		{`{"type":"message","id":"1","message":{"role":"user"}}`, harness.ClaimNone},
		{`{"type":"user","uuid":"u","sessionId":"s","message":{}}`, harness.ClaimNone},
		{`{"type":"hologram","payload":{}}`, harness.ClaimNone},
		{`not json`, harness.ClaimNone},
	} {
		if got := (codex.Codec{}).Claim(harness.Record{Data: json.RawMessage(c.line)}); got != c.want {
			t.Errorf("%s: claim %v, want %v", c.line, got, c.want)
		}
	}
}

// FuzzDecode: any bytes decode without failing, to events that validate
// and encode as a rollout that reads back without orphans.
func FuzzDecode(f *testing.F) {
	b, _ := os.ReadFile("testdata/rollout.jsonl")
	f.Add(b)
	f.Add([]byte(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"x","output":[{"type":"input_text","text":"t"}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := codex.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := events.Encode(evs); err != nil {
			t.Fatalf("decoded events do not validate: %v", err)
		}
		out, err := codex.Encode(evs)
		if err != nil {
			t.Fatal(err)
		}
		recs, rep := records(t, out)
		s := &harness.Session{Report: rep}
		codex.Read(s, recs)
		if s.Report.Orphans != 0 || s.Report.Unanswered != 0 {
			t.Fatalf("re-encoded rollout: %+v", s.Report)
		}
	})
}

// TestImages: a result's images (Claude Code's base64 source, Pi's
// {data, mimeType}) become input_image parts after its text, for mapped
// calls and for calls written as text; decoded, Codex's input_image parts
// are base64 image blocks again.
func TestImages(t *testing.T) {
	png := "iVBORw0KGgo="
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "look"},
		{Type: events.ToolCall, MessageID: "m", Tool: &events.Tool{ID: "t1", Name: "Read", Input: map[string]any{"file_path": "a.png"}}},
		{Type: events.ToolCall, MessageID: "m", Tool: &events.Tool{ID: "t2", Name: "screenshot"}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t1"}, Result: &events.Result{Content: "[image]", Blocks: []any{
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": png}}}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t2"}, Result: &events.Result{Content: "shot", Blocks: []any{
			map[string]any{"type": "image", "data": png, "mimeType": "image/jpeg"}}}},
	}
	b, err := codex.Encode(evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"output":[{"text":"[image]","type":"input_text"},{"image_url":"data:image/png;base64,` + png + `","type":"input_image"}]`,
		`{"image_url":"data:image/jpeg;base64,` + png + `","type":"input_image"}`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("no %s in\n%s", want, b)
		}
	}
	back, err := codex.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range back {
		if e.Type == events.ToolResult && e.Tool.ID == "t1" && len(e.Result.Blocks) == 2 {
			img, _ := e.Result.Blocks[1].(map[string]any)
			src, _ := img["source"].(map[string]any)
			found = img["type"] == "image" && src["media_type"] == "image/png" && src["data"] == png
		}
	}
	if !found {
		t.Errorf("decoded: %+v", back)
	}
}

// TestCompactedReplacementHistory: a compacted line with a replacement
// history (Codex's local compaction) decodes to the items Codex resumes
// with, the summary once: as the user message Codex put it in, or first
// when no item holds it.
func TestCompactedReplacementHistory(t *testing.T) {
	line := func(history string) []byte {
		return []byte(`{"timestamp":"2026-01-02T03:04:10.000Z","type":"compacted","payload":{"message":"S1: the notes say alpha.","replacement_history":` + history + `}}` + "\n")
	}
	env := `{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}]}`
	ask := `{"type":"message","role":"user","content":[{"type":"input_text","text":"Q1: read the notes"}]}`
	sum := `{"type":"message","role":"user","content":[{"type":"input_text","text":"Another model summarized the conversation:\nS1: the notes say alpha."}]}`
	call := `{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}`
	out := `{"type":"function_call_output","call_id":"c1","output":"notes.txt"}`
	for _, c := range []struct {
		history string
		want    string
	}{
		{`[` + env + `,` + ask + `,` + sum + `]`, "prompt system <environment_context>|prompt user Q1: read the notes|system compaction_summary Another model summarized the conversation:\nS1: the notes say alpha."},
		{`[` + ask + `,` + call + `,` + out + `]`, "system compaction_summary S1: the notes say alpha.|prompt user Q1: read the notes|tool_call  c1 exec_command|tool_result  c1 exec_command notes.txt"},
		{`"not a list"`, "system compaction_summary S1: the notes say alpha."},
		{`[1, "x"]`, "system compaction_summary S1: the notes say alpha."},
	} {
		evs, err := codex.Decode(line(c.history))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs {
			s := string(e.Type) + " " + e.Subtype + " " + e.Text
			if e.Type == events.Prompt {
				s = string(e.Type) + " " + e.Source + " " + strings.SplitN(e.Text, "\n", 2)[0]
			}
			if e.Tool != nil {
				s += e.Tool.ID + " " + e.Tool.Name
			}
			if e.Result != nil {
				s += " " + e.Result.Content
			}
			if len(evs) > 1 && e.Metadata["codex_replacement_history"] != true && e.Subtype != events.SubtypeCompactionSummary {
				t.Errorf("%s: not marked as replacement history", s)
			}
			got = append(got, s)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("history %s:\n%s\nwant\n%s", c.history, strings.Join(got, "|"), c.want)
		}
	}
}
