package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ctxstore/ctxstore/harness/claudecode"
	"github.com/ctxstore/ctxstore/harness/codex"
	"github.com/ctxstore/ctxstore/harness/formats"
	"github.com/ctxstore/ctxstore/harness/opencode"
	"github.com/ctxstore/ctxstore/objects/events"
	"github.com/ctxstore/ctxstore/session/commits"
	"github.com/ctxstore/ctxstore/store"
)

// materializeCmd writes the conversation at a commit as a session file a
// harness resumes.
type materializeCmd struct {
	ID      string `arg:"" placeholder:"CTX" help:"The commit."`
	Format  string `name:"format" placeholder:"FORMAT" help:"pi, claude-code, codex, opencode, or any format of 'commit formats' (default: the commit's own)."`
	Stop    string `name:"stop" placeholder:"STOP" help:"compaction (default), root, or an ancestor's id."`
	Out     string `name:"out" short:"o" placeholder:"FILE" help:"Write the session file to FILE, atomically (default: stdout)."`
	Place   bool   `name:"place" help:"Write the file where the harness looks for it: Claude Code's ~/.claude/projects/<cwd>/<session>.jsonl (claude --resume SESSION), Pi's ~/.pi/agent/sessions/--<cwd>--/<time>_<session>.jsonl (pi -c, or pi --session FILE), Codex's $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session>.jsonl (codex resume SESSION), opencode's database ~/.local/share/opencode/opencode.db (opencode --session SESSION)."`
	Cwd     string `name:"cwd" placeholder:"DIR" help:"The working directory the harness will run in (default: the current one): names the placed file's folder and Claude Code records' cwd."`
	Session string `name:"session" placeholder:"ID" help:"Name the file's session ID (Claude Code: a UUID). Default with --place: a new UUID; otherwise the id derived from the content."`
	Force   bool   `name:"force" help:"With --place, replace a session file that exists."`
	NoCache bool   `name:"no-cache" help:"Neither read nor write the snapshot cache."`
}

// resolveFormat turns a harness name into a format name.
func resolveFormat(f string) string {
	return formats.Registry().CommitFormatOf(commits.CanonicalFormat(f))
}

