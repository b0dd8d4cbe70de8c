package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/eval/replay"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// TestMarkdownFaultCells: the per-session cells of `replay --markdown`
// carry each strategy's faults beside its cost. A constructed session
// whose last response quotes an output clear_tool_uses (trigger 100,
// keep 1) has cleared: 4 calls, 1 with 2 faults, so 50.0 faults per 100
// calls and 25.0% of calls with one; naive hides nothing.
func TestMarkdownFaultCells(t *testing.T) {
	big := strings.Repeat("filler line of a long output\n", 110)
	call := func(text, id string, args map[string]any) conversation.Message {
		m := conversation.Message{Role: conversation.RoleAssistant, Text: text}
		if id != "" {
			m.ToolCalls = []conversation.ToolCall{{ID: id, Name: "Bash", Args: args}}
		}
		return m
	}
	result := func(id, out string) conversation.Message {
		return conversation.Message{Role: conversation.RoleToolResult, ToolCallID: id, ToolName: "Bash", Output: out}
	}
	s := &transcript.Session{Format: transcript.FormatClaudeCode, ID: "faults", Path: "/x/faults.jsonl", Messages: []conversation.Message{
		{Role: conversation.RoleUser, Text: "find the config"},
		call("", "b1", map[string]any{"command": "grep -r port ."}), result("b1", big+"config/server_prod.yaml: port 48213"),
		call("", "b2", map[string]any{"command": "ls"}), result("b2", big),
		call("", "b3", map[string]any{"command": "pwd"}), result("b3", big),
		call("The port is set in config/server_prod.yaml to 48213.", "", nil),
	}}
	rep, err := replay.Run(context.Background(), s, replay.Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Calibrate: "none",
		Strategies: []replay.Strategy{&replay.Naive{}, &replay.ClearToolUses{Trigger: 100, Keep: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	reports := []*replay.Report{rep}
	var out bytes.Buffer
	printMarkdown(&out, reports, replay.Sum(reports), nil)
	md := out.String()
	var row string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| faults | 4 |") {
			row = l
		}
	}
	cells := strings.Split(row, " | ")
	if len(cells) != 5 {
		t.Fatalf("no per-session row with two strategy cells in:\n%s", md)
	}
	if !strings.HasSuffix(cells[3], "; faults 0.0 / 0.0%") {
		t.Errorf("naive cell %q: want no fault", cells[3])
	}
	if !strings.HasSuffix(cells[4], "; faults 50.0 / 25.0% |") {
		t.Errorf("clear_tool_uses cell %q: want 50.0 faults per 100 calls, 25.0%% of calls", cells[4])
	}
	if !strings.Contains(md, "faults per 100 calls / share of calls with a fault") {
		t.Errorf("the caption does not say what the fault figures are:\n%s", md)
	}
	if got := faultCell(replay.Totals{Calls: 3}); got != "faults -" {
		t.Errorf("nothing checked (recorded): %q", got)
	}
}
