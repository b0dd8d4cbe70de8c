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
	"github.com/ctxstore/ctxstore/context/ccmanaged/apicheck"
	"github.com/ctxstore/ctxstore/store"
)

// managedCalls is how many large outputs the managed test's model asks for
// before it reads a collapsed one back.
const managedCalls = 8

// managedScript is the scripted model of TestClaudeCodeManaged: Bash
// `seq 1 2000` (8,893 characters) managedCalls times, then a Read of the
// spill file the first output's collapsed line names (its path in
// *spillFile), then one more Bash, then "Done." ("not collapsed" when no
// line names one).
func managedScript(spillDir string, spillFile *string) func(messagesRequest) piStep {
	return func(req messagesRequest) piStep {
		if len(req.Tools) == 0 || req.MaxTokens == 1 {
			return piStep{Text: "ok"}
		}
		if _, ok := previewResult(req, "toolu_mg_read"); ok {
			if _, ok := previewResult(req, "toolu_mg_last"); ok {
				return piStep{Text: "Done."}
			}
			return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 2000", "description": "count"}, ID: "toolu_mg_last"}
		}
		n := 0
		for n < managedCalls {
			if _, ok := previewResult(req, fmt.Sprintf("toolu_mg_%d", n+1)); !ok {
				break
			}
			n++
		}
		if n == managedCalls-1 {
			// A pause past the cache's lifetime before the last output:
			// the request that carries it finds the cache cold, and the
			// collapses waiting are applied at once.
			time.Sleep(2500 * time.Millisecond)
		}
		if n < managedCalls {
			return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 2000", "description": "count"}, ID: fmt.Sprintf("toolu_mg_%d", n+1)}
		}
		s, _ := previewResult(req, "toolu_mg_1")
		i := strings.Index(s, "Read "+spillDir+"/")
		if !strings.HasPrefix(s, "[ctxstore] output collapsed") || i < 0 {
			return piStep{Text: "not collapsed"}
		}
		f := s[i+len("Read "):]
		*spillFile = f[:strings.Index(f, " ")]
		return piStep{Tool: "Read", Args: map[string]any{"file_path": *spillFile}, ID: "toolu_mg_read"}
	}
}

