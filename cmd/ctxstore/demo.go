package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/explain/inspect"
	"github.com/ctxstore/ctxstore/objects/conversation"
	"github.com/ctxstore/ctxstore/server/httpapi"
)

// demoCmd runs an agent session offline with ctxstore managing its
// context: a scripted harness reads, edits and runs
// commands in a temporary project through the real service over HTTP, then
// the session is shown as the inspector shows it.
type demoCmd struct {
	Dir     string `name:"dir" placeholder:"DIR" help:"Project directory to create and work in (default: a new temporary directory, removed afterwards)."`
	Session string `name:"session" default:"demo" help:"Session id."`
	Stale   int    `name:"stale-threshold" default:"2000" help:"Collapse stale content in batches of at least this many tokens (serve's default is 8000; the demo's session is short)."`
	costFlags
}

// demoStore is the store the demo writes when --store is not given.
const demoStore = ".ctxstore/demo.db"

// Run implements demo.
func (c *demoCmd) Run(a *app) error {
	fresh := false
	if a.cli.Store == "" {
		a.cli.Store, fresh = demoStore, true
		if err := os.MkdirAll(filepath.Dir(demoStore), 0o755); err != nil {
			return err
		}
		for _, suf := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(demoStore + suf); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "ctxstore-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if dir, err := filepath.Abs(dir); err == nil {
		c.Dir = dir
	}
	if err := writeDemoProject(c.Dir); err != nil {
		return err
	}
	st, err := a.open(true)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := files.NewResolver(files.ResolverOptions{DefaultID: "ctxstore-demo"})
	if err != nil {
		return err
	}
	clk := &demoClock{t: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := httpapi.New(httpapi.Options{Store: st, Resolver: res, Rebase: assemble.Policy{StaleThreshold: c.Stale},
		Log: log, Now: clk.now, Roots: []string{c.Dir}}) // the demo's project is all it reads
	if err != nil {
		return err
	}
	if err := mountInspector(srv, st, log); err != nil {
		srv.Close()
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return err
	}
	ctx, stop := context.WithCancel(a.ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()
	h := &demoHarness{url: "http://" + ln.Addr().String(), sid: c.Session, cwd: c.Dir, clk: clk, out: a.stderr}
	fmt.Fprintf(a.stderr, "demo: the service is at %s; session %s works in %s\n", h.url, c.Session, c.Dir)
	runErr := h.script()
	stop()
	if err := <-done; runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return fmt.Errorf("demo session %s: %w", c.Session, runErr)
	}
	return c.report(a, h, fresh)
}

// demoClock is the service's clock: the harness moves it as time passes
// in the scripted session (a model's think time, a coffee break).
type demoClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *demoClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *demoClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// writeDemoProject writes the demo's project: a tiny calculator in shell
// with a bug its test finds, a design note and a data file.
func writeDemoProject(dir string) error {
	var notes, data strings.Builder
	notes.WriteString("# Design notes\n\nThe calculator reads a command and two numbers and prints the result.\n\n")
	for i := 1; i <= 140; i++ {
		fmt.Fprintf(&notes, "## Decision %d\n\nCommands stay small shell functions; every command gets a line in test.sh and the usage text. (%d)\n\n", i, i)
	}
	data.WriteString("a,b,sum,product\n")
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&data, "%d,%d,%d,%d\n", i, i+1, 2*i+1, i*(i+1))
	}
	var logf strings.Builder
	t := time.Date(2026, 1, 4, 23, 0, 0, 0, time.UTC)
	for i := 1; i <= 300; i++ {
		t = t.Add(7 * time.Second)
		switch {
		case i == 241:
			fmt.Fprintf(&logf, "%s ERROR nightly: calc.sh mul 12 0: usage: calc.sh add|sub A B (exit 2)\n", t.Format(time.RFC3339))
		case i%25 == 0:
			fmt.Fprintf(&logf, "%s WARN  nightly: row %d took %dms, over the 50ms budget\n", t.Format(time.RFC3339), i, 50+i%17)
		default:
			fmt.Fprintf(&logf, "%s INFO  nightly: row %d checked: add ok, sub ok (%dms)\n", t.Format(time.RFC3339), i, 3+i%11)
		}
	}
	fs := map[string]string{
		"nightly.log": logf.String(),
		"calc.sh":     "#!/bin/sh\n# calc.sh COMMAND A B\ncase \"$1\" in\n  add) echo $(($2 - $3)) ;;\n  sub) echo $(($2 - $3)) ;;\n  *) echo \"usage: calc.sh add|sub A B\" >&2; exit 2 ;;\nesac\n",
		"test.sh":     "#!/bin/sh\nfail=0\ncheck() { got=$(sh calc.sh $1 $2 $3); if [ \"$got\" != \"$4\" ]; then echo \"FAIL: $1 $2 $3 = $got, want $4\"; fail=1; else echo \"ok: $1 $2 $3 = $got\"; fi; }\ncheck add 2 3 5\ncheck sub 7 4 3\nexit $fail\n",
		"NOTES.md":    notes.String(),
		"data.csv":    data.String(),
	}
	for name, content := range fs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// demoHarness is the scripted agent: it keeps the message log as a harness
