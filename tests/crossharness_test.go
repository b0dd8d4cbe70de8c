package tests

import (
	"bufio"
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

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/xtdb/xtdbtest"
)

// TestCrossHarnessSQLite and TestCrossHarnessXTDB: a
// session moves Claude Code -> Pi -> Claude Code through the store, with
// the real CLIs offline. The real Claude Code CLI runs a session in which
// the scripted endpoint drives two tool calls; its transcript goes into
// the store; `ctxstore materialize --format pi --place` writes it where Pi
// looks and the real Pi continues it (`pi -c`, one more tool call); Pi's
// file goes back into the store; `ctxstore materialize --format
// claude-code --place` writes it where Claude Code looks and `claude
// --resume <id>` continues it, and that file is imported again. Every
// import is `ctxstore import`. At each step the model's first request of
// the new leg holds the whole earlier conversation, in order.
func TestCrossHarnessSQLite(t *testing.T) {
	t.Parallel()
	crossHarnessScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
}

func TestCrossHarnessXTDB(t *testing.T) {
	t.Parallel()
	claudeCLI(t)
	piCLI(t)
	crossHarnessScenario(t, xtdbtest.ForTest(t))
}

// xhScript answers a request by the newest user message holding one of
// the markers: the marker's steps, one per tool result the conversation
// holds after that message (so a leg's tool calls run in order however the
// history before it looks).
func xhScript(legs map[string][]piStep) func(messagesRequest) piStep {
	return func(req messagesRequest) piStep {
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role != "user" {
				continue
			}
			bs, _ := messagesBlocks(req.Messages[i].Content)
			for marker, steps := range legs {
				found := false
				for _, b := range bs {
					found = found || (b.Type == "text" && strings.Contains(b.Text, marker))
				}
				if !found {
					continue
				}
				results := 0
				for _, m := range req.Messages[i+1:] {
					mb, _ := messagesBlocks(m.Content)
					for _, b := range mb {
						if b.Type == "tool_result" {
							results++
						}
					}
				}
				return steps[min(results, len(steps)-1)]
			}
		}
		return piStep{Text: "ok"}
	}
}

// xhRequestText flattens a logged Messages API request's conversation: one
// line per block (text, tool_use name and input, tool_result content).
func xhRequestText(t *testing.T, line []byte) string {
	t.Helper()
	var req messagesRequest
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range req.Messages {
		bs, err := messagesBlocks(m.Content)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range bs {
			switch x.Type {
			case "text":
				fmt.Fprintf(&b, "%s text: %s\n", m.Role, x.Text)
			case "tool_use":
				in, _ := json.Marshal(x.Input)
				fmt.Fprintf(&b, "%s tool_use %s %s: %s\n", m.Role, x.ID, x.Name, in)
			case "tool_result":
				inner, _ := messagesBlocks(x.Content)
				var parts []string
				for _, ib := range inner {
					parts = append(parts, ib.Text)
				}
				fmt.Fprintf(&b, "%s tool_result %s: %s\n", m.Role, x.ToolUseID, strings.Join(parts, " "))
			}
		}
	}
	return b.String()
}

// xhRequestWith returns the conversation (xhRequestText) of the first
// request in a scripted endpoint's log whose conversation holds marker: the
// leg's first model call, whatever side requests a harness makes.
func xhRequestWith(t *testing.T, log, marker string) string {
	t.Helper()
	return requestWith(t, log, marker, xhRequestText)
}

// requestWith returns text of the first request in a scripted endpoint's
// log (one JSON request a line) whose text holds marker.
func requestWith(t *testing.T, log, marker string, text func(*testing.T, []byte) string) string {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if s := text(t, sc.Bytes()); strings.Contains(s, marker) {
			return s
		}
	}
	t.Fatalf("%s: none of %d requests holds %q (%v)", log, n, marker, sc.Err())
	return ""
}