// TestClaudeCodeManaged runs the real Claude Code CLI (print mode,
// offline) through `ctxstore claude-code run`, managed mode on by default,
// against the scripted endpoint, with a cache lifetime of two seconds and a
// pause past it before the last output (the request after it finds the
// cache cold, so the collapses waiting apply at once). From the endpoint's
// log: the first outputs, out of the auto-collapse window, reach the model
// as one line naming their spill file; the model's Read of that file is
// answered with the output whole; the message breakpoints are ctxstore's
// (the end of each request, at most one more, four in all at most); every
// request passes the Messages API checker; the store records every
// managed call, and `claude-code calls --raw N` prints the request the
// endpoint received. Resumed (`claude --resume` through a new run), the
// session continues the managed stream the store kept. With --no-managed
// the outputs reach the model whole.
func TestClaudeCodeManaged(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	home, work := t.TempDir(), t.TempDir()
	spillDir := filepath.Join(home, ".ctxstore", "spill")
	var spillFile string
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	m := startScriptedMessages(t, nil, log, managedScript(spillDir, &spillFile))
	run := func(flags []string, cargs ...string) (map[string]any, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		args := append(append(append([]string{"claude-code", "run", "--claude", cli, "--cache-ttl", "2s", "--warm", "off"}, flags...),
			"--", "-p", "Count, again and again.", "--allowedTools", "Bash", "--output-format", "json"), cargs...)
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
			t.Fatalf("claude's output %q: %v\n%s", stdout.String(), err, stderr.String())
		}
		return res, stderr.String()
	}
	res, stderr := run(nil)
	if res["result"] != "Done." {
		t.Fatalf("claude's result through the managed proxy: %v\n%s", res["result"], stderr)
	}
	sid, _ := res["session_id"].(string)
	if want := filepath.Join(spillDir, sid, "toolu_mg_1.txt"); spillFile != want {
		t.Errorf("the collapsed line named %q, want %q", spillFile, want)
	}
	whole, err := exec.Command("seq", "1", "2000").Output()
	if err != nil {
		t.Fatal(err)
	}
	reqs := readRequestLog(t, log)
	var read string
	collapsed, agents := 0, 0
	for i, r := range reqs {
		line, _ := json.Marshal(r.raw)
		if errs := apicheck.Check(line); len(errs) > 0 {
			t.Errorf("request %d breaks the Messages API's rules: %v", i, errs)
		}
		if !r.agent {
			continue
		}
		agents++
		if s, ok := previewResult(r.req, "toolu_mg_1"); ok && strings.HasPrefix(s, "[ctxstore] output collapsed") {
			collapsed++
		}
		if s, ok := previewResult(r.req, "toolu_mg_read"); ok {
			read = s
		}
		// The breakpoints in the messages: the request's last block and
		// at most one more.
		var at []int
		for k, msg := range r.req.Messages {
			bs, _ := messagesBlocks(msg.Content)
			for _, b := range bs {
				if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
					at = append(at, k)
				}
			}
		}
		last := len(r.req.Messages) - 1
		if len(at) == 0 || at[len(at)-1] != last || len(at) > 2 {
			t.Errorf("request %d: message breakpoints in messages %v of %d, want the last and at most one more", i, at, last+1)
		}
	}
	if collapsed == 0 {
		t.Error("no request showed the first output collapsed")
	}
	// Claude Code's Read numbers the lines: every number of the output is
	// there, none cut.
	lines := strings.Split(strings.TrimSpace(string(whole)), "\n")
	for _, l := range []string{lines[0], lines[999], lines[len(lines)-1]} {
		if !strings.Contains(read, "\t"+l+"\n") && !strings.HasSuffix(read, "\t"+l) {
			t.Fatalf("the Read of the spill file did not answer the output whole (line %s missing): %.300q", l, read)
		}
	}
	if strings.Contains(read, "[ctxstore]") {
		t.Errorf("the Read of the spill file was answered with a preview or a collapsed line: %.300q", read)
	}
	if !strings.Contains(stderr, "managed mode: ") {
		t.Errorf("run's report does not say what managed mode did:\n%s", stderr)
	}

	// The store (run's, ~/.ctxstore/store.db) holds every managed call,
	// naming the messages the model saw, and the conversation's
	// decisions.
	st, err := bitemporal.Open(context.Background(), filepath.Join(home, ".ctxstore", "store.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	calls, err := st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", "ccproxy_call"), store.Where("session_id", sid)}})
	convs, err2 := st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", "ccproxy_conversation"), store.Where("session_id", sid)}})
	st.Close()
	if err != nil || err2 != nil || len(calls) != agents || len(convs) != 1 {
		t.Errorf("the store holds %d managed calls (want %d) and %d conversations (want 1): %v %v", len(calls), agents, len(convs), err, err2)
	}

	// `claude-code calls` lists them, and --raw N prints call N's request
	// as the endpoint received it.
	ctxstore := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(ctxstoreBin, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "CTXSTORE_URL=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ctxstore %v: %v\n%s", args, err, out)
		}
		return out
	}
	var listed []map[string]any
	if err := json.Unmarshal(ctxstore("--json", "claude-code", "calls", sid[:8]), &listed); err != nil || len(listed) != agents {
		t.Fatalf("claude-code calls listed %d calls (want %d): %v", len(listed), agents, err)
	}
	k := 0
	for _, r := range reqs {
		if !r.agent {
			continue
		}
		k++
		var want, got any
		line, _ := json.Marshal(r.raw)
		json.Unmarshal(line, &want)
		if err := json.Unmarshal(ctxstore("claude-code", "calls", sid, "--raw", fmt.Sprint(k)), &got); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Fatalf("claude-code calls --raw %d is not the request the endpoint received", k)
		}
	}

	// Resumed within the cache's lifetime (an hour now), the session
	// continues the managed stream the store kept: the request extends the
	// last one sent, what was collapsed stays so, and the output that was
	// waiting to collapse stays whole (a fresh start would collapse it at
	// once, writing the prefix again).
	lastSent := reqs[len(reqs)-1]
	before := len(reqs)
	if res, _ := run([]string{"--cache-ttl", "1h"}, "--resume", sid); res["result"] != "Done." {
		t.Fatalf("the resumed session's result: %v", res["result"])
	}
	var resumed *loggedRequest
	for _, r := range readRequestLog(t, log)[before:] {
		if r.agent {
			resumed = &r
			break
		}
	}
	if resumed == nil || len(resumed.req.Messages) <= len(lastSent.req.Messages) {
		t.Fatal("no resumed request extends the session")
	}
	for k, msg := range lastSent.req.Messages {
		a, _ := messagesBlocks(msg.Content)
		b, _ := messagesBlocks(resumed.req.Messages[k].Content)
		for i := range a {
			a[i].CacheControl = nil
		}
		for i := range b {
			b[i].CacheControl = nil
		}
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		if !bytes.Equal(x, y) {
			t.Fatalf("the resumed request's message %d differs from what the session's last request sent:\n%.300s\n%.300s", k, x, y)
		}
	}
	// The last Bash put toolu_mg_4 out of the window: its collapse waits
	// (unless the machine was so slow that its request found the 2 s cache
	// cold, and it collapsed then: the prefix check above covers it).
	if s, _ := previewResult(lastSent.req, "toolu_mg_4"); strings.HasPrefix(s, "[ctxstore]") {
		t.Logf("toolu_mg_4 collapsed before the resume (a slow machine): the waiting collapse was not checked")
	} else if s, _ := previewResult(resumed.req, "toolu_mg_4"); strings.HasPrefix(s, "[ctxstore]") {
		t.Error("the resumed request collapsed a waiting output at once, within the cache's lifetime")
	}

	// One flag turns it off: every output reaches the model whole.
	before = len(readRequestLog(t, log))
	res, _ = run([]string{"--no-managed"})
	if res["result"] != "not collapsed" {
		t.Errorf("with --no-managed, the model saw a collapsed output: %v", res["result"])
	}
	for _, r := range readRequestLog(t, log)[before:] {
		for _, msg := range r.req.Messages {
			if strings.Contains(string(msg.Content), "[ctxstore] output collapsed") {
				t.Fatal("with --no-managed, a request holds a collapsed output")
			}
		}
	}
	t.Logf("%d agent requests, %d of them with the first output collapsed; run said:\n%s", agents, collapsed, stderr)
}

