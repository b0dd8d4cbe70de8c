package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/store"
)

// compactSummary is what the scripted model answers Claude Code's
// compaction request with; the conversation after it starts with it.
const compactSummary = "COUNTING SUMMARY: the numbers were counted."

// isCompaction reports whether a request is Claude Code's compaction
// request: a message of it asks for the conversation's summary.
func isCompaction(req messagesRequest) bool {
	for _, m := range req.Messages {
		if strings.Contains(string(m.Content), "Your task is to create a detailed summary of the conversation so far") {
			return true
		}
	}
	return false
}

// afterCompaction reports whether a request belongs to the conversation
// that compaction started (its history begins with the summary).
func afterCompaction(req messagesRequest) bool {
	for _, m := range req.Messages {
		if strings.Contains(string(m.Content), compactSummary) {
			return true
		}
	}
	return false
}

// claudeRun runs `ctxstore claude-code run` (print mode, JSON output) with
// the real Claude Code against the endpoint at url, run's flags before
// `--` and claude's after the prompt; env adds to the environment.
func claudeRun(t *testing.T, cli, home, work, url string, env, flags []string, prompt string, cargs ...string) (map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	args := append(append(append([]string{"claude-code", "run", "--claude", cli, "--warm", "off"}, flags...),
		"--", "-p", prompt, "--allowedTools", "Bash", "--output-format", "json"), cargs...)
	cmd := exec.CommandContext(ctx, ctxstoreBin, args...)
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=sk-ant-offline-test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CTXSTORE_CLAUDE_CODE_UPSTREAM=",
		"CTXSTORE_URL=", "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=", "XDG_CACHE_HOME="+filepath.Join(home, ".cache")), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude-code run %v: %v\n%s\n%s", args, err, stdout.String(), stderr.String())
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("claude's output %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	return res, stderr.String()
}

// spillRef is the spill file a collapsed line or preview names.
var spillRef = regexp.MustCompile(`\[ctxstore\][^\n]*?Read (/[^ \n"\\]+)`)

// checkSpillRefs fails when a request names a spill file that does not
// exist or does not hold the whole output (every output of these tests is
// `seq 1 2000`'s). It returns how many it checked.
func checkSpillRefs(t *testing.T, i int, r loggedRequest, whole []byte) int {
	t.Helper()
	n := 0
	for _, msg := range r.req.Messages {
		for _, m := range spillRef.FindAllStringSubmatch(string(msg.Content), -1) {
			n++
			b, err := os.ReadFile(m[1])
			if err != nil {
				t.Errorf("request %d names spill file %s: %v", i, m[1], err)
				continue
			}
			if strings.TrimSpace(string(b)) != strings.TrimSpace(string(whole)) {
				t.Errorf("request %d names spill file %s, which holds %d bytes, not the whole output (%d)", i, m[1], len(b), len(whole))
			}
		}
	}
	return n
}

// checkRequest fails on a request the Messages API checker refuses, but
// for one finding it only logs: an empty system-role message, which Claude
// Code 2.1.332 itself writes after a compaction (the boundary it leaves in
// the history; the same request without managed mode carries it too; the
// proxy changes only tool_result contents and breakpoints).
func checkRequest(t *testing.T, i int, r loggedRequest) {
	t.Helper()
	line, _ := json.Marshal(r.raw)
	for _, err := range apicheck.Check(line) {
		var k int
		if _, e := fmt.Sscanf(err.Error(), "messages[%d]: empty content", &k); e == nil && k < len(r.req.Messages) &&
			r.req.Messages[k].Role == "system" && string(r.req.Messages[k].Content) == "[]" {
			t.Logf("request %d: Claude Code's own empty system-role message after compaction: %v", i, err)
			continue
		}
		t.Errorf("request %d breaks the Messages API's rules: %v", i, err)
	}
}

