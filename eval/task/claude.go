package task

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// claudeTools are the tools a Claude Code run may use without asking
// (print mode cannot ask).
const claudeTools = "Read,Write,Edit,Bash,Glob,Grep"

// runClaudeCode runs task t under a Claude Code arm: Claude Code in print
// mode with a home of its own (its settings, its transcript, and with
// ctxstore the store and spill files of `ctxstore claude-code run`), the
// endpoint as ANTHROPIC_BASE_URL, the arm named in a request header.
func (o *Options) runClaudeCode(ctx context.Context, t Task, a Arm, r Result) (Result, error) {
	dir, work := r.Dir, filepath.Join(r.Dir, "work")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return r, err
	}
	key := "none"
	if o.Endpoint.KeyEnv != "" {
		key = os.Getenv(o.Endpoint.KeyEnv)
	}
	env := append(os.Environ(), o.Env...)
	env = append(env, goCaches()...)
	env = append(env, "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"ANTHROPIC_BASE_URL="+o.Endpoint.URL, "ANTHROPIC_API_KEY="+key, "ANTHROPIC_CUSTOM_HEADERS="+ArmHeader+": "+a.Name,
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"CTXSTORE_CLAUDE_CODE_UPSTREAM=", "CTXSTORE_URL=", "CTXSTORE_SERVICE_URL=", "CTXSTORE_TOKEN=")
	args := []string{"-p", t.Prompt, "--model", o.Endpoint.Model, "--allowedTools", claudeTools, "--output-format", "json"}
	name := o.Claude
	if a.Ctxstore {
		name = o.Ctxstore[0]
		args = append(append(append([]string{}, o.Ctxstore[1:]...), "claude-code", "run", "--claude", o.Claude, "--"), args...)
	}
	var err error
	r.AgentExit, r.TimedOut, err = runHarness(ctx, t, work, env, name, args, filepath.Join(dir, "claude.log"), "Claude Code")
	if err != nil {
		r.Error = err.Error()
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	ok, out, err := o.runCheck(ctx, t, work)
	if err != nil {
		return r, fmt.Errorf("task %s: running its check: %w", t.Name, err)
	}
	r.Solved, r.CheckOutput = ok, out
	// The session's transcript; its sub-agents' lie one level deeper.
	if err := o.measure(ctx, &r, a, filepath.Join(home, ".claude", "projects", "*", "*.jsonl")); err != nil && r.Error == "" {
		r.Error = err.Error()
	}
	return r, nil
}

// goCaches keeps Go's build cache and module path where they are for a
// harness given a home of its own (they default to places under HOME):
// a check that builds Go code then reuses what is compiled already.
func goCaches() []string {
	var out []string
	if os.Getenv("GOCACHE") == "" {
		if d, err := os.UserCacheDir(); err == nil {
			out = append(out, "GOCACHE="+filepath.Join(d, "go-build"))
		}
	}
	if os.Getenv("GOPATH") == "" {
		if d, err := os.UserHomeDir(); err == nil {
			out = append(out, "GOPATH="+filepath.Join(d, "go"))
		}
	}
	return out
}
