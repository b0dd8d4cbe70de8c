package pi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/objects/conversation"
)

func add(t *testing.T, c *Converter, raw string) bool {
	t.Helper()
	return c.AddJSON(json.RawMessage(raw), 1)
}

// TestBashText agrees with Pi's bashExecutionToText (pi-coding-agent
// src/core/messages.ts): output in a fence as is, a blank line before how
// the command ended, the truncation note when the full output was saved.
func TestBashText(t *testing.T) {
	for _, c := range []struct {
		m    string
		want string
	}{
		{`{"command":"ls","output":"a\n","exitCode":0}`, "Ran `ls`\n```\na\n\n```"},
		{`{"command":"make","output":"","exitCode":2}`, "Ran `make`\n(no output)\n\nCommand exited with code 2"},
		{`{"command":"sleep 9","output":"x","cancelled":true,"exitCode":null}`, "Ran `sleep 9`\n```\nx\n```\n\n(command cancelled)"},
		{`{"command":"cat big","output":"y","exitCode":null,"truncated":true,"fullOutputPath":"/tmp/o"}`, "Ran `cat big`\n```\ny\n```\n\n[Output truncated. Full output: /tmp/o]"},
		{`{"command":"x","output":"z","truncated":true}`, "Ran `x`\n```\nz\n```"},
	} {
		var m Message
		if err := json.Unmarshal([]byte(c.m), &m); err != nil {
			t.Fatal(err)
		}
		if got := BashText(m); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.m, got, c.want)
		}
	}
}

// TestSkippedAndCounted: nothing the converter does not know stops it or
// is silently lost.
func TestSkippedAndCounted(t *testing.T) {
	var c Converter
	for _, raw := range []string{
		`[1,2]`,
		`{"role":"robot","content":"beep"}`,
		`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"video","url":"x"},{"type":"thinking","thinking":"t"}]}`,
		`{"role":"assistant","content":[{"type":"toolCall","name":"bash"},{"type":"toolCall","id":"c1","name":"bash","arguments":"ls"}]}`,
		`{"role":"toolResult","content":"orphan"}`,
		`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"image","data":"QUJD","mimeType":"image/gif"}]}`,
		`{"role":"user","content":"   "}`,
		`{"role":"bashExecution","command":"env","output":"S=1","excludeFromContext":true}`,
	} {
		add(t, &c, raw)
	}
	r := c.Report
	if r.Unknown["message/robot"] != 1 || r.Unknown["block/video"] != 1 || r.Thinking != 1 || r.Images != 1 {
		t.Errorf("unknown %v thinking %d images %d", r.Unknown, r.Thinking, r.Images)
	}
	for _, k := range []string{"damaged", "toolCall without id or name", "toolResult without toolCallId", "blank user", "bashExecution excluded from context"} {
		if r.Skipped[k] != 1 {
			t.Errorf("skipped %q: %v", k, r.Skipped)
		}
	}
	if len(c.Log) != 3 {
		t.Fatalf("log %+v", c.Log)
	}
	if c.Log[0].Text != "hi\n\n[video block]" {
		t.Errorf("user text %q", c.Log[0].Text)
	}
	if a := c.Log[1]; len(a.ToolCalls) != 1 || a.ToolCalls[0].Args["input"] != "ls" {
		t.Errorf("assistant %+v", a)
	}
	if tr := c.Log[2]; tr.Role != conversation.RoleToolResult || tr.Output != "[image: image/gif, 3 bytes]" {
		t.Errorf("tool result %+v", tr)
	}
	if info, ok := c.Tool("c1"); !ok || info.Name != "bash" {
		t.Errorf("tool c1: %+v %v", info, ok)
	}
	if got := ContentText(json.RawMessage(`[{"type":"text","text":"a"},{"type":"image","data":"QUJD","mimeType":"image/png"}]`)); got != "a\n[image: image/png, 3 bytes]" {
		t.Errorf("ContentText %q", got)
	}
	if !strings.Contains(r.Problems[0].Msg, "not a JSON object") {
		t.Errorf("problems %v", r.Problems)
	}
}
