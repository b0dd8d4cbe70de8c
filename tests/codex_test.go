package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/transcript/transcripttest"
	"github.com/ctxstore/ctxstore/internal/datasets"
)

// TestCodexCrossHarness: a session moves Claude Code -> Codex -> Pi ->
// Claude Code through the store, each leg continued by the real CLI,
// offline. The real Claude Code runs a session with a Bash and a Read
// call; `ctxstore import` reads its transcript; `ctxstore materialize
// --format codex --place` writes a rollout where Codex looks, and the
// real Codex (`codex exec resume ID PROMPT`, against a scripted Responses
// API endpoint) continues it with a shell command of its own. Codex's
// rollout is imported (a codex-v1 chain); its native copy, renamed, is
// resumed by Codex too; materialized for Pi it is continued by the real
// Pi; Pi's file, materialized for Claude Code, by `claude --resume`. At
// each step the model's first request of the new leg holds every earlier
// leg's messages, in order; the last file imported holds them all.
func TestCodexCrossHarness(t *testing.T) {
	t.Parallel()
	codex := codexCLI(t)
	claudeCLI(t)
	piCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home, cxHome := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "codex-home")
	e := &piEnv{dir: work, agentDir: filepath.Join(root, "pi-agent")}
	for _, d := range []string{work, home, e.agentDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("alpha-note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(codex, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "codex-cli "+codexVersion) {
		t.Fatalf("codex --version: %v %s", err, out)
	}
	messages := xhScript(map[string][]piStep{
		"CC-Q1": {
			{Tool: "Bash", Args: map[string]any{"command": "echo hello-from-bash", "description": "Say hello"}, ID: "toolu_cc1"},
			{Tool: "Read", Args: map[string]any{"file_path": filepath.Join(work, "notes.txt")}, ID: "toolu_cc2"},
			{Text: "CC-A1: the notes say alpha-note."},
		},
		"PI-Q3": {{Text: "PI-A3: Pi saw Codex's turn."}},
		"CC-Q4": {{Text: "CC-A4: back in Claude Code."}},
	})
	responses := cxScript(map[string][]piStep{
		"CX-Q2": {
			{Tool: "exec_command", Args: map[string]any{"cmd": "echo codex-was-here"}, ID: "call_cx1"},
			{Text: "CX-A2: Codex ran its own command."},
		},
		"CX-Q0": {{Text: "CX-A0: the native copy."}},
	})

	// 1. Claude Code, with a Bash and a Read call.
	log1 := filepath.Join(root, "claude1.jsonl")
	m1 := startScriptedMessages(t, nil, log1, messages)
	res := xhRunClaude(t, work, home, m1.srv.URL, "-p", "CC-Q1: please look at the notes.", "--allowedTools", "Bash", "Read")
	sid1, _ := res["session_id"].(string)
	ccFile := filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid1+".jsonl")
	c1 := xhImport(t, c, storeURL, ccFile)["tip"].(string)

	// 2. Materialized for Codex where Codex looks, resumed by Codex.
	cxEnv := []string{"CODEX_HOME=" + cxHome}
	cm := xhMaterialize(t, c, storeURL, cxEnv, c1, "--format", "codex", "--place", "--cwd", work)
	cxFile, _ := cm["file"].(string)
	sid2, _ := cm["session"].(string)
	if l, _ := cm["lost"].(map[string]any); l["as_text"] != nil || l["unanswered"] != nil {
		t.Errorf("Bash and Read have Codex counterparts; lost: %v", cm["lost"])
	}
	if cm["format"] != "codex-v1" || cm["tier"] != "field" || !strings.HasPrefix(cxFile, filepath.Join(cxHome, "sessions")+string(filepath.Separator)) ||
		!strings.HasSuffix(cxFile, "-"+sid2+".jsonl") {
		t.Fatalf("materialize for Codex: %v", cm)
	}
	log2 := filepath.Join(root, "codex2.jsonl")
	r2 := startScriptedResponses(t, log2, responses)
	codexHome(t, cxHome, r2.srv.URL)
	if out := runCodex(t, work, cxHome, home, "resume", sid2, "CX-Q2: run something of your own."); !strings.Contains(out, "CX-A2") {
		t.Fatalf("codex exec resume: %s", out)
	}
	first := cxRequestWith(t, log2, "CX-Q2")
	xhInOrder(t, "Codex's first request after resuming", first,
		"user text: CC-Q1: please look at the notes.",
		`function_call toolu_cc1 exec_command: {"cmd":"echo hello-from-bash"}`, "function_call_output toolu_cc1: hello-from-bash",
		"function_call toolu_cc2 exec_command: {\"cmd\":\"cat "+filepath.Join(work, "notes.txt"), "function_call_output toolu_cc2:", "alpha-note",
		"assistant text: CC-A1: the notes say alpha-note.", "user text: CX-Q2: run something of your own.")
	raw, err := os.ReadFile(cxFile)
	if err != nil {
		t.Fatal(err)
	}
	xhInOrder(t, "the resumed rollout", string(raw), "CC-Q1", "hello-from-bash", "CC-A1", "CX-Q2", "codex-was-here", "CX-A2")
	s, err := transcripttest.ReadFile(cxFile)
	if err != nil || s.Format != "codex" || s.ID != sid2 || s.Report.Orphans != 0 {
		t.Fatalf("the rollout Codex continued, read back: %v %+v", err, s)
	}

	// 3. Codex's rollout into the store; its native copy, renamed, resumes.
	imp2 := xhImport(t, c, storeURL, cxFile)
	c2, _ := imp2["tip"].(string)
	if imp2["format"] != "codex-v1" {
		t.Fatalf("import of Codex's rollout: %v", imp2)
	}
	if back := xhMaterialize(t, c, storeURL, nil, c2, "--stop", "root"); back["content"] != string(raw) || back["tier"] != "native" {
		t.Errorf("the imported rollout does not materialize to its bytes (tier %v)", back["tier"])
	}
	// Codex's turn is one commit with its turn_context: its events name the model.
	cxEvents := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, c2, "--format", "events", "--stop", "root")["content"])
	xhInOrder(t, "Codex's turn as events", cxEvents, `"text":"CX-Q2: run something of your own."`,
		`"model":"scripted-1","message_id":"fc_0","tool":{"id":"call_cx1","name":"exec_command"`)
	nm := xhMaterialize(t, c, storeURL, cxEnv, c2, "--format", "codex", "--place", "--cwd", work, "--stop", "root")
	if nm["tier"] != "native" || nm["session"] == sid2 {
		t.Fatalf("native materialize for Codex: %v", nm)
	}
	if out := runCodex(t, work, cxHome, home, "resume", nm["session"].(string), "CX-Q0: again?"); !strings.Contains(out, "CX-A0") {
		t.Fatalf("codex exec resume of the native copy: %s", out)
	}
	xhInOrder(t, "Codex's first request after resuming the native copy", cxRequestWith(t, log2, "CX-Q0"),
		"CC-Q1", "hello-from-bash", "CC-A1", "CX-Q2", "function_call call_cx1 exec_command", "codex-was-here", "CX-A2", "CX-Q0: again?")
	if now, _ := os.ReadFile(cxFile); !bytes.Equal(now, raw) {
		t.Error("resuming the native copy changed the original rollout")
	}

	// 4. Materialized for Pi, continued by Pi.
	pm := xhMaterialize(t, c, storeURL, []string{"PI_CODING_AGENT_DIR=" + e.agentDir}, c2, "--format", "pi", "--place", "--cwd", work)
	piFile, _ := pm["file"].(string)
	if pm["format"] != "pi-v3" || pm["tier"] != "field" {
		t.Fatalf("materialize for Pi: %v", pm)
	}
	log3 := filepath.Join(root, "pi3.jsonl")
	m3 := startScriptedMessages(t, nil, log3, messages)
	pi := xhStartPi(t, e, m3.srv.URL)
	pi.prompt("PI-Q3: what did Codex do?")
	pi.quit()
	xhInOrder(t, "Pi's first request", xhRequestWith(t, log3, "PI-Q3"),
		"CC-Q1: please look at the notes.", "hello-from-bash", "alpha-note", "CC-A1",
		"CX-Q2: run something of your own.", "tool_use call_cx1 exec_command", "tool_result call_cx1:", "codex-was-here",
		"CX-A2: Codex ran its own command.", "PI-Q3")
	c3 := xhImport(t, c, storeURL, piFile)["tip"].(string)

	// 5. Materialized for Claude Code, resumed there. The chain holds
	// Codex's rollout from leg 2 on: the Bash call is Codex's exec_command
	// now, as Codex's model saw it.
	ccm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, c3, "--format", "claude-code", "--place", "--cwd", work)
	sid4, _ := ccm["session"].(string)
	log4 := filepath.Join(root, "claude4.jsonl")
	m4 := startScriptedMessages(t, nil, log4, messages)
	if res := xhRunClaude(t, work, home, m4.srv.URL, "-p", "CC-Q4: and now?", "--resume", sid4); !strings.Contains(fmt.Sprint(res["result"]), "CC-A4") {
		t.Fatalf("claude --resume: %v", res)
	}
	xhInOrder(t, "Claude Code's first request after --resume", xhRequestWith(t, log4, "CC-Q4"),
		"CC-Q1", "tool_use toolu_cc1 exec_command", "hello-from-bash", "alpha-note", "CC-A1", "CX-Q2", "tool_use call_cx1 exec_command",
		"codex-was-here", "CX-A2", "PI-Q3", "PI-A3", "CC-Q4: and now?")

	// The whole conversation, four legs and three harnesses, in one file.
	imp4 := xhImport(t, c, storeURL, ccm["file"].(string))
	ev := xhMaterialize(t, c, storeURL, nil, imp4["tip"].(string), "--format", "events", "--stop", "root")
	xhInOrder(t, "the last import as events", fmt.Sprint(ev["content"]), "CC-Q1", "CC-A1", "CX-Q2", "codex-was-here", "CX-A2", "PI-Q3", "PI-A3", "CC-Q4", "CC-A4")
}

