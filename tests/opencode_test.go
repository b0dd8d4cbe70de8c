package tests

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ctxstore/ctxstore/harness/claudecode"
)

// TestOpencodeCrossHarness: a session moves opencode -> Claude Code ->
// opencode through the store, each leg continued by the real CLI,
// offline. The real opencode (`opencode run`, its provider a scripted
// Messages API endpoint) runs a turn with a bash and a read call;
// `ctxstore import` reads its database (read-only) into an opencode-v1
// chain, whose native copy under a new session opencode resumes;
// materialized for Claude Code it is continued by `claude --resume` with
// a Bash call; Claude Code's transcript, materialized for opencode with
// --place (rows inserted into opencode's database), is continued by
// `opencode run --session`. At each step the model's first request of the
// new leg holds every earlier leg's messages, in order; the last import
// of the database holds them all.
func TestOpencodeCrossHarness(t *testing.T) {
	t.Parallel()
	oc := opencodeCLI(t)
	claudeCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	notes := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(notes, []byte("alpha-note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(oc, "--version").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != opencodeVersion {
		t.Fatalf("opencode --version: %v %s", err, out)
	}
	script := ocScript(map[string][]piStep{
		"OC-Q1": {
			{Tool: "bash", Args: map[string]any{"command": "echo hello-from-bash", "description": "Say hello"}, ID: "toolu_oc1"},
			{Tool: "read", Args: map[string]any{"filePath": notes}, ID: "toolu_oc2"},
			{Text: "OC-A1: the notes say alpha-note."},
		},
		"OC-Q0": {{Text: "OC-A0: the native copy."}},
		"CC-Q2": {
			{Tool: "Bash", Args: map[string]any{"command": "echo claude-was-here", "description": "Say so"}, ID: "toolu_cc1"},
			{Text: "CC-A2: Claude Code ran its own command."},
		},
		"OC-Q3": {{Text: "OC-A3: back in opencode."}},
	})
	log := filepath.Join(root, "messages.jsonl")
	m := startScriptedMessages(t, nil, log, script)
	opencodeConfig(t, work, m.srv.URL)
	db := opencodeDB(home)
	ocEnv := []string{"HOME=" + home, "XDG_DATA_HOME="}

	// 1. opencode, with a bash and a read call.
	if out := runOpencode(t, work, home, "OC-Q1: please look at the notes."); !strings.Contains(out, "OC-A1") {
		t.Fatalf("opencode run: %s", out)
	}
	sessions, status := ocImport(t, c, storeURL, db)
	if len(sessions) != 1 || status != "imported" {
		t.Fatalf("import of opencode's database: %s %v", status, sessions)
	}
	var sid1, c1 string
	for id, s := range sessions {
		sid1, c1 = id, fmt.Sprint(s["tip"])
		if fmt.Sprint(s["tool_calls"]) != "2" || fmt.Sprint(s["tool_results"]) != "2" || fmt.Sprint(s["prompts"]) != "1" {
			t.Errorf("session summary: %v", s)
		}
	}
	ev := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, c1, "--format", "events", "--stop", "root")["content"])
	xhInOrder(t, "opencode's session as events", ev, "OC-Q1", `"name":"bash"`, "hello-from-bash", `"name":"read"`, "alpha-note", "OC-A1")
	if again, status := ocImport(t, c, storeURL, db); status != "unchanged" || len(again) != 1 {
		t.Errorf("a second import of the unchanged database: %s %v", status, again)
	}

	// The native tier: the same rows under a new session, resumed.
	nm := xhMaterialize(t, c, storeURL, ocEnv, c1, "--format", "opencode", "--place", "--cwd", work)
	if nm["tier"] != "native" || nm["format"] != "opencode-v1" || nm["file"] != db || nm["session"] == sid1 {
		t.Fatalf("native materialize for opencode: %v", nm)
	}
	if out := runOpencode(t, work, home, "--session", fmt.Sprint(nm["session"]), "OC-Q0: again?"); !strings.Contains(out, "OC-A0") {
		t.Fatalf("opencode run --session (native copy): %s", out)
	}
	xhInOrder(t, "opencode's first request resuming the native copy", xhRequestWith(t, log, "OC-Q0"),
		"user text: ", "OC-Q1", "tool_use toolu_oc1 bash", "tool_result toolu_oc1: hello-from-bash",
		"tool_use toolu_oc2 read", "alpha-note", "assistant text: OC-A1", "OC-Q0: again?")

	// 2. Materialized for Claude Code, resumed there. opencode's bash and
	// read calls stay as recorded (Claude Code sees past calls of tools
	// it does not offer, as for Pi's).
	ccm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, c1, "--format", "claude-code", "--place", "--cwd", work)
	sid2, _ := ccm["session"].(string)
	if ccm["tier"] != "field" {
		t.Fatalf("materialize for Claude Code: %v", ccm)
	}
	if res := xhRunClaude(t, work, home, m.srv.URL, "-p", "CC-Q2: run something of your own.", "--resume", sid2, "--allowedTools", "Bash"); !strings.Contains(fmt.Sprint(res["result"]), "CC-A2") {
		t.Fatalf("claude --resume: %v", res)
	}
	xhInOrder(t, "Claude Code's first request after --resume", xhRequestWith(t, log, "CC-Q2"),
		"OC-Q1", "tool_use toolu_oc1 bash", "hello-from-bash", "tool_use toolu_oc2 read", "alpha-note", "OC-A1", "CC-Q2: run something of your own.")
	ccFile := filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid2+".jsonl")
	c2 := xhImport(t, c, storeURL, ccFile)["tip"].(string)

	// 3. Materialized for opencode with --place (rows into its database),
	// continued by opencode. Claude Code's Bash is opencode's bash.
	om := xhMaterialize(t, c, storeURL, ocEnv, c2, "--format", "opencode", "--place", "--cwd", work)
	sid3, _ := om["session"].(string)
	if om["tier"] != "field" || om["file"] != db || !strings.HasPrefix(sid3, "ses_") {
		t.Fatalf("materialize for opencode: %v", om)
	}
	if l, _ := om["lost"].(map[string]any); l["as_text"] != nil || l["unanswered"] != nil {
		t.Errorf("every call has an opencode counterpart; lost: %v", om["lost"])
	}
	if out := runOpencode(t, work, home, "--session", sid3, "OC-Q3: and now?"); !strings.Contains(out, "OC-A3") {
		t.Fatalf("opencode run --session: %s", out)
	}
	xhInOrder(t, "opencode's first request after Claude Code", xhRequestWith(t, log, "OC-Q3"),
		"OC-Q1", "tool_use toolu_oc1 bash", "hello-from-bash", "tool_use toolu_oc2 read", "alpha-note", "OC-A1",
		"CC-Q2: run something of your own.", `tool_use toolu_cc1 bash: {"command":"echo claude-was-here"`, "tool_result toolu_cc1: claude-was-here",
		"CC-A2", "OC-Q3: and now?")

	// The database imported again: the first session and the native copy
	// unchanged or grown by opencode's own updates, the new session
	// imported, holding all three legs.
	sessions, _ = ocImport(t, c, storeURL, db)
	s3, ok := sessions[sid3]
	if !ok || len(sessions) != 3 {
		t.Fatalf("sessions after the last leg: %v", sessions)
	}
	ev = fmt.Sprint(xhMaterialize(t, c, storeURL, nil, fmt.Sprint(s3["tip"]), "--format", "events", "--stop", "root")["content"])
	xhInOrder(t, "the last session as events", ev, "OC-Q1", "hello-from-bash", "alpha-note", "OC-A1", "CC-Q2", "claude-was-here", "CC-A2", "OC-Q3", "OC-A3")
}

