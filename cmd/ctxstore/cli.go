package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/ctxstore/ctxstore/store"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitConflict: a transaction aborted because a match failed, e.g.
	// put --if-match found another version than the one expected.
	exitConflict = 3
)

// cli is the command line: global flags and one field per subcommand.
type cli struct {
	Store string `name:"store" env:"CTXSTORE_URL" placeholder:"URL" help:"Store to use: sqlite:PATH, file:PATH, PATH.db, :memory: or http(s)://HOST:PORT (XTDB). Default: ./.ctxstore/store.db."`
	JSON  bool   `name:"json" help:"Print stable machine-readable JSON on stdout."`
	// Durable and XTDBTimeout apply to every command that opens a store.
	Durable     bool          `name:"durable" env:"CTXSTORE_DURABLE" help:"SQLite: commit with synchronous=FULL, so an acknowledged transaction survives a power loss, not only a crash (slower writes)."`
	XTDBTimeout time.Duration `name:"xtdb-timeout" env:"CTXSTORE_XTDB_TIMEOUT" default:"60s" placeholder:"DURATION" help:"XTDB: how long one request may wait for the server's answer (long polls add their own wait)."`

	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`

	// Sessions and contexts: what the model saw, and why it cost
	// what it did.
	Sessions     sessionsCmd     `cmd:"" group:"context" help:"List the sessions: name, harness, cwd, started, last call, calls, tokens, cached share, cost."`
	Session      sessionCmd      `cmd:"" group:"context" help:"Show a session (show), list, export and import sessions (portable session bundles)."`
	Calls        callsCmd        `cmd:"" group:"context" help:"One line per model call of a session: tokens, cached share, cost, cache break and what it cost, rebase and reason, what collapsed."`
	Call         callCmd         `cmd:"" group:"context" help:"The exact context of call N, blocks labelled by kind and object (--raw: the bytes sent; --diff M: against call M)."`
	Commit       commitCmd       `cmd:"" group:"context" help:"Context commits: checkpoint, show, history, materialize, resolve, update-metadata, fork (docs/commits.md)."`
	Materialize  materializeCmd  `cmd:"" group:"context" help:"Write the conversation at a commit as a session file Pi, Claude Code or Codex resumes (--format pi|claude-code|codex; --place puts it where the harness looks)."`
	Search       searchCmd       `cmd:"" group:"context" help:"Full-text search over every object (metadata and snippets, ranked)."`
	QuerySession querySessionCmd `cmd:"" group:"context" name:"query-session" help:"Ask a question about a session: a model answers from its conversation, or the best-matching passages without one."`
	Object       objectCmd       `cmd:"" group:"context" help:"An object's versions on both time axes, and which calls showed which version."`
	Demo         demoCmd         `cmd:"" group:"context" help:"Run a short agent session offline with ctxstore managing its context, then show what the model saw, what collapsed and why, and the cost against sending the whole history (store: .ctxstore/demo.db)."`
	Replay       replayCmd       `cmd:"" group:"context" help:"Replay Claude Code or Pi transcripts call by call through ctxstore and other context strategies; report tokens, cache share and cost."`
	Eval         evalCmd         `cmd:"" group:"context" help:"Run Pi (or Claude Code) on a task suite against a model endpoint, with and without ctxstore; report solved tasks, tokens, cost and faults per arm (docs/eval.md)."`
	Stats        statsCmd        `cmd:"" group:"context" help:"Session analytics from the context commits: profiles, amplification, compactions, tools, activity by hour and weekday, peak concurrency, outcomes (docs/stats.md)."`

	Serve serveCmd `cmd:"" group:"service" help:"Serve the context manager's HTTP API (sessions, context calls, tools) and the web inspector, for agent harnesses such as Pi."`
	MCP   mcpCmd   `cmd:"" group:"service" name:"mcp" help:"Serve ctxstore to MCP hosts (Claude Code, editors): sessions, objects and their history, context commits; over stdio, or streamable HTTP with --http."`

	ClaudeCode claudeCodeCmd `cmd:"" group:"service" name:"claude-code" help:"Record Claude Code sessions as they run: install (or uninstall) ctxstore's hooks and MCP server in Claude Code's settings; hook is what they run (docs/claude-code.md)."`

	Put     putCmd     `cmd:"" group:"store" help:"Write one JSON document (or, with --lines, many) in one transaction."`
	Delete  deleteCmd  `cmd:"" group:"store" help:"Delete a document (write a tombstone), optionally over a valid-time range."`
	Evict   evictCmd   `cmd:"" group:"store" help:"Remove every version of a document, in all times."`
	Get     getCmd     `cmd:"" group:"store" help:"Print a document as of a basis (valid time, transaction)."`
	History historyCmd `cmd:"" group:"store" help:"List the versions of a document, up to the basis (valid time now unless --valid-time says otherwise)."`
	Query   queryCmd   `cmd:"" group:"store" help:"Find documents by field values."`
	Log     logCmd     `cmd:"" group:"store" help:"List committed transactions and their operations."`
	Status  statusCmd  `cmd:"" group:"store" help:"Describe the store and its latest transaction."`
	Export  exportCmd  `cmd:"" group:"store" help:"Write the store's history (or what follows a tx) as a portable version log."`
	Import  importCmd  `cmd:"" group:"store" help:"Import agent sessions (Claude Code transcripts, Pi session files, Codex CLI rollouts, SWE-agent trajectories; a file or a folder) as chains of context commits, only what is new on a second run; or apply a portable version log, resuming where an earlier import of its source stopped."`
	Sync    syncCmd    `cmd:"" group:"store" help:"Bring one store up to date with another, applying only what is new."`
	XTDB    xtdbCmd    `cmd:"" group:"store" name:"xtdb" help:"Run a real XTDB 1.24.5 server for production or local use."`
	Help    helpCmd    `cmd:"" group:"help" help:"Show help for ctxstore or one of its commands."`
}

// app is what every command's Run gets: the context, the standard streams
// and the global flags.
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	cli    *cli
	// target is the command chosen, whose ref-tagged ids open resolves
	// once (resolveRefs).
	target   reflect.Value
	resolved bool
}

// usageError is a mistake on the command line; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// exitRequest is panicked by kong's Exit hook (after --help) and recovered
// by run, so that run returns instead of exiting the process.
type exitRequest struct{ code int }

type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to describe."`
}

