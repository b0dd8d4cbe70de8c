package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/harness/importer"
	"github.com/ctxstore/ctxstore/internal/datasets"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
	"github.com/ctxstore/ctxstore/xtdb"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// Claude Code live capture (docs/claude-code.md):
// `ctxstore claude-code install` writes the hooks into a project, the real
// Claude Code CLI (claudeCLI, offline against the scripted Messages
// endpoint) runs a session with tool calls and a subagent, and the hooks
// checkpoint it into the store while it runs.

// ccLive is one project with ctxstore's hooks installed.
type ccLive struct {
	t       *testing.T
	dir     string // the project (Claude Code's cwd)
	home    string // HOME: Claude Code's ~/.claude, the hook's state
	store   string // the SQLite store's path, or the XTDB node's URL
	cli     string
	model   *scriptedMessages
	mu      sync.Mutex
	checked map[string]string // what the scripted model found in the store mid-session
	// noChecks: the script does not look into the store.
	noChecks bool
}

// newCCLive installs the hooks into a new project, for the store at
// storeRef (an XTDB URL; "": a new SQLite store).
func newCCLive(t *testing.T, storeRef string, installArgs ...string) *ccLive {
	t.Helper()
	e := &ccLive{t: t, cli: claudeCLI(t), dir: filepath.Join(t.TempDir(), "proj"), home: t.TempDir(), checked: map[string]string{}}
	e.store = storeRef
	if e.store == "" {
		e.store = filepath.Join(t.TempDir(), "store.db")
	}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--store", storeArg(e.store), "claude-code", "install", "--project", e.dir}, installArgs...)
	out, err := exec.Command(ctxstoreBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("claude-code install: %v\n%s", err, out)
	}
	return e
}

