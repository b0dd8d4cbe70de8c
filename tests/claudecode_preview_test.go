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

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/store"
)

// TestClaudeCodePreviews: with ctxstore's hooks installed (previews on by
// default), the real Claude Code CLI runs a Bash command whose output is
// past the preview size; the request that follows carries a preview naming
// the spill file, not the output; the scripted model reads the spill file
// with Claude Code's Read and gets the whole output (docs/claude-code.md,
// "Previews").
func TestClaudeCodePreviews(t *testing.T) {
	t.Parallel()
	e := newCCLive(t, "")
	spillDir := filepath.Join(e.dir, ".ctxstore", "spill")
	var spillFile string
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), previewScript(spillDir, &spillFile))
	out := e.claude("Count to 5000.", "--allowedTools", "Read")
	if last := out[len(out)-1]; last["result"] != "Done." {
		t.Fatalf("claude's result: %v", last)
	}
	checkPreviews(t, e.model.log, spillDir, spillFile)
	// The hook said the Read was the output's activation (its report is
	// in the transcript's hook attachments).
	sid, _ := out[len(out)-1]["session_id"].(string)
	transcript, _ := e.transcripts(sid)
	tb, _ := os.ReadFile(transcript)
	if !strings.Contains(string(tb), `\"activated\":\"`+previewBashID+`\"`) {
		t.Errorf("no hook reported the Read as the activation of %s", previewBashID)
	}
	// The transcript records the preview (what the model saw), and the
	// hooks brought the transcript into the store byte for byte.
	if !strings.Contains(string(tb), "left out here; Read "+spillFile) {
		t.Error("the transcript does not record the preview")
	}
	if fc, err := readChain(t, e.store, transcript); err != nil || !bytes.Equal(fc.content, tb) {
		t.Errorf("the store's chain is not the transcript: %v", err)
	}
	checkKeptWhole(t, e.store, sid, spillFile)
}

// checkKeptWhole: with the spill directory gone, the store still holds
// the Bash output whole as its call's object, with the model's Read of the
// spill file recorded on it as an activation, which the inspector's
// paging counts; the session's calls show what the model saw (the
// preview), not the whole.
func checkKeptWhole(t *testing.T, storePath, sid, spillFile string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(spillFile))); err != nil {
		t.Fatal(err)
	}
	var whole strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&whole, "%d\n", i)
	}
	ctx := context.Background()
	st, err := bitemporal.Open(ctx, storePath, bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc, err := st.Entity(ctx, previewBashID, store.Basis{})
	if err != nil {
		t.Fatalf("the Bash output is not in the store: %v", err)
	}
	if doc["content"] != strings.TrimSuffix(whole.String(), "\n") || doc["type"] != "toolcall" || doc["tool"] != "Bash" || doc["chat_ref"] != "chat:"+sid {
		t.Errorf("the store's object of the Bash output: %.300v", doc)
	}
	if p, _ := doc["preview"].(map[string]any); p["file"] != spillFile || p["session"] != sid {
		t.Errorf("the object's preview link: %v", doc["preview"])
	}
	acts, _ := doc["activations"].([]any)
	if len(acts) != 1 || acts[0].(map[string]any)["call"] != previewReadID {
		t.Errorf("the object's activations: %v, want the Read %s", acts, previewReadID)
	}
	if out, err := exec.Command(ctxstoreBin, "--store", "sqlite:"+storePath, "object", previewBashID).Output(); err != nil ||
		!strings.Contains(string(out), "(toolcall") || !strings.Contains(string(out), ": 2 versions") {
		t.Errorf("object %s (the output, then its activation): %v\n%s", previewBashID, err, out)
	}
	in := inspect.New(st, inspect.Options{})
	pg, err := in.Paging(ctx, sid)
	if err != nil || pg.Previews != 1 || pg.Faulted != 1 || pg.BySpillRead != 1 || len(pg.Faults) != 1 ||
		pg.Faults[0].CallID != previewReadID || pg.Faults[0].Output != previewBashID || pg.Faults[0].Call == 0 {
		t.Errorf("the session's paging: %+v %v", pg, err)
	}
	// The calls show the preview the model saw: the request that carries
	// the Bash result holds the note, not the output's middle.
	out, err := exec.Command(ctxstoreBin, "--store", "sqlite:"+storePath, "calls", sid, "--json").Output()
	if err != nil {
		t.Fatalf("calls: %v", err)
	}
	var calls []struct {
		N int `json:"call"`
	}
	json.Unmarshal(out, &calls)
	sawPreview := false
	for _, c := range calls {
		raw, err := exec.Command(ctxstoreBin, "--store", "sqlite:"+storePath, "call", sid, fmt.Sprint(c.N), "--raw").Output()
		if err != nil {
			t.Fatalf("call %d --raw: %v", c.N, err)
		}
		if strings.Contains(string(raw), "left out here; Read "+spillFile) {
			sawPreview = true
		}
	}
	if !sawPreview {
		t.Errorf("no call of %s shows the preview (calls: %s)", sid, out)
	}
}