// does, asks the service for each call's context, "answers" from its
// script, and runs the tools for real in the project.
type demoHarness struct {
	url, sid, cwd string
	clk           *demoClock
	out           io.Writer
	log           []conversation.Message
	seq           int
	calls         []demoCall
}

// demoCall is what the harness saw of one call: the service's numbers, and
// the size of the whole history a naive harness would have sent.
type demoCall struct {
	httpapi.ContextResponse
	NaiveBytes int
	Time       time.Time
}

var demoTools = []assemble.ToolSpec{
	{Name: "read", Description: "Read a file", Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}},
	{Name: "edit", Description: "Replace old_string with new_string in a file", Parameters: map[string]any{"type": "object"}},
	{Name: "bash", Description: "Run a shell command in the project", Parameters: map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}},
}

const demoSystemPrompt = "You are a careful coding agent. Work in small steps and run the tests."

func (h *demoHarness) do(method, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, h.url+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("%s %s: %s: %s", method, path, res.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// call asks the service for the next call's context.
func (h *demoHarness) call() error {
	h.clk.advance(20 * time.Second) // the model thinks
	var r httpapi.ContextResponse
	if err := h.do("POST", "/v1/sessions/"+h.sid+"/context", httpapi.ContextRequest{Log: h.log}, &r); err != nil {
		return err
	}
	naive, _ := json.Marshal(h.log)
	tools, _ := json.Marshal(demoTools)
	h.calls = append(h.calls, demoCall{ContextResponse: r, NaiveBytes: len(demoSystemPrompt) + len(tools) + len(naive), Time: h.clk.now()})
	rebase := ""
	if r.Rebased {
		rebase = ", rebased (" + r.RebaseReason + ")"
	}
	fmt.Fprintf(h.out, "demo: call %d: %d tokens%s\n", r.Call, r.Tokens, rebase)
	return nil
}

func (h *demoHarness) user(text string) {
	h.log = append(h.log, conversation.Message{Role: conversation.RoleUser, Text: text})
}

// step is one model answer: a call to the service for the context, then
// the answer's text and tool calls, each run in the project.
func (h *demoHarness) step(text string, calls ...conversation.ToolCall) error {
	if err := h.call(); err != nil {
		return err
	}
	for i := range calls {
		h.seq++
		calls[i].ID = fmt.Sprintf("toolu_demo_%02d", h.seq)
	}
	h.log = append(h.log, conversation.Message{Role: conversation.RoleAssistant, Text: text, ToolCalls: calls})
	for _, c := range calls {
		out, isErr := h.run(c)
		h.log = append(h.log, conversation.Message{Role: conversation.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, Output: out, IsError: isErr})
	}
	return nil
}

// run executes a tool call in the project.
func (h *demoHarness) run(c conversation.ToolCall) (string, bool) {
	str := func(k string) string { s, _ := c.Args[k].(string); return s }
	switch c.Name {
	case "read":
		b, err := os.ReadFile(filepath.Join(h.cwd, str("path")))
		if err != nil {
			return err.Error(), true
		}
		return string(b), false
	case "edit":
		p := filepath.Join(h.cwd, str("path"))
		b, err := os.ReadFile(p)
		if err != nil {
			return err.Error(), true
		}
		if !strings.Contains(string(b), str("old_string")) {
			return "old_string not found in " + str("path"), true
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), str("old_string"), str("new_string"), 1)), 0o644); err != nil {
			return err.Error(), true
		}
		return "edited " + str("path"), false
	case "bash":
		cmd := exec.Command("sh", "-c", str("command"))
		cmd.Dir = h.cwd
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out) + err.Error(), true
		}
		return string(out), false
	}
	return "unknown tool " + c.Name, true
}

