package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ctxstore/ctxstore/integrations/claudecode/hooks"
	"github.com/ctxstore/ctxstore/server/ccproxy"
)

// ccProxyOptions are the flags `claude-code proxy` and `claude-code run`
// share (docs/claude-code.md, "The proxy").
type ccProxyOptions struct {
	Upstream string        `name:"upstream" env:"CTXSTORE_CLAUDE_CODE_UPSTREAM" placeholder:"URL" help:"The API the requests go to (default https://api.anthropic.com; for run, Claude Code's own ANTHROPIC_BASE_URL when it is set)."`
	CacheTTL time.Duration `name:"cache-ttl" default:"5m" help:"The prompt cache's lifetime (Claude Code's breakpoints ask for five minutes)."`
	HeadTTL  string        `name:"head-ttl" default:"1h" enum:"1h,off" help:"The lifetime the system prompt's breakpoints ask for once a session has paused past --cache-ttl: 1h or off."`
	Warm     string        `name:"warm" default:"running" enum:"off,running,idle" help:"Warm requests: running (while a tool runs, or Claude Code waits for its approval), idle (while Claude Code waits for the person too) or off; each pause warms while its warms cost no more than the rewrite they save, at most an hour running, 30 minutes idle."`
	SpillDir string        `name:"spill-dir" placeholder:"DIR" help:"Managed mode: where collapsed outputs are whole, one directory per session, as the hooks write them (default ~/.ctxstore/spill)."`
}

// managed returns managed mode's configuration: outputs spilled to
// --spill-dir, decisions and calls kept in the store storeURL (a --store
// value; "" for ~/.ctxstore/store.db, as run's hooks).
func (o ccProxyOptions) managed(a *app, storeURL string) (*ccproxy.ManagedConfig, *proxyStore, error) {
	home, err := os.UserHomeDir()
	if err != nil && (o.SpillDir == "" || storeURL == "") {
		return nil, nil, fmt.Errorf("managed mode: %w (set --spill-dir and --store)", err)
	}
	spill := o.SpillDir
	if spill == "" {
		spill = filepath.Join(home, ".ctxstore", "spill")
	}
	if spill, err = filepath.Abs(spill); err != nil {
		return nil, nil, err
	}
	u, _, err := ccStoreURL(storeURL, home, true)
	if err != nil {
		return nil, nil, err
	}
	st, err := newProxyStore(a, u)
	if err != nil {
		return nil, nil, err
	}
	return &ccproxy.ManagedConfig{Spill: hooks.Spill{Root: spill}, Store: st}, st, nil
}

// start makes the proxy and listens on addr (off loopback only with
// remote); fallback is the upstream when --upstream is not given; log gets
// the proxy's lines (nil: none).
func (o ccProxyOptions) start(addr, fallback string, remote bool, log, notice io.Writer, managed *ccproxy.ManagedConfig) (*ccproxy.Proxy, *http.Server, net.Listener, *url.URL, error) {
	raw := o.Upstream
	if raw == "" {
		raw = fallback
	}
	up, err := url.Parse(raw)
	if err != nil {
		return nil, nil, nil, nil, usagef("--upstream %s: %v", raw, err)
	}
	head := time.Hour
	if o.HeadTTL == "off" {
		head = -1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	c := ccproxy.Config{Upstream: up, CacheTTL: o.CacheTTL, HeadTTL: head, Warm: o.Warm, Managed: managed}
	if notice != nil {
		c.Notice = func(msg string) { fmt.Fprintln(notice, msg) }
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		c.LoopbackOnly = true // only this machine's clients, by name too (no DNS rebinding)
	} else if !remote {
		// The proxy has no tokens: off loopback it would pass anyone's
		// requests on to the upstream (an open relay).
		ln.Close()
		return nil, nil, nil, nil, usagef("--addr %s is not a loopback address: the proxy has no tokens, so anyone who reaches it can send requests through it; keep it on 127.0.0.1, or pass --allow-remote", addr)
	} else {
		c.AddressHostsOnly = true // no DNS rebinding: requests name the proxy by address
	}
	if log != nil {
		c.Log = func(format string, args ...any) {
			fmt.Fprintf(log, time.Now().Format(time.RFC3339)+" ctxstore claude-code proxy: "+format+"\n", args...)
		}
	}
	p, err := ccproxy.New(c)
	if err != nil {
		ln.Close()
		return nil, nil, nil, nil, usagef("%v", err)
	}
	if loops(up, ln.Addr()) {
		ln.Close()
		p.Close()
		return nil, nil, nil, nil, usagef("the upstream %s is this proxy's own address: requests would loop (set --upstream)", up.Redacted())
	}
	return p, &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}, ln, up, nil
}

// loops tells whether upstream names the address the proxy listens on.
func loops(up *url.URL, addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return false
	}
	port := up.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[up.Scheme]
	}
	if port != fmt.Sprint(ta.Port) {
		return false
	}
	h := up.Hostname()
	if h == "localhost" || ta.IP.IsUnspecified() {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.Equal(ta.IP) || ip.IsLoopback() && ta.IP.IsLoopback())
}

