package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// claudeCodeVersion is the Claude Code CLI the MCP test runs
// (@anthropic-ai/claude-code from the npm registry, a native binary).
const claudeCodeVersion = "2.1.332"

// claudeCLI returns the claude executable, installed by npmTool into the
// cache's claude-code-<version>.
func claudeCLI(t testing.TB) string {
	t.Helper()
	dir := npmTool(t, "claude-code-"+claudeCodeVersion, "@anthropic-ai/claude-code@"+claudeCodeVersion)
	return filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
}

// TestClaudeCodeMCP runs the real Claude Code CLI (print mode), offline
// against the scripted Messages endpoint, with `ctxstore mcp` configured
// by --mcp-config: Claude Code starts the server, offers its tools to the
// model, the model calls list_sessions, and the result that reaches the
// model is ctxstore's answer about the store's real session.
func TestClaudeCodeMCP(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	f := newMCPFixture(t)
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	const tool, callID, searchID = "mcp__ctxstore__list_sessions", "toolu_ctx_1", "toolu_search_1"
	m := &scriptedMessages{t: t, log: log, respond: func(req messagesRequest) piStep {
		offered := slices.ContainsFunc(req.Tools, func(x struct {
			Name         string          `json:"name"`
			CacheControl json.RawMessage `json:"cache_control"`
		}) bool {
			return x.Name == tool
		})
		if n := len(req.Messages); n > 0 {
			bs, _ := messagesBlocks(req.Messages[n-1].Content)
			for _, b := range bs {
				if b.Type == "tool_result" && b.ToolUseID == callID {
					return piStep{Text: "Done: the store has its sessions listed."}
				}
			}
		}
		if offered {
			return piStep{Tool: tool, Args: map[string]any{}, ID: callID}
		}
		// Claude Code defers MCP tools: it lists their names and loads a
		// tool's schema when the model selects it with ToolSearch.
		b, _ := json.Marshal(req.Messages)
		if strings.Contains(string(b), tool) && !strings.Contains(string(b), searchID) {
			return piStep{Tool: "ToolSearch", Args: map[string]any{"query": "select:" + tool}, ID: searchID}
		}
		return piStep{Text: "ok"}
	}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	defer m.srv.Close()

	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"ctxstore": map[string]any{
		"command": ctxstoreBin, "args": []string{"--store", f.store, "mcp"}}}})
	cfgFile := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "-p", "List the ctxstore sessions.", "--mcp-config", cfgFile, "--strict-mcp-config",
		"--allowedTools", tool, "--output-format", "json")
	cmd.Dir = dir
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+m.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=")
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	if err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	var res struct {
		Result  string `json:"result"`
		IsError bool   `json:"is_error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.IsError || !strings.Contains(res.Result, "Done") {
		t.Errorf("claude's answer: %v %s", err, out)
	}

	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var offered, answered bool
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var req messagesRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		for _, x := range req.Tools {
			offered = offered || x.Name == tool
		}
		for _, msg := range req.Messages {
			bs, _ := messagesBlocks(msg.Content)
			for _, b := range bs {
				if b.Type == "tool_result" && b.ToolUseID == callID {
					text := string(b.Content)
					if b.IsError || !strings.Contains(text, f.sid) || !strings.Contains(text, "Read a.txt please.") {
						t.Errorf("the list_sessions result Claude Code sent the model: %.600s", text)
					}
					answered = true
				}
			}
		}
	}
	if !offered || !answered {
		t.Errorf("Claude Code offered ctxstore's tool: %v; sent its result: %v (%d requests)", offered, answered, strings.Count(string(raw), "\n"))
	}
	f.srv.Stop()
}