// xhInOrder checks that text holds every want, in that order.
func xhInOrder(t *testing.T, what, text string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Errorf("%s: %q missing (or out of order) after byte %d:\n%s", what, w, at, text)
			return
		}
		at += i + len(w)
	}
}

// xhRunClaude runs the real Claude Code CLI in print mode, offline against
// endpoint, in dir with HOME home, and returns its JSON result.
func xhRunClaude(t *testing.T, dir, home, endpoint string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudeCLI(t), append(args, "--output-format", "json")...)
	cmd.Dir = dir
	cmd.Env = append(xhEnvWithout("CLAUDE_CONFIG_DIR"), "HOME="+home, "ANTHROPIC_BASE_URL="+endpoint, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil || res["is_error"] == true {
		t.Fatalf("claude's answer: %v %s", err, out)
	}
	return res
}

// xhStartPi starts the real Pi (RPC mode) with only the scripted model,
// in e.dir with agent folder e.agentDir, continuing the newest session of
// its working directory (-c): the session ctxstore placed there.
func xhStartPi(t *testing.T, e *piEnv, endpoint string) *piRun {
	t.Helper()
	cmd := exec.Command(nodeBin(t), piCLI(t), "--no-extensions", "-e", repoPath(t, "tests/testdata/pi/scripted-model.ts"),
		"--provider", "scripted", "--model", "scripted-1", "-c", "--mode", "rpc")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+e.agentDir, "PI_OFFLINE=1", "PI_SCRIPTED_URL="+endpoint, "CTXSTORE_SERVICE_URL=")
	return runPiRPC(t, cmd)
}