// report prints what the proxy did.
func report(w io.Writer, p *ccproxy.Proxy) {
	st := p.Stats()
	fmt.Fprintf(w, "ctxstore claude-code proxy: stopped after %d agent requests of Claude Code sessions (%d with the head cached for the hour), %d warm requests answered, %d failed\n",
		st.Requests, st.LongHeads, st.Warms, st.WarmsFailed)
	if st.Managed+st.Unmanaged > 0 {
		fmt.Fprintf(w, "ctxstore claude-code proxy: managed mode: %d requests managed (%d rebases collapsed %d outputs), %d passed on unchanged\n",
			st.Managed, st.Rebases, st.Collapsed, st.Unmanaged)
	}
	if st.Threads > 0 {
		fmt.Fprintf(w, "ctxstore claude-code proxy: %d requests in message-thread form passed on untouched (never warmed, the head not cached for the hour)\n", st.Threads)
	}
}

// ccProxyCmd is `ctxstore claude-code proxy`.
type ccProxyCmd struct {
	ccProxyOptions
	Addr    string        `name:"addr" default:"127.0.0.1:8788" placeholder:"HOST:PORT" help:"Where to listen (port 0: any free port; the URL is printed on stdout). Off loopback it needs --allow-remote."`
	Remote  bool          `name:"allow-remote" help:"Allow --addr off loopback: the proxy has no tokens, so anyone who reaches it can send requests (with their own key) through it; requests must then name it by IP address."`
	Grace   time.Duration `name:"grace" default:"10s" help:"How long a stop waits for requests in flight."`
	Managed bool          `name:"managed" help:"Send the model ctxstore's managed context (old outputs collapsed to a line naming their spill file, which the model reads back with Read); off by default here: the spill files are written on this machine, which must be Claude Code's, and Claude Code must be allowed to Read them (claude-code install allows it)."`
}

// Run implements claude-code proxy.
func (c *ccProxyCmd) Run(a *app) error {
	var mc *ccproxy.ManagedConfig
	if c.Managed {
		m, st, err := c.managed(a, a.cli.Store)
		if err != nil {
			return err
		}
		defer st.Close()
		mc = m
	}
	p, srv, ln, up, err := c.start(c.Addr, ccproxy.DefaultUpstream, c.Remote, a.stderr, nil, mc)
	if err != nil {
		return err
	}
	defer p.Close()
	u := "http://" + ln.Addr().String()
	if a.cli.JSON {
		json.NewEncoder(a.stdout).Encode(map[string]string{"url": u})
	} else {
		fmt.Fprintln(a.stdout, u)
	}
	fmt.Fprintf(a.stderr, "ctxstore claude-code proxy: passing %s on to %s (start Claude Code with ANTHROPIC_BASE_URL=%s; SIGINT or SIGTERM stops it)\n", u, up.Redacted(), u)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err = <-errc:
	case <-a.ctx.Done():
		ctx, cancel := context.WithTimeout(context.Background(), c.Grace)
		err = srv.Shutdown(ctx)
		cancel()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	report(a.stderr, p)
	return err
}

// ccRunCmd is `ctxstore claude-code run`: Claude Code through a proxy that
// lives as long as it does.
type ccRunCmd struct {
	ccProxyOptions
	Claude  string   `name:"claude" default:"claude" env:"CTXSTORE_CLAUDE" placeholder:"PATH" help:"The Claude Code command."`
	Log     string   `name:"log" placeholder:"FILE" help:"Append the proxy's lines (warm requests, heads cached for the hour) to FILE; by default they are not written, Claude Code having the terminal."`
	Managed bool     `name:"managed" default:"true" negatable:"" help:"Send the model ctxstore's managed context: old outputs collapsed to a line naming their spill file (under --spill-dir, which this Claude Code may Read), in batches priced against the prompt cache; on by default, --no-managed passes every request on as Claude Code wrote it."`
	NoHooks bool     `name:"no-hooks" help:"Do not give this Claude Code process ctxstore's hooks (by default, when no install put them in its settings, run adds them for this process: the session recorded in --store, default ~/.ctxstore/store.db, and large outputs entering as previews)."`
	Args    []string `arg:"" optional:"" passthrough:"" help:"Claude Code's arguments (after --)."`
}