func tc(name string, args ...string) conversation.ToolCall {
	m := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		m[args[i]] = args[i+1]
	}
	return conversation.ToolCall{Name: name, Args: m}
}

// script is the session: nine requests of reading, editing and running
// commands, with pauses longer than the prompt cache's lifetime, long
// enough that collapsing stale outputs pays for the cache writes it costs.
func (h *demoHarness) script() error {
	if err := h.do("PUT", "/v1/sessions/"+h.sid, httpapi.OpenRequest{Cwd: h.cwd, SystemPrompt: demoSystemPrompt, Harness: "ctxstore-demo", Tools: demoTools}, nil); err != nil {
		return err
	}
	steps := []func() error{
		func() error { h.user("The tests fail. Find out why and fix calc.sh."); return nil },
		func() error { return h.step("Let me look at the project.", tc("bash", "command", "ls")) },
		func() error { return h.step("", tc("read", "path", "test.sh"), tc("read", "path", "calc.sh")) },
		func() error { return h.step("Running the tests first.", tc("bash", "command", "sh test.sh")) },
		func() error {
			return h.step("The design notes may say how commands are meant to work.", tc("read", "path", "NOTES.md"))
		},
		func() error {
			return h.step("add subtracts: a copy-paste slip.", tc("edit", "path", "calc.sh", "old_string", "add) echo $(($2 - $3))", "new_string", "add) echo $(($2 + $3))"))
		},
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error { return h.step("Fixed: `add` subtracted; both tests pass.") },
		func() error {
			h.clk.advance(7 * time.Minute)
			h.user("Thanks. Now add a mul command, with a test.")
			return nil
		},
		func() error {
			return h.step("", tc("edit", "path", "calc.sh", "old_string", "  sub)", "new_string", "  mul) echo $(($2 * $3)) ;;\n  sub)"))
		},
		func() error {
			return h.step("", tc("edit", "path", "test.sh", "old_string", "check sub 7 4 3\n", "new_string", "check sub 7 4 3\ncheck mul 6 7 42\n"))
		},
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error { return h.step("Added `mul` and its test; all three pass.") },
		func() error { h.user("Does data.csv agree with calc.sh?"); return nil },
		func() error { return h.step("", tc("read", "path", "data.csv")) },
		func() error {
			return h.step("", tc("bash", "command", `tail -n +2 data.csv | head -50 | while IFS=, read a b s p; do [ "$(sh calc.sh add $a $b)" = "$s" ] && [ "$(sh calc.sh mul $a $b)" = "$p" ] || echo "mismatch $a $b"; done; echo checked`))
		},
		func() error { return h.step("The first 50 rows agree with calc.sh.") },
		func() error { h.user("Add a div command that refuses to divide by zero."); return nil },
		func() error { return h.step("", tc("read", "path", "calc.sh")) },
		func() error {
			return h.step("", tc("edit", "path", "calc.sh", "old_string", "  sub)", "new_string", "  div) [ \"$3\" = 0 ] && { echo \"division by zero\" >&2; exit 1; }; echo $(($2 / $3)) ;;\n  sub)"))
		},
		func() error {
			return h.step("", tc("edit", "path", "test.sh", "old_string", "check mul 6 7 42\n", "new_string", "check mul 6 7 42\ncheck div 8 2 4\n"))
		},
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error { return h.step("", tc("bash", "command", "sh calc.sh div 1 0; echo exit=$?")) },
		func() error { return h.step("div added; it refuses zero with exit status 1.") },
		func() error {
			h.clk.advance(40 * time.Minute)
			h.user("Back from lunch. Last night's run failed: nightly.log has it. What went wrong?")
			return nil
		},
		func() error { return h.step("", tc("read", "path", "nightly.log")) },
		func() error { return h.step("", tc("bash", "command", "grep -n -E 'ERROR|WARN' nightly.log")) },
		func() error { return h.step("", tc("bash", "command", "cat -n nightly.log | sed -n 230,250p")) },
		func() error { return h.step("", tc("bash", "command", "sh calc.sh mul 12 0; echo exit=$?")) },
		func() error {
			return h.step("The nightly run called mul before it existed (row 241); with mul added it works. The WARN lines are slow rows, not failures.")
		},
		func() error { h.user("Make the usage text list every command."); return nil },
		func() error { return h.step("", tc("bash", "command", "grep -n usage calc.sh")) },
		func() error {
			return h.step("", tc("edit", "path", "calc.sh", "old_string", "usage: calc.sh add|sub A B", "new_string", "usage: calc.sh add|sub|mul|div A B"))
		},
		func() error { return h.step("", tc("bash", "command", "sh calc.sh pow 2 3; echo exit=$?")) },
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error { return h.step("The usage text now lists add, sub, mul and div.") },
		func() error { h.user("Check the rest of data.csv too, all 400 rows."); return nil },
		func() error {
			return h.step("", tc("bash", "command", `tail -n +2 data.csv | while IFS=, read a b s p; do [ "$(sh calc.sh add $a $b)" = "$s" ] && [ "$(sh calc.sh mul $a $b)" = "$p" ] || echo "mismatch $a $b"; done; echo checked`))
		},
		func() error { return h.step("All 400 rows agree with calc.sh.") },
		func() error {
			h.clk.advance(12 * time.Minute)
			h.user("One more: a pow command (A to the power B, B at least 0), with tests.")
			return nil
		},
		func() error { return h.step("", tc("read", "path", "calc.sh")) },
		func() error {
			return h.step("", tc("edit", "path", "calc.sh", "old_string", "  sub)", "new_string", "  pow) r=1; i=0; while [ $i -lt $3 ]; do r=$((r * $2)); i=$((i + 1)); done; echo $r ;;\n  sub)"))
		},
		func() error { return h.step("", tc("bash", "command", "sh calc.sh pow 2 10")) },
		func() error {
			return h.step("", tc("edit", "path", "test.sh", "old_string", "check div 8 2 4\n", "new_string", "check div 8 2 4\ncheck pow 2 10 1024\ncheck pow 7 0 1\n"))
		},
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error {
			return h.step("", tc("edit", "path", "calc.sh", "old_string", "add|sub|mul|div A B", "new_string", "add|sub|mul|div|pow A B"))
		},
		func() error { return h.step("", tc("bash", "command", "sh calc.sh; echo exit=$?")) },
		func() error { return h.step("pow added, with two tests; the usage text lists it.") },
		func() error { h.user("Run the tests one last time and summarize."); return nil },
		func() error { return h.step("", tc("bash", "command", "sh test.sh")) },
		func() error { return h.step("", tc("bash", "command", "grep -c . calc.sh test.sh")) },
		func() error {
			return h.step("All tests pass. calc.sh: add fixed, mul added; test.sh covers all three.")
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return err
		}
	}
	return h.do("POST", "/v1/sessions/"+h.sid+"/close", map[string]any{}, nil)
}

