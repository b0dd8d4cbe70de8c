package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/ccmanaged"
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/harness/transcript"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/objects/conversation"
)

// TestClaudeCodeManaged replays a dataset Claude Code session (49 calls,
// long outputs, pauses past the cache's lifetime) through managed mode:
// every call's request is a valid Messages API request, the body the
// strategy prices is the one ccmanaged.Config.Manage (the proxy's code)
// gives for the same request and state, the outputs it collapsed are
// hidden (the fault rule's input) and shown as their line in what is
// priced, and the session costs less than the naive history.
func TestClaudeCodeManaged(t *testing.T) {
	path := filepath.Join(datasets(t), "claude-code", "dmux__eef6c282__a9185eb7.jsonl")
	s, err := transcripttest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env := &Env{Session: s, Counter: NewCounter(assemble.BytesTokenizer{}), Calibration: identity, TTL: 5 * time.Minute, Window: 200000}
	m := &ClaudeCodeManaged{}
	if err := m.Begin(ctx, env); err != nil {
		t.Fatal(err)
	}
	// The proxy's code, as the proxy calls it: a hooks.Spill names the
	// files as the stand-in does.
	proxy := ccmanaged.Config{Spill: spillStandIn{root: ManagedSpillRoot}}
	var state []byte
	collapsed, rebases := 0, 0
	for _, c := range calls(s) {
		step, err := m.Step(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if errs := apicheck.Check(m.asked); len(errs) > 0 {
			t.Fatalf("call %d: the rebuilt request breaks a Messages API rule: %v", c.N, errs)
		}
		out, ns, err := proxy.Manage(s.ID, state, m.asked, c.Time, env.TTL)
		if err != nil {
			t.Fatalf("call %d: Manage: %v", c.N, err)
		}
		state = ns
		if !bytes.Equal(out, m.sent) {
			t.Fatalf("call %d: the strategy's body differs from Manage's", c.N)
		}
		if strings.HasPrefix(step.Reason, "rebase: ") {
			rebases++
		}
		// Each tool output: hidden exactly when the body does not send it
		// whole, and priced as sent.
		sent := toolResults(t, m.sent)
		for _, msg := range c.Messages {
			if msg.Role != conversation.RoleToolResult {
				continue
			}
			got, ok := sent[msg.ToolCallID]
			if !ok {
				t.Fatalf("call %d: output %s not sent", c.N, msg.ToolCallID)
			}
			whole := got == msg.Output
			if step.Hidden(msg.ToolCallID) == whole || step.Reachable(msg.ToolCallID) == whole {
				t.Fatalf("call %d: output %s sent whole %v, hidden %v", c.N, msg.ToolCallID, whole, step.Hidden(msg.ToolCallID))
			}
			if !whole {
				if !strings.Contains(got, ManagedSpillRoot+"/"+s.ID+"/") {
					t.Fatalf("call %d: output %s shown as %q, naming no spill file", c.N, msg.ToolCallID, got)
				}
				if !bytes.Contains(step.Bytes, []byte(got)) || bytes.Contains(step.Bytes, []byte(msg.Output)) {
					t.Fatalf("call %d: output %s not priced as shown", c.N, msg.ToolCallID)
				}
				collapsed++
			}
		}
		if len(step.Breakpoints) < 2 || step.Breakpoints[0] != len(EmptyHead) || step.Breakpoints[len(step.Breakpoints)-1] != len(step.Bytes) {
			t.Fatalf("call %d: breakpoints %v of %d bytes", c.N, step.Breakpoints, len(step.Bytes))
		}
	}
	if _, err := m.End(ctx); err != nil {
		t.Fatal(err)
	}
	if collapsed == 0 || rebases == 0 {
		t.Fatalf("%d outputs shown collapsed over the calls, %d rebases: nothing managed", collapsed, rebases)
	}

	rep, err := Run(ctx, s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}, &ClaudeCodeManaged{}}})
	if err != nil {
		t.Fatal(err)
	}
	naive, managed := rep.Results[0].Totals, rep.Results[1].Totals
	if managed.Cost >= naive.Cost || managed.History >= naive.History || managed.Checked == 0 {
		t.Fatalf("managed %+v, naive %+v", managed, naive)
	}
}

// toolResults returns each tool_result's content of a request body, as
// text, by tool_use id.
func toolResults(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content"`
		}
		if len(m.Content) > 0 && m.Content[0] == '[' {
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out[b.ToolUseID] = b.Content
			}
		}
	}
	return out
}

// TestClaudeCodeManagedDeclines: a session of another harness declines
// the strategy, and the report says why.
func TestClaudeCodeManagedDeclines(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &transcript.Session{Format: transcript.FormatPi, ID: "pi-1", Messages: []conversation.Message{
		{Role: conversation.RoleUser, Text: "hello", Time: t0},
		{Role: conversation.RoleAssistant, Text: "hi", Time: t0.Add(time.Second)},
	}}
	rep, err := Run(context.Background(), s, Options{Tokenizer: assemble.BytesTokenizer{}, Dir: t.TempDir(), Strategies: []Strategy{&Naive{}, &ClaudeCodeManaged{}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || len(rep.Declined) != 1 || rep.Declined[0].Strategy != "claude_code_managed" || !strings.Contains(rep.Declined[0].Reason, "not applicable") {
		t.Fatalf("results %d, declined %+v", len(rep.Results), rep.Declined)
	}
}