// TestClaudeCodeRunPreviews: `ctxstore claude-code run` in a project with
// no install gives its Claude Code process the hooks: the large output
// enters as a preview whose spill file (under ~/.ctxstore/spill, made one
// of Claude Code's working directories) the model reads without a
// permission, and the session is recorded in ~/.ctxstore/store.db.
// With --no-hooks and --no-managed (the proxy would make the preview
// itself) the output reaches the model whole.
func TestClaudeCodeRunPreviews(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	home, work := t.TempDir(), t.TempDir()
	spillDir := filepath.Join(home, ".ctxstore", "spill")
	var spillFile string
	m := startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), previewScript(spillDir, &spillFile))
	run := func(flags ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		args := append(append([]string{"claude-code", "run", "--claude", cli}, flags...), "--", "-p", "Count to 5000.", "--allowedTools", "Bash", "--output-format", "json")
		cmd := exec.CommandContext(ctx, ctxstoreBin, args...)
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
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("claude's output %q: %v", stdout.String(), err)
		}
		return res
	}
	res := run()
	if res["result"] != "Done." {
		t.Fatalf("claude's result through run: %v", res)
	}
	checkPreviews(t, m.log, spillDir, spillFile)
	sid, _ := res["session_id"].(string)
	transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", sid+".jsonl"))
	if len(transcripts) != 1 {
		t.Fatalf("the session's transcript: %v", transcripts)
	}
	fc, err := readChain(t, filepath.Join(home, ".ctxstore", "store.db"), transcripts[0])
	if err != nil || len(fc.content) == 0 || !strings.Contains(string(fc.content), "left out here; Read "+spillFile) {
		t.Errorf("the store does not hold the session run recorded: %v", err)
	}

	if res := run("--no-hooks", "--no-managed"); res["result"] != "no preview" {
		t.Errorf("with --no-hooks and --no-managed, the model was not sent the output whole: %v", res)
	}
}

const previewBashID, previewReadID = "toolu_prev_bash", "toolu_prev_read"

// previewResult returns the text of tool call id's result in req.
func previewResult(req messagesRequest, id string) (string, bool) {
	for _, msg := range req.Messages {
		bs, _ := messagesBlocks(msg.Content)
		for _, b := range bs {
			if b.Type == "tool_result" && b.ToolUseID == id {
				var s string
				if json.Unmarshal(b.Content, &s) != nil {
					inner, _ := messagesBlocks(b.Content)
					for _, x := range inner {
						s += x.Text
					}
				}
				return s, true
			}
		}
	}
	return "", false
}

// previewScript is the scripted model of the preview tests: Bash `seq 1
// 5000` (23,893 characters), then a Read of the spill file the preview
// names (its path in *spillFile), then "Done."; "no preview" when the
// output came whole.
func previewScript(spillDir string, spillFile *string) func(messagesRequest) piStep {
	return func(req messagesRequest) piStep {
		if len(req.Tools) == 0 {
			return piStep{Text: "ok"} // Claude Code's side requests (titles)
		}
		if _, ok := previewResult(req, previewReadID); ok {
			return piStep{Text: "Done."}
		}
		if s, ok := previewResult(req, previewBashID); ok {
			i := strings.Index(s, "Read "+spillDir+"/")
			if i < 0 {
				return piStep{Text: "no preview"}
			}
			*spillFile = strings.Fields(s[i+len("Read "):])[0]
			return piStep{Tool: "Read", Args: map[string]any{"file_path": *spillFile}, ID: previewReadID}
		}
		return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 5000", "description": "count"}, ID: previewBashID}
	}
}

