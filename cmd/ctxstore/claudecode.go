package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/bitemporal"
	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
	"github.com/ctxstore/ctxstore/store"
)

// claudeCodeCmd is Claude Code live capture (docs/claude-code.md).
type claudeCodeCmd struct {
	Install   ccInstallCmd   `cmd:"" help:"Write ctxstore's hooks (and the ctxstore MCP server) into a project's Claude Code settings (.claude/settings.json, .mcp.json) or, with --user, the user's; merges, and replaces an earlier install."`
	Uninstall ccUninstallCmd `cmd:"" help:"Remove exactly what install wrote (entries it marked); everything else in the settings stays."`
	Hook      ccHookCmd      `cmd:"" help:"Run by Claude Code's hooks: read the hook's JSON on stdin and checkpoint the session (and its subagent) into ctxstore. Always exits 0; a failure is shown to the user once per session."`
	Proxy     ccProxyCmd     `cmd:"" help:"Serve ctxstore's Claude Code proxy: point Claude Code's ANTHROPIC_BASE_URL at it; it passes every request on (with --managed, as ctxstore's managed context) and keeps the sessions' prompt cache (the head cached for the hour once a session has paused; warm requests by ski rental while it waits)."`
	Run       ccRunCmd       `cmd:"" help:"Run Claude Code (--claude, default claude on the PATH) through ctxstore's Claude Code proxy on a free loopback port for as long as it runs, managed mode on (--no-managed: off): its arguments after --, its exit status; the proxy forwards to Claude Code's own ANTHROPIC_BASE_URL when set."`
	Calls     ccCallsCmd     `cmd:"" help:"List a session's managed calls (what managed mode sent the model, recorded in the store run or proxy --managed used), or print one's request with --raw N."`
}

// ccScope is the flags install and uninstall share.
type ccScope struct {
	User    bool   `name:"user" help:"The user's settings (~/.claude/settings.json, MCP server in ~/.claude.json) instead of a project's."`
	Project string `name:"project" default:"." placeholder:"DIR" help:"The project whose .claude/settings.json and .mcp.json to change."`
	DryRun  bool   `name:"dry-run" help:"Print what would change as a unified diff on stdout; write nothing."`
}

func (s ccScope) scope() (hooks.Scope, string, error) {
	if s.User {
		home, err := os.UserHomeDir()
		if err != nil {
			return hooks.Scope{}, "", err
		}
		return hooks.UserScope(home), home, nil
	}
	dir, err := filepath.Abs(s.Project)
	if err != nil {
		return hooks.Scope{}, "", err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return hooks.Scope{}, "", usagef("--project %s: not a directory", s.Project)
	}
	return hooks.ProjectScope(dir), dir, nil
}

type ccInstallCmd struct {
	ccScope
	Service    string        `name:"service" placeholder:"URL" help:"A running ctxstore serve the hook posts to first (the store is the fallback when it does not answer); also given to the MCP server for activation."`
	NoMCP      bool          `name:"no-mcp" help:"Do not add the ctxstore MCP server."`
	Timeout    time.Duration `name:"hook-timeout" default:"5s" help:"How long one hook run may take before it gives up (it then tells the user once, and Claude Code goes on); Claude Code's own limit is set a few seconds above."`
	NoPreviews bool          `name:"no-previews" help:"Let every tool output reach the model whole (by default one past the preview size enters as a preview naming the spill file that holds it whole)."`
}