// TestClaudeCodeManagedCompact: a managed session whose old outputs
// collapsed is compacted with `/compact` (`claude -p /compact --resume`
// through a new run: print mode runs the command), then resumed again.
// From the endpoint's log: the compaction request (the managed history,
// collapsed lines included, and Claude Code's summary instructions) passes
// the Messages API checker; the conversation after it is a new managed
// stream (it starts with the summary, none of the old tool results, and
// the store keeps it as a conversation of its own); every collapsed line
// or preview of any request names a spill file that exists and holds the
// output whole; and the session goes on: a Bash, and a Read of an old
// output's spill file answered whole.
func TestClaudeCodeManagedCompact(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	home, work := t.TempDir(), t.TempDir()
	spillDir := filepath.Join(home, ".ctxstore", "spill")
	var spillFile string
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	before := managedScript(spillDir, &spillFile)
	respond := func(req messagesRequest) piStep {
		if isCompaction(req) {
			return piStep{Text: "<analysis>counting</analysis>\n<summary>" + compactSummary + "</summary>"}
		}
		if len(req.Tools) == 0 || req.MaxTokens == 1 || !afterCompaction(req) {
			return before(req)
		}
		if _, ok := previewResult(req, "toolu_post_bash"); !ok {
			return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 2000", "description": "count"}, ID: "toolu_post_bash"}
		}
		if _, ok := previewResult(req, "toolu_post_read"); !ok && spillFile != "" {
			return piStep{Tool: "Read", Args: map[string]any{"file_path": spillFile}, ID: "toolu_post_read"}
		}
		return piStep{Text: "Done after compaction."}
	}
	m := startScriptedMessages(t, nil, log, respond)
	ttl := []string{"--cache-ttl", "2s"}
	res, stderr := claudeRun(t, cli, home, work, m.srv.URL, nil, ttl, "Count, again and again.")
	if res["result"] != "Done." {
		t.Fatalf("claude's result through the managed proxy: %v\n%s", res["result"], stderr)
	}
	sid, _ := res["session_id"].(string)
	n1 := len(readRequestLog(t, log))
	res, stderr = claudeRun(t, cli, home, work, m.srv.URL, nil, ttl, "/compact", "--resume", sid)
	if res["is_error"] != false || res["local_command"] != "compact" {
		t.Fatalf("/compact: %v\n%s", res, stderr)
	}
	n2 := len(readRequestLog(t, log))
	res, stderr = claudeRun(t, cli, home, work, m.srv.URL, nil, ttl, "Count once more.", "--resume", sid, "--allowedTools", "Read")
	if res["result"] != "Done after compaction." || res["session_id"] != sid {
		t.Fatalf("the session after compaction: %v\n%s", res, stderr)
	}
	whole, err := exec.Command("seq", "1", "2000").Output()
	if err != nil {
		t.Fatal(err)
	}
	reqs := readRequestLog(t, log)
	compactions, after, named := 0, 0, 0
	var read string
	for i, r := range reqs {
		checkRequest(t, i, r)
		named += checkSpillRefs(t, i, r, whole)
		switch {
		case i >= n1 && i < n2:
			if !isCompaction(r.req) {
				t.Errorf("request %d of /compact is not the compaction request", i)
			}
			if !strings.Contains(string(mustJSON(r.raw)), "[ctxstore] output collapsed") {
				t.Errorf("the compaction request %d does not carry the managed history (no collapsed line)", i)
			}
			compactions++
		case i >= n2:
			if !afterCompaction(r.req) {
				t.Errorf("request %d after /compact does not start from the summary", i)
			}
			if _, ok := previewResult(r.req, "toolu_mg_1"); ok {
				t.Errorf("request %d after /compact still carries the old tool results", i)
			}
			if s, ok := previewResult(r.req, "toolu_post_read"); ok {
				read = s
			}
			after++
		}
	}
	if compactions == 0 || after == 0 || named == 0 {
		t.Fatalf("%d compaction requests, %d after it, %d spill files named: want each > 0", compactions, after, named)
	}
	if !strings.Contains(read, "\t2000") || strings.Contains(read, "[ctxstore]") {
		t.Errorf("after compaction, the Read of %s was not answered whole: %.300q", spillFile, read)
	}
	st, err := bitemporal.Open(context.Background(), filepath.Join(home, ".ctxstore", "store.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	convs, err := st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", "ccproxy_conversation"), store.Where("session_id", sid)}})
	st.Close()
	if err != nil || len(convs) < 2 {
		t.Errorf("the store keeps %d conversations of the session, want the one before compaction and the one after: %v", len(convs), err)
	}
	t.Logf("%d requests (%d compaction, %d after it), %d spill files named, %d conversations", len(reqs), compactions, after, named, len(convs))
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// autoCompactOutputs is how many large outputs the auto-compaction test's
// model asks for, at most, before it answers.
const autoCompactOutputs = 14