// Run prints the help of c.Command by parsing "COMMAND... --help" (run
// rewrites a leading "help X" that way before parsing, so this is reached
// only when global flags come first).
func (c *helpCmd) Run(kctx *kong.Context) error {
	if _, err := kctx.Kong.Parse(append(append([]string{}, c.Command...), "--help")); err != nil {
		return &usageError{err.Error()}
	}
	return nil
}

// run parses args, runs the selected command and returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	c := &cli{}
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, cli: c}
	parser, err := kong.New(c,
		kong.Name("ctxstore"),
		kong.Description("ctxstore manages an agent's context: it assembles what the model sees at each call, records it, and shows it again: every past context byte for byte, what changed between two calls, why a call missed the prompt cache and what that cost. Its store is a bitemporal JSON document store (the store commands below). Data goes to stdout, errors to stderr.\n\nRun \"ctxstore help COMMAND\" for a command's flags; docs/cli.md has the full reference, docs/inspector.md the inspector."),
		kong.Vars{"version": version()}.CloneWith(replayHelpVars()),
		kong.ExplicitGroups([]kong.Group{
			{Key: "context", Title: "Sessions and contexts"},
			{Key: "service", Title: "Serving agents"},
			{Key: "store", Title: "The document store"},
			{Key: "help", Title: "Help"},
		}),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.Bind(a),
	)
	if err != nil { // a programming error in the cli struct
		fmt.Fprintf(stderr, "ctxstore: %v\n", err)
		return exitError
	}
	// A hook command Claude Code runs must never exit 2 (a blocking error:
	// a Stop hook's 2 keeps the model going); a usage error (a settings
	// file written by another ctxstore version) exits 1, non-blocking.
	defer func() {
		if code == exitUsage && isClaudeCodeHook(args) {
			code = exitError
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(exitRequest); ok {
				code = e.code
				return
			}
			panic(r)
		}
	}()
	if len(args) > 0 && args[0] == "help" {
		args = append(append([]string{}, args[1:]...), "--help")
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "ctxstore: no command given")
		fmt.Fprintln(stderr, `Run "ctxstore help" for the list of commands.`)
		return exitUsage
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		hint := "ctxstore help"
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			if cmd := pe.Context.Command(); cmd != "" {
				hint += " " + strings.Fields(cmd)[0]
			} else if word, ok := strings.CutPrefix(err.Error(), "unexpected argument "); ok {
				err = fmt.Errorf("unknown command %q", word)
			}
		}
		printError(stderr, err)
		fmt.Fprintf(stderr, "Run %q for usage.\n", hint)
		return exitUsage
	}
	if n := kctx.Selected(); n != nil {
		a.target = n.Target
	}
	if err := kctx.Run(); err != nil {
		var st *exitStatus
		if errors.As(err, &st) {
			return st.code // the child said why
		}
		printError(stderr, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		if errors.Is(err, store.ErrConflict) {
			return exitConflict
		}
		return exitError
	}
	return exitOK
}

// isClaudeCodeHook says whether args run `claude-code hook`.
func isClaudeCodeHook(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "claude-code" && args[i+1] == "hook" {
			return true
		}
	}
	return false
}

// printError writes err to w as "ctxstore: <message>", one prefixed line
// per line of the message.
func printError(w io.Writer, err error) {
	for line := range strings.SplitSeq(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintf(w, "ctxstore: %s\n", line)
	}
}