// Run implements claude-code install.
func (c *ccInstallCmd) Run(a *app) error {
	scope, dir, err := c.scope()
	if err != nil {
		return err
	}
	bin, err := selfPath()
	if err != nil {
		return fmt.Errorf("finding the ctxstore binary: %w", err)
	}
	storeURL, loc, err := ccStoreURL(a.cli.Store, dir, c.User)
	if err != nil {
		return err
	}
	if c.Timeout <= 0 {
		return usagef("--hook-timeout must be positive")
	}
	if l := strings.ToLower(c.Service); c.Service != "" && !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
		return usagef("--service %q: want the http(s) URL of a running ctxstore serve", c.Service)
	}
	args := []string{"--store", storeURL, "claude-code", "hook", "--timeout", c.Timeout.String()}
	if !c.NoPreviews {
		// Beside the store: inside the project, so that Claude Code's Read
		// of a spill file needs no permission (~/.ctxstore for --user, which
		// a permission rule allows: scope.Spill).
		args = append(args, "--spill-dir", filepath.Join(dir, ".ctxstore", "spill"))
	}
	if c.Service != "" {
		args = append(args, "--service", c.Service)
	}
	cfg := hooks.Config{Command: shellJoin(append([]string{bin}, args...)), Timeout: int((c.Timeout+time.Second-1)/time.Second) + 5,
		AllowSpillRead: !c.NoPreviews}
	if !c.NoMCP {
		mcpArgs := []string{"--store", storeURL, "mcp"}
		if c.Service != "" {
			mcpArgs = append(mcpArgs, "--service", c.Service)
		}
		cfg.MCP = &hooks.MCPServer{Command: bin, Args: mcpArgs}
	}
	changes, err := hooks.PlanInstall(scope, cfg)
	if err != nil {
		return err
	}
	if c.DryRun {
		return a.printChanges(changes, true)
	}
	// The MCP server reads the store from the session's start: make sure
	// it exists (the hook would create it at its first checkpoint).
	if loc.backend == backendSQLite && loc.path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(loc.path), 0o755); err != nil {
			return fmt.Errorf("creating the store directory: %w", err)
		}
		st, err := openSQLite(a.ctx, location{backend: backendSQLite, path: loc.path, isDefault: true}, true, a.cli.Durable)
		if err != nil {
			return err
		}
		st.Close()
	}
	if err := hooks.Apply(changes); err != nil {
		return err
	}
	return a.printChanges(changes, false)
}

type ccUninstallCmd struct {
	ccScope
	Purge bool `name:"purge" help:"Also remove what ctxstore kept for Claude Code beside the recorded sessions: managed mode's documents in the store (--store, else ~/.ctxstore/store.db and the scope's store), the spill files (~/.ctxstore/spill and the scope's .ctxstore/spill) and the hooks' state; the recorded sessions stay."`
}

// Run implements claude-code uninstall.
func (c *ccUninstallCmd) Run(a *app) error {
	scope, dir, err := c.scope()
	if err != nil {
		return err
	}
	changes, err := hooks.PlanUninstall(scope)
	if err != nil {
		return err
	}
	var purge *ccPurge
	if c.Purge {
		if purge, err = planPurge(a, dir, c.User); err != nil {
			return err
		}
	}
	if !c.DryRun {
		if err := hooks.Apply(changes); err != nil {
			return err
		}
		if purge != nil {
			if err := purge.apply(a); err != nil {
				return err
			}
		}
	}
	if purge == nil {
		return a.printChanges(changes, c.DryRun)
	}
	return a.printPurge(changes, purge, c.DryRun)
}

// changeRow is a settings file install or uninstall changes.
type changeRow struct {
	Path   string `json:"path"`
	Action string `json:"action"`
	Diff   string `json:"diff,omitempty"`
}

// printChanges prints the diffs (dry run) or what was written.
func (a *app) printChanges(changes []hooks.Change, dry bool) error {
	rows := changeRows(changes, dry)
	if a.cli.JSON {
		return a.printJSON(map[string]any{"dry_run": dry, "files": rows})
	}
	a.printRows(rows, dry)
	return nil
}

func changeRows(changes []hooks.Change, dry bool) []changeRow {
	var rows []changeRow
	for _, ch := range changes {
		action := "unchanged"
		switch {
		case !ch.Changed():
		case ch.Before == nil:
			action = "create"
		case ch.After == nil:
			action = "remove"
		default:
			action = "update"
		}
		r := changeRow{Path: ch.Path, Action: action}
		if dry {
			r.Diff = ch.Diff()
		}
		rows = append(rows, r)
	}
	return rows
}