// claude runs `claude -p prompt` in the project (stream-json output, the
// hooks' messages included) and returns the output's lines.
func (e *ccLive) claude(prompt string, extra ...string) []map[string]any {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-p", prompt, "--allowedTools", "Bash", "Agent", "--output-format", "stream-json", "--verbose"}, extra...)
	cmd := exec.CommandContext(ctx, e.cli, args...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "HOME="+e.home, "ANTHROPIC_BASE_URL="+e.model.srv.URL, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"CTXSTORE_URL=", "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=", "CTXSTORE_HOOK_REPORT=1", "XDG_CACHE_HOME="+filepath.Join(e.home, ".cache"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("claude: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			e.t.Fatalf("claude's output line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// transcripts returns the session's transcript and its subagents'.
func (e *ccLive) transcripts(session string) (string, []string) {
	e.t.Helper()
	main, err := filepath.Glob(filepath.Join(e.home, ".claude", "projects", "*", session+".jsonl"))
	if err != nil || len(main) != 1 {
		e.t.Fatalf("the transcript of %s: %v %v", session, main, err)
	}
	subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(main[0], ".jsonl"), "subagents", "agent-*.jsonl"))
	sort.Strings(subs)
	return main[0], subs
}

// fileChain is what a store holds of one transcript file: its import
// cursor and the file chain's commits, root first.
type fileChain struct {
	offset  int64
	commits []*commits.Commit
	content []byte // the deltas' contents concatenated (compaction commits repeat their delta's lines)
	parent  *commits.Commit
}

// storeArg is storeRef as a --store URL.
func storeArg(storeRef string) string {
	if strings.HasPrefix(storeRef, "http") {
		return storeRef
	}
	return "sqlite:" + storeRef
}

// readChain reads the file chain of path from the store at storeRef (a
// SQLite file's path or an XTDB URL).
func readChain(t testing.TB, storeRef, path string) (*fileChain, error) {
	ctx := context.Background()
	var st store.Store
	var err error
	if strings.HasPrefix(storeRef, "http") {
		st, err = xtdb.Open(ctx, storeRef, xtdb.Options{})
	} else {
		st, err = bitemporal.Open(ctx, storeRef, bitemporal.Options{})
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return readChainIn(ctx, st, path)
}

func readChainIn(ctx context.Context, st store.Store, path string) (*fileChain, error) {
	d, err := st.Entity(ctx, importer.CursorID(path), store.Basis{})
	if err != nil {
		return nil, err
	}
	fc := &fileChain{}
	off, _ := d["offset"].(json.Number).Int64()
	if n, ok := d["offset"].(float64); ok {
		off = int64(n)
	}
	fc.offset = off
	tip, _ := d["tip"].(string)
	root, _ := d["root"].(string)
	svc := commits.New(st, commits.Options{})
	hist, err := svc.History(ctx, tip, 0)
	if err != nil {
		return nil, err
	}
	for i, c := range hist {
		fc.commits = append(fc.commits, c)
		if c.ID == root {
			if i+1 < len(hist) {
				fc.parent = hist[i+1]
			}
			break
		}
	}
	slices.Reverse(fc.commits)
	for _, c := range fc.commits {
		if c.Type == commits.Compaction {
			continue
		}
		b, err := svc.Content(ctx, c)
		if err != nil {
			return nil, err
		}
		fc.content = append(fc.content, b...)
	}
	return fc, nil
}

// chainHolds says whether the store's chain of path holds a line with s.
func (e *ccLive) chainHolds(path, s string) string {
	fc, err := readChain(e.t, e.store, path)
	if err != nil {
		return "store: " + err.Error()
	}
	if !bytes.Contains(fc.content, []byte(s)) {
		return fmt.Sprintf("the chain of %s does not hold %s (%d commits, %d bytes)", filepath.Base(path), s, len(fc.commits), fc.offset)
	}
	return "ok"
}

// ccScript is the scripted model of the live tests: the main agent runs
// Bash, then starts a subagent (Agent), then answers; the subagent runs
// Bash and answers. At the request that follows each Bash result it
// checks that the hooks already put that result into the store.
func (e *ccLive) ccScript(req messagesRequest) piStep {
	first, _ := json.Marshal(req.Messages[0])
	sub := strings.Contains(string(first), "SUBTASK") && !strings.Contains(string(first), "MAIN PROMPT")
	main := strings.Contains(string(first), "MAIN PROMPT")
	var results []string
	for _, m := range req.Messages {
		bs, _ := messagesBlocks(m.Content)
		for _, b := range bs {
			if b.Type == "tool_result" {
				results = append(results, b.ToolUseID)
			}
		}
	}
	has := func(id string) bool { return slices.Contains(results, id) }
	// check waits (up to ten seconds) until the store holds s in the chain
	// of the transcript: hooks Claude Code runs beside its own work (an
	// async subagent's, SubagentStop) may finish just after the request
	// that follows them. The wait is logged; the session is still running.
	check := func(key, transcriptGlob, s string) {
		e.mu.Lock()
		_, done := e.checked[key]
		e.mu.Unlock()
		if done || e.noChecks {
			return
		}
		start := time.Now()
		got := ""
		for time.Since(start) < 10*time.Second {
			files, _ := filepath.Glob(filepath.Join(e.home, ".claude", "projects", "*", transcriptGlob))
			if len(files) != 1 {
				got = "no transcript " + transcriptGlob
			} else if got = e.chainHolds(files[0], s); got == "ok" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		e.mu.Lock()
		e.checked[key] = got
		e.mu.Unlock()
		e.t.Logf("mid-session, %s: %s after %v", key, got, time.Since(start).Round(time.Millisecond))
	}
	all, _ := json.Marshal(req.Messages)
	last, _ := json.Marshal(req.Messages[len(req.Messages)-1])
	switch {
	case strings.Contains(string(last), "Respond with TEXT ONLY"):
		// Claude Code's compaction asks for a summary: PreCompact ran,
		// the conversation up to /compact is in the store.
		check("before compaction", "*.jsonl", `"content":"/compact"`)
		return piStep{Text: "SUMMARY: echo ran in the main agent and in a subagent."}
	case sub && !has("toolu_sub_bash"):
		return piStep{Tool: "Bash", Args: map[string]any{"command": "echo from-the-subagent", "description": "echo"}, ID: "toolu_sub_bash"}
	case sub:
		// The subagent's PostToolUse ran: its tool call is in the store
		// (Claude Code writes the result's line after the hook).
		check("subagent tool call", "*/subagents/agent-*.jsonl", `"id":"toolu_sub_bash"`)
		return piStep{Text: "SUB DONE"}
	case main && !has("toolu_main_bash"):
		return piStep{Tool: "Bash", Args: map[string]any{"command": "echo from-the-main-agent", "description": "echo"}, ID: "toolu_main_bash"}
	case main && !has("toolu_main_agent"):
		check("main tool call", "*.jsonl", `"id":"toolu_main_bash"`)
		return piStep{Tool: "Agent", Args: map[string]any{"description": "sub job", "prompt": "SUBTASK: run echo", "subagent_type": "general-purpose"}, ID: "toolu_main_agent"}
	case main && strings.Contains(string(all), "task-notification"):
		// SubagentStop ran: the subagent's whole transcript is in.
		check("subagent result", "*/subagents/agent-*.jsonl", `"tool_use_id":"toolu_sub_bash"`)
		check("subagent answer", "*/subagents/agent-*.jsonl", `SUB DONE`)
		return piStep{Text: "MAIN DONE"}
	case main:
		// The Agent call's PostToolUse ran: the Bash result before it is in.
		check("main tool result", "*.jsonl", `"tool_use_id":"toolu_main_bash"`)
		check("main agent call", "*.jsonl", `"id":"toolu_main_agent"`)
		return piStep{Text: "MAIN DONE"}
	}
	return piStep{Text: "ok"}
}

// sessionOf returns the session id from claude's stream-json output.
func sessionOf(t *testing.T, lines []map[string]any) string {
	t.Helper()
	for _, l := range lines {
		if s, ok := l["session_id"].(string); ok && s != "" {
			return s
		}
	}
	t.Fatal("no session_id in claude's output")
	return ""
}

// ctxstoreNotices returns the hook messages Claude Code showed the user
// about ctxstore (stream-json "informational" system lines).
func ctxstoreNotices(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		if c, _ := l["content"].(string); l["type"] == "system" && strings.Contains(c, "ctxstore is") {
			out = append(out, c)
		}
	}
	return out
}

// TestClaudeCodeLiveCapture: a Claude Code session with tool calls and a
// subagent, then /compact, captured by the installed hooks while it runs
// (the scripted model finds each tool call and result, the subagent's, and
// the conversation before the compaction in the store at its next request;
// hooks Claude Code runs beside its own work may land a few milliseconds
// after it, so it polls), the MCP server connected; afterwards the store's file chains hold exactly the
// transcripts' bytes, and an import of the finished transcripts into a
// fresh store gives the same content, compactions and subagent fork
// points. Then install is undone.
func TestClaudeCodeLiveCapture(t *testing.T) {
	t.Parallel()
	ccLiveCapture(t, "")
}

// TestClaudeCodeLiveCaptureXTDB is TestClaudeCodeLiveCapture with the hooks
// importing into a real XTDB node.
func TestClaudeCodeLiveCaptureXTDB(t *testing.T) {
	t.Parallel()
	ccLiveCapture(t, xtdbtest.ForTest(t))
}

func ccLiveCapture(t *testing.T, storeRef string) {
	e := newCCLive(t, storeRef)
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), e.ccScript)
	lines := e.claude("MAIN PROMPT: run echo, then a subagent.")
	session := sessionOf(t, lines)
	lines = append(lines, e.claude("/compact", "--resume", session)...)
	if logs, _ := filepath.Glob(filepath.Join(e.home, ".cache", "ctxstore", "claude-code", "*")); len(logs) > 0 {
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("hook state %s: %s", filepath.Base(l), b)
		}
	}
	defer func() {
		if t.Failed() {
			mainT, subs := e.transcripts(session)
			for _, p := range append([]string{mainT}, subs...) {
				b, _ := os.ReadFile(p)
				for _, l := range bytes.Split(b, []byte("\n")) {
					if bytes.Contains(l, []byte(`"hookName"`)) {
						t.Logf("%s: %.900s", filepath.Base(p), l)
					}
				}
			}
		}
	}()
	for _, key := range []string{"main tool call", "main tool result", "main agent call", "subagent tool call", "subagent result", "subagent answer", "before compaction"} {
		if got := e.checked[key]; got != "ok" {
			t.Errorf("mid-session, %s: %q", key, got)
		}
	}
	if n := ctxstoreNotices(lines); len(n) != 0 {
		t.Errorf("ctxstore told the user %q", n)
	}
	var mcpOK bool
	for _, l := range lines {
		if l["subtype"] == "init" {
			servers, _ := l["mcp_servers"].([]any)
			for _, sv := range servers {
				m, _ := sv.(map[string]any)
				mcpOK = mcpOK || m["name"] == "ctxstore" && m["status"] == "connected"
			}
		}
	}
	if !mcpOK {
		for _, l := range lines {
			if l["subtype"] == "init" {
				t.Logf("init: %v", l["mcp_servers"])
			}
		}
		t.Error("the ctxstore MCP server is not connected in the session")
	}

	mainT, subs := e.transcripts(session)
	if len(subs) != 1 {
		t.Fatalf("subagent transcripts %v, want 1", subs)
	}
	live := map[string]*fileChain{}
	for _, p := range append([]string{mainT}, subs...) {
		fc, err := readChain(t, e.store, p)
		if err != nil {
			t.Fatalf("live store, %s: %v", filepath.Base(p), err)
		}
		b, _ := os.ReadFile(p)
		if !bytes.Equal(fc.content, b) || fc.offset != int64(len(b)) {
			t.Errorf("live store, %s: the chain holds %d bytes (cursor at %d), the transcript %d; equal: %v",
				filepath.Base(p), len(fc.content), fc.offset, len(b), bytes.Equal(fc.content, b))
		}
		live[p] = fc
	}
	if n := compactions(live[mainT]); n != 1 {
		t.Errorf("the live chain holds %d compaction commits, want 1 (/compact)", n)
	}

	// An import of the finished transcripts into a fresh store.
	ctx := context.Background()
	after, err := bitemporal.Open(ctx, filepath.Join(t.TempDir(), "after.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if _, err := importer.New(after, importer.Options{As: importer.ClaudeCode}).Import(ctx, filepath.Dir(mainT)); err != nil {
		t.Fatal(err)
	}
	for _, p := range append([]string{mainT}, subs...) {
		fc, err := readChainIn(ctx, after, p)
		if err != nil {
			t.Fatalf("imported afterwards, %s: %v", filepath.Base(p), err)
		}
		l := live[p]
		if !bytes.Equal(fc.content, l.content) {
			t.Errorf("%s: live and imported-afterwards chains hold different bytes", filepath.Base(p))
		}
		if compactions(fc) != compactions(l) {
			t.Errorf("%s: %d compaction commits live, %d imported afterwards", filepath.Base(p), compactions(l), compactions(fc))
		}
		if (fc.parent == nil) != (l.parent == nil) {
			t.Errorf("%s: forked live %v, imported afterwards %v", filepath.Base(p), l.parent != nil, fc.parent != nil)
		}
		if fc.parent != nil && l.parent != nil {
			// Both fork from the main chain's commit holding the Agent call.
			mb, _ := os.ReadFile(mainT)
			at := int64(bytes.Index(mb, []byte(`"id":"toolu_main_agent"`)))
			for name, p := range map[string]*commits.Commit{"live": l.parent, "afterwards": fc.parent} {
				if at < p.SourceStart || at >= p.SourceEnd {
					t.Errorf("%s: the %s fork point holds bytes %d-%d of the transcript, not the Agent call at %d", filepath.Base(p.Source), name, p.SourceStart, p.SourceEnd, at)
				}
			}
		}
		t.Logf("%s: %d commits live (checkpointed at hooks), %d imported afterwards, %d bytes", filepath.Base(p), len(l.commits), len(fc.commits), len(fc.content))
	}

	// The recorded session is readable through the MCP server install
	// configured, by commit id (its session id is not: the MCP server's
	// sessions are the ones ctxstore manages; docs/claude-code.md).
	{
		cmd := exec.Command(ctxstoreBin, "--store", storeArg(e.store), "mcp")
		cmd.Env = append(os.Environ(), "CTXSTORE_TOKEN=", "CTXSTORE_SERVICE_URL=")
		client := sdk.NewClient(&sdk.Implementation{Name: "ctxstore-test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tip := live[mainT].commits[len(live[mainT].commits)-1]
		var shown struct {
			ID      string `json:"id"`
			Session string `json:"session"`
		}
		if msg := call(t, cs, "commit_show", map[string]any{"id": tip.ID}, &shown); msg != "" || shown.ID != tip.ID || shown.Session != session {
			t.Errorf("MCP commit_show of the session's tip %s: %s %+v", tip.ID, msg, shown)
		}
		cs.Close()
	}

	out, err := exec.Command(ctxstoreBin, "claude-code", "uninstall", "--project", e.dir).CombinedOutput()
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for _, f := range []string{filepath.Join(e.dir, ".claude", "settings.json"), filepath.Join(e.dir, ".mcp.json")} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
}

func compactions(fc *fileChain) int {
	n := 0
	for _, c := range fc.commits {
		if c.Type == commits.Compaction {
			n++
		}
	}
	return n
}

// TestClaudeCodeHookStoreLocked: while another process holds the store's
// write lock, every hook fails (within its one-second timeout); Claude
// Code finishes the session as usual, the user is told once (one
// hook_system_message in the transcript, shown in the output), the
// model is never sent it. Once the lock is gone the next session turn's
// hooks catch up: the store holds the whole transcript, and the user is
// told once that recording resumed.
func TestClaudeCodeHookStoreLocked(t *testing.T) {
	t.Parallel()
	e := newCCLive(t, "", "--hook-timeout", "1s")
	e.noChecks = true
	reqLog := filepath.Join(t.TempDir(), "requests.jsonl")
	e.model = startScriptedMessages(t, nil, reqLog, e.ccScript)

	db, err := sql.Open("sqlite", e.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	lines := e.claude("MAIN PROMPT: run echo, then a subagent.")
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	session := sessionOf(t, lines)
	var result string
	for _, l := range lines {
		if l["type"] == "result" {
			result, _ = l["result"].(string)
		}
	}
	if result != "MAIN DONE" {
		t.Errorf("the session's result %q, want MAIN DONE (the hooks must not break it)", result)
	}
	// The first hook that fails tells the user; with every hook giving
	// up within its timeout that is SessionStart's, which stream-json
	// reports only as the hook's output (the transcript check below
	// counts the notices the user was shown).
	shown := 0
	for _, l := range lines {
		if b, _ := json.Marshal(l); bytes.Contains(b, []byte("ctxstore is not recording this session")) {
			shown++
		}
	}
	if shown == 0 {
		t.Errorf("no line of Claude Code's output shows the failure notice")
	}
	mainT, lockedSubs := e.transcripts(session)
	tb, _ := os.ReadFile(mainT)
	// Once in the session: the subagent's hooks failed too, and said nothing.
	notified := 0
	for _, p := range append([]string{mainT}, lockedSubs...) {
		b, _ := os.ReadFile(p)
		notified += bytes.Count(b, []byte(`"type":"hook_system_message","content":"ctxstore is not recording`))
	}
	if notified != 1 || len(lockedSubs) != 1 {
		t.Errorf("the transcripts (main and %d subagents) hold %d ctxstore notices, want 1", len(lockedSubs), notified)
	}
	if bytes.Contains(tb, []byte(`"hook_blocking_error"`)) {
		t.Error("a ctxstore hook was a blocking error")
	}
	if reqs, _ := os.ReadFile(reqLog); bytes.Contains(reqs, []byte("ctxstore is not recording")) {
		t.Error("the notice reached the model")
	}
	if _, err := readChain(t, e.store, mainT); err == nil {
		t.Error("the locked store holds the session")
	}

	// The lock is gone: the next turn's hooks catch up.
	e.claude("MAIN PROMPT: again.", "--resume", session)
	// Claude Code shows a hook's systemMessage and records it in the
	// transcript as a hook_system_message attachment (SessionStart's
	// included, which stream-json reports only as the hook's output).
	tb, _ = os.ReadFile(mainT)
	if n := bytes.Count(tb, []byte(`"type":"hook_system_message","content":"ctxstore is recording this session again`)); n != 1 {
		t.Errorf("the transcript holds %d notices that recording resumed, want 1", n)
	}
	if n := bytes.Count(tb, []byte(`"type":"hook_system_message","content":"ctxstore is not recording`)); n != 1 {
		t.Errorf("the transcript holds %d failure notices after the lock, want still 1", n)
	}
	if reqs, _ := os.ReadFile(reqLog); bytes.Contains(reqs, []byte("recording this session again")) {
		t.Error("the recovery notice (from SessionStart) reached the model")
	}
	mainT, subs := e.transcripts(session)
	for _, p := range append([]string{mainT}, subs...) {
		fc, err := readChain(t, e.store, p)
		b, _ := os.ReadFile(p)
		if err != nil || !bytes.Equal(fc.content, b) {
			t.Errorf("%s after the lock: %v (chain holds the transcript: %v)", filepath.Base(p), err, err == nil && bytes.Equal(fc.content, b))
		}
	}
}

// TestClaudeCodeHookExitCodes: the hook exits 0 whatever its input, prints
// JSON Claude Code reads (or nothing), and a command line it cannot parse
// exits 1, never 2 (Claude Code's blocking error).
func TestClaudeCodeHookExitCodes(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	for _, in := range []string{"", "{", `{"hook_event_name":"Stop","session_id":"s1","transcript_path":"/nonexistent/s1.jsonl"}`} {
		cmd := exec.Command(ctxstoreBin, "--store", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "claude-code", "hook", "--state-dir", state)
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("input %q: %v", in, err)
		}
		if len(out) > 0 {
			var o struct{ SystemMessage string }
			if err := json.Unmarshal(out, &o); err != nil || o.SystemMessage == "" {
				t.Errorf("input %q: stdout %q is not a hook answer", in, out)
			}
		}
	}
	cmd := exec.Command(ctxstoreBin, "claude-code", "hook", "--no-such-flag")
	cmd.Stdin = strings.NewReader("{}")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("hook with a bad flag: %v, want exit status 1", err)
	}
}

// hookVias returns, per hook run recorded in the transcript (Claude Code
// keeps a hook's stderr; CTXSTORE_HOOK_REPORT=1 makes the hook print its
// report there), where its checkpoint went.
func hookVias(t *testing.T, transcript string) []string {
	t.Helper()
	b, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	var vias []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Attachment struct {
				Type    string `json:"type"`
				Stderr  string `json:"stderr"`
				Command string `json:"command"`
			} `json:"attachment"`
		}
		if json.Unmarshal(l, &rec) != nil || !strings.Contains(rec.Attachment.Command, "claude-code hook") {
			continue
		}
		var rep struct {
			Result struct {
				Via string `json:"via"`
			} `json:"result"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(rec.Attachment.Stderr), &rep); err != nil {
			t.Errorf("hook report %q: %v", rec.Attachment.Stderr, err)
			continue
		}
		if rep.Error != "" {
			vias = append(vias, "error: "+rep.Error)
			continue
		}
		vias = append(vias, strings.Fields(rep.Result.Via + " ?")[0])
	}
	return vias
}

// TestClaudeCodeHookService: installed with --service, the hooks post each
// checkpoint to a running ctxstore serve (POST /v1/import, through the
// OpenAPI-checking proxy; the transcripts under its --root); with the
// service stopped, the next session turn's hooks import into the store
// themselves: nothing is lost and the user is told nothing.
func TestClaudeCodeHookService(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t) // first: under -short it skips before a server starts
	home := t.TempDir()
	projects := filepath.Join(home, ".claude", "projects")
	if err := os.MkdirAll(projects, 0o755); err != nil {
		t.Fatal(err)
	}
	storePath := filepath.Join(t.TempDir(), "store.db")
	srv := startServe(t, "sqlite:"+storePath, "--root", projects)
	e := &ccLive{t: t, cli: cli, dir: filepath.Join(t.TempDir(), "proj"), home: home, store: storePath, checked: map[string]string{}}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ctxstoreBin, "--store", "sqlite:"+storePath, "claude-code", "install", "--project", e.dir, "--service", srv.pxURL).CombinedOutput()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), e.ccScript)
	lines := e.claude("MAIN PROMPT: run echo, then a subagent.")
	session := sessionOf(t, lines)
	for _, key := range []string{"main tool call", "main tool result", "subagent tool call", "subagent answer"} {
		if got := e.checked[key]; got != "ok" {
			t.Errorf("mid-session, %s: %q", key, got)
		}
	}
	mainT, _ := e.transcripts(session)
	vias := hookVias(t, mainT)
	if len(vias) < 4 || slices.ContainsFunc(vias, func(v string) bool { return v != "service" }) {
		t.Errorf("with the service up, the hooks went to %q, want the service every time", vias)
	}
	srv.Stop()

	e.noChecks = true
	before := len(vias)
	lines = e.claude("MAIN PROMPT: again.", "--resume", session)
	if n := ctxstoreNotices(lines); len(n) != 0 {
		t.Errorf("with the service down ctxstore told the user %q", n)
	}
	vias = hookVias(t, mainT)[before:]
	if len(vias) < 2 || slices.ContainsFunc(vias, func(v string) bool { return v != "store" }) {
		t.Errorf("with the service down, the hooks went to %q, want the store every time", vias)
	}
	mainT, subs := e.transcripts(session)
	for _, p := range append([]string{mainT}, subs...) {
		fc, err := readChain(t, storePath, p)
		b, _ := os.ReadFile(p)
		if err != nil || !bytes.Equal(fc.content, b) {
			t.Errorf("%s: %v (the chain holds the transcript: %v)", filepath.Base(p), err, err == nil && bytes.Equal(fc.content, b))
		}
	}
}

// BenchmarkClaudeCodeHook measures what a ctxstore hook costs a Claude Code
// user per tool call (docs/benchmarks.md): the transcript of the dataset's
// largest Claude Code session (3.4 MB, 312 tool calls) grows as Claude Code
// writes it, and at each PostToolUse the hook process runs as Claude Code
// runs it: the transcript holds the tool call's line (and everything
// before it) but not yet its result, stdin is a PostToolUse input with the
// call's real tool_use_id and its recorded response, and the wall time is
// from start to exit (Claude Code waits for it before its next request).
// Modes, in the same run: "process" runs `ctxstore --version` (what
// starting the Go binary costs, the floor of any hook), "direct" the hook
// importing into a SQLite store itself, "serve" the hook posting to a
// running ctxstore serve on loopback (the server's own work is not in the
// hook process's CPU time). Reported: p50 and p99 per tool call in ms, of
// the wall time and of the hook process's CPU time (user and system), and
// how many hooks waited for their call's line (none should: a wait is the
// hook's 500 ms limit, not its work).
//
//	go test ./tests -run '^$' -bench BenchmarkClaudeCodeHook -benchtime 312x
func BenchmarkClaudeCodeHook(b *testing.B) {
	src := filepath.Join(datasets.Dir(b), "claude-code", "attio-mcp-server__1ff6f4ee__c7428042.jsonl")
	raw, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	// steps: the transcript cut before each line holding a tool result,
	// with that result's tool call id and recorded response.
	type step struct {
		lines    []byte
		id, tool string
		response json.RawMessage
	}
	// Each call's tool name, from its tool_use block.
	tools := map[string]string{}
	for _, m := range regexp.MustCompile(`"type":"tool_use","id":"([^"]+)","name":"([^"]+)"`).FindAllSubmatch(raw, -1) {
		tools[string(m[1])] = string(m[2])
	}
	var steps []step
	start := 0
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\n')
		if j < 0 {
			break
		}
		line := raw[i : i+j+1]
		if bytes.Contains(line, []byte(`"tool_result"`)) {
			var rec struct {
				Message struct {
					Content []struct {
						Type      string `json:"type"`
						ToolUseID string `json:"tool_use_id"`
					} `json:"content"`
				} `json:"message"`
				ToolUseResult json.RawMessage `json:"toolUseResult"`
			}
			if err := json.Unmarshal(line, &rec); err != nil {
				b.Fatal(err)
			}
			id := ""
			for _, c := range rec.Message.Content {
				if c.Type == "tool_result" {
					id = c.ToolUseID
					break
				}
			}
			if id == "" || !bytes.Contains(raw[:i], []byte(`"id":"`+id+`"`)) {
				b.Fatalf("tool result %q: its call's line is not before it", id)
			}
			steps = append(steps, step{raw[start:i], id, tools[id], rec.ToolUseResult})
			start = i
		}
		i += j + 1
	}
	for _, mode := range []string{"process", "direct", "serve"} {
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			projects := filepath.Join(dir, "projects")
			storePath := filepath.Join(dir, "store.db")
			state := filepath.Join(dir, "state")
			os.MkdirAll(projects, 0o755)
			// As install writes it: previews on.
			args := []string{"--store", "sqlite:" + storePath, "claude-code", "hook", "--state-dir", state, "--report",
				"--spill-dir", filepath.Join(dir, "spill")}
			if mode == "serve" {
				// Straight to the server, not through the test proxy.
				srv := startServe(b, "sqlite:"+storePath, "--root", projects, "--log-level", "warn")
				defer srv.stop(false)
				args = append(args, "--service", srv.url)
			}
			if mode == "process" {
				args = []string{"--version"}
			}
			var lat, cpu []time.Duration
			missed, previews := 0, 0
			var f *os.File
			var transcript string
			var size int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if i%len(steps) == 0 {
					if f != nil {
						f.Close()
					}
					session := fmt.Sprintf("bench-%04d", i/len(steps))
					transcript = filepath.Join(projects, session+".jsonl")
					if f, err = os.Create(transcript); err != nil {
						b.Fatal(err)
					}
					size = 0
				}
				st := steps[i%len(steps)]
				if _, err := f.Write(st.lines); err != nil {
					b.Fatal(err)
				}
				size += int64(len(st.lines))
				in, _ := json.Marshal(map[string]any{"session_id": strings.TrimSuffix(filepath.Base(transcript), ".jsonl"),
					"transcript_path": transcript, "cwd": dir, "hook_event_name": "PostToolUse", "tool_name": st.tool,
					"tool_input": map[string]any{}, "tool_response": st.response, "tool_use_id": st.id})
				cmd := exec.Command(ctxstoreBin, args...)
				cmd.Stdin = bytes.NewReader(in)
				cmd.Env = append(os.Environ(), "CTXSTORE_SERVICE_URL=", "CTXSTORE_URL=")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				b.StartTimer()
				t0 := time.Now()
				out, err := cmd.Output()
				lat = append(lat, time.Since(t0))
				if cmd.ProcessState != nil {
					cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
				}
				// A preview's answer is the only stdout a hook that succeeds prints.
				if err != nil || (len(out) > 0 && mode != "process" && !bytes.HasPrefix(out, []byte(`{"hookSpecificOutput":`))) {
					b.Fatalf("hook: %v %s %s", err, out, stderr.Bytes())
				}
				if mode != "process" {
					var rep struct {
						AwaitMissed bool   `json:"await_missed"`
						Error       string `json:"error"`
						Preview     struct {
							File string `json:"file"`
						} `json:"preview"`
					}
					if err := json.Unmarshal(stderr.Bytes(), &rep); err != nil || rep.Error != "" {
						b.Fatalf("hook report: %v %s", err, stderr.Bytes())
					}
					if rep.AwaitMissed {
						missed++
					}
					if rep.Preview.File != "" {
						previews++
					}
				}
			}
			b.StopTimer()
			if f != nil {
				f.Close()
			}
			if mode != "process" {
				fc, err := readChain(b, storePath, transcript)
				b2, _ := os.ReadFile(transcript)
				if err != nil || !bytes.Equal(fc.content, b2) {
					b.Fatalf("the store does not hold the transcript: %v", err)
				}
			}
			slices.Sort(lat)
			slices.Sort(cpu)
			ms := func(d []time.Duration, q float64) float64 {
				return float64(d[min(int(q*float64(len(d))), len(d)-1)].Microseconds()) / 1000
			}
			b.ReportMetric(ms(lat, 0.5), "p50-ms")
			b.ReportMetric(ms(lat, 0.99), "p99-ms")
			// CPU time (user and system) of the hook process: what the
			// hook costs apart from waiting for a core on a loaded machine.
			b.ReportMetric(ms(cpu, 0.5), "cpu-p50-ms")
			b.ReportMetric(ms(cpu, 0.99), "cpu-p99-ms")
			b.ReportMetric(float64(size)/1e6, "final-MB")
			b.ReportMetric(float64(missed), "waited-500ms")
			b.ReportMetric(float64(previews), "previews")
			if missed > 0 {
				b.Errorf("%d hooks waited the whole limit for a tool call's line that is in the transcript", missed)
			}
		})
	}
}

// TestClaudeCodeInstallCLI: install and uninstall through the CLI, for the
// user (HOME) and a project holding settings of its own: --dry-run writes
// nothing and shows the diff, --json says what changed, install twice
// changes nothing, uninstall gives the user's files back byte for byte.
func TestClaudeCodeInstallCLI(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(ctxstoreBin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "CTXSTORE_URL=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ctxstore %v: %v\n%s", args, err, stderr.String())
		}
		return string(out), stderr.String()
	}
	claudeJSON := filepath.Join(home, ".claude.json")
	const state = "{\n  \"numStartups\": 7,\n  \"userID\": \"u\"\n}\n"
	if err := os.WriteFile(claudeJSON, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	diff, _ := run("claude-code", "install", "--user", "--dry-run")
	settings := filepath.Join(home, ".claude", "settings.json")
	if !strings.Contains(diff, "+++ b"+settings) || !strings.Contains(diff, "+++ b"+claudeJSON) || !strings.Contains(diff, "# managed by ctxstore claude-code install") {
		t.Errorf("dry-run diff:\n%s", diff)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Error("--dry-run wrote the settings")
	}
	out, _ := run("--json", "claude-code", "install", "--user")
	var rep struct {
		DryRun bool `json:"dry_run"`
		Files  []struct{ Path, Action string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.DryRun || len(rep.Files) != 2 ||
		rep.Files[0].Action != "create" || rep.Files[1].Action != "update" {
		t.Errorf("install --json: %v %s", err, out)
	}
	b, _ := os.ReadFile(settings)
	if !strings.Contains(string(b), "sqlite:"+filepath.Join(home, ".ctxstore", "store.db")+" claude-code hook") {
		t.Errorf("user settings name another store:\n%s", b)
	}
	// The spill directory is outside every project: one rule lets the
	// model's Read of it through without asking.
	var perms struct {
		Permissions struct{ Allow []string } `json:"permissions"`
	}
	json.Unmarshal(b, &perms)
	if want := "Read(/" + filepath.ToSlash(filepath.Join(home, ".ctxstore", "spill")) + "/**)"; !slices.Equal(perms.Permissions.Allow, []string{want}) {
		t.Errorf("user settings allow %q, want %q", perms.Permissions.Allow, want)
	}
	if _, err := os.Stat(filepath.Join(home, ".ctxstore", "store.db")); err != nil {
		t.Errorf("install did not create the store the MCP server opens: %v", err)
	}
	if out, _ := run("--json", "claude-code", "install", "--user"); strings.Count(out, `"action":"unchanged"`) != 2 {
		t.Errorf("a second install: %s", out)
	}
	run("claude-code", "uninstall", "--user")
	if got, _ := os.ReadFile(claudeJSON); string(got) != state {
		t.Errorf("~/.claude.json after uninstall:\n%s", got)
	}
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("the settings install created are still there: %v", err)
	}
	if _, errOut := run("claude-code", "uninstall", "--user"); !strings.Contains(errOut, "nothing to change") {
		t.Errorf("a second uninstall: %q", errOut)
	}

	// A project whose settings do not parse: refused, naming file and line.
	proj := t.TempDir()
	bad := filepath.Join(proj, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("{\n  \"hooks\": {,}\n}\n"), 0o644)
	cmd := exec.Command(ctxstoreBin, "claude-code", "install", "--project", proj)
	cmd.Env = append(os.Environ(), "HOME="+home)
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), bad+": line 2") {
		t.Errorf("install over bad settings: %v %s", err, msg)
	}
}