// report prints what the model saw at one call, what collapsed and why,
// the tokens and cost against sending the whole history, and how to open
// the inspector.
func (c *demoCmd) report(a *app, h *demoHarness, fresh bool) error {
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	in := c.inspector(st)
	s, err := in.Session(a.ctx, c.Session)
	if err != nil {
		return err
	}
	calls, err := in.Calls(a.ctx, c.Session, inspect.Page{})
	if err != nil {
		return err
	}
	w := a.stdout
	fmt.Fprintf(w, "An agent session ran offline with ctxstore managing its context: %d model calls over %d turns\n", s.Calls, s.Turn)
	fmt.Fprintf(w, "in a temporary project (read, edit, run tests), through the real service.\nThe store: %s\n\n", a.cli.Store)

	// the call to show: the first rebase, else the last call
	show := calls[len(calls)-1]
	for _, x := range calls {
		if x.Rebased {
			show = x
			break
		}
	}
	v, err := in.Call(a.ctx, c.Session, show.N)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "What the model saw at call %d (%d tokens, %d blocks; %s read from the prompt cache):\n", show.N, show.Tokens, len(v.Blocks), pct(show.CachedShare))
	for _, b := range v.Blocks {
		label := strings.ReplaceAll(b.Label, c.Dir+string(filepath.Separator), "")
		label = strings.Replace(label, " · toolcall ", " · ", 1)
		fmt.Fprintf(w, "  [%2d] %-34s %5d tok  %s\n", b.Index, cut(label, 34), b.Tokens, cut(blockPreview(b.Text), 46))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "What collapsed, and why:")
	fmt.Fprintln(w, "  (the prompt cache holds the start of the previous call's context; whatever follows the first")
	fmt.Fprintln(w, "  block that changed is written to it again, at 1.25x the input price instead of 0.1x)")
	what := h.toolCalls()
	any := false
	for i, x := range calls {
		if x.Break.Cause == inspect.CauseNone || x.Break.Cause == inspect.CauseFirst {
			continue
		}
		any = true
		cv, err := in.Call(a.ctx, c.Session, x.N)
		if err != nil {
			return err
		}
		var line string
		switch {
		case x.Rebased:
			var names []string
			for _, col := range x.Collapsed {
				n := what[col.ObjectID]
				if n == "" {
					n = nameOf(cv.Blocks, col.ObjectID)
				}
				names = append(names, n)
			}
			if len(names) > 6 {
				names = append(names[:6], fmt.Sprintf("%d more", len(names)-6))
			}
			prev := 0
			if i > 0 {
				prev = calls[i-1].Tokens
			}
			line = fmt.Sprintf("call %d (%s): ctxstore replaced %d tool outputs and files the agent was done with by one-line references (%s), so the context went from %d to %d tokens",
				x.N, cv.Call.Break.CauseKey(), len(x.Collapsed), strings.Join(names, ", "), prev, x.Tokens)
			if x.Break.Cause == inspect.CauseExpired {
				line += ", at a call that had to write the whole context again anyway (the cache had expired)"
			}
			line += fmt.Sprintf("; %d tokens were written to the cache again, once (%s).", x.Break.RewrittenTokens, usd(x.Break.LostUSD))
		case x.Break.Cause == inspect.CauseExpired:
			line = fmt.Sprintf("call %d (expired): a pause longer than the cache's %s lifetime; all %d tokens were written to the cache again (%s).",
				x.N, in.TTL(), x.Break.RewrittenTokens, usd(x.Break.LostUSD))
		default:
			line = fmt.Sprintf("call %d (%s): %s; %d tokens were written to the cache again (%s).",
				x.N, cv.Call.Break.CauseKey(), cv.Call.Break.Detail, x.Break.RewrittenTokens, usd(x.Break.LostUSD))
		}
		wrap(w, line, "  ", "      ", 100)
	}
	if !any {
		fmt.Fprintln(w, "  nothing: every call extended the previous one")
	}
	fmt.Fprintln(w)

	// the whole history, as a harness without ctxstore sends it
	pr := in.Prices()
	var naiveTok, naiveCached int
	var naiveCost float64
	prevTok := 0
	var prevT time.Time
	for i, x := range h.calls {
		t := x.NaiveBytes / 4
		cached := 0
		if i > 0 && x.Time.Sub(prevT) < in.TTL() {
			cached = prevTok
		}
		naiveTok += t
		naiveCached += cached
		naiveCost += float64(cached)*pr.Read + float64(t-cached)*pr.Write
		prevTok, prevT = t, x.Time
	}
	fmt.Fprintln(w, "Tokens and cost, against sending the whole history every call:")
	fmt.Fprintf(w, "  ctxstore:      %7d tokens sent, %5s from the cache, %s; last context %d tokens\n", s.TokensSent, pct(s.CachedShare), usd(s.CostUSD), s.Tokens)
	nshare := 0.0
	if naiveTok > 0 {
		nshare = float64(naiveCached) / float64(naiveTok)
	}
	fmt.Fprintf(w, "  whole history: %7d tokens sent, %5s from the cache, %s; last context %d tokens\n", naiveTok, pct(nshare), usd(pr.Dollars(naiveCost)), prevTok)
	fmt.Fprintf(w, "  (the whole history's tokens are its bytes / 4; $%.2f per million input tokens, cache writes 1.25x,\n   cache reads 0.1x)\n", pr.InputPerMTok)
	fmt.Fprintln(w)

	storeArg := "--store " + a.cli.Store
	if !fresh {
		storeArg = "--store '" + a.cli.Store + "'"
	}
	fmt.Fprintln(w, "See it yourself:")
	fmt.Fprintf(w, "  bin/ctxstore %s calls %s\n      # one line per call\n", storeArg, c.Session)
	fmt.Fprintf(w, "  bin/ctxstore %s call %s %d --diff %d\n      # what changed between two calls\n", storeArg, c.Session, show.N, max(show.N-1, 1))
	fmt.Fprintf(w, "  bin/ctxstore %s serve\n      # then open http://127.0.0.1:7411/inspect/s/%s\n", storeArg, c.Session)
	if naiveCost > 0 {
		ratio := s.Cost / naiveCost
		fmt.Fprintf(w, "\nResult: this session cost %s with ctxstore and %s sending the whole history every call:\n", usd(s.CostUSD), usd(pr.Dollars(naiveCost)))
		fmt.Fprintf(w, "%.2f of the cost, %.0f%% less; its last call sent %d tokens instead of %d.\n", ratio, 100*(1-ratio), s.Tokens, prevTok)
	}
	return nil
}