func (a *app) printRows(rows []changeRow, dry bool) {
	if len(rows) == 0 {
		fmt.Fprintln(a.stderr, "ctxstore: nothing to change")
	}
	for _, r := range rows {
		if dry {
			fmt.Fprint(a.stdout, r.Diff)
			if r.Action == "unchanged" {
				fmt.Fprintf(a.stderr, "ctxstore: %s unchanged\n", r.Path)
			} else {
				fmt.Fprintf(a.stderr, "ctxstore: would %s %s\n", r.Action, r.Path)
			}
			continue
		}
		fmt.Fprintf(a.stdout, "%s %s\n", pastTense(r.Action), r.Path)
	}
}

func pastTense(action string) string {
	switch action {
	case "create":
		return "created"
	case "remove":
		return "removed"
	case "update":
		return "updated"
	}
	return action
}

// selfPath is the binary as it was invoked (a symlink such as
// /usr/local/bin/ctxstore stays one, so an upgrade that moves its target
// does not break the hooks), made absolute; else the executable's path.
func selfPath() (string, error) {
	arg0 := os.Args[0]
	if !strings.ContainsRune(arg0, filepath.Separator) {
		if p, err := exec.LookPath(arg0); err == nil {
			arg0 = p
		}
	}
	if strings.ContainsRune(arg0, filepath.Separator) {
		if p, err := filepath.Abs(arg0); err == nil {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	return os.Executable()
}

// ccStoreURL is the store the hook and the MCP server use, as an absolute
// URL: the --store given, else the project's .ctxstore/store.db (the CLI's
// default there), or ~/.ctxstore/store.db for --user.
func ccStoreURL(raw, dir string, user bool) (string, location, error) {
	if raw == "" {
		p := filepath.Join(dir, defaultStorePath)
		if user {
			p = filepath.Join(dir, ".ctxstore", "store.db")
		}
		return "sqlite:" + p, location{backend: backendSQLite, path: p}, nil
	}
	loc, err := parseLocation(raw)
	if err != nil {
		return "", loc, err
	}
	switch {
	case loc.backend == backendXTDB, loc.backend == backendPostgres:
		return loc.url, loc, nil
	case loc.path == ":memory:":
		return "", loc, usagef("--store :memory: cannot be shared by Claude Code's hooks")
	}
	return "sqlite:" + loc.path, loc, nil
}

// shellJoin quotes args for the POSIX shell Claude Code runs hooks with.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, s := range args {
		if s != "" && strings.IndexFunc(s, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
		}) < 0 {
			q[i] = s
			continue
		}
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

type ccHookCmd struct {
	Service  string        `name:"service" env:"CTXSTORE_SERVICE_URL" placeholder:"URL" help:"Post the checkpoint to this running ctxstore serve first; when it does not answer, import into the store directly."`
	Token    string        `env:"CTXSTORE_TOKEN" placeholder:"TOKEN" help:"The bearer token of --service, if it has tokens; prefer the environment variable."`
	Timeout  time.Duration `name:"timeout" default:"5s" help:"Give up a checkpoint after this long (the store's lock wait included)."`
	StateDir string        `name:"state-dir" env:"CTXSTORE_HOOK_STATE" placeholder:"DIR" help:"Where the per-session failure log and told-once marks live (default: the user cache directory's ctxstore/claude-code)."`
	SpillDir string        `name:"spill-dir" placeholder:"DIR" help:"Replace a PostToolUse output past --preview-chars with a preview naming its spill file, DIR/<session>/<tool call id>.txt, which holds it whole (install sets it; unset: outputs pass whole)."`
	Preview  int           `name:"preview-chars" default:"16000" help:"The size, in characters, from which an output enters as a preview (with --spill-dir)."`
	JSONOut  bool          `name:"report" env:"CTXSTORE_HOOK_REPORT" help:"Also print what the run did as JSON on stderr (for tests and debugging; Claude Code keeps a hook's stderr in the transcript's hook attachments)."`
}

// Run implements claude-code hook: it never fails (exit 0), so that Claude
// Code never treats ctxstore as blocking; see hooks.Runner.
func (c *ccHookCmd) Run(a *app) error {
	start := time.Now()
	dir := c.StateDir
	if dir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(d, "ctxstore", "claude-code")
		}
	}
	var chain hooks.Fallback
	if c.Service != "" {
		chain = append(chain, serviceImporter{url: strings.TrimRight(c.Service, "/"), token: c.Token, store: storeImporter{a: a, timeout: c.Timeout}})
	}
	chain = append(chain, storeImporter{a: a, timeout: c.Timeout})
	r := hooks.Runner{Importer: chain, StateDir: dir, Timeout: c.Timeout, Spill: hooks.Spill{Root: c.SpillDir, Chars: c.Preview}}
	o := r.Run(a.ctx, a.stdin)
	if err := o.Output.Write(a.stdout); err != nil {
		fmt.Fprintf(a.stderr, "ctxstore: %v\n", err)
	}
	if c.JSONOut {
		rep := map[string]any{"event": o.Checkpoint.Event, "session": o.Checkpoint.Session, "agent": o.Checkpoint.Agent,
			"result": o.Result, "notified": o.Notified, "await_missed": o.AwaitMissed, "preview": o.Preview, "ms": time.Since(start).Milliseconds(), "at": start.UTC().Format(time.RFC3339Nano)}
		if o.Err != nil {
			rep["error"] = o.Err.Error()
		}
		if o.PreviewErr != nil {
			rep["preview_error"] = o.PreviewErr.Error()
		}
		json.NewEncoder(a.stderr).Encode(rep)
	}
	return nil
}