// TestOpencodeImages: images cross opencode -> Claude Code -> opencode,
// each leg run by the real CLI offline. The real opencode runs a prompt
// with an image attached (`-f`) and reads the image with its read tool
// (the image an attachment of the tool's part, sent with its result);
// imported and materialized for Claude Code, `claude --resume` sends the
// read's image as an image block of its tool_result and the attached
// image as the note naming it; Claude Code's transcript, materialized for
// opencode, is continued by `opencode run --session`, whose request holds
// the read's image in its tool_result again (the completed part's
// attachment ctxstore wrote).
func TestOpencodeImages(t *testing.T) {
	t.Parallel()
	opencodeCLI(t)
	claudeCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	png, _ := base64.StdEncoding.DecodeString(pixel)
	pic := filepath.Join(work, "pic.png")
	if err := os.WriteFile(pic, png, 0o644); err != nil {
		t.Fatal(err)
	}
	script := ocScript(map[string][]piStep{
		"OC-IMG": {
			{Tool: "read", Args: map[string]any{"filePath": pic}, ID: "toolu_img1"},
			{Text: "OC-A1: a single pixel."},
		},
		"CC-Q2": {{Text: "CC-A2: Claude Code saw it."}},
		"OC-Q3": {{Text: "OC-A3: back in opencode."}},
	})
	log := filepath.Join(root, "messages.jsonl")
	m := startScriptedMessages(t, nil, log, script)
	opencodeConfig(t, work, m.srv.URL)
	db := opencodeDB(home)
	ocEnv := []string{"HOME=" + home, "XDG_DATA_HOME="}

	if out := runOpencode(t, work, home, "-f", pic, "--", "OC-IMG: look at the picture."); !strings.Contains(out, "OC-A1") {
		t.Fatalf("opencode run: %s", out)
	}
	// opencode itself sent both: the attachment in the prompt, the read's
	// image in its result.
	var sent bool
	for _, r := range rawRequests(t, log, "OC-IMG") {
		sent = sent || imageInToolResult(t, r, "toolu_img1", pixel)
	}
	if !sent {
		t.Fatal("opencode's own request holds no image in the read's result")
	}
	sessions, _ := ocImport(t, c, storeURL, db)
	var c1 string
	for _, s := range sessions {
		c1 = fmt.Sprint(s["tip"])
	}

	ccm := xhMaterialize(t, c, storeURL, []string{"HOME=" + home}, c1, "--format", "claude-code", "--place", "--cwd", work)
	sid2, _ := ccm["session"].(string)
	if res := xhRunClaude(t, work, home, m.srv.URL, "-p", "CC-Q2: what was it?", "--resume", sid2); !strings.Contains(fmt.Sprint(res["result"]), "CC-A2") {
		t.Fatalf("claude --resume: %v", res)
	}
	sent = false
	for _, r := range rawRequests(t, log, "CC-Q2") {
		sent = sent || imageInToolResult(t, r, "toolu_img1", pixel)
	}
	if !sent {
		t.Error("Claude Code's request holds no image in the read's result")
	}
	xhInOrder(t, "Claude Code's first request after --resume", xhRequestWith(t, log, "CC-Q2"),
		"[image: image/png, 72 bytes]", "OC-IMG: look at the picture.", "tool_use toolu_img1 read", "tool_result toolu_img1: Image read successfully", "OC-A1", "CC-Q2")
	ccFile := filepath.Join(home, ".claude", "projects", claudecode.ProjectDir(work), sid2+".jsonl")
	c2 := xhImport(t, c, storeURL, ccFile)["tip"].(string)

	om := xhMaterialize(t, c, storeURL, ocEnv, c2, "--format", "opencode", "--place", "--cwd", work)
	sid3, _ := om["session"].(string)
	if out := runOpencode(t, work, home, "--session", sid3, "OC-Q3: and now?"); !strings.Contains(out, "OC-A3") {
		t.Fatalf("opencode run --session: %s", out)
	}
	sent = false
	for _, r := range rawRequests(t, log, "OC-Q3") {
		sent = sent || imageInToolResult(t, r, "toolu_img1", pixel)
	}
	if !sent {
		t.Error("opencode's request after Claude Code holds no image in the read's result")
	}
}

