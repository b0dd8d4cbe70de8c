package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeCacheBreakpoints runs the real Claude Code CLI (print
// mode, offline against the scripted Messages endpoint) through a tool
// loop of four Bash calls and reads where its requests put Anthropic's
// cache_control breakpoints: on the system prompt and on the last block of
// the last message, never on an earlier message, at most 4 in all. The
// replay's cache model places Claude Code's breakpoints so
// (replay.PlacementClaudeCode, docs/replay.md); this test fails when a new
// Claude Code places them otherwise.
func TestClaudeCodeCacheBreakpoints(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "requests.jsonl")
	n := 0
	respond := func(req messagesRequest) piStep {
		bash := false
		for _, x := range req.Tools {
			bash = bash || x.Name == "Bash"
		}
		if !bash {
			return piStep{Text: "ok"} // a side request (titles, ...)
		}
		b, _ := json.Marshal(req.Messages)
		if k := strings.Count(string(b), `"tool_result"`); k < 4 {
			n++
			return piStep{Tool: "Bash", Args: map[string]any{"command": fmt.Sprintf("echo step%d", k), "description": "echo"}, ID: fmt.Sprintf("toolu_%d", n)}
		}
		return piStep{Text: "Done."}
	}
	m := startScriptedMessages(t, nil, log, respond)
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "-p", "Run echo four times.", "--allowedTools", "Bash", "--output-format", "json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+m.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var req messagesRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		bash := false
		total := 0
		for _, x := range req.Tools {
			bash = bash || x.Name == "Bash"
			if len(x.CacheControl) > 0 {
				total++
			}
		}
		if !bash || len(req.Messages) == 0 {
			continue
		}
		sys, err := messagesBlocks(req.System)
		if err != nil {
			t.Fatalf("request %d: system: %v", i, err)
		}
		onSystem := 0
		for _, b := range sys {
			if len(b.CacheControl) > 0 {
				onSystem++
			}
		}
		total += onSystem
		for k, msg := range req.Messages {
			bs, err := messagesBlocks(msg.Content)
			if err != nil {
				t.Fatalf("request %d: message %d: %v", i, k, err)
			}
			for j, b := range bs {
				if len(b.CacheControl) == 0 {
					continue
				}
				total++
				if k != len(req.Messages)-1 || j != len(bs)-1 {
					t.Errorf("request %d: a breakpoint on block %d of message %d of %d", i, j, k, len(req.Messages))
				}
			}
			if k == len(req.Messages)-1 && (len(bs) == 0 || len(bs[len(bs)-1].CacheControl) == 0) {
				t.Errorf("request %d: no breakpoint on the last block of the last message", i)
			}
		}
		if onSystem == 0 || total > 4 {
			t.Errorf("request %d: %d breakpoints on the system prompt, %d in all", i, onSystem, total)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("%d tool-loop requests checked", checked)
	}
}