// storeImporter imports the transcripts into the store named by --store.
type storeImporter struct {
	a       *app
	timeout time.Duration
}

// Checkpoint implements hooks.Importer.
func (s storeImporter) Checkpoint(ctx context.Context, c hooks.Checkpoint) (hooks.Result, error) {
	st, err := s.open(ctx)
	if err != nil {
		return hooks.Result{}, err
	}
	defer st.Close()
	res, err := importCheckpoint(ctx, st, c)
	res.Via = "store " + s.a.cli.Store
	if err != nil {
		return res, err
	}
	res.Outputs, err = hooks.KeepOutputs(ctx, st, c)
	return res, err
}

// keep keeps c's spilled outputs in the store (hooks.KeepOutputs), opening
// it only when there is something to keep.
func (s storeImporter) keep(ctx context.Context, c hooks.Checkpoint) (int, error) {
	if !hooks.HasOutputs(c) {
		return 0, nil
	}
	st, err := s.open(ctx)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return hooks.KeepOutputs(ctx, st, c)
}

// open opens the store for writing with the lock wait bounded by the
// hook's timeout (the default would wait ten seconds).
func (s storeImporter) open(ctx context.Context) (store.Store, error) {
	loc, err := parseLocation(s.a.cli.Store)
	if err != nil {
		return nil, err
	}
	if loc.backend != backendSQLite || loc.path == ":memory:" {
		return s.a.open(true)
	}
	if _, err := os.Stat(loc.path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(loc.path), 0o755); err != nil {
			return nil, fmt.Errorf("creating the store directory: %w", err)
		}
	}
	wait := s.timeout // 0: the store's default wait
	if d, ok := ctx.Deadline(); ok {
		wait = max(time.Until(d), time.Millisecond)
	}
	return bitemporal.Open(ctx, loc.path, bitemporal.Options{Durable: s.a.cli.Durable, BusyTimeout: wait})
}