// xhImport runs `ctxstore import FILE --json` and returns the file's
// result (its tip, format and sessions).
func xhImport(t *testing.T, c *cli, storeURL, file string) map[string]any {
	t.Helper()
	r := c.run("", "--store", storeURL, "--json", "import", file)
	if r.code != 0 {
		t.Fatalf("import %s: exit %d\n%s\n%s", file, r.code, r.stdout, r.stderr)
	}
	var res struct {
		Files []map[string]any `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Files) != 1 {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	f := res.Files[0]
	if f["status"] != "imported" || f["tip"] == nil {
		t.Fatalf("import %s: %v", file, f)
	}
	return f
}

// xhMaterialize runs ctxstore materialize with --json and returns its answer.
func xhMaterialize(t *testing.T, c *cli, storeURL string, env []string, args ...string) map[string]any {
	t.Helper()
	saved := c.env
	c.env = nil
	for _, kv := range saved {
		if !strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env, env...)
	defer func() { c.env = saved }()
	r := c.run("", append([]string{"--store", storeURL, "--json", "materialize"}, args...)...)
	if r.code != 0 {
		t.Fatalf("materialize %v: exit %d\n%s", args, r.code, r.stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("materialize --json: %v\n%s", err, r.stdout)
	}
	return out
}

func crossHarnessScenario(t *testing.T, storeURL string) {
	c := newCLI(t)
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	e := &piEnv{dir: work, agentDir: filepath.Join(root, "pi-agent")}
	for _, d := range []string{work, home, e.agentDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("alpha-note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := xhScript(map[string][]piStep{
		"CC-Q1": {
			{Tool: "Bash", Args: map[string]any{"command": "echo hello-from-bash", "description": "Say hello"}, ID: "toolu_cc1"},
			{Tool: "Read", Args: map[string]any{"file_path": filepath.Join(work, "notes.txt")}, ID: "toolu_cc2"},
			{Text: "CC-A1: the notes say alpha-note."},
		},
		"PI-Q2": {
			{Tool: "read", Args: map[string]any{"path": "notes.txt"}, ID: "toolu_pi1"},
			{Text: "PI-A2: Pi read the notes again."},
		},
		"CC-Q3": {{Text: "CC-A3: resumed in Claude Code."}},
		"CC-Q0": {{Text: "CC-A0: the same harness, a copy of the session."}},
	})

	// 1. A Claude Code session with two tool calls.
	log1 := filepath.Join(root, "claude1.jsonl")
	m1 := startScriptedMessages(t, nil, log1, script)
	res := xhRunClaude(t, work, home, m1.srv.URL, "-p", "CC-Q1: please look at the notes.", "--allowedTools", "Bash", "Read")
	sid1, _ := res["session_id"].(string)
	if !strings.Contains(fmt.Sprint(res["result"]), "CC-A1") {
		t.Fatalf("claude's answer: %v", res)
	}
	ccFile := filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid1+".jsonl")
	if _, err := os.Stat(ccFile); err != nil {
		t.Fatalf("Claude Code did not write its session where ProjectDir says: %v", err)
	}
	imp1 := xhImport(t, c, storeURL, ccFile)
	c1, _ := imp1["tip"].(string)
	if imp1["format"] != "claude-code-v1" {
		t.Fatalf("import of Claude Code's file: %v", imp1)
	}

	// 1b. The native tier: the imported lines themselves, renamed to a new
	// session (every record uuid too), resume in Claude Code; the
	// original file is untouched.
	orig, _ := os.ReadFile(ccFile)
	nm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, c1, "--format", "claude-code", "--place", "--cwd", work)
	if nm["tier"] != "native" {
		t.Fatalf("materialize of an imported Claude Code chain for Claude Code: %v", nm)
	}
	log0 := filepath.Join(root, "claude0.jsonl")
	m0 := startScriptedMessages(t, nil, log0, script)
	if res := xhRunClaude(t, work, home, m0.srv.URL, "-p", "CC-Q0: again?", "--resume", nm["session"].(string)); !strings.Contains(fmt.Sprint(res["result"]), "CC-A0") {
		t.Fatalf("claude --resume of the native copy: %v", res)
	}
	xhInOrder(t, "Claude Code's first request after resuming the native copy", xhRequestWith(t, log0, "CC-Q0"),
		"CC-Q1: please look at the notes.", "tool_use toolu_cc1 Bash", "tool_result toolu_cc1: hello-from-bash",
		"tool_use toolu_cc2 Read", "alpha-note", "CC-A1: the notes say alpha-note.", "CC-Q0: again?")
	if now, _ := os.ReadFile(ccFile); !bytes.Equal(now, orig) {
		t.Errorf("resuming the copy changed the original session file")
	}

	// 2. Materialized for Pi, placed where Pi looks, continued in Pi.
	penv := []string{"PI_CODING_AGENT_DIR=" + e.agentDir}
	pm := xhMaterialize(t, c, storeURL, penv, c1, "--format", "pi", "--place", "--cwd", work)
	piFile, _ := pm["file"].(string)
	if pm["format"] != "pi-v3" || pm["tier"] != "field" || !strings.HasPrefix(piFile, filepath.Join(e.agentDir, "sessions")+string(filepath.Separator)) {
		t.Fatalf("materialize for Pi: %v", pm)
	}
	before, err := transcripttest.ReadFile(piFile)
	if err != nil {
		t.Fatal(err)
	}
	log2 := filepath.Join(root, "pi.jsonl")
	m2 := startScriptedMessages(t, nil, log2, script)
	pi := xhStartPi(t, e, m2.srv.URL)
	pi.prompt("PI-Q2: what do the notes say now?")
	pi.quit()
	xhInOrder(t, "Pi's first model request", xhRequestWith(t, log2, "PI-Q2"),
		"CC-Q1: please look at the notes.", "tool_use toolu_cc1 Bash", "tool_result toolu_cc1: hello-from-bash",
		"tool_use toolu_cc2 Read", "tool_result toolu_cc2:", "alpha-note", "CC-A1: the notes say alpha-note.", "PI-Q2")
	after, _ := piTranscript(t, piFile)
	if len(after) < len(before.Messages)+3 {
		t.Fatalf("Pi did not continue the placed session %s: %d messages, %d before", piFile, len(after), len(before.Messages))
	}
	imp2 := xhImport(t, c, storeURL, piFile)
	c2, _ := imp2["tip"].(string)
	if imp2["format"] != "pi-v3" {
		t.Fatalf("import of Pi's file: %v", imp2)
	}

	// 3. Materialized for Claude Code, placed where it looks, resumed.
	cm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, c2, "--format", "claude-code", "--place", "--cwd", work)
	sid3, _ := cm["session"].(string)
	if cm["format"] != "claude-code-v1" || cm["tier"] != "field" || sid3 == "" || sid3 == sid1 ||
		cm["file"] != filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid3+".jsonl") {
		t.Fatalf("materialize for Claude Code: %v", cm)
	}
	log3 := filepath.Join(root, "claude3.jsonl")
	m3 := startScriptedMessages(t, nil, log3, script)
	res = xhRunClaude(t, work, home, m3.srv.URL, "-p", "CC-Q3: and in the end?", "--resume", sid3)
	if res["session_id"] != sid3 || !strings.Contains(fmt.Sprint(res["result"]), "CC-A3") {
		t.Fatalf("claude --resume: %v", res)
	}
	xhInOrder(t, "Claude Code's first model request after --resume", xhRequestWith(t, log3, "CC-Q3"),
		"CC-Q1: please look at the notes.", "tool_use toolu_cc1 Bash", "hello-from-bash", "tool_use toolu_cc2 Read", "alpha-note",
		"CC-A1: the notes say alpha-note.", "PI-Q2: what do the notes say now?", "tool_use toolu_pi1 read",
		"tool_result toolu_pi1: alpha-note", "PI-A2: Pi read the notes again.", "CC-Q3: and in the end?")

	// The resumed session is Claude Code's own now: it appended the new
	// turn to the placed file.
	raw, err := os.ReadFile(cm["file"].(string))
	if err != nil {
		t.Fatal(err)
	}
	xhInOrder(t, "the resumed Claude Code file", string(raw), "CC-Q1", "hello-from-bash", "CC-A1", "PI-Q2", "PI-A2", "CC-Q3", "CC-A3")

	// And back into the store: the whole conversation, three legs, two
	// harnesses, in one chain; in its own format it is the file's bytes.
	imp3 := xhImport(t, c, storeURL, cm["file"].(string))
	ev := xhMaterialize(t, c, storeURL, nil, imp3["tip"].(string), "--format", "events", "--stop", "root")
	xhInOrder(t, "the last import as events", fmt.Sprint(ev["content"]), "CC-Q1", "hello-from-bash", "CC-A1", "PI-Q2", "PI-A2", "CC-Q3", "CC-A3")
	if back := xhMaterialize(t, c, storeURL, nil, imp3["tip"].(string), "--stop", "root"); back["content"] != string(raw) || back["tier"] != "native" {
		t.Errorf("the imported resumed file does not materialize to its bytes (tier %v)", back["tier"])
	}
}

// xhEnvWithout is the test's environment without the named variables.
func xhEnvWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, n := range names {
			keep = keep && !strings.HasPrefix(kv, n+"=")
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// TestMaterializeCLI: `ctxstore materialize` without a harness: the format
// aliases, --out, --place for both harnesses (folders from the working
// directory, a new UUID session, no overwrite without --force), and the
// refusals, each naming what is wrong and writing nothing.
func TestMaterializeCLI(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	st := c.path("store.db")
	evs := `[{"type":"prompt","source":"user","text":"count the files"},` +
		`{"type":"response","message_id":"m1","text":"Counting.","model":"claude-x"},` +
		`{"type":"tool_call","message_id":"m1","tool":{"id":"t1","name":"Bash","input":{"command":"ls | wc -l"}}},` +
		`{"type":"tool_result","tool":{"id":"t1","name":"Bash"},"result":{"content":"3"}},` +
		`{"type":"response","message_id":"m2","text":"Three."}]`
	id := strings.TrimSpace(c.ok(evs, "--store", st, "commit", "checkpoint", "--content", "-", "--session", "s1"))

	// --out, with the alias; the same again is the same bytes.
	var m map[string]any
	c.jsonOut(&m, "", "--store", st, "materialize", id, "--format", "claude-code", "--out", c.path("cc.jsonl"))
	if m["format"] != "claude-code-v1" || m["tier"] != "field" || m["file"] != c.path("cc.jsonl") || m["lost"] != nil {
		t.Fatalf("materialize --out: %v", m)
	}
	first, _ := os.ReadFile(c.path("cc.jsonl"))
	stdout := c.run("", "--store", st, "materialize", id, "--format", "claude-code")
	if stdout.code != 0 || stdout.stdout != string(first) || !strings.Contains(stdout.stderr, "tier field") {
		t.Fatalf("materialize to stdout: %+v", stdout)
	}
	s, err := transcripttest.ReadFile(c.path("cc.jsonl"))
	if err != nil || len(s.Messages) != 4 || s.Messages[1].ToolCalls[0].Name != "Bash" || s.Messages[3].Text != "Three." {
		t.Fatalf("the Claude Code file reads back as %+v (%v)", s, err)
	}

	// --place: Claude Code's folder for --cwd, a new UUID session.
	home := c.path("home")
	work := c.path("some work.dir")
	c.env = append(xhEnvWithout("CTXSTORE_URL", "CLAUDE_CONFIG_DIR", "PI_CODING_AGENT_DIR"), "HOME="+home)
	c.jsonOut(&m, "", "--store", st, "materialize", id, "--format", "claude", "--place", "--cwd", work)
	sid, _ := m["session"].(string)
	want := filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid+".jsonl")
	if len(sid) != 36 || m["file"] != want || m["cwd"] != work {
		t.Fatalf("materialize --place: %v, want file %s", m, want)
	}
	placed, _ := os.ReadFile(want)
	if n := strings.Count(string(placed), `"sessionId":"`+sid+`"`); n != 4 || strings.Count(string(placed), `"cwd":"`+work+`"`) != 4 {
		t.Errorf("the placed file names session and cwd %d times:\n%s", n, placed)
	}
	// The same session again is refused; --force replaces it.
	c.fail(1, "", []string{"--store", st, "materialize", id, "--format", "claude", "--place", "--cwd", work, "--session", sid}, "exists", "--force")
	c.jsonOut(&m, "", "--store", st, "materialize", id, "--format", "claude", "--place", "--cwd", work, "--session", sid, "--force")

	// Pi's folder.
	c.jsonOut(&m, "", "--store", st, "materialize", id, "--format", "pi", "--place", "--cwd", work, "--session", "pi-s1")
	dir := filepath.Join(home, ".pi", "agent", "sessions", "--"+strings.ReplaceAll(strings.TrimPrefix(work, "/"), "/", "-")+"--")
	if f, _ := m["file"].(string); filepath.Dir(f) != dir || !strings.HasSuffix(f, "_pi-s1.jsonl") || m["format"] != "pi-v3" {
		t.Fatalf("materialize --format pi --place: %v, want a file in %s", m, dir)
	}

	// What Claude Code cannot hold is said (a call without a result).
	unanswered := strings.TrimSpace(c.ok(`[{"type":"prompt","text":"go"},{"type":"tool_call","tool":{"id":"t9","name":"Bash"}},{"type":"prompt","text":"stop"}]`,
		"--store", st, "commit", "checkpoint", "--content", "-", "--session", "s2"))
	c.jsonOut(&m, "", "--store", st, "materialize", unanswered, "--format", "claude-code")
	if fmt.Sprint(m["lost"]) != "map[unanswered:1]" {
		t.Errorf("lost: %v", m["lost"])
	}
	if r := c.run("", "--store", st, "materialize", unanswered, "--format", "claude-code"); !strings.Contains(r.stderr, "1 tool calls without a result") {
		t.Errorf("stderr: %s", r.stderr)
	}

	// Refusals write nothing (not even the snapshot cache).
	var before, after map[string]any
	c.jsonOut(&before, "", "--store", st, "status")
	c.fail(2, "", []string{"--store", st, "materialize", id, "--place"}, "--place", "events-v1")
	c.fail(2, "", []string{"--store", st, "materialize", id, "--place", "--out", "x"}, "--place and --out")
	c.fail(2, "", []string{"--store", st, "materialize", id, "--format", "events", "--place"}, "--place", "events-v1")
	c.fail(1, "", []string{"--store", st, "materialize", id, "--format", "claude-code", "--session", "not-a-uuid"}, "not a UUID")
	c.fail(1, "", []string{"--store", st, "materialize", id, "--format", "nope-v1"}, "nope-v1")
	c.fail(1, "", []string{"--store", st, "materialize", "ctx-00000000000000000000", "--format", "pi"}, "ctx-00000000000000000000")
	c.jsonOut(&after, "", "--store", st, "status")
	if fmt.Sprint(before["latest_completed"]) != fmt.Sprint(after["latest_completed"]) {
		t.Errorf("a refused materialize wrote: %v -> %v", before["latest_completed"], after["latest_completed"])
	}
}

// TestPiToClaudeCode: a session begun in Pi (its own header, model and
// thinking-level entries, a read call) is imported, materialized for
// Claude Code where it looks, and continued with `claude --resume`: the
// model's first request holds Pi's conversation (SQLite; the XTDB path is
// the same as TestCrossHarnessXTDB's).
func TestPiToClaudeCode(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	root := t.TempDir()
	storeURL := "sqlite:" + filepath.Join(root, "store.db")
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	e := &piEnv{dir: work, agentDir: filepath.Join(root, "pi-agent")}
	for _, d := range []string{work, home, e.agentDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "plan.md"), []byte("step one: beta-plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := xhScript(map[string][]piStep{
		"PI-Q0": {
			{Tool: "read", Args: map[string]any{"path": "plan.md"}, ID: "toolu_p0"},
			{Text: "PI-A0: the plan starts with beta-plan."},
		},
		"CC-Q9": {{Text: "CC-A9: continued from Pi."}},
	})
	m1 := startScriptedMessages(t, nil, filepath.Join(root, "pi.jsonl"), script)
	pi := xhStartPi(t, e, m1.srv.URL)
	pi.prompt("PI-Q0: what is the plan?")
	pi.quit()
	files, _ := filepath.Glob(filepath.Join(e.agentDir, "sessions", "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("Pi's session files: %v", files)
	}
	imp := xhImport(t, c, storeURL, files[0])
	if imp["format"] != "pi-v3" {
		t.Fatalf("import of Pi's file: %v", imp)
	}
	cm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, imp["tip"].(string), "--format", "claude-code", "--place", "--cwd", work)
	if cm["tier"] != "field" {
		t.Fatalf("materialize: %v", cm)
	}
	log := filepath.Join(root, "claude.jsonl")
	m2 := startScriptedMessages(t, nil, log, script)
	if res := xhRunClaude(t, work, home, m2.srv.URL, "-p", "CC-Q9: go on", "--resume", cm["session"].(string)); !strings.Contains(fmt.Sprint(res["result"]), "CC-A9") {
		t.Fatalf("claude --resume: %v", res)
	}
	xhInOrder(t, "Claude Code's first request", xhRequestWith(t, log, "CC-Q9"),
		"PI-Q0: what is the plan?", "tool_use toolu_p0 read", "tool_result toolu_p0: step one: beta-plan",
		"PI-A0: the plan starts with beta-plan.", "CC-Q9: go on")
}
