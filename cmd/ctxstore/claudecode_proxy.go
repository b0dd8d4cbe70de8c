package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/ctxstore/ctxstore/server/ccproxy"
)

// ccProxyCmd is `ctxstore claude-code proxy` (docs/claude-code.md, "The
// proxy").
type ccProxyCmd struct {
	Addr     string        `name:"addr" default:"127.0.0.1:8788" placeholder:"HOST:PORT" help:"Where to listen (port 0: any free port; the URL is printed on stdout)."`
	Upstream string        `name:"upstream" default:"https://api.anthropic.com" env:"CTXSTORE_CLAUDE_CODE_UPSTREAM" placeholder:"URL" help:"The API the requests go to."`
	CacheTTL time.Duration `name:"cache-ttl" default:"5m" help:"The prompt cache's lifetime (Claude Code's breakpoints ask for five minutes)."`
	HeadTTL  string        `name:"head-ttl" default:"1h" enum:"1h,off" help:"The lifetime the system prompt's breakpoints ask for once a session has paused past --cache-ttl: 1h or off."`
	Warm     string        `name:"warm" default:"running" enum:"off,running,idle" help:"Warm requests: running (while a tool runs, or Claude Code waits for its approval), idle (while Claude Code waits for the person too) or off; each pause warms while its warms cost no more than the rewrite they save, at most an hour running, 30 minutes idle."`
	Grace    time.Duration `name:"grace" default:"10s" help:"How long a stop waits for requests in flight."`
}

// Run implements claude-code proxy.
func (c *ccProxyCmd) Run(a *app) error {
	up, err := url.Parse(c.Upstream)
	if err != nil {
		return usagef("--upstream %s: %v", c.Upstream, err)
	}
	head := time.Hour
	if c.HeadTTL == "off" {
		head = -1
	}
	p, err := ccproxy.New(ccproxy.Config{Upstream: up, CacheTTL: c.CacheTTL, HeadTTL: head, Warm: c.Warm,
		Log: func(format string, args ...any) {
			fmt.Fprintf(a.stderr, "ctxstore claude-code proxy: "+format+"\n", args...)
		}})
	if err != nil {
		return usagef("%v", err)
	}
	defer p.Close()
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
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
	st := p.Stats()
	fmt.Fprintf(a.stderr, "ctxstore claude-code proxy: stopped after %d Messages requests (%d with the head cached for the hour), %d warm requests answered, %d failed\n",
		st.Requests, st.LongHeads, st.Warms, st.WarmsFailed)
	return err
}