// TestCodexResumesDataset: real sessions of the shared datasets, one of
// Claude Code (Bash, Read, Edit, Grep, Glob and TodoWrite calls) and one
// of Pi (bash, read, edit, write), imported and materialized for Codex,
// are resumed by the real Codex: its first request holds the session's
// first prompt, every shell command and file read as an exec_command call
// with its output, and the calls Codex has no tool for as text with their
// results, then the new prompt.
func TestCodexResumesDataset(t *testing.T) {
	t.Parallel()
	codexCLI(t)
	for _, c := range []struct {
		file   string
		first  string // the session's first prompt (its start)
		asText int    // calls written as text
		text   string // a tool among them
		calls  int    // calls written as exec_command
	}{
		{"claude-code/dmux__eef6c282__a9185eb7.jsonl", "I want claude sessions to optionally start with the --dangerously-skip-permissions flag", 26, "Edit", 24},
		{"pi/pi-mono__large-session.jsonl", "/mode", 149, "edit", 242},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(datasets.Dir(t), c.file)
			cl := newCLI(t)
			storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
			root := t.TempDir()
			work, home, cxHome := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "codex-home")
			for _, d := range []string{work, home} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tip := xhImport(t, cl, storeURL, src)["tip"].(string)
			cm := xhMaterialize(t, cl, storeURL, []string{"CODEX_HOME=" + cxHome}, tip, "--format", "codex", "--place", "--cwd", work, "--stop", "root")
			if l, _ := cm["lost"].(map[string]any); fmt.Sprint(l["as_text"]) != fmt.Sprint(c.asText) || l["unanswered"] != nil {
				t.Errorf("lost: %v, want %d calls as text and none unanswered", cm["lost"], c.asText)
			}
			log := filepath.Join(root, "codex.jsonl")
			r := startScriptedResponses(t, log, cxScript(map[string][]piStep{"DS-Q": {{Text: "DS-A: resumed."}}}))
			codexHome(t, cxHome, r.srv.URL)
			if out := runCodex(t, work, cxHome, home, "resume", cm["session"].(string), "DS-Q: go on."); !strings.Contains(out, "DS-A") {
				t.Fatalf("codex exec resume: %s", out)
			}
			first := cxRequestWith(t, log, "DS-Q")
			xhInOrder(t, "Codex's first request", first, "user text: "+c.first,
				"function_call ", " exec_command: {\"cmd\":", "function_call_output ",
				"assistant text: [I called the tool "+c.text, "user text: [Result of the tool call "+c.text,
				"user text: DS-Q: go on.")
			if calls, outputs := strings.Count(first, "\nfunction_call "), strings.Count(first, "\nfunction_call_output "); calls != c.calls || outputs != c.calls {
				t.Errorf("%d function calls and %d outputs, want %d of each", calls, outputs, c.calls)
			}
			if n := strings.Count(first, "assistant text: [I called the tool "); n != c.asText {
				t.Errorf("%d calls as text, want %d", n, c.asText)
			}
		})
	}
}

