// Command ctxstore is the command line of ctxstore, a context manager for
// LLM agents on a bitemporal document store. Its commands, in the groups
// its help shows (docs/cli.md has every flag):
//
//   - Sessions and contexts: what the model saw at each call of a session
//     and why it cost what it did (sessions, session, calls, call, object),
//     context commits (commit, materialize), recall (search, query-session),
//     a scripted demo session (demo), strategies priced on recorded
//     transcripts (replay) and analytics from context commits (stats).
//   - Serving agents: serve (the HTTP API harness plugins call, and the web
//     inspector), mcp (the MCP server) and claude-code (install the hooks
//     that record Claude Code sessions, run the hook, and the proxy that
//     sets Claude Code's cache lifetimes and warms its cache).
//   - The document store: put, delete, evict, get, history, query, log and
//     status over any store; export, import and sync of portable version
//     logs (import also reads harness session files into context commits);
//     xtdb to fetch and run an XTDB node.
//
// The store is ./.ctxstore/store.db unless --store or CTXSTORE_URL names
// another: a SQLite file (sqlite:PATH, PATH.db, :memory:) or an XTDB node
// (http://HOST:PORT). Each command is a type with its flags as fields and a
// Run method (cli.go lists them); the work is in the packages below.
//
// Data goes to stdout (stable JSON with --json), errors to stderr as
// "ctxstore: <message>". Exit status: 0 ok, 1 error, 2 usage error, 3 a
// transaction aborted because a match failed (put --if-match).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
