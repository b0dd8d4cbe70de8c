package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ctxstore/ctxstore/context/assemble"
	"github.com/ctxstore/ctxstore/context/collapse"
	"github.com/ctxstore/ctxstore/context/files"
	"github.com/ctxstore/ctxstore/context/notes"
	"github.com/ctxstore/ctxstore/context/recall"
	"github.com/ctxstore/ctxstore/server/httpapi"
)

// serveCmd runs the HTTP API over the context manager (docs/service.md).
type serveCmd struct {
	Addr        string        `default:"127.0.0.1:7411" env:"CTXSTORE_ADDR" placeholder:"HOST:PORT" help:"Address to listen on (port 0: a free one). Any address but loopback needs a token."`
	Token       string        `env:"CTXSTORE_TOKEN" placeholder:"TOKEN" help:"A bearer token granting every session; prefer the environment variable (a command line is visible to other users)."`
	TokenFile   string        `name:"token-file" type:"existingfile" placeholder:"PATH" help:"Bearer tokens, one per line: TOKEN [SESSION...]; a token with sessions grants only those."`
	Layout      string        `default:"stream" enum:"stream,literal" help:"Context layout: stream (cache-stable) or literal."`
	TurnsBack   int           `name:"collapse-turns" default:"3" help:"Tool outputs stay active for this many turns (the current one included)."`
	PerTurn     int           `name:"collapse-per-turn" default:"5" help:"At most this many tool outputs of a turn stay active."`
	Files       int           `name:"collapse-files" default:"0" help:"At most this many files read in a turn stay active, in the same turns (0: as many as tool outputs; -1: read files stay active until deactivated)."`
	Budget      int           `name:"collapse-budget" default:"16000" help:"Beyond the most recent outputs and reads (--collapse-per-turn, --collapse-files), older ones stay active only while all kept ones fit this many tokens (0: no budget)."`
	Stale       int           `name:"stale-threshold" default:"8000" help:"Collapse stale content in batches of at least this many tokens (the rebase cost model decides when and from where)."`
	CacheTTL    time.Duration `name:"cache-ttl" default:"5m" help:"The provider's prompt-cache lifetime, for the rebase cost model (after that long without a call the cache is cold)."`
	HeadTTL     time.Duration `name:"head-ttl" default:"1h" help:"How long the harness is asked to keep the head (system prompt and tools) cached once a session has paused longer than --cache-ttl (Anthropic: 1h; 0 or no longer than --cache-ttl: never)."`
	Preview     int           `name:"preview-tokens" default:"4000" help:"A tool output larger than this many tokens enters its tool result as a preview (its first and last lines and how to read it whole); -1: never (session show reports how often previews were read back)."`
	Breakpoints string        `name:"breakpoints" default:"stable" enum:"stable,prefix,end" help:"Where the harness caches, for the rebase cost model: stable (the end of the stable messages, as ctxstore's Pi and OpenClaw extensions place breakpoints), prefix (any shared prefix, an automatic cache) or end (the end of each request only)."`
	NoTrack     bool          `name:"no-track" help:"Do not watch files for changes (a file edited on disk is then seen at its next read)."`
	Commit      string        `name:"commit-every" default:"call" enum:"call,turn,off" help:"When sessions write conversation commits: every context call with new messages, each turn (a user prompt), or off (docs/commits.md)."`
	Grace       time.Duration `default:"30s" help:"On SIGTERM or SIGINT, how long requests in flight may take to finish."`
	Roots       []string      `name:"root" placeholder:"DIR" help:"A directory sessions may read and index files in, and POST /v1/import may import from (repeatable; symlinks resolved). Without it, the directory serve was started in; a session's cwd and own roots must lie inside these."`
	Notes       []string      `name:"notes" placeholder:"DIR" help:"A note root (repeatable): Markdown files under it become note objects with title, tags, links and backlinks; read and activate on a note list where its links lead."`
	Mounts      []string      `name:"mount" placeholder:"PREFIX=FSID" help:"A mount mapping (repeatable): files under the absolute PREFIX belong to filesystem FSID (e.g. a host directory bind-mounted into a sandbox), so they keep one identity across machines."`
	Devices     bool          `name:"detect-devices" help:"Give files on another device than / a filesystem id of their own, unless a --mount maps them."`
	LogLevel    string        `name:"log-level" default:"info" enum:"debug,info,warn,error" help:"Log on stderr from this level: info says each session opened or resumed and each context call (session, call, tokens, cached share, rebase); warn only failed requests (each naming its session); error only the server's failures."`
	Spill       string        `name:"spill-dir" env:"CTXSTORE_SPILL_DIR" placeholder:"DIR" help:"Where bare-head sessions' outputs are written for the model to read back (one directory per session, removed when it closes; default ctxstore/spill in the user's cache directory)."`
	Recall      string        `name:"recall-config" env:"CTXSTORE_RECALL_CONFIG" placeholder:"FILE" help:"The session index's config (model providers, threshold; docs/recall.md). Without it sessions are indexed by the offline generator."`
}