// codexRollouts are the rollouts under a CODEX_HOME's sessions tree.
func codexRollouts(t *testing.T, cxHome string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cxHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCodexCompaction: the real Codex compacts a session on its own,
// offline. Its configuration sets model_auto_compact_token_limit, and the
// scripted Responses endpoint reports more input tokens than that until
// Codex has asked for its compaction (a request whose last user message
// is Codex's compaction prompt, answered with a summary): Codex then
// writes a `compacted` line holding the summary and its replacement
// history, and the turn goes on. `codex exec resume` continues from the
// compaction (its request holds the summary and not the turn it
// replaced). The rollout, imported, holds a compaction commit whose lines
// are the file's from the compacted line on, materializes to the file's
// bytes, and decodes the compacted line as a compaction summary followed
// by its replacement history.
func TestCodexCompaction(t *testing.T) {
	t.Parallel()
	codexCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home, cxHome := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "codex-home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const prompt = "CONTEXT CHECKPOINT COMPACTION"
	script := cxScript(map[string][]piStep{
		"CX-Q1": {
			{Tool: "exec_command", Args: map[string]any{"cmd": "echo hello-before-compaction"}, ID: "call_c1"},
			{Text: "CX-A1: it said hello."},
		},
		prompt:       {{Text: "CX-SUMMARY: the command printed hello-before-compaction."}},
		"CX-SUMMARY": {{Text: "CX-A1b: going on after the compaction."}},
		"CX-Q2":      {{Text: "CX-A2: resumed after the compaction."}},
	})
	log := filepath.Join(root, "responses.jsonl")
	var mu sync.Mutex
	compacted := false
	m := startScriptedResponses(t, log, func(req responsesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		for _, in := range req.Input {
			compacted = compacted || (in.Type == "message" && strings.Contains(responsesText(in.Content), prompt))
		}
		return script(req)
	})
	m.tokens = func(responsesRequest) int {
		mu.Lock()
		defer mu.Unlock()
		if compacted {
			return 1000
		}
		return 150000
	}
	codexHome(t, cxHome, m.srv.URL)
	cfg, err := os.ReadFile(filepath.Join(cxHome, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg = append([]byte("model_auto_compact_token_limit = 100000\nmodel_context_window = 400000\n"), cfg...)
	if err := os.WriteFile(filepath.Join(cxHome, "config.toml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	runCodex(t, work, cxHome, home, "CX-Q1: run a command.")
	files := codexRollouts(t, cxHome)
	if len(files) != 1 {
		t.Fatalf("rollouts: %v", files)
	}
	if out := runCodex(t, work, cxHome, home, "resume", "--last", "CX-Q2: and now?"); !strings.Contains(out, "CX-A2") {
		t.Fatalf("codex exec resume: %s", out)
	}
	if n := len(rawRequests(t, log, prompt)); n == 0 {
		t.Fatal("Codex never asked for a compaction")
	}
	// Resumed from the compaction: the summary, not the command's output.
	resumed := cxRequestWith(t, log, "CX-Q2")
	xhInOrder(t, "Codex's request after resuming", resumed, "CX-Q1: run a command.", "CX-SUMMARY: the command printed", "CX-Q2: and now?")
	if strings.Contains(resumed, "function_call_output call_c1") {
		t.Errorf("the resumed request still holds the compacted turn:\n%s", resumed)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var compactedLine string
	for _, l := range strings.SplitAfter(string(raw), "\n") {
		if strings.Contains(l, `"type":"compacted"`) && compactedLine == "" {
			compactedLine = l
		}
	}
	if !strings.Contains(compactedLine, `"replacement_history":[`) || !strings.Contains(compactedLine, "CX-SUMMARY") {
		t.Fatalf("no compacted line with a replacement history in the rollout: %.2000s", compactedLine)
	}

	imp := xhImport(t, c, storeURL, files[0])
	tip, _ := imp["tip"].(string)
	if imp["format"] != "codex-v1" {
		t.Fatalf("import: %v", imp)
	}
	if back := xhMaterialize(t, c, storeURL, nil, tip, "--stop", "root"); back["content"] != string(raw) {
		t.Error("the imported rollout does not materialize to its bytes")
	}
	// From the last compaction (the default stop): the file's lines from
	// a compacted line on, byte for byte.
	fromC := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, tip)["content"])
	if !strings.HasSuffix(string(raw), fromC) || !strings.HasPrefix(fromC, `{"timestamp"`) || !strings.Contains(strings.SplitN(fromC, "\n", 2)[0], `"type":"compacted"`) {
		t.Errorf("materialized from the compaction: %.600s", fromC)
	}
	ev := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, tip, "--format", "events", "--stop", "root")["content"])
	xhInOrder(t, "the rollout as events", ev, "CX-Q1: run a command.", "hello-before-compaction",
		`"subtype":"compaction_summary"`, "CX-SUMMARY", "codex_replacement_history", "CX-A1b", "CX-Q2: and now?", "CX-A2:")
}

// TestCodexSubagentImport: the real Codex spawns a sub-agent (its
// spawn_agent tool, namespace multi_agent_v1) and waits for it; Codex
// writes the sub-agent's rollout beside its own. `ctxstore import` of the
// sessions tree links the sub-agent's chain to the parent's commit
// holding the spawn_agent call.
func TestCodexSubagentImport(t *testing.T) {
	t.Parallel()
	codexCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home, cxHome := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "codex-home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	agent := ""
	base := cxScript(map[string][]piStep{
		"CX-SUB": {
			{Tool: "multi_agent_v1.spawn_agent", Args: map[string]any{"message": "SUB-Q: say hi"}, ID: "call_spawn"},
			{Tool: "multi_agent_v1.wait_agent", ID: "call_wait"},
			{Text: "CX-A-SUB: the sub-agent answered."},
		},
		"SUB-Q": {{Text: "SUB-A: hi from the sub-agent."}},
	})
	log := filepath.Join(root, "responses.jsonl")
	m := startScriptedResponses(t, log, func(req responsesRequest) piStep {
		mu.Lock()
		defer mu.Unlock()
		for _, in := range req.Input {
			var out struct {
				AgentID string `json:"agent_id"`
			}
			var s string
			if in.Type == "function_call_output" && in.CallID == "call_spawn" && json.Unmarshal(in.Output, &s) == nil && json.Unmarshal([]byte(s), &out) == nil {
				agent = out.AgentID
			}
		}
		st := base(req)
		if st.ID == "call_wait" {
			st.Args = map[string]any{"targets": []string{agent}, "timeout_ms": 60000}
		}
		return st
	})
	codexHome(t, cxHome, m.srv.URL)
	if out := runCodex(t, work, cxHome, home, "CX-SUB: use a sub-agent."); !strings.Contains(out, "CX-A-SUB") {
		t.Fatalf("codex exec: %s", out)
	}
	files := codexRollouts(t, cxHome)
	if len(files) != 2 || agent == "" {
		t.Fatalf("rollouts %v, agent %q", files, agent)
	}
	r := c.run("", "--store", storeURL, "--json", "import", filepath.Join(cxHome, "sessions"))
	if r.code != 0 {
		t.Fatalf("import: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var res struct {
		Files []struct {
			Path     string `json:"path"`
			Parent   string `json:"parent"`
			Tip      string `json:"tip"`
			Problems []any  `json:"problems"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Files) != 2 {
		t.Fatalf("import --json: %v %s", err, r.stdout)
	}
	for _, f := range res.Files {
		isSub := strings.HasSuffix(f.Path, agent+".jsonl")
		if len(f.Problems) != 0 || isSub != (f.Parent != "") {
			t.Fatalf("file %+v", f)
		}
		if !isSub {
			continue
		}
		fork := xhMaterialize(t, c, storeURL, nil, f.Parent, "--stop", "root")
		if fc := fmt.Sprint(fork["content"]); !strings.Contains(fc, `"name":"spawn_agent"`) || !strings.Contains(fc, agent) {
			t.Errorf("the sub-agent's fork point holds: %.1500s", fc)
		}
		ev := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, f.Tip, "--format", "events", "--stop", "root")["content"])
		xhInOrder(t, "the sub-agent's chain as events", ev, "CX-SUB: use a sub-agent.", `"name":"spawn_agent"`, "SUB-Q: say hi", "SUB-A: hi from the sub-agent.")
	}
}