// Run implements materialize.
func (c *materializeCmd) Run(a *app) error {
	if c.Place && c.Out != "" {
		return usagef("--place and --out both say where the file goes; give one")
	}
	format := resolveFormat(c.Format)
	cwd := c.Cwd
	if cwd == "" && c.Place {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("the working directory: %w", err)
		}
		cwd = wd
	}
	if cwd != "" {
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return fmt.Errorf("--cwd %s: %w", c.Cwd, err)
		}
		cwd = abs
	}
	session := c.Session
	if session == "" && c.Place {
		session = uuid.NewString()
		if format == opencode.FormatName {
			session = opencode.NewSessionID(time.Now(), session)
		}
	}
	s, err := a.open(true)
	if err != nil {
		return err
	}
	defer s.Close()
	svc := commitService(s)

	// Every check before the materialization (which caches a snapshot):
	// bad input writes nothing.
	target := format
	if target == "" && (c.Place || session != "") {
		cm, err := svc.Show(a.ctx, c.ID, store.Basis{})
		if err != nil {
			return err
		}
		target = cm.Format
	}
	if c.Place && target != commits.FormatClaudeCode && target != commits.FormatPi && target != commits.FormatCodex && target != opencode.FormatName {
		return usagef("--place knows where Claude Code, Pi, Codex and opencode look for sessions, not %s; use --out", target)
	}
	if session != "" && target == opencode.FormatName && !strings.HasPrefix(session, "ses_") {
		return fmt.Errorf("--session %q is not an opencode session id (ses_...)", session)
	}
	if session != "" {
		if f, ok := svc.Registry().Lookup(target); ok && f.ForSession == nil {
			return usagef("--session: %s files do not name a session", target)
		}
		if _, err := uuid.Parse(session); err != nil && (target == commits.FormatClaudeCode || target == commits.FormatCodex) {
			return fmt.Errorf("--session %q is not a UUID (Claude Code and Codex name sessions by UUID)", session)
		}
	}
	out := c.Out
	if c.Place && target == opencode.FormatName {
		if out, err = opencode.DBPath(); err != nil {
			return err
		}
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("opencode's database %s: %w (run opencode once to make it)", out, err)
		}
	} else if c.Place {
		if out, err = placedPath(target, cwd, session); err != nil {
			return err
		}
		if _, err := os.Stat(out); err == nil && !c.Force {
			return fmt.Errorf("%s exists: a session of that id is there already (--force replaces it)", out)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}

	m, err := svc.Materialize(a.ctx, commits.MaterializeRequest{ID: c.ID, Format: format, Stop: c.Stop, NoCache: c.NoCache})
	if err != nil {
		return err
	}
	if c.Place && m.Format != target {
		return fmt.Errorf("the chain of %s holds a format this binary does not know: materialized as %s (tier %s), which %s cannot resume",
			c.ID, m.Format, m.Tier, target)
	}
	content := m.Content
	if session != "" {
		if f, _ := svc.Registry().Lookup(m.Format); f != nil && f.ForSession != nil {
			if content, err = f.ForSession(content, session); err != nil {
				return fmt.Errorf("naming the session: %w", err)
			}
		}
	}
	if m.Format == commits.FormatClaudeCode && cwd != "" {
		if content, err = claudecode.SetCwd(content, cwd); err != nil {
			return err
		}
	}
	if m.Format == commits.FormatCodex && cwd != "" {
		if content, err = codex.SetCwd(content, cwd); err != nil {
			return err
		}
	}
	if m.Format == opencode.FormatName && cwd != "" {
		if content, err = opencode.SetCwd(content, cwd); err != nil {
			return err
		}
	}
	if c.Place && m.Format != opencode.FormatName {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("creating the harness's session folder: %w", err)
		}
	}
	mc := *m
	mc.Content = content
	mc.ContentSHA256 = commits.ContentHash(content)
	lost, err := claudeCodeLost(a, svc, c.ID, c.Stop, m)
	if err != nil {
		return err
	}
	cxLost, err := codexLost(a, svc, c.ID, c.Stop, m)
	if err != nil {
		return err
	}
	ocLost, err := opencodeLost(a, svc, c.ID, c.Stop, m)
	if err != nil {
		return err
	}
	if c.Place && m.Format == opencode.FormatName {
		// opencode keeps sessions in its SQLite database: the rows go
		// there, in one transaction (docs/opencode.md).
		if _, err := opencode.Place(a.ctx, out, content, c.Force); err != nil {
			return err
		}
	} else if out != "" {
		if err := writeOutput(a.stdout, out, false, "the session file", func(w io.Writer) error {
			_, err := w.Write(content)
			return err
		}); err != nil {
			return err
		}
	}
	if a.cli.JSON {
		o := materializedJSON{Materialized: &mc, File: out}
		if out == "" {
			o.Content, o.ContentBase64 = mc.ContentJSON()
		}
		var l any
		if lost != nil {
			l = lost
		} else if cxLost != nil {
			l = cxLost
		} else if ocLost != nil {
			l = ocLost
		}
		return a.printJSON(struct {
			materializedJSON
			Session string `json:"session,omitempty"`
			Cwd     string `json:"cwd,omitempty"`
			Lost    any    `json:"lost,omitempty"`
		}{o, session, cwd, l})
	}
	fmt.Fprintf(a.stderr, "%s: %d commits, %s, tier %s, %d messages, ~%d tokens%s\n", m.Commit, m.Commits, m.Format, m.Tier,
		m.MessageCount, m.TokenCount, map[bool]string{true: " (cached)", false: ""}[m.Cached])
	if lost != nil {
		fmt.Fprintf(a.stderr, "not representable in Claude Code (docs/crossharness.md): %s\n", lostText(*lost))
	}
	if cxLost != nil {
		fmt.Fprintf(a.stderr, "not representable in Codex as recorded (docs/crossharness.md): %s\n", lostAsText(*cxLost, "Codex"))
	}
	if ocLost != nil {
		fmt.Fprintf(a.stderr, "not representable in opencode as recorded (docs/crossharness.md): %s\n", lostAsText(codex.Lost(*ocLost), "opencode"))
	}
	if out == "" {
		_, err := a.stdout.Write(content)
		return err
	}
	fmt.Fprintf(a.stderr, "wrote %s\n", out)
	if c.Place {
		switch m.Format {
		case commits.FormatClaudeCode:
			fmt.Fprintf(a.stderr, "resume it in %s with: claude --resume %s\n", cwd, session)
		case commits.FormatPi:
			fmt.Fprintf(a.stderr, "resume it in %s with: pi -c (or pi --session %s)\n", cwd, out)
		case commits.FormatCodex:
			fmt.Fprintf(a.stderr, "resume it in %s with: codex resume %s (or codex exec resume %s PROMPT)\n", cwd, session, session)
		case opencode.FormatName:
			fmt.Fprintf(a.stderr, "resume it in %s with: opencode --session %s (or opencode run --session %s PROMPT)\n", cwd, session, session)
		}
	}
	_, err = fmt.Fprintln(a.stdout, out)
	return err
}

