package tests

import (
	"bytes"
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

// opencodeVersion is the opencode CLI the tests run (opencode-ai; its
// binary comes in the platform package opencode-linux-x64, which npm
// installs with it).
const opencodeVersion = "1.18.33"

// opencodeCLI returns the opencode launcher (opencode-ai opencodeVersion,
// installed by npmTool into the cache's opencode-<version> on first use).
func opencodeCLI(t testing.TB) string {
	t.Helper()
	dir := npmTool(t, "opencode-"+opencodeVersion, "opencode-ai@"+opencodeVersion)
	return filepath.Join(dir, "node_modules", ".bin", "opencode")
}

// opencodeConfig writes dir/opencode.json: one provider, "scripted",
// speaking Anthropic's Messages API at endpoint (opencode's bundled
// @ai-sdk/anthropic with a baseURL), its model the default, sharing and
// updates off.
func opencodeConfig(t testing.TB, dir, endpoint string) {
	t.Helper()
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"scripted": map[string]any{
			"npm": "@ai-sdk/anthropic", "name": "Scripted",
			"options": map[string]any{"baseURL": endpoint + "/v1", "apiKey": "offline-test"},
			// Images in: opencode sends a prompt's attached image only to a
			// model that takes them (otherwise an error text in its place).
			"models": map[string]any{"scripted-1": map[string]any{"name": "Scripted 1", "limit": map[string]any{"context": 200000, "output": 8000},
				"attachment": true, "modalities": map[string]any{"input": []string{"text", "image"}, "output": []string{"text"}}}},
		}},
		"model": "scripted/scripted-1", "small_model": "scripted/scripted-1",
		"autoupdate": false, "share": "disabled",
		// No git snapshot of the folder at each step, no language servers
		// or formatters: nothing the test reads, and each costs seconds.
		"snapshot": false, "lsp": false, "formatter": false,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// opencodeEnv is the environment opencode runs in: HOME home (its
// database is then home/.local/share/opencode/opencode.db), no XDG
// folders of the user, nothing fetched from the network.
func opencodeEnv(home string) []string {
	return append(xhEnvWithout("PWD", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "OPENCODE_CONFIG", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
		"HOME="+home, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "CTXSTORE_SERVICE_URL=")
}

// opencodeDB is opencode's database under home.
func opencodeDB(home string) string {
	return filepath.Join(home, ".local", "share", "opencode", "opencode.db")
}

// runOpencode runs `opencode run ARGS...` in dir with HOME home and
// returns what it printed.
func runOpencode(t *testing.T, dir, home string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, opencodeCLI(t), append([]string{"run"}, args...)...)
	cmd.Dir = dir
	// opencode takes its directory from PWD when set (seen: it read the
	// test process's folder's configuration instead of dir's).
	cmd.Env = append(opencodeEnv(home), "PWD="+dir)
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opencode run %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	t.Logf("opencode run %s: %s", args[len(args)-1], time.Since(start).Round(time.Millisecond))
	return string(out) + stderr.String()
}

// ocScript is xhScript for opencode, which also asks its small model for
// a session title (a request without tools): that request gets a title.
func ocScript(legs map[string][]piStep) func(messagesRequest) piStep {
	next := xhScript(legs)
	return func(req messagesRequest) piStep {
		if len(req.Tools) == 0 {
			return piStep{Text: "A title"}
		}
		return next(req)
	}
}

// ocImport runs `ctxstore import DB --json` on opencode's database and
// returns its sessions' summaries by id and the file's status.
func ocImport(t *testing.T, c *cli, storeURL, db string) (map[string]map[string]any, string) {
	t.Helper()
	r := c.run("", "--store", storeURL, "--json", "import", db)
	if r.code != 0 {
		t.Fatalf("import %s: exit %d\n%s\n%s", db, r.code, r.stdout, r.stderr)
	}
	var res struct {
		Files []struct {
			Status   string           `json:"status"`
			Format   string           `json:"format"`
			Problems []any            `json:"problems"`
			Sessions []map[string]any `json:"sessions"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Files) != 1 {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	f := res.Files[0]
	if f.Format != "opencode-v1" || len(f.Problems) != 0 {
		t.Fatalf("import of opencode's database: %s", r.stdout)
	}
	out := map[string]map[string]any{}
	for _, s := range f.Sessions {
		out[fmt.Sprint(s["session"])] = s
	}
	return out, f.Status
}

// rawRequests are the logged requests (JSON lines) of a scripted
// endpoint that hold marker, as sent.
func rawRequests(t *testing.T, log, marker string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, marker) {
			out = append(out, l)
		}
	}
	return out
}

// imageInToolResult reports whether a logged Messages API request holds a
// tool_result of call id with a base64 image block whose data is data.
func imageInToolResult(t *testing.T, req, id, data string) bool {
	t.Helper()
	var r messagesRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Messages {
		bs, _ := messagesBlocks(m.Content)
		for _, b := range bs {
			if b.Type != "tool_result" || b.ToolUseID != id {
				continue
			}
			var inner []struct {
				Type   string `json:"type"`
				Source struct {
					Type string `json:"type"`
					Data string `json:"data"`
				} `json:"source"`
			}
			_ = json.Unmarshal(b.Content, &inner)
			for _, x := range inner {
				if x.Type == "image" && x.Source.Type == "base64" && x.Source.Data == data {
					return true
				}
			}
		}
	}
	return false
}
