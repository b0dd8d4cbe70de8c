package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/ctxstore/ctxstore/server/httpapi"
	"github.com/ctxstore/ctxstore/server/mcp"
	"github.com/ctxstore/ctxstore/store"
)

// mcpCmd serves ctxstore to MCP hosts (docs/mcp.md).
type mcpCmd struct {
	HTTP    string `name:"http" placeholder:"HOST:PORT" help:"Serve MCP over streamable HTTP on this loopback address (port 0: a free one) instead of stdio; the endpoint's URL is printed on stdout."`
	Service string `name:"service" env:"CTXSTORE_SERVICE_URL" placeholder:"URL" help:"A running ctxstore serve: offer activate, deactivate, pin and unpin in the sessions it has open."`
	Token   string `env:"CTXSTORE_TOKEN" placeholder:"TOKEN" help:"The bearer token of --service, if it has tokens; prefer the environment variable."`
}

// Run serves MCP over stdio (until the client disconnects) or streamable
// HTTP (until SIGINT or SIGTERM).
func (c *mcpCmd) Run(a *app) error {
	st, err := a.open(false)
	if err != nil {
		return err
	}
	defer st.Close()
	o := mcp.Options{Store: st, Query: mcp.RecallQuerier{Store: st}}
	if _, ok := st.(store.Searcher); ok {
		o.Search = mcp.RecallSearch{Store: st}
	}
	if c.Service != "" {
		o.Activator = mcp.ServiceActivator{URL: c.Service, Token: c.Token}
	}
	srv := mcp.New(o)
	if c.HTTP == "" {
		fmt.Fprintln(a.stderr, "ctxstore: serving MCP over stdio")
		err := mcp.RunIO(a.ctx, srv, a.stdin, a.stdout)
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	}
	if err := httpapi.CheckBind(c.HTTP, nil); err != nil {
		return usagef("--http: %v (the MCP endpoint has no authentication)", err)
	}
	ln, err := net.Listen("tcp", c.HTTP)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.Handler(srv))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/mcp"
	if a.cli.JSON {
		json.NewEncoder(a.stdout).Encode(map[string]string{"url": url})
	} else {
		fmt.Fprintln(a.stdout, url)
	}
	fmt.Fprintf(a.stderr, "ctxstore: serving MCP at %s (SIGINT or SIGTERM stops it)\n", url)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-a.ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	fmt.Fprintln(a.stderr, "ctxstore: stopped")
	return err
}