// placedPath is where a harness looks for session files of cwd.
func placedPath(format, cwd, session string) (string, error) {
	switch format {
	case commits.FormatClaudeCode:
		return claudecode.SessionPath(cwd, session)
	case commits.FormatPi:
		dir, err := piAgentDir()
		if err != nil {
			return "", err
		}
		// Pi 0.87: <agent dir>/sessions/--<cwd without its leading
		// separator, with / \ : as ->--/<ISO time with : and . as ->_<id>.jsonl
		// (docs/crossharness.md).
		name := "--" + strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(trimOneSeparator(cwd)) + "--"
		stamp := strings.NewReplacer(":", "-", ".", "-").Replace(time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
		return filepath.Join(dir, "sessions", name, stamp+"_"+session+".jsonl"), nil
	case commits.FormatCodex:
		home, err := codex.Home()
		if err != nil {
			return "", err
		}
		return codex.SessionPath(home, session, time.Now()), nil
	}
	return "", fmt.Errorf("no placement for %s", format)
}

// piAgentDir is Pi's agent folder: $PI_CODING_AGENT_DIR, or ~/.pi/agent.
func piAgentDir() (string, error) {
	if d := os.Getenv("PI_CODING_AGENT_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home folder for ~/.pi: %w", err)
	}
	return filepath.Join(home, ".pi", "agent"), nil
}

// trimOneSeparator removes one leading / or \ (as Pi does).
func trimOneSeparator(p string) string {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "\\") {
		return p[1:]
	}
	return p
}

// translated returns the chain's events when m is a translation into
// format (not the native tier): they are encoded again, without touching
// the cache, to say what the translation left out or made up.
func translated(a *app, svc *commits.Service, id, stop, format string, m *commits.Materialized) ([]events.Event, error) {
	if m.Format != format || m.Tier == commits.TierNative {
		return nil, nil
	}
	ev, err := svc.Materialize(a.ctx, commits.MaterializeRequest{ID: id, Format: commits.FormatEvents, Stop: stop, NoCache: true})
	if err != nil {
		return nil, err
	}
	return events.Decode(ev.Content)
}

// claudeCodeLost says what a translation into claude-code-v1 left out or
// made up (nil for other formats, the native tier, or nothing lost).
func claudeCodeLost(a *app, svc *commits.Service, id, stop string, m *commits.Materialized) (*claudecode.Lost, error) {
	evs, err := translated(a, svc, id, stop, commits.FormatClaudeCode, m)
	if err != nil || evs == nil {
		return nil, err
	}
	_, lost, err := claudecode.Encode(evs)
	if err != nil || lost == (claudecode.Lost{}) {
		return nil, err
	}
	return &lost, nil
}

// codexLost is claudeCodeLost for codex-v1: what a translation into a
// Codex rollout left out, wrote as text or made up.
func codexLost(a *app, svc *commits.Service, id, stop string, m *commits.Materialized) (*codex.Lost, error) {
	evs, err := translated(a, svc, id, stop, commits.FormatCodex, m)
	if err != nil || evs == nil {
		return nil, err
	}
	_, lost, err := codex.EncodeLost(evs)
	if err != nil || lost == (codex.Lost{}) {
		return nil, err
	}
	return &lost, nil
}

// opencodeLost is codexLost for opencode-v1.
func opencodeLost(a *app, svc *commits.Service, id, stop string, m *commits.Materialized) (*opencode.Lost, error) {
	evs, err := translated(a, svc, id, stop, opencode.FormatName, m)
	if err != nil || evs == nil {
		return nil, err
	}
	_, lost, err := opencode.EncodeLost(evs)
	if err != nil || lost == (opencode.Lost{}) {
		return nil, err
	}
	return &lost, nil
}

// lostAsText says what a translation into a harness that writes
// unmapped calls as text (Codex, opencode) left out or restated.
func lostAsText(l codex.Lost, harness string) string {
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{l.Thinking, "thinking blocks of other providers"}, {l.Events, "harness events with no message (system, metrics, errors, raw records)"},
		{l.Excluded, "sub-agent or out-of-context events"}, {l.AsText, "tool calls " + harness + " has no tool for (written as text, with their results)"},
		{l.Unanswered, "tool calls without a result (given an output saying so)"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return strings.Join(parts, "; ")
}

func lostText(l claudecode.Lost) string {
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{l.Thinking, "thinking blocks without a Claude signature"}, {l.Events, "harness events with no message (system, metrics, errors, raw records)"},
		{l.Excluded, "sub-agent or out-of-context events"}, {l.Orphans, "tool results without a call"},
		{l.Blocks, "result blocks that are neither text nor image"}, {l.Unanswered, "tool calls without a result (given an error result)"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return strings.Join(parts, "; ")
}
