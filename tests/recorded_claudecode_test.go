package tests

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestClaudeCodeRecordedCalls runs the real Claude Code CLI (print mode,
// offline) through `ctxstore claude-code proxy` to the scripted Messages
// endpoint, which answers each agent request with a usage of its own and,
// for the last, a cache miss reason; then imports what Claude Code wrote.
// `calls` lists one call per agent request with the usage the endpoint
// reported (1-hour writes apart), and says why the cache broke: nothing
// on the call that read the previous request, the reported reason on the
// last.
func TestClaudeCodeRecordedCalls(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	dir := t.TempDir()
	var mu sync.Mutex
	agent := 0
	m := startScriptedMessages(t, nil, filepath.Join(dir, "requests.jsonl"), func(messagesRequest) piStep { return piStep{Text: "Done."} })
	m.usage = func(req messagesRequest) (map[string]any, map[string]any) {
		if len(req.Tools) == 0 || req.MaxTokens == 1 {
			return nil, nil // a side request (a title), or the proxy's warm request
		}
		mu.Lock()
		agent++
		k := agent
		mu.Unlock()
		model := map[string]any{"model": "claude-sonnet-4-5"}
		switch k {
		case 1:
			return map[string]any{"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 4000,
				"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 4000}}, model
		case 2:
			return map[string]any{"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 4010, "cache_creation_input_tokens": 100,
				"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100}}, model
		default:
			model["diagnostics"] = map[string]any{"cache_miss_reason": "tools_changed"}
			return map[string]any{"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 4300,
				"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 4300, "ephemeral_1h_input_tokens": 0}}, model
		}
	}
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	px := startCCProxy(t, m.srv.URL)
	claude := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append(args, "--output-format", "json")...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+px.url, "ANTHROPIC_API_KEY=sk-ant-offline-test",
			"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
		var res struct {
			Result    string `json:"result"`
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.Result != "Done." {
			t.Fatalf("claude's output %q: %v", out, err)
		}
		return res.SessionID
	}
	sid := claude("-p", "Say done.")
	claude("-p", "--resume", sid, "Again.")
	claude("-p", "--resume", sid, "Once more.")
	px.stop(t)

	c := newCLI(t)
	db := c.path("s.db")
	if r := c.run("", "--store", db, "import", filepath.Join(home, ".claude", "projects")); r.code != 0 {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var calls []struct {
		N     int    `json:"call"`
		Model string `json:"model"`
		Usage *struct {
			Input        int64 `json:"input"`
			CacheRead    int64 `json:"cache_read"`
			CacheWrite5m int64 `json:"cache_write_5m"`
			CacheWrite1h int64 `json:"cache_write_1h"`
		} `json:"usage"`
		CostUSD float64 `json:"cost_usd"`
		Break   struct {
			Cause  string `json:"cause"`
			Reason string `json:"reason"`
		} `json:"break"`
	}
	out := c.ok("", "--store", db, "--json", "calls", sid)
	if err := json.Unmarshal([]byte(out), &calls); err != nil {
		t.Fatalf("calls --json: %v\n%s", err, out)
	}
	mu.Lock()
	n := agent
	mu.Unlock()
	if n != 3 || len(calls) != n {
		t.Fatalf("%d calls recorded, %d agent requests (want 3):\n%s", len(calls), n, out)
	}
	first, second, last := calls[0], calls[1], calls[2]
	if u := first.Usage; u == nil || u.CacheWrite1h != 4000 || u.CacheWrite5m != 0 || first.Break.Cause != "first" || first.Model != "claude-sonnet-4-5" || first.CostUSD <= 0 {
		t.Errorf("call 1: %+v (usage %+v)", first, first.Usage)
	}
	if u := second.Usage; u == nil || u.CacheRead != 4010 || second.Break.Cause != "none" {
		t.Errorf("call 2: %+v (usage %+v)", second, second.Usage)
	}
	if u := last.Usage; u == nil || u.CacheWrite5m != 4300 || last.Break.Cause != "tools" || last.Break.Reason != "tools_changed" {
		t.Errorf("call 3: %+v (usage %+v)", last, last.Usage)
	}
}