// toolCalls names each tool call of the session by its tool and first
// argument ("bash sh test.sh", "read nightly.log").
func (h *demoHarness) toolCalls() map[string]string {
	m := map[string]string{}
	for _, msg := range h.log {
		for _, tc := range msg.ToolCalls {
			arg := ""
			for _, k := range []string{"path", "command"} {
				if v, ok := tc.Args[k].(string); ok {
					arg = v
					break
				}
			}
			m[tc.ID] = cut(tc.Name+" "+arg, 24)
		}
	}
	return m
}

// wrap writes text word-wrapped to width columns, the first line after
// first, the others after rest.
func wrap(w io.Writer, text, first, rest string, width int) {
	line := first
	fresh := true
	for _, word := range strings.Fields(text) {
		if !fresh && len([]rune(line))+1+len([]rune(word)) > width {
			fmt.Fprintln(w, line)
			line, fresh = rest, true
		}
		if !fresh {
			line += " "
		}
		line += word
		fresh = false
	}
	fmt.Fprintln(w, line)
}

func nameOf(bl []inspect.Block, id string) string {
	for _, b := range bl {
		if b.ObjectID == id && b.Nickname != "" {
			return filepath.Base(b.Nickname)
		}
	}
	return shortID(id)
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// blockPreview is the first line of a block's content, its framing tags
// left out: a tool call shows as the tool's name and arguments, a block
// holding only tags as its first tag.
func blockPreview(text string) string {
	var call, tag string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "<<tool_call "):
			if call == "" {
				call = line
				if _, rest, ok := strings.Cut(line, " name="); ok {
					name, args, _ := strings.Cut(strings.TrimSuffix(rest, ">>"), " args=")
					call = "calls " + name + " " + args
				}
			}
		case strings.HasPrefix(line, "<<") && strings.HasSuffix(line, ">>"):
			if tag == "" {
				tag = line
			}
		default:
			return line
		}
	}
	if call != "" {
		return call
	}
	return tag
}