// claudeBaseURL returns the ANTHROPIC_BASE_URL Claude Code would use
// here: the env of its settings files in their order of precedence
// (managed, the project's local and shared settings, the user's), else the
// environment's; "" when none sets it.
func claudeBaseURL() string {
	var files []string
	files = append(files, "/etc/claude-code/managed-settings.json")
	if wd, err := os.Getwd(); err == nil {
		files = append(files, filepath.Join(wd, ".claude", "settings.local.json"), filepath.Join(wd, ".claude", "settings.json"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var st struct {
			Env map[string]string `json:"env"`
		}
		if json.Unmarshal(b, &st) == nil && strings.TrimSpace(st.Env["ANTHROPIC_BASE_URL"]) != "" {
			return strings.TrimSpace(st.Env["ANTHROPIC_BASE_URL"])
		}
	}
	return strings.TrimSpace(os.Getenv("ANTHROPIC_BASE_URL"))
}

// runHooks adds to set (a --settings value) install's hooks for this
// Claude Code process, unless an install put them in the settings files it
// reads here: the store is --store or ~/.ctxstore/store.db, the spill
// directory ~/.ctxstore/spill, whose files the settings allow Claude Code
// to Read without asking.
func (c *ccRunCmd) runHooks(a *app, set map[string]any) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil // nowhere to keep them: run as before
	}
	files := []string{filepath.Join(home, ".claude", "settings.json")}
	if wd, err := os.Getwd(); err == nil {
		files = append(files, filepath.Join(wd, ".claude", "settings.json"), filepath.Join(wd, ".claude", "settings.local.json"))
	}
	if hooks.Installed(files...) {
		return nil
	}
	bin, err := selfPath()
	if err != nil {
		return fmt.Errorf("finding the ctxstore binary: %w", err)
	}
	storeURL, _, err := ccStoreURL(a.cli.Store, home, true)
	if err != nil {
		return err
	}
	spill := filepath.Join(home, ".ctxstore", "spill")
	if c.SpillDir != "" {
		if spill, err = filepath.Abs(c.SpillDir); err != nil {
			return err
		}
	}
	raw, err := hooks.RunHooks(hooks.Config{Timeout: 10, Command: shellJoin([]string{bin, "--store", storeURL, "claude-code", "hook",
		"--timeout", "5s", "--spill-dir", spill})})
	if err != nil {
		return err
	}
	set["hooks"] = raw
	// A Read rule: "//" begins an absolute path in Claude Code's rules.
	set["permissions"] = map[string]any{"allow": []string{"Read(/" + filepath.ToSlash(spill) + "/**)"}}
	return nil
}

// exitStatus makes run exit with a status of its own, saying nothing
// more (Claude Code said what went wrong).
type exitStatus struct{ code int }

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run implements claude-code run.
func (c *ccRunCmd) Run(a *app) error {
	fallback := ccproxy.DefaultUpstream
	if v := claudeBaseURL(); v != "" {
		fallback = v // the endpoint Claude Code would have used
	}
	bin, err := exec.LookPath(c.Claude)
	if err != nil {
		return usagef("--claude %s: %v", c.Claude, err)
	}
	args := c.Args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	own := true
	for _, a := range args {
		if a == "--settings" || strings.HasPrefix(a, "--settings=") {
			own = false // the person's own --settings: ours would conflict (docs/claude-code.md)
		}
	}
	var log io.Writer
	if c.Log != "" {
		f, err := os.OpenFile(c.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return usagef("--log: %v", err)
		}
		defer f.Close()
		log = f
	}
	var mc *ccproxy.ManagedConfig
	if c.Managed {
		m, st, err := c.managed(a, a.cli.Store)
		if err != nil {
			return err
		}
		defer st.Close()
		mc = m
	}
	p, srv, ln, _, err := c.start("127.0.0.1:0", fallback, false, log, a.stderr, mc)
	if err != nil {
		return err
	}
	defer p.Close()
	go srv.Serve(ln)
	u := "http://" + ln.Addr().String()

	if own {
		// Claude Code's settings files may set ANTHROPIC_BASE_URL in their
		// env, which wins over the environment; --settings wins over them.
		set := map[string]any{"env": map[string]string{"ANTHROPIC_BASE_URL": u}}
		if !c.NoHooks {
			if err := c.runHooks(a, set); err != nil {
				return err
			}
		}
		if mc != nil && set["permissions"] == nil {
			// The model reads collapsed outputs back from the proxy's
			// spill directory, hooks or not: a Read rule for it ("//"
			// begins an absolute path in Claude Code's rules).
			set["permissions"] = map[string]any{"allow": []string{"Read(/" + filepath.ToSlash(mc.Spill.Root) + "/**)"}}
		}
		b, _ := json.Marshal(set)
		args = append([]string{"--settings", string(b)}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "ANTHROPIC_BASE_URL="+u)
	// SIGINT reaches Claude Code from the terminal (it interrupts the
	// model there, it does not end the session): it is not passed on.
	// SIGTERM sent to ctxstore alone is.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	if err := cmd.Start(); err != nil {
		srv.Close()
		return fmt.Errorf("claude: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
wait:
	for {
		select {
		case s := <-term:
			cmd.Process.Signal(s)
		case err = <-done:
			break wait
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	srv.Shutdown(ctx)
	cancel()
	report(a.stderr, p)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if code := ee.ExitCode(); code > 0 {
			return &exitStatus{code}
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitStatus{128 + int(ws.Signal())} // as a shell says it
		}
		return &exitStatus{exitError}
	}
	return err
}