// TestClaudeCodeManagedSubagent: a subagent of a session run through
// `claude-code run` is managed as a conversation of its own: its old
// outputs collapse to lines naming spill files of the session, the main
// thread's requests are left as they were, and the store keeps the two
// conversations' decisions apart. Every request passes the checker.
func TestClaudeCodeManagedSubagent(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	home, work := t.TempDir(), t.TempDir()
	log := filepath.Join(t.TempDir(), "requests.jsonl")
	const subCalls = 8
	respond := func(req messagesRequest) piStep {
		if len(req.Tools) == 0 || req.MaxTokens == 1 || len(req.Messages) == 0 {
			return piStep{Text: "ok"}
		}
		first, _ := json.Marshal(req.Messages[0])
		main := strings.Contains(string(first), "MAIN PROMPT")
		if !main && strings.Contains(string(first), "SUBTASK") {
			n := 0
			for n < subCalls {
				if _, ok := previewResult(req, fmt.Sprintf("toolu_sub_%d", n+1)); !ok {
					break
				}
				n++
			}
			if n == subCalls {
				return piStep{Text: "SUB DONE"}
			}
			if n == subCalls-1 {
				time.Sleep(2500 * time.Millisecond) // past the 2 s cache: the collapses waiting apply
			}
			return piStep{Tool: "Bash", Args: map[string]any{"command": "seq 1 2000", "description": "count"}, ID: fmt.Sprintf("toolu_sub_%d", n+1)}
		}
		if !main {
			return piStep{Text: "ok"}
		}
		if _, ok := previewResult(req, "toolu_main_agent"); !ok {
			return piStep{Tool: "Agent", Args: map[string]any{"description": "count job", "prompt": "SUBTASK: count, again and again", "subagent_type": "general-purpose"}, ID: "toolu_main_agent"}
		}
		return piStep{Text: "MAIN DONE"}
	}
	m := startScriptedMessages(t, nil, log, respond)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctxstoreBin, "claude-code", "run", "--claude", cli, "--cache-ttl", "2s", "--warm", "off",
		"--", "-p", "MAIN PROMPT: delegate the counting.", "--allowedTools", "Bash", "Agent", "--output-format", "json")
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
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["result"] != "MAIN DONE" {
		t.Fatalf("claude's result: %s (%v)\n%s", stdout.String(), err, stderr.String())
	}
	sid, _ := res["session_id"].(string)
	spill := filepath.Join(home, ".ctxstore", "spill", sid) + "/"
	collapsed := 0
	for i, r := range readRequestLog(t, log) {
		line, _ := json.Marshal(r.raw)
		if errs := apicheck.Check(line); len(errs) > 0 {
			t.Errorf("request %d breaks the Messages API's rules: %v", i, errs)
		}
		if s, ok := previewResult(r.req, "toolu_sub_1"); ok && strings.HasPrefix(s, "[ctxstore] output collapsed") {
			if !strings.Contains(s, "Read "+spill+"toolu_sub_1.txt") {
				t.Errorf("the subagent's collapsed output names %q, not a spill file of session %s", s, sid)
			}
			collapsed++
		}
		for _, msg := range r.req.Messages {
			if strings.Contains(string(msg.Content), "[ctxstore] output collapsed") {
				first, _ := json.Marshal(r.req.Messages[0])
				if strings.Contains(string(first), "MAIN PROMPT") {
					t.Errorf("request %d of the main thread holds a collapsed output", i)
				}
			}
		}
	}
	if collapsed == 0 {
		t.Errorf("no subagent request showed its first output collapsed\n%s", stderr.String())
	}
	st, err := bitemporal.Open(context.Background(), filepath.Join(home, ".ctxstore", "store.db"), bitemporal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	convs, err := st.Query(context.Background(), store.Query{Where: []store.Pred{store.Where("type", "ccproxy_conversation"), store.Where("session_id", sid)}})
	if err != nil || len(convs) != 2 {
		t.Errorf("the store keeps %d conversations of the session, want 2 (the main thread, the subagent): %v", len(convs), err)
	}
	t.Logf("%d subagent requests with its first output collapsed; run said:\n%s", collapsed, stderr.String())
}
