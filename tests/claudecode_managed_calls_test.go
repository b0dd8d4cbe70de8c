package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeManagedCalls runs the real Claude Code CLI (print mode,
// offline) through `ctxstore claude-code run`, managed mode on, against
// the scripted endpoint of TestClaudeCodeManaged; then `ctxstore calls` of
// the session in run's store (the hooks' import of the transcript beside
// the proxy's records) pairs every recorded call with a managed call, and
// `call N --raw` of each prints exactly the request the endpoint received
// for it, `--raw --asked` what Claude Code asked to send (its outputs
// whole where the model got them collapsed).
func TestClaudeCodeManagedCalls(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	home, work := t.TempDir(), t.TempDir()
	spillDir := filepath.Join(home, ".ctxstore", "spill")
	var spillFile string
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	m := startScriptedMessages(t, nil, log, managedScript(spillDir, &spillFile))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctxstoreBin, "claude-code", "run", "--claude", cli, "--cache-ttl", "2s", "--warm", "off",
		"--", "-p", "Count, again and again.", "--allowedTools", "Bash", "--output-format", "json")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+m.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CTXSTORE_CLAUDE_CODE_UPSTREAM=",
		"CTXSTORE_URL=", "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=", "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude-code run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["result"] != "Done." {
		t.Fatalf("claude's output %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	sid, _ := res["session_id"].(string)
	var agents []map[string]json.RawMessage
	for _, r := range readRequestLog(t, log) {
		if r.agent {
			agents = append(agents, r.raw)
		}
	}

	db := filepath.Join(home, ".ctxstore", "store.db")
	ctxstore := func(args ...string) []byte {
		t.Helper()
		c := exec.Command(ctxstoreBin, append([]string{"--store", db}, args...)...)
		c.Env = append(os.Environ(), "HOME="+home)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("ctxstore %v: %v\n%s", args, err, out)
		}
		return out
	}
	var listed []struct {
		N       int `json:"call"`
		Managed *struct {
			N int `json:"n"`
		} `json:"managed"`
	}
	if err := json.Unmarshal(ctxstore("--json", "calls", sid), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(agents) {
		t.Fatalf("calls lists %d recorded calls, the endpoint answered %d agent requests", len(listed), len(agents))
	}
	collapsed := 0
	for _, c := range listed {
		if c.Managed == nil {
			t.Errorf("recorded call %d has no managed call", c.N)
			continue
		}
		// The managed calls are numbered in the order sent, as the
		// endpoint received them (TestClaudeCodeManaged).
		want, _ := json.Marshal(agents[c.Managed.N-1])
		var got any
		raw := ctxstore("call", sid, strconv.Itoa(c.N), "--raw")
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("call %d --raw: %v", c.N, err)
		}
		g, _ := json.Marshal(got)
		var w any
		json.Unmarshal(want, &w)
		w2, _ := json.Marshal(w)
		if !bytes.Equal(g, w2) {
			t.Errorf("call %d --raw is not the request the endpoint received for it (managed call %d)", c.N, c.Managed.N)
		}
		if c.Managed.N != c.N {
			t.Errorf("recorded call %d pairs with managed call %d", c.N, c.Managed.N)
		}
		if bytes.Contains(raw, []byte("[ctxstore] output collapsed")) {
			collapsed++
			if asked := ctxstore("call", sid, strconv.Itoa(c.N), "--raw", "--asked"); bytes.Contains(asked, []byte("[ctxstore] output collapsed")) {
				t.Errorf("call %d --raw --asked holds the collapsed line", c.N)
			}
			if text := string(ctxstore("call", sid, strconv.Itoa(c.N))); !strings.Contains(text, "tool results the model got otherwise") {
				t.Errorf("call %d does not list what the model got otherwise:\n%s", c.N, text)
			}
		}
	}
	if collapsed == 0 {
		t.Error("no call's request, as the model got it, holds a collapsed output")
	}
}