// headTTL is the --head-ttl the assembler takes: 0 there is its default,
// so "never" is negative.
func headTTL(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// Run serves until SIGINT or SIGTERM, then shuts down gracefully: no new
// connections, requests in flight finish, sessions are flushed, the store
// is closed.
func (c *serveCmd) Run(a *app) error {
	if c.Preview == 0 || c.Preview < -1 {
		return usagef("--preview-tokens %d: want a size in tokens, or -1 for never", c.Preview)
	}
	var tokens []httpapi.Token
	if c.Token != "" {
		if len(c.Token) < 16 {
			return usagef("--token (CTXSTORE_TOKEN): a token must have at least 16 characters")
		}
		tokens = append(tokens, httpapi.Token{Secret: c.Token})
	}
	if c.TokenFile != "" {
		f, err := os.Open(c.TokenFile)
		if err != nil {
			return err
		}
		ts, err := httpapi.ParseTokens(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", c.TokenFile, err)
		}
		tokens = append(tokens, ts...)
	}
	if err := httpapi.CheckBind(c.Addr, tokens); err != nil {
		return usagef("%v", err)
	}
	var roots []string
	for _, r := range c.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return usagef("--root %s: %v", r, err)
		}
		roots = append(roots, abs)
	}
	fsid, err := machineFilesystemID()
	if err != nil {
		return err
	}
	ro := files.ResolverOptions{DefaultID: fsid, DetectDevices: c.Devices}
	for _, m := range c.Mounts {
		prefix, id, ok := strings.Cut(m, "=")
		if !ok || prefix == "" || id == "" {
			return usagef("--mount %q: want PREFIX=FSID", m)
		}
		ro.Mounts = append(ro.Mounts, files.Mount{Prefix: prefix, FilesystemID: id})
	}
	res, err := files.NewResolver(ro)
	if err != nil {
		return usagef("--mount: %v", err)
	}
	var nt *notes.Notes
	if len(c.Notes) > 0 {
		if nt, err = notes.New(notes.Options{Roots: c.Notes}); err != nil {
			return usagef("--notes: %v", err)
		}
	}
	st, err := a.open(true)
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: logLevel(c.LogLevel)}))
	recallSet, warns := recall.LoadConfig(c.Recall)
	for _, w := range warns {
		fmt.Fprintln(a.stderr, "ctxstore: warning: "+w)
	}
	srv, err := httpapi.New(httpapi.Options{
		Recall: recallSet,
		Store:  st, Resolver: res, Notes: nt, Track: !c.NoTrack, Tokens: tokens,
		Policy: collapse.Config{TurnsBack: c.TurnsBack, PerTurn: c.PerTurn, FilesPerTurn: c.Files, Budget: c.Budget},
		Layout: assemble.Layout(c.Layout), Rebase: assemble.Policy{StaleThreshold: c.Stale, Breakpoints: c.Breakpoints, CacheTTL: c.CacheTTL, HeadTTL: headTTL(c.HeadTTL), PreviewTokens: c.Preview}, CommitEvery: c.Commit,
		Log: log, Roots: roots, Spill: c.Spill,
	})
	if err != nil {
		return err
	}
	if err := mountInspector(srv, st, log); err != nil {
		srv.Close()
		return err
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		srv.Close()
		return err
	}
	url := "http://" + ln.Addr().String()
	if a.cli.JSON {
		json.NewEncoder(a.stdout).Encode(map[string]string{"url": url})
	} else {
		fmt.Fprintln(a.stdout, url)
	}
	fmt.Fprintf(a.stderr, "ctxstore: serving the context API at %s (SIGINT or SIGTERM stops it)\n", url)
	fmt.Fprintf(a.stderr, "ctxstore: the inspector is at %s%s/\n", url, inspectorPrefix)
	err = srv.Serve(a.ctx, ln, c.Grace)
	fmt.Fprintln(a.stderr, "ctxstore: stopped")
	return err
}

// machineFilesystemID is this machine's filesystem id, with its fallback
// kept in the user's config directory.
func machineFilesystemID() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "ctxstore")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return files.MachineFilesystemID(filepath.Join(dir, "filesystem-id"))
}
