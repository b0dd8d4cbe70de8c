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
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ccProxy is a running `ctxstore claude-code proxy`.
type ccProxy struct {
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// startCCProxy starts `ctxstore claude-code proxy` on a free loopback port
// in front of upstream, with args.
func startCCProxy(t *testing.T, upstream string, args ...string) *ccProxy {
	t.Helper()
	cmd := exec.Command(ctxstoreBin, append([]string{"claude-code", "proxy", "--addr", "127.0.0.1:0", "--json", "--upstream", upstream}, args...)...)
	p := &ccProxy{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var out struct {
		URL string `json:"url"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(line), &out)
	}
	if err != nil || out.URL == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("claude-code proxy printed no URL (%q): %v\n%s", line, err, p.stderr)
	}
	p.url = out.URL
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stop stops the proxy with SIGTERM and returns what it printed on stderr.
func (p *ccProxy) stop(t *testing.T) string {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("claude-code proxy exited with %v\n%s", err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("claude-code proxy did not stop on SIGTERM\n%s", p.stderr)
	}
	return p.stderr.String()
}

// loggedRequest is one request the scripted endpoint logged.
type loggedRequest struct {
	raw    map[string]json.RawMessage
	req    messagesRequest
	agent  bool // Claude Code's agent loop: it offers Bash
	warm   bool // max_tokens 1
	system string
}

func readRequestLog(t *testing.T, path string) []loggedRequest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []loggedRequest
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r loggedRequest
		if err := json.Unmarshal([]byte(line), &r.raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(line), &r.req); err != nil {
			t.Fatal(err)
		}
		for _, x := range r.req.Tools {
			r.agent = r.agent || x.Name == "Bash"
		}
		r.warm = r.req.MaxTokens == 1
		r.system = string(r.raw["system"])
		out = append(out, r)
	}
	return out
}

// TestClaudeCodeProxy runs the real Claude Code CLI (print mode, offline)
// through `ctxstore claude-code proxy` to the scripted Messages endpoint:
// the model's answers reach Claude Code whole (a tool loop runs). With the
// proxy's defaults (warming while a tool runs), while Claude Code runs a
// 5-second Bash command the proxy sends the request that asked for it
// again with the output capped at one token, every 2 s for a 12 s cache,
// otherwise byte for byte the same fields; none once the turn has ended
// and Claude Code waits. Then, with warming off and an 8 s cache, a
// session resumed after a 9 s pause has its system prompt's breakpoints
// ask for the hour, and the requests before the pause do not.
func TestClaudeCodeProxy(t *testing.T) {
	t.Parallel()
	cli := claudeCLI(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "requests.jsonl")
	n := 0
	command := "echo step%d"
	respond := func(req messagesRequest) piStep {
		bash := false
		for _, x := range req.Tools {
			bash = bash || x.Name == "Bash"
		}
		if !bash || req.MaxTokens == 1 {
			return piStep{Text: "ok"} // a side request, or the proxy's warm request
		}
		last := req.Messages[len(req.Messages)-1]
		if bs, _ := messagesBlocks(last.Content); len(bs) > 0 && bs[0].Type == "tool_result" {
			return piStep{Text: "Done."}
		}
		n++
		return piStep{Tool: "Bash", Args: map[string]any{"command": fmt.Sprintf(command, n), "description": "echo"}, ID: fmt.Sprintf("toolu_px%d", n)}
	}
	m := startScriptedMessages(t, nil, log, respond)
	home := filepath.Join(dir, "home")
	work := filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	claude := func(base string, args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, cli, append(args, "--allowedTools", "Bash", "--output-format", "json")...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=sk-ant-offline-test",
			"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("claude's output %q: %v", out, err)
		}
		if res["result"] != "Done." || res["is_error"] == true {
			t.Fatalf("claude's result through the proxy: %v", res)
		}
		return res
	}

	// Warming while a tool runs: a 12 s cache, a warm every 2 s, a 5 s
	// command.
	px := startCCProxy(t, m.srv.URL, "--cache-ttl", "12s")
	command = "sleep 5; echo step%d"
	began := time.Now()
	res := claude(px.url, "-p", "Run the slow build once.")
	took := time.Since(began)
	command = "echo step%d"
	sid, _ := res["session_id"].(string)
	time.Sleep(4600 * time.Millisecond) // the turn has ended: no warm while Claude Code waits
	reqs := readRequestLog(t, log)
	var agents []int
	for i, r := range reqs {
		if r.agent && !r.warm {
			agents = append(agents, i)
		}
	}
	if len(agents) != 2 {
		t.Fatalf("%d agent requests, want 2 (a tool call, its result)", len(agents))
	}
	var warms []loggedRequest
	for i, r := range reqs {
		if r.warm {
			if i < agents[0] || i > agents[1] {
				t.Errorf("request %d is a warm request outside the tool run", i)
			}
			warms = append(warms, r)
		}
	}
	// Two warms (at 2 s and 4 s) for the 5 s command; on a loaded machine
	// the run around it (Claude Code's start, its hooks) can stretch the
	// wait past 6 s, and a warm every 2 s then makes one more: the whole
	// run's time bounds how many.
	if most := max(2, int(took/(2*time.Second))-1); len(warms) < 2 || len(warms) > most {
		t.Fatalf("%d warm requests during the 5 s tool run (the run took %s), want 2 (every 2 s), at most %d", len(warms), took.Round(time.Millisecond), most)
	}
	asked := reqs[agents[0]] // the request whose answer asked for the tool
	for i, w := range warms {
		if len(w.raw) != len(asked.raw) {
			t.Errorf("warm %d has %d fields, the request %d", i+1, len(w.raw), len(asked.raw))
		}
		for k, v := range asked.raw {
			if k != "max_tokens" && !bytes.Equal(w.raw[k], v) {
				t.Errorf("warm %d: %s differs from the request it keeps warm", i+1, k)
			}
		}
	}
	before := len(reqs)
	claude(px.url, "-p", "Run echo once more.", "--resume", sid)
	reqs = readRequestLog(t, log)
	stderr := px.stop(t)
	// The resumed session comes back within the 12 s cache on a machine
	// that starts Claude Code in a few seconds: its head must not ask for
	// the hour. A machine so loaded that the restart took longer makes the
	// pause real, which the proxy then says; the check needs the warm case.
	cold := strings.Contains(stderr, "past its 12s cache")
	for _, r := range reqs[before:] {
		if !cold && r.agent && !r.warm && strings.Contains(r.system, `"ttl":"1h"`) {
			t.Errorf("a request of a session the proxy kept warm asks for the hour: %.300s", r.system)
		}
	}
	if cold {
		t.Logf("the resumed session came back past the 12 s cache (a loaded machine): the no-hour check did not apply")
	}
	// Every warm the endpoint saw is counted (on a loaded machine the
	// resumed turn's quick tool can outlast 2 s and be warmed too).
	allWarms := 0
	for _, r := range reqs {
		if r.warm {
			allWarms++
		}
	}
	if !strings.Contains(stderr, "warm request 2 of ") || !cold && !strings.Contains(stderr, "0 with the head cached for the hour") || !strings.Contains(stderr, fmt.Sprintf("%d warm requests answered, 0 failed", allWarms)) {
		t.Errorf("the proxy's report:\n%s", stderr)
	}

	// The head's lifetime: warming off, an 8 s cache (Claude Code's tool
	// loop runs within it), a 9 s pause.
	px = startCCProxy(t, m.srv.URL, "--cache-ttl", "8s", "--warm", "off")
	before = len(readRequestLog(t, log))
	res = claude(px.url, "-p", "Run echo once.")
	sid, _ = res["session_id"].(string)
	mid := len(readRequestLog(t, log))
	time.Sleep(9 * time.Second)
	claude(px.url, "-p", "Run echo once more.", "--resume", sid)
	reqs = readRequestLog(t, log)
	long, agentN := 0, 0
	for i, r := range reqs[before:] {
		if r.warm {
			t.Errorf("a warm request with --warm off")
		}
		if !r.agent {
			if strings.Contains(r.system, `"ttl":"1h"`) {
				t.Errorf("a side request's system prompt was changed: %s", r.system)
			}
			continue
		}
		agentN++
		hour := strings.Contains(r.system, `"ttl":"1h"`)
		if after := before+i >= mid; hour != after {
			t.Errorf("agent request %d (after the pause: %v) asks for the hour: %v: %s", before+i, after, hour, r.system)
		}
		if hour {
			long++
		}
	}
	if long < 2 || agentN < 4 {
		t.Errorf("%d agent requests, %d of them asking for the hour; want a tool loop before and after the pause", agentN, long)
	}
	stderr = px.stop(t)
	if !strings.Contains(stderr, "past its 8s cache") || !strings.Contains(stderr, "its system prompt and tools are cached for the hour from now on") {
		t.Errorf("the proxy did not say the session paused:\n%s", stderr)
	}

	// claude-code run: Claude Code through a proxy of its own, forwarding
	// to the ANTHROPIC_BASE_URL it was given; Claude Code's output and exit
	// status are the command's.
	runClaude := func(base string, args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, ctxstoreBin, append([]string{"claude-code", "run", "--claude", cli, "--"}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=sk-ant-offline-test",
			"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CTXSTORE_CLAUDE_CODE_UPSTREAM=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, stdout.String(), stderr.String()
	}
	viaRun := func(base string) {
		t.Helper()
		before := len(readRequestLog(t, log))
		code, out, errs := runClaude(base, "-p", "Run echo once.", "--allowedTools", "Bash", "--output-format", "json")
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got["result"] != "Done." {
			t.Fatalf("claude-code run: exit %d, %v: %s\n%s", code, err, out, errs)
		}
		n := 0
		for _, r := range readRequestLog(t, log)[before:] {
			if r.agent {
				n++
			}
		}
		if m := regexp.MustCompile(`stopped after (\d+) agent requests`).FindStringSubmatch(errs); m == nil || m[1] != fmt.Sprint(n) || n < 2 {
			t.Errorf("claude-code run: %d agent requests reached the endpoint; the proxy's report: %s", n, errs)
		}
	}
	viaRun(m.srv.URL)
	// Claude Code's settings set ANTHROPIC_BASE_URL (they win over the
	// environment, here a dead address): run forwards to theirs, and its
	// own --settings puts the proxy in front all the same.
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.Marshal(map[string]any{"env": map[string]string{"ANTHROPIC_BASE_URL": m.srv.URL}})
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	viaRun("http://127.0.0.1:9")
	want, _, _ := func() (int, string, string) {
		cmd := exec.Command(cli, "--no-such-flag")
		cmd.Env = append(os.Environ(), "HOME="+home)
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), "", ""
		}
		return 0, "", ""
	}()
	if code, _, errs := runClaude(m.srv.URL, "--no-such-flag"); code != want || want == 0 {
		t.Errorf("claude-code run with a bad Claude Code flag: exit %d, Claude Code's own %d\n%s", code, want, errs)
	}
}