// autoCompactEnv makes Claude Code 2.1.332 compact on its own at about
// 40,000 tokens: its auto-compaction window (at least 100,000 tokens), of
// which CLAUDE_AUTOCOMPACT_PCT_OVERRIDE percent.
var autoCompactEnv = []string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50"}

// autoCompactAt runs one session of the real Claude Code through `run`
// (flags: run's, e.g. --no-managed) with autoCompactEnv, the endpoint
// reporting as input tokens the request it received (its bytes / 4: the
// managed request when managed, as the API would count it), and the model
// asking for `seq 1 2000` again and again (about 2,800 tokens each), with
// pauses past the 2 s cache from the fifth on so that collapses apply. It
// returns how many outputs the conversation held when Claude Code
// compacted it on its own (0: never), the result, and the log's requests.
func autoCompactAt(t *testing.T, cli string, flags []string) (int, any, []loggedRequest) {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	outputs := func(req messagesRequest) int {
		n := 0
		for n < autoCompactOutputs {
			if _, ok := previewResult(req, fmt.Sprintf("toolu_ac_%d", n+1)); !ok {
				break
			}
			n++
		}
		return n
	}
	respond := func(req messagesRequest) piStep {
		if isCompaction(req) {
			return piStep{Text: "<analysis>counting</analysis>\n<summary>" + compactSummary + "</summary>"}
		}
		if len(req.Tools) == 0 || req.MaxTokens == 1 {
			return piStep{Text: "ok"}
		}
		if afterCompaction(req) {
			return piStep{Text: "Done after compaction."}
		}
		n := outputs(req)
		if n == autoCompactOutputs {
			return piStep{Text: "Done."}
		}
		if n >= 4 {
			time.Sleep(2200 * time.Millisecond)
		}
		return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 2000", "description": "count"}, ID: fmt.Sprintf("toolu_ac_%d", n+1)}
	}
	m := startScriptedMessages(t, nil, log, respond)
	res, stderr := claudeRun(t, cli, home, work, m.srv.URL, autoCompactEnv, append([]string{"--cache-ttl", "2s"}, flags...), "Count, again and again.")
	reqs := readRequestLog(t, log)
	at := 0
	for i, r := range reqs {
		line := mustJSON(r.raw)
		t.Logf("%v request %d: %d outputs, %d tokens reported, compaction %v, collapsed %d", flags, i, outputs(r.req), len(line)/4,
			isCompaction(r.req), strings.Count(string(line), "[ctxstore] output collapsed"))
		if isCompaction(r.req) && at == 0 {
			at = outputs(r.req)
		}
	}
	t.Logf("%v: result %v, compacted at %d outputs\n%s", flags, res["result"], at, stderr)
	return at, res["result"], reqs
}

// TestClaudeCodeManagedAutoCompact: Claude Code compacts on its own when
// the usage the API reports nears its threshold (autoCompactEnv: about
// 40,000 tokens). The same scripted session, once with --no-managed and
// once managed, the endpoint reporting the tokens of the request it got:
// without managed mode Claude Code compacts after a handful of outputs;
// managed, the old outputs collapse to lines, the reported usage stops
// growing (a collapsed output costs about a hundred tokens), and Claude
// Code never compacts: the session ends with every output still in its
// history, the old ones a Read away. Every managed request passes the
// checker.
func TestClaudeCodeManagedAutoCompact(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	naive, result, _ := autoCompactAt(t, cli, []string{"--no-managed"})
	if naive == 0 || result != "Done after compaction." {
		t.Fatalf("without managed mode Claude Code did not compact on its own (result %v): the threshold is not where this test expects", result)
	}
	managed, result, reqs := autoCompactAt(t, cli, nil)
	if managed != 0 || result != "Done." {
		t.Errorf("managed, Claude Code compacted at %d outputs (without: %d), result %v; want never, all %d outputs done", managed, naive, result, autoCompactOutputs)
	}
	collapsed := false
	for i, r := range reqs {
		checkRequest(t, i, r)
		collapsed = collapsed || strings.Contains(string(mustJSON(r.raw)), "[ctxstore] output collapsed")
	}
	if !collapsed {
		t.Error("managed, no request collapsed an output")
	}
	t.Logf("auto-compaction: at %d outputs without managed mode, never with it (%d outputs)", naive, autoCompactOutputs)
}
