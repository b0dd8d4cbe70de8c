package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
)

// TestSessionFile: neutral events written as a Pi v3 session file, named
// for a session, read back by the package's own converter as the same
// messages; pi-v3 in a registry built with Codec has the codec.
func TestSessionFile(t *testing.T) {
	msgs := []conversation.Message{
		{Role: conversation.RoleUser, Text: "hello"},
		{Role: conversation.RoleAssistant, Text: "Reading.", ToolCalls: []conversation.ToolCall{{ID: "t1", Name: "read", Args: map[string]any{"path": "a.txt"}}}},
		{Role: conversation.RoleToolResult, ToolCallID: "t1", ToolName: "read", Output: "alpha"},
		{Role: conversation.RoleAssistant, Text: "It says alpha."},
	}
	f, ok := harness.NewRegistry(Codec{}).Commits().Lookup(commits.FormatPi)
	if !ok || f.Encode == nil || f.ForSession == nil {
		t.Fatal("pi-v3 has no codec")
	}
	file, err := f.Encode(events.FromMessages(msgs))
	if err != nil {
		t.Fatal(err)
	}
	file, err = f.ForSession(file, "s-new")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(lines[0], &h); err != nil || h["type"] != "session" || h["id"] != "s-new" || h["version"] != float64(3) {
		t.Fatalf("header %s", lines[0])
	}
	if _, has := h["cwd"]; has {
		t.Fatal("the header names a cwd")
	}
	var c Converter
	parent := ""
	for i, l := range lines[1:] {
		var e struct {
			Type     string          `json:"type"`
			ID       string          `json:"id"`
			ParentID *string         `json:"parentId"`
			Message  json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(l, &e); err != nil || e.Type != "message" {
			t.Fatalf("line %d: %s", i+2, l)
		}
		if (parent == "") != (e.ParentID == nil) || (e.ParentID != nil && *e.ParentID != parent) {
			t.Fatalf("line %d: parent %v, want %q", i+2, e.ParentID, parent)
		}
		parent = e.ID
		if !c.AddJSON(e.Message, i+2) {
			t.Fatalf("line %d: the converter refused %s", i+2, e.Message)
		}
	}
	var got []string
	for _, m := range c.Log {
		got = append(got, string(m.Role)+":"+m.Text+m.Output)
	}
	if want := "user:hello|assistant:Reading.|tool_result:alpha|assistant:It says alpha."; strings.Join(got, "|") != want {
		t.Fatalf("read back %q, want %q", strings.Join(got, "|"), want)
	}
}

// TestSessionFileKeepsThinkingAndImages: a model message's thinking (with
// its signature), text and tool calls stay one Pi assistant message in the
// recorded order, and a tool result's image (recorded in the Messages
// API's base64 shape) becomes a Pi image block after its text.
func TestSessionFileKeepsThinkingAndImages(t *testing.T) {
	evs := []events.Event{
		{Type: events.Prompt, Source: "user", Text: "look at it"},
		{Type: events.Thinking, MessageID: "m1", Text: "a screenshot helps", Signature: "sig1", Model: "claude-x"},
		{Type: events.Response, MessageID: "m1", Text: "Taking one.", Model: "claude-x"},
		{Type: events.ToolCall, MessageID: "m1", Tool: &events.Tool{ID: "t1", Name: "shot", Input: map[string]any{"w": 2}}},
		{Type: events.ToolResult, Tool: &events.Tool{ID: "t1", Name: "shot"}, Result: &events.Result{Content: "ok",
			Blocks: []any{map[string]any{"type": "text", "text": "ok"},
				map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}}},
		{Type: events.Thinking, Text: "done"},
		{Type: events.Response, Text: "It is blue."},
		{Type: events.Metric, Metric: &events.MetricData{Turns: 1}},
	}
	file, err := SessionFile(evs)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(file), []byte("\n"))
	var got []string
	for _, l := range lines[1:] {
		var e struct {
			Message struct {
				Role       string           `json:"role"`
				Content    []map[string]any `json:"content"`
				StopReason string           `json:"stopReason"`
				Model      string           `json:"model"`
			} `json:"message"`
		}
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, b := range e.Message.Content {
			switch b["type"] {
			case "thinking":
				parts = append(parts, "thinking:"+b["thinking"].(string)+"/"+fmt.Sprint(b["thinkingSignature"]))
			case "text":
				parts = append(parts, "text:"+b["text"].(string))
			case "toolCall":
				parts = append(parts, "call:"+b["id"].(string))
			case "image":
				parts = append(parts, "image:"+b["mimeType"].(string)+"/"+b["data"].(string))
			}
		}
		got = append(got, e.Message.Role+"("+e.Message.StopReason+e.Message.Model+")["+strings.Join(parts, ",")+"]")
	}
	want := []string{
		"user()[text:look at it]",
		"assistant(toolUseclaude-x)[thinking:a screenshot helps/sig1,text:Taking one.,call:t1]",
		"toolResult()[text:ok,image:image/png/iVBORw0KGgo=]",
		"assistant(stopunknown)[thinking:done/<nil>,text:It is blue.]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Pi's own converter reads the file back: the image as its note, the
	// thinking left out of the text.
	var c Converter
	for i, l := range lines[1:] {
		var e struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(l, &e)
		if !c.AddJSON(e.Message, i+2) {
			t.Fatalf("line %d refused", i+2)
		}
	}
	if len(c.Log) != 4 || c.Log[1].Text != "Taking one." || !strings.Contains(c.Log[2].Output, "image") {
		t.Fatalf("read back %+v", c.Log)
	}
}

// TestSessionFileKeepsTheTree: events that recorded the harness's tree (a
// conversation rewound to an earlier message) are written with the same
// branches, so the thread Pi resumes (root to the last entry) is the one
// the conversation ended on; the abandoned branch stays in the file.
func TestSessionFileKeepsTheTree(t *testing.T) {
	evs := []events.Event{
		{Type: events.Prompt, ID: "u1", Source: "user", Text: "one"},
		{Type: events.System, ID: "s1", ParentID: "u1", Subtype: "hook"}, // no entry: a link of the chain
		{Type: events.Response, ID: "a1", ParentID: "s1", MessageID: "m1", Text: "ok one"},
		{Type: events.Prompt, ID: "u2", ParentID: "a1", Source: "user", Text: "abandoned"},
		{Type: events.Response, ID: "a2", ParentID: "u2", MessageID: "m2", Text: "ok abandoned"},
		{Type: events.Prompt, ID: "u3", ParentID: "a1", Source: "user", Text: "rewound"},
		{Type: events.Response, ID: "a3", ParentID: "u3", MessageID: "m3", Text: "ok rewound"},
	}
	file, err := SessionFile(evs)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, l := range bytes.Split(bytes.TrimSpace(file), []byte("\n"))[1:] {
		var e struct {
			ID       string  `json:"id"`
			ParentID *string `json:"parentId"`
		}
		_ = json.Unmarshal(l, &e)
		p := "-"
		if e.ParentID != nil {
			p = *e.ParentID
		}
		links = append(links, e.ID+"<"+p)
	}
	if got, want := strings.Join(links, " "), "00000001<- 00000002<00000001 00000003<00000002 00000004<00000003 00000005<00000002 00000006<00000005"; got != want {
		t.Fatalf("links %s, want %s", got, want)
	}
	s := &harness.Session{Report: harness.Report{Types: map[string]int{}}}
	recs, err := harness.ReadRecords(bytes.NewReader(file), &s.Report, nil)
	if err != nil {
		t.Fatal(err)
	}
	Read(s, recs)
	var got []string
	for _, m := range s.Messages {
		got = append(got, m.Text)
	}
	if strings.Join(got, "|") != "one|ok one|rewound|ok rewound" {
		t.Fatalf("Pi's thread %q", got)
	}
}

// TestDatasetRoundTrip: every Pi dataset session decoded to events
// (Decode) and written back (SessionFile) reads as the same thread:
// Pi resumes the same conversation, branch for branch.
func TestDatasetRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(datasets.Dir(t), "pi", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no Pi dataset files")
	}
	thread := func(b []byte) []string {
		s := &harness.Session{Report: harness.Report{Types: map[string]int{}}}
		recs, err := harness.ReadRecords(bytes.NewReader(b), &s.Report, nil)
		if err != nil {
			t.Fatal(err)
		}
		Read(s, recs)
		var out []string
		for _, m := range s.Messages {
			calls := ""
			for _, c := range m.ToolCalls {
				calls += "," + c.ID
			}
			out = append(out, string(m.Role)+":"+m.Text+m.Output+calls)
		}
		return out
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := SessionFile(evs)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want, got := thread(b), thread(out)
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("%s: %d messages back, want %d", filepath.Base(f), len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: message %d:\n got %.300q\nwant %.300q", filepath.Base(f), i, got[i], want[i])
			}
		}
	}
}