// TestOpencodeSubagentImport: the real opencode runs a task call, which
// starts a sub-agent session (parent_id set); `ctxstore import` of its
// database forks the sub-agent's chain at the parent's commit holding the
// task call, and the sub-agent's chain reads as the parent's turn up to
// the call, then the sub-agent's conversation.
func TestOpencodeSubagentImport(t *testing.T) {
	t.Parallel()
	opencodeCLI(t)
	c := newCLI(t)
	storeURL := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	root := t.TempDir()
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := ocScript(map[string][]piStep{
		"OC-SUB": {
			{Tool: "task", Args: map[string]any{"description": "Look around", "prompt": "SUB-Q: list the folder", "subagent_type": "general"}, ID: "toolu_task1"},
			{Text: "OC-A-SUB: the sub-agent answered."},
		},
		"SUB-Q": {{Text: "SUB-A: nothing here."}},
	})
	m := startScriptedMessages(t, nil, filepath.Join(root, "messages.jsonl"), script)
	opencodeConfig(t, work, m.srv.URL)
	if out := runOpencode(t, work, home, "OC-SUB: ask a sub-agent."); !strings.Contains(out, "OC-A-SUB") {
		t.Fatalf("opencode run: %s", out)
	}
	sessions, _ := ocImport(t, c, storeURL, opencodeDB(home))
	if len(sessions) != 2 {
		t.Fatalf("sessions %v", sessions)
	}
	var sub map[string]any
	for _, s := range sessions {
		if s["parent"] != nil {
			if sub != nil {
				t.Fatalf("two sub-agent sessions: %v", sessions)
			}
			sub = s
		}
	}
	if sub == nil {
		t.Fatalf("no session forked from its parent: %v", sessions)
	}
	fork := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, fmt.Sprint(sub["parent"]), "--stop", "root")["content"])
	if !strings.Contains(fork, "toolu_task1") || !strings.Contains(fork, fmt.Sprint(sub["session"])) {
		t.Errorf("the fork point holds: %.2000s", fork)
	}
	ev := fmt.Sprint(xhMaterialize(t, c, storeURL, nil, fmt.Sprint(sub["tip"]), "--format", "events", "--stop", "root")["content"])
	xhInOrder(t, "the sub-agent's chain as events", ev, "OC-SUB: ask a sub-agent.", `"name":"task"`, "SUB-Q: list the folder", "SUB-A: nothing here.")
}