// checkPreviews reads the scripted endpoint's log: the Bash output was sent
// as a preview naming spillFile, in spillDir; the Read of it sent the
// whole output; the spill file holds it.
func checkPreviews(t *testing.T, log, spillDir, spillFile string) {
	t.Helper()
	var whole strings.Builder
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&whole, "%d\n", i)
	}
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var sawPreview, sawWhole bool
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var req messagesRequest
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		if s, ok := previewResult(req, previewBashID); ok {
			sawPreview = true
			if len(s) > 4500 || strings.Contains(s, "\n2500\n") || !strings.HasPrefix(s, "1\n2\n3\n") || !strings.HasSuffix(strings.TrimSpace(s), "4999\n5000") ||
				!strings.Contains(s, "left out here; Read "+spillDir) {
				t.Errorf("the Bash output the model was sent (%d bytes) is not a preview naming the spill file: %.300q…%.200q", len(s), s, s[max(0, len(s)-200):])
			}
		}
		if s, ok := previewResult(req, previewReadID); ok {
			// Claude Code's Read numbers the lines: "     N\tN".
			sawWhole = true
			for _, n := range []int{1, 2500, 4321, 5000} {
				if !strings.Contains(s, fmt.Sprintf("%d\t%d\n", n, n)) && !strings.HasSuffix(s, fmt.Sprintf("%d\t%d", n, n)) {
					t.Errorf("the Read of the spill file lacks line %d: %.200q", n, s)
					break
				}
			}
			if strings.Contains(s, "[ctxstore]") {
				t.Errorf("the Read of the spill file was cut again: %.300q", s)
			}
		}
	}
	if !sawPreview || !sawWhole {
		t.Fatalf("requests with the Bash result: %v; with the Read of %q: %v", sawPreview, spillFile, sawWhole)
	}
	// Claude Code gives Bash's stdout without its last newline.
	if b, err := os.ReadFile(spillFile); err != nil || string(b) != strings.TrimSuffix(whole.String(), "\n") {
		t.Errorf("the spill file %s: %v (%d bytes, want %d)", spillFile, err, len(b), whole.Len()-1)
	}
	if !strings.HasPrefix(spillFile, spillDir+string(filepath.Separator)) || filepath.Base(spillFile) != previewBashID+".txt" {
		t.Errorf("spill file %s, want %s/<session>/%s.txt", spillFile, spillDir, previewBashID)
	}
}

// TestClaudeCodeUserInstallReadsSpill: after `claude-code install --user`
// the spill directory is ~/.ctxstore/spill, outside the project, and the
// real Claude Code (print mode, Read not among --allowedTools) lets the
// model Read the spill file because of the rule install wrote; with that
// rule taken out of the settings the same Read is denied. Uninstall then
// leaves no settings behind.
func TestClaudeCodeUserInstallReadsSpill(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	ctxstore := func(args ...string) {
		t.Helper()
		cmd := exec.Command(ctxstoreBin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "CTXSTORE_URL=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ctxstore %v: %v\n%s", args, err, out)
		}
	}
	ctxstore("claude-code", "install", "--user", "--no-mcp")
	e := &ccLive{t: t, cli: claudeCLI(t), dir: work, home: home, store: filepath.Join(home, ".ctxstore", "store.db"), checked: map[string]string{}}
	spillDir := filepath.Join(home, ".ctxstore", "spill")
	var spillFile string
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), previewScript(spillDir, &spillFile))
	if out := e.claude("Count to 5000."); out[len(out)-1]["result"] != "Done." {
		t.Fatalf("claude's result: %v", out[len(out)-1])
	}
	checkPreviews(t, e.model.log, spillDir, spillFile)

	// The rule taken out: Claude Code denies the Read (print mode asks
	// no one), so the model is not sent the output whole.
	settings := filepath.Join(home, ".claude", "settings.json")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil || v["permissions"] == nil {
		t.Fatalf("settings after install --user: %v %s", err, b)
	}
	delete(v, "permissions")
	b, _ = json.Marshal(v)
	if err := os.WriteFile(settings, b, 0o644); err != nil {
		t.Fatal(err)
	}
	spillFile = ""
	e.model = startScriptedMessages(t, nil, filepath.Join(t.TempDir(), "requests.jsonl"), previewScript(spillDir, &spillFile))
	e.claude("Count to 5000.")
	raw, err := os.ReadFile(e.model.log)
	if err != nil {
		t.Fatal(err)
	}
	sawRead := false
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var req messagesRequest
		if json.Unmarshal([]byte(line), &req) != nil {
			continue
		}
		if s, ok := previewResult(req, previewReadID); ok {
			sawRead = true
			if strings.Contains(s, "2500\t2500") {
				t.Errorf("without the rule the Read still returned the output: %.200q", s)
			}
		}
	}
	if !sawRead || spillFile == "" {
		t.Errorf("the control run never tried the Read (spill file %q)", spillFile)
	}
	ctxstore("claude-code", "uninstall", "--user")
	if _, err := os.Stat(settings); !os.IsNotExist(err) {
		t.Errorf("settings left after uninstall: %v", err)
	}
}
